override blockSize: u32;
override biasBlockCount: u32;
override innerRepeat: u32;

struct Params {
    blockSize: u32,
    batchCount: u32,
}

@group(0) @binding(0) var<storage, read> data: array<f32>;
@group(0) @binding(1) var<storage, read> bias: array<f32>;
@group(0) @binding(2) var<storage, read_write> output: array<f32>;
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
    output[i] = f32(value);
}

// One subgroup per row and several rows per workgroup (the hints' `rowPerSubgroup`: the adapter
// has a single subgroup size and the dispatch gives each workgroup WORKGROUP_SIZE / that many
// rows); the max and the sum are subgroup reductions, with no barrier.
const PER_LANE: u32 = 32u;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    let task = (workgroup.x + workgroup.y * workgroups.x) * subgroups + subgroup;
    if (task >= params.batchCount) {
        return;
    }
    let row = task_row(task);
    let base = row * blockSize;
    let bias_base = bias_row(row) * blockSize;
    let cached = blockSize <= lanes * PER_LANE;
    var z: array<f32, PER_LANE>;
    var local_max = LOWEST;
    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            let c = lane + i * lanes;
            if (c < blockSize) {
                z[i] = data_at(base + c) + bias_at(bias_base + c);
                local_max = max(local_max, z[i]);
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += lanes) {
            local_max = max(local_max, data_at(base + c) + bias_at(bias_base + c));
        }
    }
    let row_max = subgroupMax(local_max);
    var local_sum = 0.0;
    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            if (lane + i * lanes < blockSize) {
                z[i] = exp(z[i] - row_max);
                local_sum += z[i];
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += lanes) {
            local_sum += exp(data_at(base + c) + bias_at(bias_base + c) - row_max);
        }
    }
    let row_sum = subgroupAdd(local_sum);
    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            let c = lane + i * lanes;
            if (c < blockSize) {
                store_at(base + c, z[i] / row_sum);
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += lanes) {
            store_at(base + c, exp(data_at(base + c) + bias_at(bias_base + c) - row_max) / row_sum);
        }
    }
}
