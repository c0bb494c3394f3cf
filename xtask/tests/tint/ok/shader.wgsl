// What a generated subgroup shader looks like: an override, a uniform, a storage binding, and
// the `enable subgroups;` of case.json's `webEnables` in front for Tint. No problems.
override scale: f32;

struct Params {
    count: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> values: array<f32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let value = subgroupShuffleXor(values[id.x], 1u) * scale;
    if id.x < params.count {
        values[id.x] = value;
    }
}
