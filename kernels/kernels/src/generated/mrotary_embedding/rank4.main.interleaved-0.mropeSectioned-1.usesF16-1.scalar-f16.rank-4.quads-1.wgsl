enable f16;

struct Params {
    pairCount: u32,
    batchSize: u32,
    sequenceLength: u32,
    numHeads: u32,
    headSize: u32,
    rotaryDim: u32,
    halfRotaryDim: u32,
    section0: u32,
    section1: u32,
    section2: u32,
    scale: f32,
}

@group(0) @binding(0) var<storage, read> x: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> position_ids: array<u32>;
@group(0) @binding(2) var<storage, read> cos_cache: array<f16>;
@group(0) @binding(3) var<storage, read> sin_cache: array<f16>;
@group(0) @binding(4) var<storage, read_write> y: array<vec4<f16>>;
@group(0) @binding(5) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;

// Which position stream (0 = temporal, 1 = height, 2 = width) rotates half-index j.
fn stream_of(j: u32) -> u32 {
    if (j < params.section0) {
        return 0u;
    }
    if (j < params.section0 + params.section1) {
        return 1u;
    }
    return 2u;
}

// The element offset, batch and token of head row `row`.
fn row_origin(row: u32) -> vec3<u32> {
    // Rows are (batch, head, token) in that order.
    let batch_head = row / params.sequenceLength;
    return vec3<u32>(row * params.headSize, batch_head / params.numHeads, row - batch_head * params.sequenceLength);
}

// Four adjacent pairs per invocation (the hints' `quads`: heads without a tail whose pair
// count is a multiple of 4, dispatched with a quarter of the invocations); `x` and `y` are
// vec4 words here.
@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let pair = ((workgroup.x + workgroup.y * workgroups.x) * WORKGROUP_SIZE + lane) * 4u;
    if (pair >= params.pairCount) {
        return;
    }
    let half = params.halfRotaryDim;
    let row = pair / half;
    let j0 = pair - row * half;
    let origin = row_origin(row);
    let base = origin.x;
    let token = origin.y * params.sequenceLength + origin.z;
    let streams = params.batchSize * params.sequenceLength;
    let positions = vec3<u32>(position_ids[token], position_ids[token + streams], position_ids[token + 2u * streams]);
    let rows = arrayLength(&cos_cache) / half;
    var cos_values: vec4<f32>;
    var sin_values: vec4<f32>;
    var keep: vec4<bool>;
    for (var k = 0u; k < 4u; k += 1u) {
        let j = j0 + k;
        let position = positions[stream_of(j)];
        // Positions past the cache pass their pair through, as in the one-pair path.
        keep[k] = position >= rows;
        let cache = select(position * half + j, 0u, keep[k]);
        cos_values[k] = params.scale * f32(cos_cache[cache]);
        sin_values[k] = params.scale * f32(sin_cache[cache]);
    }
    // Pairs (j, j + half): one word from each half.
    let word_a = (base + j0) / 4u;
    let word_b = (base + j0 + half) / 4u;
    let a = vec4<f32>(x[word_a]);
    let b = vec4<f32>(x[word_b]);
    let ya = select(a * cos_values - b * sin_values, a, keep);
    let yb = select(b * cos_values + a * sin_values, b, keep);
    y[word_a] = vec4<f16>(ya);
    y[word_b] = vec4<f16>(yb);
}
