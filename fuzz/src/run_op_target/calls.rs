//! The valid calls `run-op`'s fuzz target starts from, one small call per op, and how
//! an op names its inputs: by role (the Hub's bind key) or by ONNX name.

use std::sync::OnceLock;

/// A valid call: the op, its attributes and its tensors (name, dtype, shape, little-endian
/// bytes).
#[derive(Debug, Clone)]
pub struct Call {
    pub op: &'static str,
    pub attrs: Vec<String>,
    pub tensors: Vec<(String, String, Vec<u64>, Vec<u8>)>,
}

fn floats(n: usize, scale: f32) -> Vec<u8> {
    (0..n)
        .flat_map(|i| ((i as f32 * 0.37).sin() * scale).to_le_bytes())
        .collect()
}

fn halves(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            half::f16::from_f32((i as f32 * 0.37).sin())
                .to_bits()
                .to_le_bytes()
        })
        .collect()
}

fn ints(values: impl Iterator<Item = i64>) -> Vec<u8> {
    values.flat_map(i64::to_le_bytes).collect()
}

/// One small valid call per seed op, float32 and float16, and one of the Hub's Add where it
/// was built (built once).
pub fn calls() -> &'static [Call] {
    static CALLS: OnceLock<Vec<Call>> = OnceLock::new();
    CALLS.get_or_init(build_calls)
}

fn build_calls() -> Vec<Call> {
    let tensor = |name: &str, dtype: &str, shape: &[u64], bytes: Vec<u8>| {
        (name.to_owned(), dtype.to_owned(), shape.to_vec(), bytes)
    };
    let mut out = Vec::new();
    for f16 in [false, true] {
        let (dtype, data): (&str, fn(usize) -> Vec<u8>) = if f16 {
            ("F16", halves)
        } else {
            ("F32", |n| floats(n, 1.0))
        };
        out.push(Call {
            op: "com.microsoft.MRotaryEmbedding",
            attrs: vec!["num_heads=2".into(), "mrope_section=2,1,1".into()],
            tensors: vec![
                tensor("input", dtype, &[2, 3, 16], data(96)),
                tensor(
                    "position_ids",
                    "I64",
                    &[3, 2, 3],
                    ints((0..18).map(|i| i % 16)),
                ),
                tensor("cos_cache", dtype, &[16, 4], data(64)),
                tensor("sin_cache", dtype, &[16, 4], data(64)),
            ],
        });
        out.push(Call {
            op: "com.microsoft.BiasSoftmax",
            attrs: vec!["axis=-1".into(), "is_inner_broadcast=1".into()],
            tensors: vec![
                tensor("data", dtype, &[2, 3, 10], data(60)),
                tensor("bias", dtype, &[2, 1, 10], data(20)),
            ],
        });
        out.push(Call {
            op: "com.microsoft.GatedRelativePositionBias",
            attrs: vec!["num_heads=2".into()],
            tensors: vec![
                tensor("query_layer", dtype, &[2, 5, 8], data(80)),
                tensor("query_bias", dtype, &[8], data(8)),
                tensor("rel_pos", dtype, &[1, 2, 5, 5], data(50)),
                tensor("weight", dtype, &[4, 4], data(16)),
                tensor("bias", dtype, &[4], data(4)),
                tensor("eco_a", dtype, &[1, 2, 1, 1], data(2)),
            ],
        });
    }
    // An op whose inputs have ONNX names besides their bind keys (`a` and `A`), where the
    // Hub's ops were built.
    if kernels_tools::ops().any(|e| e.qualified_name == "ai.onnx.Add") {
        out.push(Call {
            op: "ai.onnx.Add",
            attrs: Vec::new(),
            tensors: vec![
                tensor("a", "F32", &[2, 4], floats(8, 1.0)),
                tensor("b", "F32", &[2, 4], floats(8, 2.0)),
            ],
        });
    }
    out
}

/// The other spelling of input `name` of op `op`: its ONNX name where `name` is its bind key
/// and the other way round; `name` upper-cased where the op has no such input.
pub(super) fn other_spelling(op: &str, name: &str) -> String {
    let inputs = kernels_tools::ops()
        .find(|e| e.matches(op))
        .map(|e| e.inputs)
        .unwrap_or_default();
    inputs
        .iter()
        .filter(|r| !r.onnx.is_empty())
        .find_map(|r| {
            (r.role == name)
                .then_some(r.onnx)
                .or((r.onnx == name).then_some(r.role))
        })
        .map_or_else(|| name.to_uppercase(), str::to_owned)
}

/// An input of `op` that the safetensors `file` holds under both its names, where one is.
pub(super) fn named_twice(op: &str, file: &[u8]) -> Option<String> {
    let file = safetensors::SafeTensors::deserialize(file).ok()?;
    let names = file.names();
    let entry = kernels_tools::ops().find(|e| e.matches(op))?;
    (entry.inputs.iter())
        .find(|r| {
            !r.onnx.is_empty()
                && r.onnx != r.role
                && names.contains(&r.role)
                && names.contains(&r.onnx)
        })
        .map(|r| format!("`{}` and `{}`", r.role, r.onnx))
}
