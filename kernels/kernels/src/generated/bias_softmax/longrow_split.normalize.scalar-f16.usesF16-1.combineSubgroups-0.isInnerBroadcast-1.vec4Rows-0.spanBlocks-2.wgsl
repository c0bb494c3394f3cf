enable f16;

override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
}

@group(0) @binding(0) var<storage, read> data: array<f16>;
@group(0) @binding(1) var<storage, read> bias: array<f16>;
@group(0) @binding(2) var<storage, read> rowMax: array<f32>;
@group(0) @binding(3) var<storage, read> rowSum: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f16>;
@group(0) @binding(5) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const BLOCK_COLS: u32 = 2048u;
// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;
// Blocks per workgroup (the hints' `spanBlocks`, with the dispatch divided to match).
const SPAN_BLOCKS: u32 = 2u;

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

fn store_at(i: u32, value: f32) {
    output[i] = f16(value);
}


@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // SPAN_BLOCKS blocks of one row per workgroup.
    let row = workgroup.y;
    let row_max = rowMax[row];
    let row_sum = rowSum[row];
    let inverse = 1.0 / row_sum;
    let base = row * params.blockSize;
    let bias_base = bias_row(row) * params.blockSize;
    let start = workgroup.x * SPAN_BLOCKS * BLOCK_COLS;
    let end = min(start + SPAN_BLOCKS * BLOCK_COLS, params.blockSize);
    for (var c = start + lane; c < end; c += WORKGROUP_SIZE) {
        let z = data_at(base + c) + bias_at(bias_base + c);
        store_at(base + c, exp(z - row_max) * inverse);
    }
}
