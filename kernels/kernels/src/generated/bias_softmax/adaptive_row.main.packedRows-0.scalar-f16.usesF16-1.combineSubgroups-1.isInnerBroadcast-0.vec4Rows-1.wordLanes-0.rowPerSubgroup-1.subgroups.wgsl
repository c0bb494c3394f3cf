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
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) lanes: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    // One subgroup per row, several rows per workgroup; no barrier.
    let task = (workgroup.x + workgroup.y * workgroups.x) * subgroups + subgroup;
    if (task >= params.batchCount) {
        return;
    }
    let row = task_row(task);
    let row_words = blockSize / 4u;
    let base = row * row_words;
    let bias_base = bias_row(row) * row_words;
    let start = 0u;
    let end = row_words;
    let cached = end - start <= lanes * 8u;
    let w0 = start + lane + 0u * lanes;
    var z0 = vec4<f32>(LOWEST);
    let w1 = start + lane + 1u * lanes;
    var z1 = vec4<f32>(LOWEST);
    let w2 = start + lane + 2u * lanes;
    var z2 = vec4<f32>(LOWEST);
    let w3 = start + lane + 3u * lanes;
    var z3 = vec4<f32>(LOWEST);
    let w4 = start + lane + 4u * lanes;
    var z4 = vec4<f32>(LOWEST);
    let w5 = start + lane + 5u * lanes;
    var z5 = vec4<f32>(LOWEST);
    let w6 = start + lane + 6u * lanes;
    var z6 = vec4<f32>(LOWEST);
    let w7 = start + lane + 7u * lanes;
    var z7 = vec4<f32>(LOWEST);
    var local_max = vec4<f32>(LOWEST);
    if (cached) {
        if (w0 < end) {
            z0 = data_word(base + w0) + bias_word(bias_base + w0);
        }
        if (w1 < end) {
            z1 = data_word(base + w1) + bias_word(bias_base + w1);
        }
        if (w2 < end) {
            z2 = data_word(base + w2) + bias_word(bias_base + w2);
        }
        if (w3 < end) {
            z3 = data_word(base + w3) + bias_word(bias_base + w3);
        }
        if (w4 < end) {
            z4 = data_word(base + w4) + bias_word(bias_base + w4);
        }
        if (w5 < end) {
            z5 = data_word(base + w5) + bias_word(bias_base + w5);
        }
        if (w6 < end) {
            z6 = data_word(base + w6) + bias_word(bias_base + w6);
        }
        if (w7 < end) {
            z7 = data_word(base + w7) + bias_word(bias_base + w7);
        }
        local_max = max(local_max, z0);
        local_max = max(local_max, z1);
        local_max = max(local_max, z2);
        local_max = max(local_max, z3);
        local_max = max(local_max, z4);
        local_max = max(local_max, z5);
        local_max = max(local_max, z6);
        local_max = max(local_max, z7);
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_max = max(local_max, data_word(base + w) + bias_word(bias_base + w));
        }
    }
    let span_max = subgroupMax(max(max(local_max.x, local_max.y), max(local_max.z, local_max.w)));
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
        if (w2 < end) {
            z2 = exp(z2 - vec4<f32>(span_max));
            local_sum += z2;
        }
        if (w3 < end) {
            z3 = exp(z3 - vec4<f32>(span_max));
            local_sum += z3;
        }
        if (w4 < end) {
            z4 = exp(z4 - vec4<f32>(span_max));
            local_sum += z4;
        }
        if (w5 < end) {
            z5 = exp(z5 - vec4<f32>(span_max));
            local_sum += z5;
        }
        if (w6 < end) {
            z6 = exp(z6 - vec4<f32>(span_max));
            local_sum += z6;
        }
        if (w7 < end) {
            z7 = exp(z7 - vec4<f32>(span_max));
            local_sum += z7;
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            local_sum += exp(data_word(base + w) + bias_word(bias_base + w) - vec4<f32>(span_max));
        }
    }
    let span_sum = subgroupAdd((local_sum.x + local_sum.y) + (local_sum.z + local_sum.w));
    let inverse = 1.0 / span_sum;
    if (cached) {
        if (w0 < end) {
            store_word(base + w0, z0 * inverse);
        }
        if (w1 < end) {
            store_word(base + w1, z1 * inverse);
        }
        if (w2 < end) {
            store_word(base + w2, z2 * inverse);
        }
        if (w3 < end) {
            store_word(base + w3, z3 * inverse);
        }
        if (w4 < end) {
            store_word(base + w4, z4 * inverse);
        }
        if (w5 < end) {
            store_word(base + w5, z5 * inverse);
        }
        if (w6 < end) {
            store_word(base + w6, z6 * inverse);
        }
        if (w7 < end) {
            store_word(base + w7, z7 * inverse);
        }
    } else {
        for (var w = start + lane; w < end; w += lanes) {
            let value = data_word(base + w) + bias_word(bias_base + w);
            store_word(base + w, exp(value - vec4<f32>(span_max)) * inverse);
        }
    }

}
