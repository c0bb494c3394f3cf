// Tint compiles `enable subgroups;` (case.json's `webEnables`) and then this file; its
// message must name this file's line 8, not line 9 of what it compiled.
@group(0) @binding(0) var<storage, read_write> values: array<f32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let lowest = subgroupMin(values[id.x]);
    values[id.x] = max(lowest, -3.40282347e38);
}
