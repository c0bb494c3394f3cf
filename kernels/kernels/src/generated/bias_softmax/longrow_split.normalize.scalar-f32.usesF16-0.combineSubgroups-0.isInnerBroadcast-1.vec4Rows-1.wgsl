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
const VECTOR: u32 = 4u;

fn bias_row(row: u32) -> u32 {
    return row / innerRepeat;
}

fn data_at(i: u32) -> f32 {
    return f32(data[i / 4u][i % 4u]);
}

fn bias_at(i: u32) -> f32 {
    return f32(bias[i / 4u][i % 4u]);
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
    if (params.blockSize % VECTOR == 0u) {
        // Runs of VECTOR adjacent columns per lane compile to wide loads and stores.
        for (var c = start + lane * VECTOR; c < end; c += WORKGROUP_SIZE * VECTOR) {
            var z: vec4<f32>;
            for (var k = 0u; k < VECTOR; k += 1u) {
                z[k] = data_at(base + c + k) + bias_at(bias_base + c + k);
            }
            store4(base + c, exp(z - vec4<f32>(row_max)) * inverse);
        }
    } else {
        for (var c = start + lane; c < end; c += WORKGROUP_SIZE) {
            let z = data_at(base + c) + bias_at(bias_base + c);
            store1(base + c, exp(z - row_max) * inverse);
        }
    }
}
