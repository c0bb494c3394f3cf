override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> rowMax: array<f32>;
@group(0) @binding(3) var<storage, read> rowSum: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<f32>>;
@group(0) @binding(5) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const BLOCK_COLS: u32 = 2048u;
// Rows are whole vec4 words with vec4Rows; BLOCK_COLS is a multiple of 4, so blocks are too.
const BLOCK_WORDS: u32 = BLOCK_COLS / 4u;
const WORDS_PER_LANE: u32 = (BLOCK_WORDS + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;

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

fn data_at(i: u32) -> f32 {
    return f32(data[i / 4u][i % 4u]);
}

fn bias_at(i: u32) -> f32 {
    return f32(bias[i / 4u][i % 4u]);
}

fn store_word(w: u32, value: vec4<f32>) {
    output[w] = vec4<f32>(value);
}

// `i` is a multiple of 4.
fn store4(i: u32, value: vec4<f32>) {
    output[i / 4u] = vec4<f32>(value);
}

fn store1(i: u32, value: f32) {
    output[i / 4u][i % 4u] = f32(value);
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
    let row_max = rowMax[row];
    let row_sum = rowSum[row];
    let inverse = 1.0 / row_sum;
    // Whole words: every lane loads all of its words before it stores any.
    let row_words = params.blockSize / 4u;
    let start_word = block * BLOCK_WORDS;
    let end_word = min(start_word + BLOCK_WORDS, row_words);
    var z: array<vec4<f32>, WORDS_PER_LANE>;
    for (var k = 0u; k < WORDS_PER_LANE; k += 1u) {
        let w = start_word + lane + k * WORKGROUP_SIZE;
        if (w < end_word) {
            z[k] = data_word(row * row_words + w) + bias_word(bias_row(row) * row_words + w);
        }
    }
    for (var k = 0u; k < WORDS_PER_LANE; k += 1u) {
        let w = start_word + lane + k * WORKGROUP_SIZE;
        if (w < end_word) {
            store_word(row * row_words + w, exp(z[k] - vec4<f32>(row_max)) * inverse);
        }
    }
}
