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
// The identity of `max` that stays finite, so no infinity appears in the shader text: the
// lowest f32, written exactly (a rounded decimal such as -3.40282347e38 lies outside f32's
// range, which Tint rejects).
const LOWEST: f32 = -0x1.fffffep+127f;

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

fn store_word(w: u32, value: vec4<f32>) {
    output[w] = vec4<f32>(value);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // One word per invocation (the hints' `wordLanes`, dispatched over words), so adjacent
    // invocations touch adjacent words; rows of two words combine the pair of lanes holding
    // them (an even lane and the next one) by a shuffle. Every lane runs the same number of
    // steps and shuffles outside the bounds check, so the shuffles stay in uniform control
    // flow, and lanes past the end only pair with each other (the word count is even then).
    let row_words = blockSize / 4u;
    let words = params.batchCount * row_words;
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var first = workgroup.x * WORKGROUP_SIZE; first < words; first += stride) {
        let w = first + lane;
        var z = vec4<f32>(0.0);
        if (w < words) {
            let row = w / row_words;
            z = data_word(w) + bias_word(bias_row(row) * row_words + w - row * row_words);
        }
        var row_max = max(max(z.x, z.y), max(z.z, z.w));
        if (row_words == 2u) {
            row_max = max(row_max, subgroupShuffleXor(row_max, 1u));
        }
        let e = exp(z - vec4<f32>(row_max));
        var sum = (e.x + e.y) + (e.z + e.w);
        if (row_words == 2u) {
            sum += subgroupShuffleXor(sum, 1u);
        }
        if (w < words) {
            store_word(w, e * (1.0 / sum));
        }
    }
}
