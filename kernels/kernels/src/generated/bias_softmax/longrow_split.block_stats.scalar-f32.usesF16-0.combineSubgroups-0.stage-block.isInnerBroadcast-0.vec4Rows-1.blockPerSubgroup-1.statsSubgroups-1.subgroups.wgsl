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
const LOWEST: f32 = -3.40282347e38;
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

fn data_at(i: u32) -> f32 {
    return f32(data[i / 4u][i % 4u]);
}

fn bias_at(i: u32) -> f32 {
    return f32(bias[i / 4u][i % 4u]);
}

// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;

// One subgroup per block and several blocks per workgroup (the hints' `blockPerSubgroup`
// and `statsSubgroups`: the adapter has subgroups of a single size and the dispatch gives each workgroup
// WORKGROUP_SIZE / that many blocks); no barrier.
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
    let cached = end - start <= lanes * 16u;
    let w0 = start + lane + 0u * lanes;
    var z0 = vec4<f32>(LOWEST);
    let w1 = start + lane + 1u * lanes;
    var z1 = vec4<f32>(LOWEST);
    let w2 = start + lane + 2u * lanes;
    var z2 = vec4<f32>(LOWEST);
    let w3 = start + lane + 3u * lanes;
    var z3 = vec4<f32>(LOWEST);
    let w4 = start + lane + 4u * lanes;
    var z4 = vec4<f32>(LOWEST);
    let w5 = start + lane + 5u * lanes;
    var z5 = vec4<f32>(LOWEST);
    let w6 = start + lane + 6u * lanes;
    var z6 = vec4<f32>(LOWEST);
    let w7 = start + lane + 7u * lanes;
    var z7 = vec4<f32>(LOWEST);
    let w8 = start + lane + 8u * lanes;
    var z8 = vec4<f32>(LOWEST);
    let w9 = start + lane + 9u * lanes;
    var z9 = vec4<f32>(LOWEST);
    let w10 = start + lane + 10u * lanes;
    var z10 = vec4<f32>(LOWEST);
    let w11 = start + lane + 11u * lanes;
    var z11 = vec4<f32>(LOWEST);
    let w12 = start + lane + 12u * lanes;
    var z12 = vec4<f32>(LOWEST);
    let w13 = start + lane + 13u * lanes;
    var z13 = vec4<f32>(LOWEST);
    let w14 = start + lane + 14u * lanes;
    var z14 = vec4<f32>(LOWEST);
    let w15 = start + lane + 15u * lanes;
    var z15 = vec4<f32>(LOWEST);
    var local_max = vec4<f32>(LOWEST);
    if (cached) {
        if (w0 < end) {
            z0 = data_word(base + w0) + bias_word(bias_base + w0);
        }
        if (w1 < end) {
            z1 = data_word(base + w1) + bias_word(bias_base + w1);
        }
        if (w2 < end) {
            z2 = data_word(base + w2) + bias_word(bias_base + w2);
        }
        if (w3 < end) {
            z3 = data_word(base + w3) + bias_word(bias_base + w3);
        }
        if (w4 < end) {
            z4 = data_word(base + w4) + bias_word(bias_base + w4);
        }
        if (w5 < end) {
            z5 = data_word(base + w5) + bias_word(bias_base + w5);
        }
        if (w6 < end) {
            z6 = data_word(base + w6) + bias_word(bias_base + w6);
        }
        if (w7 < end) {
            z7 = data_word(base + w7) + bias_word(bias_base + w7);
        }
        if (w8 < end) {
            z8 = data_word(base + w8) + bias_word(bias_base + w8);
        }
        if (w9 < end) {
            z9 = data_word(base + w9) + bias_word(bias_base + w9);
        }
        if (w10 < end) {
            z10 = data_word(base + w10) + bias_word(bias_base + w10);
        }
        if (w11 < end) {
            z11 = data_word(base + w11) + bias_word(bias_base + w11);
        }
        if (w12 < end) {
            z12 = data_word(base + w12) + bias_word(bias_base + w12);
        }
        if (w13 < end) {
            z13 = data_word(base + w13) + bias_word(bias_base + w13);
        }
        if (w14 < end) {
            z14 = data_word(base + w14) + bias_word(bias_base + w14);
        }
        if (w15 < end) {
            z15 = data_word(base + w15) + bias_word(bias_base + w15);
        }
        local_max = max(local_max, z0);
        local_max = max(local_max, z1);
        local_max = max(local_max, z2);
        local_max = max(local_max, z3);
        local_max = max(local_max, z4);
        local_max = max(local_max, z5);
        local_max = max(local_max, z6);
        local_max = max(local_max, z7);
        local_max = max(local_max, z8);
        local_max = max(local_max, z9);
        local_max = max(local_max, z10);
        local_max = max(local_max, z11);
        local_max = max(local_max, z12);
        local_max = max(local_max, z13);
        local_max = max(local_max, z14);
        local_max = max(local_max, z15);
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_max = max(local_max, data_word(base + w) + bias_word(bias_base + w));
        }
    }
    let span_max = subgroupMax(max(max(local_max.x, local_max.y), max(local_max.z, local_max.w)));
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
        if (w2 < end) {
            z2 = exp(z2 - vec4<f32>(span_max));
            local_sum += z2;
        }
        if (w3 < end) {
            z3 = exp(z3 - vec4<f32>(span_max));
            local_sum += z3;
        }
        if (w4 < end) {
            z4 = exp(z4 - vec4<f32>(span_max));
            local_sum += z4;
        }
        if (w5 < end) {
            z5 = exp(z5 - vec4<f32>(span_max));
            local_sum += z5;
        }
        if (w6 < end) {
            z6 = exp(z6 - vec4<f32>(span_max));
            local_sum += z6;
        }
        if (w7 < end) {
            z7 = exp(z7 - vec4<f32>(span_max));
            local_sum += z7;
        }
        if (w8 < end) {
            z8 = exp(z8 - vec4<f32>(span_max));
            local_sum += z8;
        }
        if (w9 < end) {
            z9 = exp(z9 - vec4<f32>(span_max));
            local_sum += z9;
        }
        if (w10 < end) {
            z10 = exp(z10 - vec4<f32>(span_max));
            local_sum += z10;
        }
        if (w11 < end) {
            z11 = exp(z11 - vec4<f32>(span_max));
            local_sum += z11;
        }
        if (w12 < end) {
            z12 = exp(z12 - vec4<f32>(span_max));
            local_sum += z12;
        }
        if (w13 < end) {
            z13 = exp(z13 - vec4<f32>(span_max));
            local_sum += z13;
        }
        if (w14 < end) {
            z14 = exp(z14 - vec4<f32>(span_max));
            local_sum += z14;
        }
        if (w15 < end) {
            z15 = exp(z15 - vec4<f32>(span_max));
            local_sum += z15;
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_sum += exp(data_word(base + w) + bias_word(bias_base + w) - vec4<f32>(span_max));
        }
    }
    let span_sum = subgroupAdd((local_sum.x + local_sum.y) + (local_sum.z + local_sum.w));

    if (lane == 0u) {
        blockMax[row * params.blocks + block] = span_max;
        blockSum[row * params.blocks + block] = span_sum;
    }
}
