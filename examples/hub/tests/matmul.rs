//! `ai.onnx.MatMul` on the adapter, every variant the generator builds, against a float64
//! reference on seeded data (integer types wrapping as WGSL's i32/u32 arithmetic does): each
//! case names the variant its shapes select, so a change in selection fails here too.
//!
//! Selection depends on the device. Variants behind `shader-f16` are skipped where the device
//! lacks it, and those needing `subgroups` run on the default context. Where the adapter
//! reports subgroup sizes other than 32, the f32 word-of-four tiled variants are demoted
//! (`vec4RegTileDemotedWidth`) below every other eligible variant: they run on a context
//! without `subgroups`, where they are not. `folded_rows_notrans_f32_vec4_tiled_reg` needs an
//! adapter whose subgroup sizes admit 32 (`subgroupWidth32NotExcluded`); elsewhere its case
//! says it is skipped.
//!
//! Without the Hub manifests (`$KERNEL_HUB_DIR`, else `../shared/hub`) the crate has no ops
//! and this file no tests.

#![cfg(hub)]

mod common;

use common::{broadcast, broadcast_source};
use hub::runtime::{Context, DType};

/// ONNX MatMul's output shape (NumPy's matmul): a 1-D `a` is a row and a 1-D `b` a column,
/// the added axis dropped; the batch axes broadcast.
fn matmul_shape(sa: &[usize], sb: &[usize]) -> Vec<usize> {
    let (m, n) = (rows(sa), cols(sb));
    let (ba, bb) = (batch_axes(sa), batch_axes(sb));
    let mut out = broadcast(ba, bb);
    if sa.len() > 1 {
        out.push(m);
    }
    if sb.len() > 1 {
        out.push(n);
    }
    out
}

fn rows(sa: &[usize]) -> usize {
    if sa.len() == 1 { 1 } else { sa[sa.len() - 2] }
}

fn cols(sb: &[usize]) -> usize {
    if sb.len() == 1 { 1 } else { sb[sb.len() - 1] }
}

fn batch_axes(s: &[usize]) -> &[usize] {
    &s[..s.len().saturating_sub(2)]
}

/// The reference: each output element with the sum of its products' magnitudes (the scale
/// its rounding error is measured against). Integer types sum with wrapping 32-bit
/// arithmetic.
fn reference(a: &[f64], sa: &[usize], b: &[f64], sb: &[usize], dtype: DType) -> Vec<(f64, f64)> {
    let (m, n) = (rows(sa), cols(sb));
    let k = sa[sa.len() - 1];
    let out_batch = broadcast(batch_axes(sa), batch_axes(sb));
    let batches: usize = out_batch.iter().product();
    let mut out = Vec::with_capacity(batches * m * n);
    for batch in 0..batches {
        let a0 = broadcast_source(batch_axes(sa), &out_batch, batch) * m * k;
        let b0 = broadcast_source(batch_axes(sb), &out_batch, batch) * k * n;
        for i in 0..m {
            for j in 0..n {
                let products = (0..k).map(|p| (a[a0 + i * k + p], b[b0 + p * n + j]));
                out.push(match dtype {
                    DType::I32 => {
                        let s = products.fold(0i32, |s, (x, y)| {
                            s.wrapping_add((x as i32).wrapping_mul(y as i32))
                        });
                        (f64::from(s), 0.0)
                    }
                    DType::U32 => {
                        let s = products.fold(0u32, |s, (x, y)| {
                            s.wrapping_add((x as u32).wrapping_mul(y as u32))
                        });
                        (f64::from(s), 0.0)
                    }
                    _ => products.fold((0.0, 0.0), |(s, scale), (x, y)| {
                        (s + x * y, scale + (x * y).abs())
                    }),
                });
            }
        }
    }
    out
}

/// Seeded values for `dtype`, as the device holds them: floats in [-1, 1) rounded to the
/// dtype; integers wide enough that products and sums wrap.
fn values(dtype: DType, len: usize, seed: u64) -> Vec<f64> {
    test_support::data(len, seed)
        .iter()
        .map(|&x| {
            let x = f64::from(x);
            match dtype {
                DType::F16 => f64::from(half::f16::from_f64(x)),
                DType::I32 => (x * 1.0e6).round(),
                DType::U32 => ((x + 1.0) * 2.0e9).floor(),
                _ => f64::from(x as f32),
            }
        })
        .collect()
}

/// Runs MatMul of `dtype` on `sa` × `sb` with `ctx`, asserts the variant chosen and compares
/// with the reference: exact for integers; within a tolerance of the products' magnitudes
/// for floats (f32: 1e-5, growing as √K past K = 64; f16, whose output is rounded to 11
/// bits: 1e-2).
fn check_on(ctx: &Context, dtype: DType, sa: &[usize], sb: &[usize], variant: &str) {
    if !common::runs(ctx, dtype, &format!("{variant} ({dtype})")) {
        return;
    }
    let what = format!("{dtype} {sa:?} x {sb:?} ({variant})");
    let na: usize = sa.iter().product();
    let nb: usize = sb.iter().product();
    let (a, b) = (values(dtype, na, 1), values(dtype, nb, 2));
    let ta = common::upload(ctx, dtype, sa, &a, "a");
    let tb = common::upload(ctx, dtype, sb, &b, "b");
    let (chosen, out) = common::run(ctx, "ai.onnx.MatMul", &[&ta, &tb], &[], &what);
    assert_eq!(chosen, variant, "{what}");
    let k = sa[sa.len() - 1] as f64;
    let tolerance = match dtype {
        DType::F16 => 1e-2,
        DType::F32 => 1e-5 * (k / 64.0).sqrt().max(1.0),
        _ => 0.0,
    };
    let want: Vec<(f64, f64)> = reference(&a, sa, &b, sb, dtype)
        .into_iter()
        .map(|(w, scale)| (w, scale.max(f64::MIN_POSITIVE)))
        .collect();
    common::assert_output(ctx, &out, &matmul_shape(sa, sb), &want, tolerance, &what);
}

fn check(dtype: DType, sa: &[usize], sb: &[usize], variant: &str) {
    check_on(test_support::shared(), dtype, sa, sb, variant);
}

/// A case: the shapes of `a` and `b`, and the variant they select.
type Case = (&'static [usize], &'static [usize], &'static str);

/// Each case of `cases` in each of `dtypes`, on `ctx`.
fn check_all(ctx: &Context, dtypes: &[DType], cases: &[Case]) {
    for &dtype in dtypes {
        for &(sa, sb, variant) in cases {
            check_on(ctx, dtype, sa, sb, variant);
        }
    }
}

/// A context on which the word-of-four tiled variants are not demoted: without `subgroups`
/// where the adapter reports subgroup sizes other than 32.
fn undemoted() -> &'static Context {
    static CTX: std::sync::OnceLock<Context> = std::sync::OnceLock::new();
    let shared = test_support::shared();
    if !demotes_vec4_tiles(shared) {
        return shared;
    }
    CTX.get_or_init(|| test_support::context_without(&["subgroups"]))
}

/// `vec4RegTileDemotedWidth`: subgroup sizes reported, not both 32, and `subgroups`.
fn demotes_vec4_tiles(ctx: &Context) -> bool {
    let caps = ctx.caps();
    let (min, max) = (
        caps.limit("subgroupMinSize").unwrap_or(0),
        caps.limit("subgroupMaxSize").unwrap_or(0),
    );
    (min != 0 || max != 0) && !(min == 32 && max == 32) && caps.has_feature("subgroups")
}

/// The default context when it has `subgroups`, else none (the case is skipped, saying so).
fn with_subgroups(variant: &str) -> Option<&'static Context> {
    let ctx = test_support::shared();
    if ctx.caps().has_feature("subgroups") {
        Some(ctx)
    } else {
        eprintln!("no subgroups on this adapter: {variant} skipped");
        None
    }
}

/// A context without `subgroups`, for the variants that are their fallbacks.
fn without_subgroups() -> &'static Context {
    static CTX: std::sync::OnceLock<Context> = std::sync::OnceLock::new();
    CTX.get_or_init(|| test_support::context_without(&["subgroups"]))
}

/// `registerBlockedWidthOk`: the 64 × 64 register-tiled variants need `subgroups` or a
/// smallest subgroup of at least 16.
fn register_tiles(variant: &str) -> Option<&'static Context> {
    let ctx = test_support::shared();
    let caps = ctx.caps();
    let min = caps.limit("subgroupMinSize").unwrap_or(0);
    if caps.has_feature("subgroups") || min == 0 || min >= 16 {
        Some(ctx)
    } else {
        eprintln!("subgroups of {min} and no subgroups feature: {variant} skipped");
        None
    }
}

const F32: [DType; 1] = [DType::F32];
const F16: [DType; 1] = [DType::F16];
const FLOATS: [DType; 2] = [DType::F32, DType::F16];
const INTS: [DType; 2] = [DType::I32, DType::U32];
const ALL: [DType; 4] = [DType::F32, DType::F16, DType::I32, DType::U32];

#[test]
fn small_matrices_and_every_type() {
    let ctx = test_support::shared();
    check_all(
        ctx,
        &ALL,
        &[
            (&[33, 20], &[20, 47], "tiled"),
            (&[3, 5, 7], &[3, 7, 9], "batched_tiled"),
            (&[2, 3, 5], &[5, 7], "folded_by_rank2_tiled"),
            (&[1, 1, 5], &[5, 7], "batched_by_rank2"),
            (&[3, 5], &[2, 5, 7], "rank2_by_batched"),
            (&[20, 30], &[3, 30, 19], "rank2_by_batched"),
            (&[2, 3, 5], &[1, 5, 6], "batched_broadcast"),
            (&[3, 17, 23], &[1, 23, 9], "batched_broadcast"),
            (&[2, 1, 3, 4, 5], &[1, 2, 1, 5, 6], "batched5_broadcast"),
            (&[3, 4, 5], &[2, 3, 5, 6], "batched3_by_batched4_padded_a"),
            (&[2, 3, 4, 5], &[3, 5, 6], "batched4_by_batched3_padded_b"),
            (&[2, 3, 5], &[5], "batched_by_vector"),
            (&[4, 2, 3, 5], &[5], "batched_by_vector"),
            (&[5], &[2, 5, 3], "vector_by_batched"),
            (&[5], &[2, 2, 5, 3], "vector_by_batched"),
            (&[7], &[7, 5], "vector_matrix"),
            (&[100], &[100], "dot"),
        ],
    );
    // A row by a matrix: the integer types fall back to the scalar kernel.
    check_all(
        ctx,
        &INTS,
        &[
            (&[1, 7], &[7, 5], "scalar"),
            (&[1, 40], &[40, 64], "scalar"),
            (&[5, 7], &[7], "matrix_vector"),
            (&[5, 100], &[100], "matrix_vector"),
        ],
    );
    // Floats whose K is short and not a multiple of four; empty sums are zero; an empty
    // output dispatches nothing.
    check_all(
        ctx,
        &F32,
        &[
            (&[5, 7], &[7], "matrix_vector"),
            (&[7], &[7, 6], "vector_matrix"),
            (&[3, 0], &[0, 5], "tiled"),
        ],
    );
    check(DType::I32, &[0, 4], &[4, 8], "scalar");
}

#[test]
fn one_row_by_a_matrix() {
    let ctx = test_support::shared();
    check_all(
        ctx,
        &FLOATS,
        &[
            (&[40], &[40, 64], "vector_matrix_vec4"),
            (&[1, 40], &[40, 200], "vector_matrix_vec4"),
            (&[1, 1, 37], &[37, 1032], "vector_matrix_vec4"),
        ],
    );
    check_all(
        ctx,
        &F32,
        &[
            (&[1, 37], &[37, 30], "rank2_m1_vector_matrix_tail4"),
            (&[1, 64], &[64, 1], "rank2_m1_vector_matrix_tail4"),
        ],
    );
    // K of 37 leaves a remainder past the unrolled steps; 36 leaves none.
    check_all(
        ctx,
        &F16,
        &[
            (&[1, 37], &[37, 30], "rank2_m1_vector_matrix_tail1_f16"),
            (&[1, 36], &[36, 131], "rank2_m1_vector_matrix_tail1_f16"),
        ],
    );
}

#[test]
fn a_matrix_by_a_vector() {
    if let Some(ctx) = with_subgroups("matrix_vector_subgroup") {
        check_all(
            ctx,
            &FLOATS,
            &[
                (&[5, 101], &[101], "matrix_vector_tail_subgroup"),
                (&[70, 64], &[64], "matrix_vector_subgroup"),
            ],
        );
    }
    check_all(
        without_subgroups(),
        &FLOATS,
        &[
            (&[5, 101], &[101], "matrix_vector_tail_nosg"),
            (&[70, 64], &[64], "matrix_vector_nosg"),
        ],
    );
}

#[test]
fn dot_products() {
    let ctx = test_support::shared();
    check_all(
        ctx,
        &FLOATS,
        &[
            (&[100], &[100], "dot"),
            (&[8192], &[8192], "dot_splitk"),
            (&[65540], &[65540], "dot_splitk"),
        ],
    );
    // Long integer dots wrap; float dots not a multiple of four stay whole.
    check(DType::I32, &[9000], &[9000], "dot");
    check(DType::F32, &[8193], &[8193], "dot");
}

#[test]
fn bands_of_rows() {
    check_all(
        test_support::shared(),
        &FLOATS,
        &[
            (&[3, 40], &[40, 64], "rank2_band_vec4"),
            (&[16, 33], &[33, 260], "rank2_band_vec4"),
            (&[2, 3, 40], &[40, 64], "folded_by_rank2_band_vec4"),
            (&[16, 2, 24], &[16, 24, 512], "batched_band_vec4"),
            // K deep enough for whole steps of 16 rows of b a slice, and a remainder.
            (&[2, 1100], &[1100, 3200], "rank2_band_vec4"),
            (&[2, 3, 700], &[700, 3200], "folded_by_rank2_band_vec4"),
            (&[64, 2, 300], &[64, 300, 128], "batched_band_vec4"),
            (&[4, 1024], &[1024, 256], "rank2_band_vec4_splitk"),
            (&[5, 999], &[999, 132], "rank2_band_vec4_splitk"),
        ],
    );
}

#[test]
fn register_tiles_of_64() {
    let Some(ctx) = register_tiles("tiled_reg") else {
        return;
    };
    // K not a multiple of 16 keeps the word-of-four variants out.
    check_all(
        ctx,
        &FLOATS,
        &[
            (&[512, 72], &[72, 512], "tiled_reg"),
            (&[2, 256, 72], &[72, 512], "folded_by_rank2_tiled_reg"),
            (&[4, 256, 72], &[1, 72, 256], "batched_tiled_reg"),
            (&[8, 128, 40], &[40, 256], "batched_by_rank2_tiled_reg"),
            (
                &[2, 1, 128, 40],
                &[1, 4, 40, 128],
                "batched4_broadcast_tiled_reg",
            ),
        ],
    );
    check(DType::F32, &[520, 70], &[70, 515], "tiled_reg");
    check_all(
        ctx,
        &INTS,
        &[
            (&[512, 64], &[64, 512], "tiled_reg"),
            (&[2, 256, 64], &[64, 512], "folded_by_rank2_tiled_reg"),
            (&[2, 4, 256, 64], &[2, 1, 64, 130], "batched_tiled_reg"),
        ],
    );
}

#[test]
fn word_of_four_tiles_f32() {
    check_all(
        undemoted(),
        &F32,
        &[
            (&[512, 32], &[32, 1024], "rank2_notrans_f32_vec4_tiled_reg"),
            (&[300, 64], &[64, 2052], "rank2_notrans_f32_vec4_tiled_reg"),
            (
                &[256, 32],
                &[32, 512],
                "rank2_notrans_f32_vec4_tiled_reg_m64",
            ),
            (
                &[200, 96],
                &[96, 500],
                "rank2_notrans_f32_vec4_tiled_reg_m64",
            ),
            // 64-row blocks, then 128-row ones.
            (
                &[4, 128, 32],
                &[4, 32, 256],
                "batched_notrans_f32_vec4_tiled_reg",
            ),
            (
                &[8, 130, 32],
                &[8, 32, 512],
                "batched_notrans_f32_vec4_tiled_reg",
            ),
            (
                &[128, 1024],
                &[1024, 256],
                "rank2_notrans_f32_vec4_tiled_reg_splitk",
            ),
            (
                &[130, 512],
                &[512, 500],
                "rank2_notrans_f32_vec4_tiled_reg_splitk",
            ),
        ],
    );
    // Needs subgroup sizes that admit 32 (`subgroupWidth32NotExcluded`).
    let ctx = test_support::shared();
    let caps = ctx.caps();
    let (min, max) = (
        caps.limit("subgroupMinSize").unwrap_or(0),
        caps.limit("subgroupMaxSize").unwrap_or(0),
    );
    if (min == 0 && max == 0) || (min <= 32 && max >= 32) {
        let folded = "folded_rows_notrans_f32_vec4_tiled_reg";
        check_all(
            ctx,
            &F32,
            &[
                (&[1, 512, 32], &[32, 512], folded),
                (&[256, 1, 64], &[64, 1024], folded),
            ],
        );
    } else {
        eprintln!(
            "subgroup sizes {min}..{max} exclude 32: folded_rows_notrans_f32_vec4_tiled_reg skipped"
        );
    }
}

#[test]
fn word_of_four_tiles_f16() {
    check_all(
        test_support::shared(),
        &F16,
        &[
            (
                &[2, 256, 16],
                &[16, 1024],
                "folded_rows_notrans_f16_vec4_tiled_reg",
            ),
            // Tiles of 32 × 32 in 8 × 8 invocations; K of 16 and 32 take kTile 16 and 32.
            (
                &[512, 16],
                &[16, 1024],
                "rank2_notrans_f16_vec4_tiled_reg_wg8",
            ),
            (
                &[500, 32],
                &[32, 1020],
                "rank2_notrans_f16_vec4_tiled_reg_wg8",
            ),
            (&[1024, 16], &[16, 1024], "rank2_notrans_f16_vec4_tiled_reg"),
            (&[1000, 48], &[48, 1028], "rank2_notrans_f16_vec4_tiled_reg"),
            (&[1030, 32], &[32, 1024], "rank2_notrans_f16_vec4_tiled_reg"),
            (
                &[256, 16],
                &[16, 512],
                "rank2_notrans_f16_vec4_tiled_reg_m64",
            ),
            (
                &[4, 128, 16],
                &[4, 16, 1024],
                "batched_notrans_f16_vec4_tiled_reg_wg8",
            ),
            (
                &[4, 128, 16],
                &[4, 16, 256],
                "batched_notrans_f16_vec4_tiled_reg",
            ),
            (
                &[8, 130, 32],
                &[8, 32, 1024],
                "batched_notrans_f16_vec4_tiled_reg",
            ),
        ],
    );
}
