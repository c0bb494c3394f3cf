// `-f32::MAX` written as its shortest decimal: naga rounds it to the nearest f32, Tint refuses
// a literal whose exact value lies past f32's range.
const LOWEST: f32 = -3.40282347e38;

@group(0) @binding(0) var<storage, read_write> values: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    values[id.x] = max(values[id.x], LOWEST);
}
