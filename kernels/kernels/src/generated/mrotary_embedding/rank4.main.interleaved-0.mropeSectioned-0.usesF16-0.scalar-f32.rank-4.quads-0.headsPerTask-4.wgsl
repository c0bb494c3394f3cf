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
    let row = task / tasks_per_head;
    let t = task - row * tasks_per_head;
    // Rows are (batch, head, token) in that order.
    let batch_head = row / params.sequenceLength;
    let s = row - batch_head * params.sequenceLength;
    let b = batch_head / params.numHeads;
    let base = row * params.headSize;
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
