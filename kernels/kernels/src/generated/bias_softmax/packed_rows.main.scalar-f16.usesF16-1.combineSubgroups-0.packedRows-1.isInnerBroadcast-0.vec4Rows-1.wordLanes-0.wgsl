enable f16;

override blockSize: u32;
override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    batchCount: u32,
}

@group(0) @binding(0) var<storage, read> data: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> bias: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read_write> output: array<vec4<f16>>;
@group(0) @binding(3) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
// The identity of `max` that stays finite, so no infinity appears in the shader text: the
// lowest f32, written exactly (a rounded decimal such as -3.40282347e38 lies outside f32's
// range, which Tint rejects).
const LOWEST: f32 = -0x1.fffffep+127f;

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
    @builtin(global_invocation_id) invocation: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    // One row of one or two words per invocation.
    let row_words = blockSize / 4u;
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var row = invocation.x; row < params.batchCount; row += stride) {
        let base = row * row_words;
        let bias_base = bias_row(row) * row_words;
        let a = data_word(base) + bias_word(bias_base);
        var b = vec4<f32>(LOWEST);
        if (row_words == 2u) {
            b = data_word(base + 1u) + bias_word(bias_base + 1u);
        }
        let m = max(max(a, b), vec4<f32>(LOWEST));
        let row_max = max(max(m.x, m.y), max(m.z, m.w));
        let ea = exp(a - vec4<f32>(row_max));
        var sum = (ea.x + ea.y) + (ea.z + ea.w);
        var eb = vec4<f32>(0.0);
        if (row_words == 2u) {
            eb = exp(b - vec4<f32>(row_max));
            sum += (eb.x + eb.y) + (eb.z + eb.w);
        }
        let inverse = 1.0 / sum;
        store_word(base, ea * inverse);
        if (row_words == 2u) {
            store_word(base + 1u, eb * inverse);
        }
    }
}
