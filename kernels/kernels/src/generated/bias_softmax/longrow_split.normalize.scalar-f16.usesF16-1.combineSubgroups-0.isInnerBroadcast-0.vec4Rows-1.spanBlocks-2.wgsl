enable f16;

override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> rowMax: array<f32>;
@group(0) @binding(3) var<storage, read> rowSum: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<f16>>;
@group(0) @binding(5) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const BLOCK_COLS: u32 = 2048u;
// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;
// Blocks per workgroup (the hints' `spanBlocks`, with the dispatch divided to match).
const SPAN_BLOCKS: u32 = 2u;

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

fn store_word(w: u32, value: vec4<f32>) {
    output[w] = vec4<f16>(value);
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
    // Whole words: every lane loads all of its words before it stores any.
    let row_words = params.blockSize / 4u;
    let base = row * row_words;
    let bias_base = bias_row(row) * row_words;
    let start = workgroup.x * SPAN_BLOCKS * BLOCK_WORDS;
    let end = min(start + SPAN_BLOCKS * BLOCK_WORDS, row_words);
    let w0 = start + lane + 0u * WORKGROUP_SIZE;
    var z0: vec4<f32>;
    if (w0 < end) {
        z0 = data_word(base + w0) + bias_word(bias_base + w0);
    }
    let w1 = start + lane + 1u * WORKGROUP_SIZE;
    var z1: vec4<f32>;
    if (w1 < end) {
        z1 = data_word(base + w1) + bias_word(bias_base + w1);
    }
    let w2 = start + lane + 2u * WORKGROUP_SIZE;
    var z2: vec4<f32>;
    if (w2 < end) {
        z2 = data_word(base + w2) + bias_word(bias_base + w2);
    }
    let w3 = start + lane + 3u * WORKGROUP_SIZE;
    var z3: vec4<f32>;
    if (w3 < end) {
        z3 = data_word(base + w3) + bias_word(bias_base + w3);
    }
    if (w0 < end) {
        store_word(base + w0, exp(z0 - vec4<f32>(row_max)) * inverse);
    }
    if (w1 < end) {
        store_word(base + w1, exp(z1 - vec4<f32>(row_max)) * inverse);
    }
    if (w2 < end) {
        store_word(base + w2, exp(z2 - vec4<f32>(row_max)) * inverse);
    }
    if (w3 < end) {
        store_word(base + w3, exp(z3 - vec4<f32>(row_max)) * inverse);
    }
    // Spans longer than the slots (other tunables) finish here.
    for (var w = start + lane + 4u * WORKGROUP_SIZE; w < end; w += WORKGROUP_SIZE) {
        store_word(base + w, exp(data_word(base + w) + bias_word(bias_base + w) - vec4<f32>(row_max)) * inverse);
    }
}
