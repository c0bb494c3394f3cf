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

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> position_ids: array<u32>;
@group(0) @binding(2) var<storage, read> cos_cache: array<f32>;
@group(0) @binding(3) var<storage, read> sin_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

const WORKGROUP_SIZE: u32 = 256u;

// Which position stream (0 = temporal, 1 = height, 2 = width) rotates half-index j.
fn stream_of(j: u32) -> u32 {
    let lane = j % 3u;
    if (lane == 1u && j / 3u < params.section1) {
        return 1u;
    }
    if (lane == 2u && j / 3u < params.section2) {
        return 2u;
    }
    return 0u;
}

// The row (batch, token, head) element offset, batch and token of row `row`.
fn row_origin(row: u32) -> vec3<u32> {
    let batch_head = row / params.sequenceLength;
    return vec3<u32>(row * params.headSize, batch_head / params.numHeads, row - batch_head * params.sequenceLength);
}

// Rotates pairs j0 .. j0+3 of one head (j0 a multiple of 4, no tail channels).
fn rotate_quad(pair: u32, tasks_per_head: u32) {
    let row = pair / tasks_per_head;
    let j0 = pair - row * tasks_per_head;
    let origin = row_origin(row);
    let base = origin.x;
    let half = params.halfRotaryDim;
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
        keep[k] = position >= rows;
        let cache = select(position * half + j, 0u, keep[k]);
        cos_values[k] = params.scale * f32(cos_cache[cache]);
        sin_values[k] = params.scale * f32(sin_cache[cache]);
    }
    // Pairs (j, j + half): two runs of four adjacent elements.
    let first = base + j0;
    let second = first + half;
    let a = vec4<f32>(f32(x[first]), f32(x[first + 1u]), f32(x[first + 2u]), f32(x[first + 3u]));
    let b = vec4<f32>(f32(x[second]), f32(x[second + 1u]), f32(x[second + 2u]), f32(x[second + 3u]));
    // Positions past the cache pass their pair through (see the scalar path).
    let ya = select(a * cos_values - b * sin_values, a, keep);
    let yb = select(b * cos_values + a * sin_values, b, keep);
    y[first] = f32(ya.x);
    y[first + 1u] = f32(ya.y);
    y[first + 2u] = f32(ya.z);
    y[first + 3u] = f32(ya.w);
    y[second] = f32(yb.x);
    y[second + 1u] = f32(yb.y);
    y[second + 2u] = f32(yb.z);
    y[second + 3u] = f32(yb.w);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) workgroups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
) {
    // The runtime splits large dispatches over x and y; linearise them back.
    let task = (workgroup.x + workgroup.y * workgroups.x) * WORKGROUP_SIZE + lane;
    if (task >= params.pairCount) {
        return;
    }
    // Integer division by uniform values is the costliest arithmetic here: three per task.
    let tasks_per_head = (params.headSize + 1u) / 2u;
    if (params.headSize == params.rotaryDim && params.halfRotaryDim % 4u == 0u) {
        // Heads without a tail whose pair count is a multiple of 4: the first quarter of the
        // invocations rotate four adjacent pairs each, so every access is a run of adjacent
        // elements (wide loads and stores); the rest have nothing to do.
        let pair = task * 4u;
        if (pair < params.pairCount) {
            rotate_quad(pair, tasks_per_head);
        }
        return;
    }
    let row = task / tasks_per_head;
    let t = task - row * tasks_per_head;
    let origin = row_origin(row);
    let b = origin.y;
    let s = origin.z;
    let base = origin.x;
    let half = params.halfRotaryDim;
    if (t >= half) {
        // Channels past the rotary dimension are copied, two per task.
        let c = params.rotaryDim + 2u * (t - half);
        if (c < params.headSize) {
            y[base + c] = x[base + c];
        }
        if (c + 1u < params.headSize) {
            y[base + c + 1u] = x[base + c + 1u];
        }
        return;
    }
    let j = t;
    let first = base + j;
    let second = first + half;
    let stream = stream_of(j);
    let position = position_ids[(stream * params.batchSize + b) * params.sequenceLength + s];
    let xa = x[first];
    let xb = x[second];
    // The host rejects positions past the cache; this guard keeps a bypassed check from
    // reading out of bounds and passes the pair through, as ONNX Runtime's GPU kernels do.
    if (position >= arrayLength(&cos_cache) / half) {
        y[first] = xa;
        y[second] = xb;
        return;
    }
    let cos_value = params.scale * f32(cos_cache[position * half + j]);
    let sin_value = params.scale * f32(sin_cache[position * half + j]);
    let a = f32(xa);
    let bv = f32(xb);
    y[first] = f32(a * cos_value - bv * sin_value);
    y[second] = f32(bv * cos_value + a * sin_value);
}
