//! What the per-op test files share: an op's registry entry and a run through it, uploads,
//! ONNX broadcasting, and the comparison of an output with its float64 reference.

// Each test file is a crate of its own and uses only part of this module.
#![allow(dead_code)]

use hub::runtime::registry::OpEntry;
use hub::runtime::support::AttrValue;
use hub::runtime::{AnyTensor, Context, DType};

/// The registry entry of `op` (`ai.onnx.Add`).
pub fn entry(op: &str) -> &'static OpEntry {
    hub::ops()
        .iter()
        .find(|e| e.matches(op))
        .unwrap_or_else(|| panic!("{op} is generated"))
}

/// Runs `op` through its registry entry; the variant chosen and the first output.
pub fn run(
    ctx: &Context,
    op: &str,
    inputs: &[&AnyTensor],
    attrs: &[(String, AttrValue)],
    what: &str,
) -> (&'static str, AnyTensor) {
    let run = entry(op)
        .run(ctx, inputs, attrs)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = run
        .outputs
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{what}: no output"));
    (run.variant, out)
}

/// `values` of `shape` as a tensor of `dtype`; `name` says which in a failure.
pub fn upload(
    ctx: &Context,
    dtype: DType,
    shape: &[usize],
    values: &[f64],
    name: &str,
) -> AnyTensor {
    AnyTensor::from_f64(ctx, dtype, shape, values).unwrap_or_else(|e| panic!("upload {name}: {e}"))
}

/// Whether the adapter runs `dtype`: f16 needs `shader-f16`; where it is missing, says that
/// `what` is skipped.
pub fn runs(ctx: &Context, dtype: DType, what: &str) -> bool {
    if dtype == DType::F16 && !ctx.caps().has_feature("shader-f16") {
        eprintln!("no shader-f16 on this adapter: {what} skipped");
        return false;
    }
    true
}

/// The shape `a` and `b` broadcast to, as ONNX broadcasts.
pub fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
    (0..rank)
        .map(|i| if at(a, i) == 1 { at(b, i) } else { at(a, i) })
        .collect()
}

/// The element of a `shape` operand that element `index` of the broadcast shape `out` reads.
pub fn broadcast_source(shape: &[usize], out: &[usize], mut index: usize) -> usize {
    let (mut at, mut stride) = (0, 1);
    for axis in (0..out.len()).rev() {
        let coordinate = index % out[axis];
        index /= out[axis];
        if let Some(own) = (axis + shape.len()).checked_sub(out.len()) {
            if shape[own] != 1 {
                at += coordinate * stride;
            }
            stride *= shape[own];
        }
    }
    at
}

/// Asserts that `out` has `shape` and that each element is within `tolerance` × scale of
/// its reference: `want` holds (reference, scale) per element.
pub fn assert_output(
    ctx: &Context,
    out: &AnyTensor,
    shape: &[usize],
    want: &[(f64, f64)],
    tolerance: f64,
    what: &str,
) {
    assert_eq!(out.shape(), shape, "{what}");
    let got = out
        .to_f64_vec(ctx)
        .unwrap_or_else(|e| panic!("{what}: reading the output: {e}"));
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, &(w, scale))) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tolerance * scale,
            "{what}: element {i} is {g}, want {w} (tolerance {tolerance} of {scale})"
        );
    }
}
