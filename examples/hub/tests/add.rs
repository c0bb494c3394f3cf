//! `ai.onnx.Add` on the adapter, every variant, against a float64 reference on seeded data:
//! each case names the variant its shapes select, so a change in selection fails here too.
//!
//! Without the Hub manifests (`$KERNEL_HUB_DIR`, else `../shared/hub`) the crate has no ops
//! and this file no tests.

#![cfg(hub)]

use hub::runtime::{AnyTensor, DType};

/// The shape `a` and `b` broadcast to, as ONNX broadcasts.
fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
    (0..rank)
        .map(|i| if at(a, i) == 1 { at(b, i) } else { at(a, i) })
        .collect()
}

/// The element of `values` (of `shape`) that output index `index` (of `out`) reads.
fn source(values: &[f64], shape: &[usize], out: &[usize], mut index: usize) -> f64 {
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
    values[at]
}

/// `a + b` broadcast, wrapped to `dtype`'s width for the 8-bit integers.
fn reference(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], dtype: DType) -> Vec<f64> {
    let out = broadcast(sa, sb);
    let n: usize = out.iter().product();
    (0..n)
        .map(|i| source(a, sa, &out, i) + source(b, sb, &out, i))
        .map(|v| match dtype {
            DType::I8 => f64::from((v as i64) as i8),
            DType::U8 => f64::from((v as i64) as u8),
            _ => v,
        })
        .collect()
}

/// Seeded values for `dtype`: floats in [-1, 1), integers across the type's range.
fn values(dtype: DType, len: usize, seed: u64) -> Vec<f64> {
    let floats = test_support::data(len, seed);
    floats
        .iter()
        .map(|&x| {
            let x = f64::from(x);
            match dtype {
                DType::I8 => (x * 127.0).round(),
                DType::U8 => ((x + 1.0) * 127.5).floor(),
                DType::I32 => (x * 1.0e6).round(),
                DType::U32 => ((x + 1.0) * 1.0e6).round(),
                _ => x,
            }
        })
        .collect()
}

fn check(dtype: DType, sa: &[usize], sb: &[usize], variant: &str) {
    if hub::skip_without_hub("add") {
        return;
    }
    let ctx = test_support::context();
    if dtype == DType::F16 && !ctx.caps().has_feature("shader-f16") {
        eprintln!("no shader-f16 on this adapter: {dtype} skipped");
        return;
    }
    let entry = hub::ops()
        .iter()
        .find(|e| e.matches("ai.onnx.Add"))
        .expect("Add is generated");
    let na: usize = sa.iter().product();
    let nb: usize = sb.iter().product();
    let (a, b) = (values(dtype, na, 1), values(dtype, nb, 2));
    let ta = AnyTensor::from_f64(&ctx, dtype, sa, &a).expect("upload a");
    let tb = AnyTensor::from_f64(&ctx, dtype, sb, &b).expect("upload b");
    let run = entry.run(&ctx, &[&ta, &tb], &[]).expect("Add runs");
    assert_eq!(run.variant, variant, "{dtype} {sa:?} + {sb:?}");
    let out = &run.outputs[0];
    assert_eq!(out.shape(), broadcast(sa, sb).as_slice());
    let got = out.to_f64_vec(&ctx).expect("read c");
    let want = reference(&a, sa, &b, sb, dtype);
    let tolerance = if dtype == DType::F16 { 2e-3 } else { 0.0 };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let w = if dtype == DType::F16 {
            f64::from(half::f16::from_f64(*w))
        } else if dtype == DType::F32 {
            f64::from(*w as f32)
        } else {
            *w
        };
        assert!(
            (g - w).abs() <= tolerance * w.abs().max(1.0),
            "{dtype} {sa:?} + {sb:?} ({variant}): element {i} is {g}, want {w}"
        );
    }
}

#[test]
fn same_shape_runs_four_elements_a_word() {
    for dtype in [
        DType::F32,
        DType::F16,
        DType::I32,
        DType::U32,
        DType::I8,
        DType::U8,
    ] {
        check(dtype, &[16, 64], &[16, 64], "same_shape_vec4");
    }
    // Past 16 MiB each invocation covers one word.
    check(DType::F32, &[1 << 22, 2], &[1 << 22, 2], "same_shape_vec4");
}

#[test]
fn a_one_element_operand_is_splatted() {
    for dtype in [DType::F32, DType::I8] {
        check(dtype, &[6, 8], &[1], "scalar_b_vec4");
        check(dtype, &[1, 1], &[6, 8], "scalar_a_vec4");
    }
}

#[test]
fn broadcasting_shapes_index_each_operand() {
    for dtype in [DType::F32, DType::F16, DType::U8] {
        check(dtype, &[3, 4, 8], &[4, 1], "broadcast_vec4");
        check(dtype, &[2, 1, 4], &[3, 1], "broadcast_vec4");
        check(dtype, &[3, 5], &[5], "broadcast");
        check(
            dtype,
            &[2, 1, 3, 1, 2, 1, 3],
            &[1, 2, 1, 3, 1, 2, 1],
            "broadcast_vec4",
        );
        check(
            dtype,
            &[3, 1, 1, 1, 5, 1, 1],
            &[1, 1, 1, 3, 1, 1, 1],
            "broadcast",
        );
    }
}

#[test]
fn rank_zero_and_empty_outputs() {
    check(DType::F32, &[], &[], "broadcast");
    check(DType::F32, &[3, 0], &[1], "broadcast");
    // Past one row of 65535 workgroups, the dispatch folds over y.
    check(DType::F32, &[65537, 4], &[4], "broadcast_vec4");
}
