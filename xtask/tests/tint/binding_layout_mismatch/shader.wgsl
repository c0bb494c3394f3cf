// The uniform struct is 512 bytes, but the buffer bound (case.json: 64 bytes, allocated as 256)
// is smaller: the shader compiles and the pipeline is created, the bind group is refused.
struct Params {
    rows: array<vec4<u32>, 32>,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> values: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    values[id.x] = params.rows[id.x % 32u].x;
}
