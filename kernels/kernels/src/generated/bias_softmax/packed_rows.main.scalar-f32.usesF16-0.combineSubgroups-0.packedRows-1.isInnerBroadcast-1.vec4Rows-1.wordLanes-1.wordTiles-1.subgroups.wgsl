override blockSize: u32;
override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    batchCount: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> output: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
// The identity of `max` that stays finite, so no infinity appears in the shader text.
const LOWEST: f32 = -3.40282347e38;

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
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // One word per invocation and tile (the hints' `wordLanes` and `wordTiles`, dispatched
    // over words / tiles), so adjacent invocations touch adjacent words, and every tile's
    // words are loaded before any is stored; rows of two words combine the pair of lanes
    // holding them (an even lane and the next one) by a shuffle. Every lane runs the same
    // number of steps and shuffles outside the bounds checks, so the shuffles stay in uniform
    // control flow, and lanes past the end only pair with each other (the word count is even
    // then).
    let row_words = blockSize / 4u;
    let words = params.batchCount * row_words;
    let stride = workgroups.x * WORKGROUP_SIZE * 1u;
    for (var first = workgroup.x * WORKGROUP_SIZE * 1u; first < words; first += stride) {
        let w0 = first + 0u * WORKGROUP_SIZE + lane;
        var z0 = vec4<f32>(0.0);
        if (w0 < words) {
            let row = w0 / row_words;
            z0 = data_word(w0) + bias_word(bias_row(row) * row_words + w0 - row * row_words);
        }
        var max0 = max(max(z0.x, z0.y), max(z0.z, z0.w));
        if (row_words == 2u) {
            max0 = max(max0, subgroupShuffleXor(max0, 1u));
        }
        let e0 = exp(z0 - vec4<f32>(max0));
        var sum0 = (e0.x + e0.y) + (e0.z + e0.w);
        if (row_words == 2u) {
            sum0 += subgroupShuffleXor(sum0, 1u);
        }
        if (w0 < words) {
            store_word(w0, e0 * (1.0 / sum0));
        }
    }
}
