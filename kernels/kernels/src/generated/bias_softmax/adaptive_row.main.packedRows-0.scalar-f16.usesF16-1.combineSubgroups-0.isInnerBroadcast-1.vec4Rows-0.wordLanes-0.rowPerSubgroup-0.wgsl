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

var<workgroup> reduction_scratch: array<f32, 256>;

fn workgroup_max(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] = max(reduction_scratch[lane], reduction_scratch[lane + stride]);
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}

fn workgroup_sum(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    reduction_scratch[lane] = value;
    workgroupBarrier();
    for (var stride = 256u / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            reduction_scratch[lane] += reduction_scratch[lane + stride];
        }
        workgroupBarrier();
    }
    let result = reduction_scratch[0];
    workgroupBarrier();
    return result;
}

const PER_LANE: u32 = 8u;

// The column that register slot `i` of `lane` holds.
fn cached_column(i: u32, lane: u32) -> u32 {
    return lane + i * WORKGROUP_SIZE;
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let subgroup = 0u;
    let lane_in_subgroup = 0u;
    let subgroups = 1u;
    // One workgroup per row; the runtime may split the rows over x and y.
    let task = workgroup.x + workgroup.y * workgroups.x;
    if (task >= params.batchCount) {
        return;
    }
    let row = task_row(task);
    let base = row * blockSize;
    let bias_base = bias_row(row) * blockSize;

    // Rows of up to WORKGROUP_SIZE * PER_LANE elements are read once and kept in registers;
    // longer rows are read three times (max, sum, write), from cache for the later two.
    let cached = blockSize <= WORKGROUP_SIZE * PER_LANE;
    var z: array<f32, PER_LANE>;
    var local_max = LOWEST;
    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            let c = cached_column(i, lane);
            if (c < blockSize) {
                z[i] = data_at(base + c) + bias_at(bias_base + c);
                local_max = max(local_max, z[i]);
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += WORKGROUP_SIZE) {
            local_max = max(local_max, data_at(base + c) + bias_at(bias_base + c));
        }
    }
    let row_max = workgroup_max(local_max, lane, subgroup, lane_in_subgroup, subgroups);

    var local_sum = 0.0;
    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            if (cached_column(i, lane) < blockSize) {
                z[i] = exp(z[i] - row_max);
                local_sum += z[i];
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += WORKGROUP_SIZE) {
            local_sum += exp(data_at(base + c) + bias_at(bias_base + c) - row_max);
        }
    }
    let row_sum = workgroup_sum(local_sum, lane, subgroup, lane_in_subgroup, subgroups);

    if (cached) {
        for (var i = 0u; i < PER_LANE; i += 1u) {
            let c = cached_column(i, lane);
            if (c < blockSize) {
                store_at(base + c, z[i] / row_sum);
            }
        }
    } else {
        for (var c = lane; c < blockSize; c += WORKGROUP_SIZE) {
            let value = data_at(base + c) + bias_at(bias_base + c);
            store_at(base + c, exp(value - row_max) / row_sum);
        }
    }
}
