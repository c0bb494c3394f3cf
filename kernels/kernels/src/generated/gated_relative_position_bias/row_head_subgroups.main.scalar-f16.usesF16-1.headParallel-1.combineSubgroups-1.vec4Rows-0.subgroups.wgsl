enable f16;

struct Params {
    rows: u32,
    batchSize: u32,
    numHeads: u32,
    seqLen: u32,
    headSize: u32,
    projDim: u32,
}

@group(0) @binding(0) var<storage, read> query_layer: array<f16>;
@group(0) @binding(1) var<storage, read> query_bias: array<f16>;
@group(0) @binding(2) var<storage, read> rel_pos: array<f16>;
@group(0) @binding(3) var<storage, read> weight: array<f16>;
@group(0) @binding(4) var<storage, read> bias: array<f16>;
@group(0) @binding(5) var<storage, read> eco_a: array<f16>;
@group(0) @binding(6) var<storage, read_write> output: array<f16>;
@group(0) @binding(7) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const MAX_PROJ: u32 = 32u;

fn logistic(v: f32) -> f32 {
    return 1.0 / (1.0 + exp(-v));
}

var<workgroup> reduction_scratch: array<f32, 256>;

fn workgroup_max(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    let partial = subgroupMax(value);
    if (lane_in_subgroup == 0u) {
        reduction_scratch[subgroup] = partial;
    }
    workgroupBarrier();
    var result = reduction_scratch[0];
    for (var i = 1u; i < subgroups; i += 1u) {
        result = max(result, reduction_scratch[i]);
    }
    workgroupBarrier();
    return result;
}

fn workgroup_sum(value: f32, lane: u32, subgroup: u32, lane_in_subgroup: u32, subgroups: u32) -> f32 {
    let partial = subgroupAdd(value);
    if (lane_in_subgroup == 0u) {
        reduction_scratch[subgroup] = partial;
    }
    workgroupBarrier();
    var result = reduction_scratch[0];
    for (var i = 1u; i < subgroups; i += 1u) {
        result += reduction_scratch[i];
    }
    workgroupBarrier();
    return result;
}


@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(subgroup_id) subgroup: u32,
    @builtin(subgroup_invocation_id) lane_in_subgroup: u32,
    @builtin(num_subgroups) subgroups: u32,
) {
    // The runtime may split the rows over x and y.
    let row = workgroup.x + workgroup.y * workgroups.x;
    if (row >= params.rows) {
        return;
    }
    // Rows run batch-fastest, so the workgroups of one rel_pos row are adjacent in time.
    let b = row % params.batchSize;
    let head_row = row / params.batchSize;
    let s = head_row % params.seqLen;
    let n = head_row / params.seqLen;
    let hidden = params.numHeads * params.headSize;
    let query_base = (b * params.seqLen + s) * hidden + n * params.headSize;
    let bias_base = n * params.headSize;
    let half = params.projDim / 2u;

    var partial_u = 0.0;
    var partial_r = 0.0;
    let products = params.headSize * params.projDim;
    for (var p = lane; p < products; p += WORKGROUP_SIZE) {
        let k = p / params.projDim;
        let e = p % params.projDim;
        let q = f32(query_layer[query_base + k]) + f32(query_bias[bias_base + k]);
        let product = q * f32(weight[p]);
        if (e < half) {
            partial_u += product;
        } else {
            partial_r += product;
        }
    }
    var sum_u = workgroup_sum(partial_u, lane, subgroup, lane_in_subgroup, subgroups);
    var sum_r = workgroup_sum(partial_r, lane, subgroup, lane_in_subgroup, subgroups);
    for (var e = 0u; e < params.projDim; e += 1u) {
        if (e < half) {
            sum_u += f32(bias[e]);
        } else {
            sum_r += f32(bias[e]);
        }
    }
    let gate = logistic(sum_u) * (logistic(sum_r) * f32(eco_a[n]) - 1.0) + 2.0;

    let rel_base = (n * params.seqLen + s) * params.seqLen;
    let out_base = ((b * params.numHeads + n) * params.seqLen + s) * params.seqLen;
    for (var t = lane; t < params.seqLen; t += WORKGROUP_SIZE) {
        output[out_base + t] = f16(gate * f32(rel_pos[rel_base + t]));
    }
}
