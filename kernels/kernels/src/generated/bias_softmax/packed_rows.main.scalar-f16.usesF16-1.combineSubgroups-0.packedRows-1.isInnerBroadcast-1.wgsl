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
// The identity of `max` that stays finite, so no infinity appears in the shader text.
const LOWEST: f32 = -3.40282347e38;

fn bias_row(row: u32) -> u32 {
    return row / innerRepeat;
}

// A tile of rows per workgroup step: each row gets `group` lanes (its length rounded up to a
// power of two), one element per lane, so loads and stores are contiguous across lanes.
var<workgroup> tile_values: array<f32, WORKGROUP_SIZE>;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    var group = 1u;
    while (group < blockSize) {
        group *= 2u;
    }
    let rows_per_tile = WORKGROUP_SIZE / group;
    let row_in_tile = lane / group;
    let column = lane % group;
    let first_lane = lane - column;
    for (var tile = workgroup.x; tile * rows_per_tile < params.batchCount; tile += workgroups.x) {
        let row = tile * rows_per_tile + row_in_tile;
        let valid = row < params.batchCount && column < blockSize && row_in_tile < rows_per_tile;
        var z = LOWEST;
        if (valid) {
            z = f32(data[row * blockSize + column]) + f32(bias[bias_row(row) * blockSize + column]);
        }
        tile_values[lane] = z;
        workgroupBarrier();
        var row_max = LOWEST;
        for (var c = 0u; c < blockSize; c += 1u) {
            row_max = max(row_max, tile_values[first_lane + c]);
        }
        var sum = 0.0;
        for (var c = 0u; c < blockSize; c += 1u) {
            sum += exp(tile_values[first_lane + c] - row_max);
        }
        if (valid) {
            output[row * blockSize + column] = f16(exp(z - row_max) / sum);
        }
        workgroupBarrier();
    }
}
