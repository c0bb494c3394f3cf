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
    output[w] = vec4<f16>(value);
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

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let subgroup = 0u;
    let lane_in_subgroup = 0u;
    let subgroups = 1u;
    // One workgroup per row; the runtime may split the rows over x and y. The early return
    // is uniform across the workgroup, so the reductions' barriers stay in uniform control
    // flow.
    let task = workgroup.x + workgroup.y * workgroups.x;
    if (task >= params.batchCount) {
        return;
    }
    let row = task_row(task);
    let lanes = WORKGROUP_SIZE;
    let row_words = blockSize / 4u;
    let base = row * row_words;
    let bias_base = bias_row(row) * row_words;
    let start = 0u;
    let end = row_words;
    let cached = end - start <= lanes * 2u;
    let w0 = start + lane + 0u * lanes;
    var z0 = vec4<f32>(LOWEST);
    let w1 = start + lane + 1u * lanes;
    var z1 = vec4<f32>(LOWEST);
    var local_max = vec4<f32>(LOWEST);
    if (cached) {
        if (w0 < end) {
            z0 = data_word(base + w0) + bias_word(bias_base + w0);
        }
        if (w1 < end) {
            z1 = data_word(base + w1) + bias_word(bias_base + w1);
        }
        local_max = max(local_max, z0);
        local_max = max(local_max, z1);
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_max = max(local_max, data_word(base + w) + bias_word(bias_base + w));
        }
    }
    let span_max = workgroup_max(max(max(local_max.x, local_max.y), max(local_max.z, local_max.w)), lane, subgroup, lane_in_subgroup, subgroups);
    var local_sum = vec4<f32>(0.0);
    if (cached) {
        if (w0 < end) {
            z0 = exp(z0 - vec4<f32>(span_max));
            local_sum += z0;
        }
        if (w1 < end) {
            z1 = exp(z1 - vec4<f32>(span_max));
            local_sum += z1;
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_sum += exp(data_word(base + w) + bias_word(bias_base + w) - vec4<f32>(span_max));
        }
    }
    let span_sum = workgroup_sum((local_sum.x + local_sum.y) + (local_sum.z + local_sum.w), lane, subgroup, lane_in_subgroup, subgroups);
    let inverse = 1.0 / span_sum;
    if (cached) {
        if (w0 < end) {
            store_word(base + w0, z0 * inverse);
        }
        if (w1 < end) {
            store_word(base + w1, z1 * inverse);
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            let value = data_word(base + w) + bias_word(bias_base + w);
            store_word(base + w, exp(value - vec4<f32>(span_max)) * inverse);
        }
    }

}
