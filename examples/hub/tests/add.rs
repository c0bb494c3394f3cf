//! `ai.onnx.Add` on the adapter, every variant, against a float64 reference on seeded data:
//! each case names the variant its shapes select, so a change in selection fails here too.
//!
//! Without the Hub manifests (`$KERNEL_HUB_DIR`, else `../shared/hub`) the crate has no ops
//! and this file no tests.

#![cfg(hub)]

mod common;

use common::{broadcast, broadcast_source};
use hub::runtime::DType;

/// `a + b` broadcast, wrapped to `dtype`'s width for the 8-bit integers.
fn reference(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], dtype: DType) -> Vec<f64> {
    let out = broadcast(sa, sb);
    let n: usize = out.iter().product();
    (0..n)
        .map(|i| a[broadcast_source(sa, &out, i)] + b[broadcast_source(sb, &out, i)])
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
    let ctx = test_support::context();
    if !common::runs(&ctx, dtype, &dtype.to_string()) {
        return;
    }
    let what = format!("{dtype} {sa:?} + {sb:?} ({variant})");
    let na: usize = sa.iter().product();
    let nb: usize = sb.iter().product();
    let (a, b) = (values(dtype, na, 1), values(dtype, nb, 2));
    let ta = common::upload(&ctx, dtype, sa, &a, "a");
    let tb = common::upload(&ctx, dtype, sb, &b, "b");
    let (chosen, out) = common::run(&ctx, "ai.onnx.Add", &[&ta, &tb], &[], &what);
    assert_eq!(chosen, variant, "{what}");
    // The reference as the output stores it; only f16 is not exact.
    let want: Vec<(f64, f64)> = reference(&a, sa, &b, sb, dtype)
        .into_iter()
        .map(|w| {
            let w = match dtype {
                DType::F16 => f64::from(half::f16::from_f64(w)),
                DType::F32 => f64::from(w as f32),
                _ => w,
            };
            (w, w.abs().max(1.0))
        })
        .collect();
    let tolerance = if dtype == DType::F16 { 2e-3 } else { 0.0 };
    common::assert_output(&ctx, &out, &broadcast(sa, sb), &want, tolerance, &what);
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
    // A last block of one word.
    check(DType::F32, &[65537, 4], &[4], "broadcast_vec4");
}

#[test]
fn a_launch_folded_past_one_row_gives_every_word_once() {
    // 65536 blocks of 256 words (128 MiB in float16, the most a binding holds on some
    // adapters): the manifest launches two rows of 65535 workgroups, and the templates move
    // half a block a workgroup, so every workgroup launched has a slot and the first two
    // have a second one (slots 131070 and 131071).
    check(DType::F16, &[65536, 1024], &[1], "scalar_b_vec4");
    check(DType::F16, &[65536, 1024], &[1024], "broadcast_vec4");
}

#[test]
fn a_folded_launch_of_32_bit_words_gives_every_word_once() {
    // The same launch in float32, 256 MiB an operand, where the adapter's bindings allow it.
    let ctx = test_support::context();
    let binding = ctx.caps().limit("maxStorageBufferBindingSize").unwrap_or(0);
    if binding < 256 << 20 {
        eprintln!("bindings of at most {binding} bytes on this adapter: the 256 MiB fold skipped");
        return;
    }
    check(
        DType::F32,
        &[65536, 1024],
        &[65536, 1024],
        "same_shape_vec4",
    );
    check(DType::F32, &[65536, 1024], &[1], "scalar_b_vec4");
    check(DType::F32, &[65536, 1024], &[1024], "broadcast_vec4");
}
