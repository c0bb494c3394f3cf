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
@group(0) @binding(2) var<storage, read> rel_pos: array<f16>;
@group(0) @binding(3) var<storage, read> weight: array<f16>;
@group(0) @binding(4) var<storage, read> bias: array<f16>;
@group(0) @binding(5) var<storage, read> eco_a: array<f16>;
@group(0) @binding(6) var<storage, read_write> output: array<f16>;
@group(0) @binding(7) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;
// rel_pos rows per workgroup, a power of two at most 8: at most the slots of a chunk,
// WORKGROUP_SIZE / D >= 8.
const ROWS: u32 = 4u;
const_assert ROWS == 1u || ROWS == 2u || ROWS == 4u || ROWS == 8u;
// Lanes that reduce one slot's projection, a power of two: 32 over the rows of a workgroup,
// so that a chunk holds eight batches of each row.
const SLOT_LANES: u32 = 32u / ROWS;
const SLOTS: u32 = WORKGROUP_SIZE / SLOT_LANES;
// Per query element k, the sums of its weights over each half of the projection: the two
// half-sums of the projected row are then dot products with these (sum over e of q_k w_ke
// regrouped), one product per element instead of D. Used when the head fits (head_size at
// most WORKGROUP_SIZE).
var<workgroup> weight_sums: array<vec2<f32>, WORKGROUP_SIZE>;
var<workgroup> sums: array<vec2<f32>, WORKGROUP_SIZE>;
var<workgroup> gates: array<f32, SLOTS>;

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
) {
    // The runtime may split the workgroups over x and y.
    let first_row = (workgroup.x + workgroup.y * workgroups.x) * ROWS;
    if (first_row >= params.relRows) {
        return;
    }
    let rows = min(ROWS, params.relRows - first_row);
    let half = params.projDim / 2u;
    let row_stride = params.numHeads * params.seqLen * params.seqLen;

    let slot_lanes = SLOT_LANES;
    let slots = SLOTS;
    // Slot j of a chunk is (row j / batches_per_chunk, batch first + j % batches_per_chunk).
    let batches_per_chunk = max(1u, slots / ROWS);
    let slot = lane / slot_lanes;
    let lane_in_slot = lane % slot_lanes;
    let slot_row = slot / batches_per_chunk;
    let slot_batch = slot % batches_per_chunk;
    let row = first_row + slot_row;
    let s = row % params.seqLen;
    let n = row / params.seqLen;
    let units = params.seqLen;
    var early0 = f32(0.0);
    var early1 = f32(0.0);
    // The rows are consecutive: unit f of the workgroup's part of rel_pos is unit
    // first_unit + f of rel_pos. Each lane's first two units are loaded before the gates
    // are computed, so their latency overlaps the projection; every chunk reuses them.
    let first_unit = first_row * units;
    let span = rows * units;
    if (lane < span) {
        early0 = f32(rel_pos[first_unit + lane]);
    }
    if (lane + WORKGROUP_SIZE < span) {
        early1 = f32(rel_pos[first_unit + lane + WORKGROUP_SIZE]);
    }
    let summed = params.headSize <= WORKGROUP_SIZE;
    if (summed && lane < params.headSize) {
        let weights = lane * params.projDim;
        var both = vec2<f32>(0.0, 0.0);
        for (var e = 0u; e < half; e += 1u) {
            both.x += f32(weight[weights + e]);
        }
        for (var e = half; e < params.projDim; e += 1u) {
            both.y += f32(weight[weights + e]);
        }
        weight_sums[lane] = both;
    }
    workgroupBarrier();
    for (var first = 0u; first < params.batchSize; first += batches_per_chunk) {
        let b = first + slot_batch;
        let in_chunk = slot < slots && slot_row < rows && b < params.batchSize;
        var partial = vec2<f32>(0.0, 0.0);
        if (in_chunk) {
            // Each lane takes whole query elements: one load of each, then its D products.
            for (var k = lane_in_slot; k < params.headSize; k += SLOT_LANES) {
                let q = query_value(b, s, n, k);
                if (summed) {
                    partial += q * weight_sums[k];
                } else {
                    let weights = k * params.projDim;
                    for (var e = 0u; e < half; e += 1u) {
                        partial.x += q * f32(weight[weights + e]);
                    }
                    for (var e = half; e < params.projDim; e += 1u) {
                        partial.y += q * f32(weight[weights + e]);
                    }
                }
            }
        }
        sums[lane] = partial;
        workgroupBarrier();
        for (var stride = SLOT_LANES / 2u; stride > 0u; stride /= 2u) {
            if (lane_in_slot < stride) {
                sums[lane] += sums[lane + stride];
            }
            workgroupBarrier();
        }
        if (lane_in_slot == 0u && in_chunk) {
            let total = sums[lane];
            var sum_u = total.x;
            var sum_r = total.y;
            for (var e = 0u; e < params.projDim; e += 1u) {
                if (e < half) {
                    sum_u += f32(bias[e]);
                } else {
                    sum_r += f32(bias[e]);
                }
            }
            gates[slot] = gate_of(sum_u, sum_r, n);
        }
        workgroupBarrier();

        // The chunk's rows, unit by unit over all lanes (a unit is a word with vec4Rows).
        let batches = min(batches_per_chunk, params.batchSize - first);
        for (var f = lane; f < span; f += WORKGROUP_SIZE) {
            var r = early0;
            if (f == lane + WORKGROUP_SIZE) {
                r = early1;
            } else if (f != lane) {
                r = f32(rel_pos[first_unit + f]);
            }
            let gate_base = (f / units) * batches_per_chunk;
            for (var i = 0u; i < batches; i += 1u) {
                output[(first + i) * row_stride + first_unit + f] = f16(gates[gate_base + i] * r);
            }
        }
        // The next chunk rewrites the gates and the scratch.
        workgroupBarrier();
    }
}
