override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    blocks: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f32>>;
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
    return row % biasBlockCount;
}

fn task_row(task: u32) -> u32 {
    return (task % innerRepeat) * biasBlockCount + task / innerRepeat;
}

fn data_word(w: u32) -> vec4<f32> {
    return vec4<f32>(data[w]);
}

fn bias_word(w: u32) -> vec4<f32> {
    return vec4<f32>(bias[w]);
}

// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let block = workgroup.x;
    let row = workgroup.y;
    let row_words = params.blockSize / 4u;
    let base = row * row_words;
    let bias_base = bias_row(row) * row_words;
    let start = block * BLOCK_WORDS;
    let end = min(start + BLOCK_WORDS, row_words);
    let lanes = WORKGROUP_SIZE;
    let cached = end - start <= lanes * 2u;
    let w0 = start + lane + 0u * lanes;
    var z0 = vec4<f32>(LOWEST);
    let w1 = start + lane + 1u * lanes;
    var z1 = vec4<f32>(LOWEST);
    var local_max = vec4<f32>(LOWEST);
    if (cached) {
        if (w0 < end) {
            z0 = data_word(base + w0) + bias_word(bias_base + w0);
        }
        if (w1 < end) {
            z1 = data_word(base + w1) + bias_word(bias_base + w1);
        }
        local_max = max(local_max, z0);
        local_max = max(local_max, z1);
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_max = max(local_max, data_word(base + w) + bias_word(bias_base + w));
        }
    }
    let span_max = workgroup_max(max(max(local_max.x, local_max.y), max(local_max.z, local_max.w)), lane, 0u, 0u, 1u);
    var local_sum = vec4<f32>(0.0);
    if (cached) {
        if (w0 < end) {
            z0 = exp(z0 - vec4<f32>(span_max));
            local_sum += z0;
        }
        if (w1 < end) {
            z1 = exp(z1 - vec4<f32>(span_max));
            local_sum += z1;
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_sum += exp(data_word(base + w) + bias_word(bias_base + w) - vec4<f32>(span_max));
        }
    }
    let span_sum = workgroup_sum((local_sum.x + local_sum.y) + (local_sum.z + local_sum.w), lane, 0u, 0u, 1u);

    if (lane == 0u) {
        blockMax[row * params.blocks + block] = span_max;
        blockSum[row * params.blocks + block] = span_sum;
    }
}
