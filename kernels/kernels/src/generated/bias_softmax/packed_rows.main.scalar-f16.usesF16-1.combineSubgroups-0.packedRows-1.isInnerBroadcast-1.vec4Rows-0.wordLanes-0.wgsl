enable f16;

override blockSize: u32;
override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    batchCount: u32,
}

@group(0) @binding(0) var<storage, read> data: array<f16>;
@group(0) @binding(1) var<storage, read> bias: array<f16>;
@group(0) @binding(2) var<storage, read_write> output: array<f16>;
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

fn data_at(i: u32) -> f32 {
    return f32(data[i]);
}

fn bias_at(i: u32) -> f32 {
    return f32(bias[i]);
}

fn store_at(i: u32, value: f32) {
    output[i] = f16(value);
}

const MAX_ROW: u32 = 8u;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) invocation: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
) {
    // One row per invocation, its (at most 8) adjacent elements read and written together.
    let stride = workgroups.x * WORKGROUP_SIZE;
    for (var row = invocation.x; row < params.batchCount; row += stride) {
        let base = row * blockSize;
        let bias_base = bias_row(row) * blockSize;
        var z: array<f32, MAX_ROW>;
        var row_max = LOWEST;
        for (var c = 0u; c < MAX_ROW; c += 1u) {
            if (c < blockSize) {
                z[c] = data_at(base + c) + bias_at(bias_base + c);
                row_max = max(row_max, z[c]);
            }
        }
        var sum = 0.0;
        for (var c = 0u; c < MAX_ROW; c += 1u) {
            if (c < blockSize) {
                z[c] = exp(z[c] - row_max);
                sum += z[c];
            }
        }
        let inverse = 1.0 / sum;
        for (var c = 0u; c < MAX_ROW; c += 1u) {
            if (c < blockSize) {
                store_at(base + c, z[c] * inverse);
            }
        }
    }
}
