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

var<workgroup> projection: array<f32, MAX_PROJ>;
var<workgroup> shared_gate: f32;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
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

    if (lane < params.projDim) {
        var acc = f32(bias[lane]);
        for (var k = 0u; k < params.headSize; k += 1u) {
            let q = f32(query_layer[query_base + k]) + f32(query_bias[bias_base + k]);
            acc += q * f32(weight[k * params.projDim + lane]);
        }
        projection[lane] = acc;
    }
    workgroupBarrier();
    if (lane == 0u) {
        var sum_u = 0.0;
        var sum_r = 0.0;
        for (var e = 0u; e < params.projDim; e += 1u) {
            if (e < half) {
                sum_u += projection[e];
            } else {
                sum_r += projection[e];
            }
        }
        shared_gate = logistic(sum_u) * (logistic(sum_r) * f32(eco_a[n]) - 1.0) + 2.0;
    }
    let gate = workgroupUniformLoad(&shared_gate);

    let rel_base = (n * params.seqLen + s) * params.seqLen;
    let out_base = ((b * params.numHeads + n) * params.seqLen + s) * params.seqLen;
    for (var t = lane * 4u; t < params.seqLen; t += WORKGROUP_SIZE * 4u) {
        output[out_base + t] = f16(gate * f32(rel_pos[rel_base + t]));
        output[out_base + t + 1u] = f16(gate * f32(rel_pos[rel_base + t + 1u]));
        output[out_base + t + 2u] = f16(gate * f32(rel_pos[rel_base + t + 2u]));
        output[out_base + t + 3u] = f16(gate * f32(rel_pos[rel_base + t + 3u]));
    }
}
