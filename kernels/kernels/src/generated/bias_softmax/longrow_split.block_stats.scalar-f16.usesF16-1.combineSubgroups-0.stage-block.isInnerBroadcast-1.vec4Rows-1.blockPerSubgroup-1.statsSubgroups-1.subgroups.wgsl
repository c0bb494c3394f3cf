enable f16;

override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    blocks: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read_write> blockMax: array<f32>;
@group(0) @binding(3) var<storage, read_write> blockSum: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const BLOCK_COLS: u32 = 2048u;
// The lowest f32, written exactly (see bias-softmax.wgsl.jinja).
const LOWEST: f32 = -0x1.fffffep+127f;
const PER_LANE: u32 = (BLOCK_COLS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;

var<workgroup> reduction_scratch: array<f32, 256>;

fn workgroup_max(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] = max(reduction_scratch[lane], reduction_scratch[lane + stride]);
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}

fn workgroup_sum(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] += reduction_scratch[lane + stride];
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}

fn bias_row(row: u32) -> u32 {
    return row / innerRepeat;
}

fn task_row(task: u32) -> u32 {
    return task;
}

fn data_word(w: u32) -> vec4<f32> {
    return vec4<f32>(data[w]);
}

fn bias_word(w: u32) -> vec4<f32> {
    return vec4<f32>(bias[w]);
}

// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;

// One subgroup per block and several blocks per workgroup (the hints' `blockPerSubgroup` and
// `statsSubgroups`: the adapter has subgroups of a single size and the dispatch gives each
// workgroup WORKGROUP_SIZE / that many blocks); no barrier.
@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let block = workgroup.x * subgroups + subgroup;
    let row = workgroup.y;
    if (block >= params.blocks) {
        return;
    }
    let row_words = params.blockSize / 4u;
    let base = row * row_words;
    let bias_base = bias_row(row) * row_words;
    let start = block * BLOCK_WORDS;
    let end = min(start + BLOCK_WORDS, row_words);
    var lane_max = LOWEST;
    var lane_sum = 0.0;
    for (var first = start + lane; first < end; first += 4u * lanes) {
        let w0 = first + 0u * lanes;
        var z0 = vec4<f32>(LOWEST);
        if (w0 < end) {
            z0 = data_word(base + w0) + bias_word(bias_base + w0);
        }
        let w1 = first + 1u * lanes;
        var z1 = vec4<f32>(LOWEST);
        if (w1 < end) {
            z1 = data_word(base + w1) + bias_word(bias_base + w1);
        }
        let w2 = first + 2u * lanes;
        var z2 = vec4<f32>(LOWEST);
        if (w2 < end) {
            z2 = data_word(base + w2) + bias_word(bias_base + w2);
        }
        let w3 = first + 3u * lanes;
        var z3 = vec4<f32>(LOWEST);
        if (w3 < end) {
            z3 = data_word(base + w3) + bias_word(bias_base + w3);
        }
        var group_max = z0;
        group_max = max(group_max, z1);
        group_max = max(group_max, z2);
        group_max = max(group_max, z3);
        let new_max = max(lane_max, max(max(group_max.x, group_max.y), max(group_max.z, group_max.w)));
        var group_sum = vec4<f32>(0.0);
        if (w0 < end) {
            group_sum += exp(z0 - vec4<f32>(new_max));
        }
        if (w1 < end) {
            group_sum += exp(z1 - vec4<f32>(new_max));
        }
        if (w2 < end) {
            group_sum += exp(z2 - vec4<f32>(new_max));
        }
        if (w3 < end) {
            group_sum += exp(z3 - vec4<f32>(new_max));
        }
        lane_sum = lane_sum * exp(lane_max - new_max) + (group_sum.x + group_sum.y) + (group_sum.z + group_sum.w);
        lane_max = new_max;
    }
    let span_max = subgroupMax(lane_max);
    let span_sum = subgroupAdd(lane_sum * exp(lane_max - span_max));

    if (lane == 0u) {
        blockMax[row * params.blocks + block] = span_max;
        blockSum[row * params.blocks + block] = span_sum;
    }
}
