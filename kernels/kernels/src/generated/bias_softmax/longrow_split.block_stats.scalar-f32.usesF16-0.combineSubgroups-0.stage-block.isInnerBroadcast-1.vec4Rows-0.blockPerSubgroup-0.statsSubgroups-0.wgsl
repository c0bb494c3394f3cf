override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    blocks: u32,
}

@group(0) @binding(0) var<storage, read> data: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
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

fn data_at(i: u32) -> f32 {
    return f32(data[i]);
}

fn bias_at(i: u32) -> f32 {
    return f32(bias[i]);
}

// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;
// Element-wise: the row length is not a multiple of 4.
fn block_column(i: u32, lane: u32) -> u32 {
    return lane + i * WORKGROUP_SIZE;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let block = workgroup.x;
    let row = workgroup.y;
    let base = row * params.blockSize;
    let bias_base = bias_row(row) * params.blockSize;
    let start = block * BLOCK_COLS;
    let end = min(start + BLOCK_COLS, params.blockSize);

    // A block is read once: each lane keeps its BLOCK_COLS / WORKGROUP_SIZE values.
    var z: array<f32, PER_LANE>;
    var local_max = LOWEST;
    for (var i = 0u; i < PER_LANE; i += 1u) {
        let c = start + block_column(i, lane);
        if (c < end) {
            z[i] = data_at(base + c) + bias_at(bias_base + c);
            local_max = max(local_max, z[i]);
        }
    }
    let block_max = workgroup_max(local_max, lane, 0u, 0u, 1u);
    var local_sum = 0.0;
    for (var i = 0u; i < PER_LANE; i += 1u) {
        if (start + block_column(i, lane) < end) {
            local_sum += exp(z[i] - block_max);
        }
    }
    let block_sum = workgroup_sum(local_sum, lane, 0u, 0u, 1u);
    if (lane == 0u) {
        blockMax[row * params.blocks + block] = block_max;
        blockSum[row * params.blocks + block] = block_sum;
    }
}
