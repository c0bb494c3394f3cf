enable f16;

struct Params {
    relRows: u32,
    batchSize: u32,
    numHeads: u32,
    seqLen: u32,
    headSize: u32,
    projDim: u32,
}

@group(0) @binding(0) var<storage, read> query_layer: array<f16>;
@group(0) @binding(1) var<storage, read> query_bias: array<f16>;
@group(0) @binding(2) var<storage, read> rel_pos: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> weight: array<f16>;
@group(0) @binding(4) var<storage, read> bias: array<f16>;
@group(0) @binding(5) var<storage, read> eco_a: array<f16>;
@group(0) @binding(6) var<storage, read_write> output: array<vec4<f16>>;
@group(0) @binding(7) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
const MAX_PROJ: u32 = 32u;
// Lanes that reduce one batch's projection; a power of two.
const BATCH_LANES: u32 = 32u;
const CHUNK: u32 = WORKGROUP_SIZE / BATCH_LANES;
var<workgroup> subgroup_sums: array<vec2<f32>, WORKGROUP_SIZE>;
var<workgroup> gates: array<f32, CHUNK>;

fn logistic(v: f32) -> f32 {
    return 1.0 / (1.0 + exp(-v));
}

fn gate_of(sum_u: f32, sum_r: f32, n: u32) -> f32 {
    return logistic(sum_u) * (logistic(sum_r) * f32(eco_a[n]) - 1.0) + 2.0;
}

fn query_value(b: u32, s: u32, n: u32, k: u32) -> f32 {
    let hidden = params.numHeads * params.headSize;
    return f32(query_layer[(b * params.seqLen + s) * hidden + n * params.headSize + k])
        + f32(query_bias[n * params.headSize + k]);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(subgroup_size) subgroup_size: u32,
    @builtin(subgroup_invocation_id) lane_in_subgroup: u32,
) {
    // The runtime may split the rows over x and y.
    let row = workgroup.x + workgroup.y * workgroups.x;
    if (row >= params.relRows) {
        return;
    }
    let s = row % params.seqLen;
    let n = row / params.seqLen;
    let half = params.projDim / 2u;
    let rel_base = row * params.seqLen;
    let row_stride = params.seqLen * params.seqLen;

    let batch_lanes = BATCH_LANES;
    let chunk = CHUNK;
    let local_batch = lane / batch_lanes;
    let lane_in_batch = lane % batch_lanes;
    // Each lane's first two words of the rel_pos row are loaded before the gates are
    // computed, so their latency overlaps the projection.
    let words = params.seqLen / 4u;
    let rel_word = rel_base / 4u;
    var early0 = vec4<f32>(0.0);
    var early1 = vec4<f32>(0.0);
    if (lane < words) {
        early0 = vec4<f32>(rel_pos[rel_word + lane]);
    }
    if (lane + WORKGROUP_SIZE < words) {
        early1 = vec4<f32>(rel_pos[rel_word + lane + WORKGROUP_SIZE]);
    }
    for (var first = 0u; first < params.batchSize; first += chunk) {
        let b = first + local_batch;
        let in_chunk = local_batch < chunk && b < params.batchSize;
        var partial = vec2<f32>(0.0, 0.0);
        if (in_chunk) {
            // Each lane takes whole query elements: one load of each, then its D products.
            for (var k = lane_in_batch; k < params.headSize; k += BATCH_LANES) {
                let q = query_value(b, s, n, k);
                let weights = k * params.projDim;
                for (var e = 0u; e < half; e += 1u) {
                    partial.x += q * f32(weight[weights + e]);
                }
                for (var e = half; e < params.projDim; e += 1u) {
                    partial.y += q * f32(weight[weights + e]);
                }
            }
        }
        // Butterfly within the subgroup over the lanes of one batch, then across the
        // subgroups of a batch group through workgroup memory.
        let within = min(BATCH_LANES, subgroup_size);
        for (var offset = within / 2u; offset > 0u; offset /= 2u) {
            partial += subgroupShuffleXor(partial, offset);
        }
        subgroup_sums[lane] = partial;
        workgroupBarrier();
        if (lane_in_batch == 0u && in_chunk) {
            var total = vec2<f32>(0.0, 0.0);
            for (var i = 0u; i < BATCH_LANES; i += within) {
                total += subgroup_sums[lane + i];
            }
            var sum_u = total.x;
            var sum_r = total.y;
            for (var e = 0u; e < params.projDim; e += 1u) {
                if (e < half) {
                    sum_u += f32(bias[e]);
                } else {
                    sum_r += f32(bias[e]);
                }
            }
            gates[local_batch] = gate_of(sum_u, sum_r, n);
        }
        workgroupBarrier();

        let batches = min(chunk, params.batchSize - first);
        let out_base = (first * params.numHeads + n) * row_stride + s * params.seqLen;
        let batch_stride = params.numHeads * row_stride;
        // rel_pos and output are seen as vec4 words here (the manifest's `vec4When`).
        for (var w = lane; w < words; w += WORKGROUP_SIZE) {
            var r = early0;
            if (w == lane + WORKGROUP_SIZE) {
                r = early1;
            } else if (w != lane) {
                r = vec4<f32>(rel_pos[rel_word + w]);
            }
            for (var i = 0u; i < batches; i += 1u) {
                output[(out_base + i * batch_stride) / 4u + w] = vec4<f16>(gates[i] * r);
            }
        }
        // The next chunk rewrites the gates and the scratch.
        workgroupBarrier();
    }
}
