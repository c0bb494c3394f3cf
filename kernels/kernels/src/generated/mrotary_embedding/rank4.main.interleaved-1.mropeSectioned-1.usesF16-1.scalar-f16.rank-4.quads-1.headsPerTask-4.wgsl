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
@group(0) @binding(2) var<storage, read> cos_cache: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> sin_cache: array<vec4<f16>>;
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

// Four adjacent pairs of `headsPerTask` heads of one token per invocation (the hints' `quads`:
// heads without a tail whose pair count is a multiple of 4; `x`, `y` and the caches are vec4
// words). The heads of a token share its positions and so its cos and sin values: they are
// computed once and used for every head, and each word of every head is loaded before any is
// stored.
const HEADS_PER_TASK: u32 = 4u;

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    let half = params.halfRotaryDim;
    let quads = half / 4u;
    let groups = (params.numHeads + HEADS_PER_TASK - 1u) / HEADS_PER_TASK;
    let task = (workgroup.x + workgroup.y * workgroups.x) * WORKGROUP_SIZE + lane;
    let tokens = params.batchSize * params.sequenceLength;
    // Tasks are (token, head group, quad) in that order, so adjacent lanes take adjacent words.
    let quad = task % quads;
    let token_group = task / quads;
    let token = token_group / groups;
    if (token >= tokens) {
        return;
    }
    let first_head = (token_group - token * groups) * HEADS_PER_TASK;
    let j0 = quad * 4u;
    let positions = vec3<u32>(position_ids[token], position_ids[token + tokens], position_ids[token + 2u * tokens]);
    // The caches are vec4 words here too: a cache row holds `half` (a multiple of 4) values.
    let rows = arrayLength(&cos_cache) * 4u / half;
    var cos_values: vec4<f32>;
    var sin_values: vec4<f32>;
    var keep: vec4<bool>;
    let stream = stream_of(j0);
    let streams = vec3<u32>(stream_of(j0 + 1u), stream_of(j0 + 2u), stream_of(j0 + 3u));
    if (all(streams == vec3<u32>(stream))) {
        // The four pairs rotate with one position: one word of each cache.
        let position = positions[stream];
        // Positions past the cache pass their pairs through, as in the one-pair path.
        keep = vec4<bool>(position >= rows);
        let word = select((position * half + j0) / 4u, 0u, position >= rows);
        cos_values = params.scale * vec4<f32>(cos_cache[word]);
        sin_values = params.scale * vec4<f32>(sin_cache[word]);
    } else {
        for (var k = 0u; k < 4u; k += 1u) {
            let position = positions[stream_of(j0 + k)];
            keep[k] = position >= rows;
            let word = select((position * half + j0) / 4u, 0u, keep[k]);
            cos_values[k] = params.scale * f32(cos_cache[word][k]);
            sin_values[k] = params.scale * f32(sin_cache[word][k]);
        }
    }
    // Rows are (batch, head, token) in that order.
    let b = token / params.sequenceLength;
    let first_row = (b * params.numHeads + first_head) * params.sequenceLength + token - b * params.sequenceLength;
    let row_step = params.sequenceLength;
    // Pairs (2j, 2j+1): two adjacent words.
    let offset_a = (2u * j0) / 4u;
    let offset_b = offset_a + 1u;
    let present0 = first_head + 0u < params.numHeads;
    let word0 = ((first_row + 0u * row_step) * params.headSize) / 4u;
    var a0: vec4<f32>;
    var b0: vec4<f32>;
    if (present0) {
        a0 = vec4<f32>(x[word0 + offset_a]);
        b0 = vec4<f32>(x[word0 + offset_b]);
    }
    let present1 = first_head + 1u < params.numHeads;
    let word1 = ((first_row + 1u * row_step) * params.headSize) / 4u;
    var a1: vec4<f32>;
    var b1: vec4<f32>;
    if (present1) {
        a1 = vec4<f32>(x[word1 + offset_a]);
        b1 = vec4<f32>(x[word1 + offset_b]);
    }
    let present2 = first_head + 2u < params.numHeads;
    let word2 = ((first_row + 2u * row_step) * params.headSize) / 4u;
    var a2: vec4<f32>;
    var b2: vec4<f32>;
    if (present2) {
        a2 = vec4<f32>(x[word2 + offset_a]);
        b2 = vec4<f32>(x[word2 + offset_b]);
    }
    let present3 = first_head + 3u < params.numHeads;
    let word3 = ((first_row + 3u * row_step) * params.headSize) / 4u;
    var a3: vec4<f32>;
    var b3: vec4<f32>;
    if (present3) {
        a3 = vec4<f32>(x[word3 + offset_a]);
        b3 = vec4<f32>(x[word3 + offset_b]);
    }
    if (present0) {
        let a = vec4<f32>(a0.x, a0.z, b0.x, b0.z);
        let b = vec4<f32>(a0.y, a0.w, b0.y, b0.w);
        let ya = select(a * cos_values - b * sin_values, a, keep);
        let yb = select(b * cos_values + a * sin_values, b, keep);
        y[word0 + offset_a] = vec4<f16>(vec4<f32>(ya.x, yb.x, ya.y, yb.y));
        y[word0 + offset_b] = vec4<f16>(vec4<f32>(ya.z, yb.z, ya.w, yb.w));
    }
    if (present1) {
        let a = vec4<f32>(a1.x, a1.z, b1.x, b1.z);
        let b = vec4<f32>(a1.y, a1.w, b1.y, b1.w);
        let ya = select(a * cos_values - b * sin_values, a, keep);
        let yb = select(b * cos_values + a * sin_values, b, keep);
        y[word1 + offset_a] = vec4<f16>(vec4<f32>(ya.x, yb.x, ya.y, yb.y));
        y[word1 + offset_b] = vec4<f16>(vec4<f32>(ya.z, yb.z, ya.w, yb.w));
    }
    if (present2) {
        let a = vec4<f32>(a2.x, a2.z, b2.x, b2.z);
        let b = vec4<f32>(a2.y, a2.w, b2.y, b2.w);
        let ya = select(a * cos_values - b * sin_values, a, keep);
        let yb = select(b * cos_values + a * sin_values, b, keep);
        y[word2 + offset_a] = vec4<f16>(vec4<f32>(ya.x, yb.x, ya.y, yb.y));
        y[word2 + offset_b] = vec4<f16>(vec4<f32>(ya.z, yb.z, ya.w, yb.w));
    }
    if (present3) {
        let a = vec4<f32>(a3.x, a3.z, b3.x, b3.z);
        let b = vec4<f32>(a3.y, a3.w, b3.y, b3.w);
        let ya = select(a * cos_values - b * sin_values, a, keep);
        let yb = select(b * cos_values + a * sin_values, b, keep);
        y[word3 + offset_a] = vec4<f16>(vec4<f32>(ya.x, yb.x, ya.y, yb.y));
        y[word3 + offset_b] = vec4<f16>(vec4<f32>(ya.z, yb.z, ya.w, yb.w));
    }
}
