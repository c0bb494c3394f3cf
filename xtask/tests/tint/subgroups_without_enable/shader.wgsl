// naga accepts subgroup builtins with the SUBGROUP capability alone; WGSL (Tint) requires
// `enable subgroups;`, which is why the runtime puts `Shader::web_enables` in front on the web.
@group(0) @binding(0) var<storage, read_write> values: array<f32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    values[id.x] = subgroupShuffleXor(values[id.x], 1u);
}
