//! `ai.onnx.Softmax` on the adapter against a float64 reference: each case names the variant
//! its shape, axis and device select, so a change in selection fails here too, and together
//! the cases reach every variant. Three of them need more than the shape:
//!
//! - `strided_online_lane_large_inner` and `strided_online_capacity_fallback` are chosen only
//!   where `strided_online_coop`'s dispatch does not fit the device, which no tensor that fits
//!   in memory does with 65535 workgroups per dimension: their cases are planned for the
//!   adapter's capabilities with `maxComputeWorkgroupsPerDimension` lowered to 64 (the plan a
//!   device with that limit makes) and run on the adapter.
//! - Every call `stable_3pass` accepts, `online_local_nosg` or `online_wg` (ranked above it)
//!   accepts too, except rows of no element, whose output is empty (nothing is planned:
//!   its sizes would divide by the row length): the case of empty rows checks that, and its
//!   kernels run through the variant's own plan (`OpHooks::plan_of`) on ordinary shapes.
//! - `online_subgroup_rows_vec4` needs an adapter with subgroups of at least 16 lanes.
//!
//! Without the Hub manifests (`$KERNEL_HUB_DIR`, else `../shared/hub`) the crate has no ops
//! and this file no tests.

#![cfg(hub)]

mod common;

use hub::kernels::softmax;
use hub::runtime::support::AttrValue;
use hub::runtime::{AnyTensor, Arg, Context, DType, DeviceCaps, OpHooks, Plan};

/// f32 results against the float64 reference, relative to the largest output.
const F32_TOLERANCE: f64 = 1e-6;
/// f16 results (computed in f32, rounded once or twice to f16), likewise.
const F16_TOLERANCE: f64 = 2e-3;

/// What the input holds.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// Seeded values in [-scale, scale).
    Random(f64),
    /// Every element the same: each output is 1 / (row length).
    Equal(f64),
}

/// How a case is planned.
enum Planned<'a> {
    /// By the registry's untyped entry, for the context's device.
    Registry,
    /// By selection for these capabilities instead of the context's.
    For(&'a DeviceCaps),
    /// As this variant, whether or not selection would choose it.
    As(&'static str),
}

/// The input values of `len` elements, rounded to `dtype` as the upload rounds them.
fn values(dtype: DType, len: usize, fill: Fill, seed: u64) -> Vec<f64> {
    let raw: Vec<f64> = match fill {
        Fill::Random(scale) => test_support::data(len, seed)
            .into_iter()
            .map(|x| f64::from(x) * scale)
            .collect(),
        Fill::Equal(v) => vec![v; len],
    };
    raw.into_iter()
        .map(|v| match dtype {
            DType::F16 => half::f16::from_f64(v).to_f64(),
            _ => f64::from(v as f32),
        })
        .collect()
}

/// ONNX Softmax of `x` (of `shape`) along `axis` (negative counts from the end), in f64.
fn reference(x: &[f64], shape: &[usize], axis: i64) -> Vec<f64> {
    let rank = shape.len() as i64;
    let axis = usize::try_from(if axis < 0 { axis + rank } else { axis }).expect("axis in range");
    let outer: usize = shape[..axis].iter().product();
    let cols = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * cols + k) * inner + i;
            let max = (0..cols)
                .map(|k| x[at(k)])
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..cols).map(|k| (x[at(k)] - max).exp()).sum();
            for k in 0..cols {
                y[at(k)] = (x[at(k)] - max).exp() / sum;
            }
        }
    }
    y
}

/// Runs one case: Softmax of a `shape` tensor of `dtype` along `axis`, planned as `planned`
/// says; asserts the variant and the values.
fn check(
    ctx: &Context,
    planned: Planned<'_>,
    dtype: DType,
    shape: &[usize],
    axis: i64,
    fill: Fill,
    variant: &str,
) {
    let what = format!("{dtype} {shape:?} axis {axis} {fill:?} ({variant})");
    let len: usize = shape.iter().product();
    let seed = len as u64 ^ (axis as u64).wrapping_mul(31);
    let x = values(dtype, len, fill, seed);
    let tx = common::upload(ctx, dtype, shape, &x, "x");
    let (chosen, out) = match planned {
        Planned::Registry => {
            let attrs = [("axis".to_owned(), AttrValue::Int(axis))];
            common::run(ctx, "ai.onnx.Softmax", &[&tx], &attrs, &what)
        }
        Planned::For(caps) => {
            let plan = softmax::plan(caps, &shapes(shape), &dtypes(dtype), &attrs(axis))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            (plan.variant, run_plan(ctx, &plan, &tx, dtype, shape, &what))
        }
        Planned::As(id) => {
            let attrs = attrs(axis);
            let env =
                <softmax::Op as OpHooks>::env(&shapes(shape), dtypes(dtype), &attrs, ctx.caps())
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
            let plan = <softmax::Op as OpHooks>::plan_of(id, &env)
                .expect("a variant of Softmax")
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            (plan.variant, run_plan(ctx, &plan, &tx, dtype, shape, &what))
        }
    };
    assert_eq!(chosen, variant, "{what}");
    let want = reference(&x, shape, axis);
    let tolerance = if dtype == DType::F16 {
        F16_TOLERANCE
    } else {
        F32_TOLERANCE
    };
    let scale = want.iter().fold(0.0f64, |m, w| m.max(w.abs()));
    let want: Vec<(f64, f64)> = want.into_iter().map(|w| (w, scale)).collect();
    common::assert_output(ctx, &out, shape, &want, tolerance, &what);
}

fn shapes(shape: &[usize]) -> softmax::Shapes<'_> {
    softmax::Shapes { x: shape }
}

fn dtypes(dtype: DType) -> softmax::DTypes {
    softmax::DTypes { t: dtype }
}

fn attrs(axis: i64) -> softmax::Attrs {
    softmax::Attrs { axis }
}

/// Runs a plan made outside the registry into a new output.
fn run_plan(
    ctx: &Context,
    plan: &Plan,
    x: &AnyTensor,
    dtype: DType,
    shape: &[usize],
    what: &str,
) -> AnyTensor {
    let y = AnyTensor::zeros(ctx, dtype, shape).expect("allocate y");
    let args = [Arg::read("x", x.binding()), Arg::write("y", y.binding())];
    ctx.run_plan(plan, &args)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    y
}

/// The float types the adapter runs: f16 only with `shader-f16`.
fn float_types(ctx: &Context) -> Vec<DType> {
    if common::runs(ctx, DType::F16, "float16") {
        vec![DType::F32, DType::F16]
    } else {
        vec![DType::F32]
    }
}

/// Runs `cases` (shape, axis, fill, variant) through the registry for every float type.
fn check_all(ctx: &Context, cases: &[(&[usize], i64, Fill, &str)]) {
    for dtype in float_types(ctx) {
        for &(shape, axis, fill, variant) in cases {
            check(ctx, Planned::Registry, dtype, shape, axis, fill, variant);
        }
    }
}

const RANDOM: Fill = Fill::Random(4.0);
/// Inputs far from zero: without subtracting the max, exp overflows f32 (and f16) at once.
const LARGE: Fill = Fill::Random(1.0e4);
const EQUAL: Fill = Fill::Equal(3.5);

#[test]
fn long_rows_are_split_into_blocks() {
    let ctx = test_support::context();
    // Past LONGROW_SPLIT_MIN_COLS (65536) columns and at most 32 rows; the last block of a
    // row is partial where the row is not a multiple of BLOCK_COLS (1024).
    check_all(
        &ctx,
        &[
            (&[2, 66_001], -1, RANDOM, "longrow_split"),
            (&[1, 65_536], -1, EQUAL, "longrow_split"),
            (&[3, 1, 70_000], 2, LARGE, "longrow_split"),
        ],
    );
}

#[test]
fn short_rows_share_a_workgroup() {
    let ctx = test_support::context();
    check_all(
        &ctx,
        &[
            (&[100, 16], -1, RANDOM, "online_packed_rows_vec4_nosg"),
            (&[2100, 128], -1, LARGE, "online_packed_rows_vec4_nosg"),
            (&[33, 4], -1, EQUAL, "online_packed_rows_vec4_nosg"),
            (&[40, 7], -1, RANDOM, "online_packed_rows_nosg"),
            (&[3000, 255], 1, RANDOM, "online_packed_rows_nosg"),
            (&[5, 9, 1], -1, EQUAL, "online_packed_rows_nosg"),
        ],
    );
    // More groups of 32 rows than one dispatch row holds (65535 workgroups): the workgroups
    // stride over the rest.
    check(
        &ctx,
        Planned::Registry,
        DType::F32,
        &[65_535 * 32 + 100, 4],
        -1,
        RANDOM,
        "online_packed_rows_vec4_nosg",
    );
}

/// Rows of one workgroup each, on the device as it is (subgroups, where it has them, combine
/// the statistics) and without subgroups (a tree in workgroup memory).
#[test]
fn rows_of_a_workgroup_each() {
    let cases: &[(&[usize], i64, Fill, &str)] = &[
        (&[8, 512], -1, RANDOM, "online_wg_vec4"),
        (&[20, 128], -1, LARGE, "online_wg_vec4"),
        (&[3, 5000], -1, EQUAL, "online_wg_vec4"),
        // Rows of fewer than WG_VEC4_MIN_COLS words demote the vec4 variant.
        (&[5, 64], -1, RANDOM, "online_wg"),
        (&[7, 1001], -1, RANDOM, "online_wg"),
        (&[2, 3, 4999], 2, LARGE, "online_wg"),
        (&[1, 33], -1, EQUAL, "online_wg"),
    ];
    let ctx = test_support::context();
    check_all(&ctx, cases);
    if ctx.caps().has_feature("subgroups") {
        check_all(&test_support::context_without(&["subgroups"]), cases);
    }
}

#[test]
fn rows_of_at_most_32_elements() {
    let ctx = test_support::context();
    check_all(
        &ctx,
        &[
            (&[10, 32], -1, RANDOM, "online_local_vec4_nosg"),
            (&[1, 4], -1, LARGE, "online_local_vec4_nosg"),
            (&[32, 8], 1, EQUAL, "online_local_vec4_nosg"),
            (&[10, 3], -1, RANDOM, "online_local_nosg"),
            (&[2, 16, 31], -1, LARGE, "online_local_nosg"),
            (&[1, 1], -1, RANDOM, "online_local_nosg"),
            (&[4, 6], 1, EQUAL, "online_local_nosg"),
            // No row: nothing is dispatched.
            (&[0, 5], -1, RANDOM, "online_local_nosg"),
        ],
    );
}

/// More than 65535 rows of a workgroup each: the dispatch folds the rows into y.
#[test]
fn rows_past_one_dispatch_row_fold() {
    let ctx = test_support::context();
    for dtype in float_types(&ctx) {
        check(
            &ctx,
            Planned::Registry,
            dtype,
            &[65_537, 257],
            -1,
            RANDOM,
            "online_wg",
        );
    }
    // Where subgroups have 16 lanes or more, rows of 132 go to `online_subgroup_rows_vec4`
    // (`one_subgroup_per_row` folds those).
    let without = ctx
        .caps()
        .has_feature("subgroups")
        .then(|| test_support::context_without(&["subgroups"]));
    check(
        without.as_ref().unwrap_or(&ctx),
        Planned::Registry,
        DType::F32,
        &[65_537, 132],
        -1,
        RANDOM,
        "online_wg_vec4",
    );
}

#[test]
fn axes_before_the_last_are_strided() {
    let ctx = test_support::context();
    check_all(
        &ctx,
        &[
            (&[50, 30], 0, RANDOM, "strided_online_coop"),
            (&[4, 100, 33], 1, LARGE, "strided_online_coop"),
            (&[2, 3, 4, 5], -3, RANDOM, "strided_online_coop"),
            (&[5, 7, 1], -2, EQUAL, "strided_online_coop"),
            (&[2, 7, 3, 2, 5, 1, 4, 2], 3, RANDOM, "strided_online_coop"),
            // Long f16 columns keep two running statistics per invocation.
            (&[3, 1000, 5], 1, RANDOM, "strided_online_coop"),
            (&[2, 2000, 300], 1, RANDOM, "strided_online_coop"),
            // Past 16384 columns a tile is 128 columns of two invocations each, which then
            // read 150 elements apiece.
            (&[300, 16_400], 0, RANDOM, "strided_online_coop"),
        ],
    );
}

/// Planned for a device of 64 workgroups per dimension, where `strided_online_coop`'s
/// dispatch does not fit, and run on the adapter.
#[test]
fn strided_axes_without_room_for_the_cooperative_dispatch() {
    let ctx = test_support::context();
    let mut caps = ctx.caps().clone();
    caps.limits.max_compute_workgroups_per_dimension = 64;
    let cases: &[(&[usize], i64, Fill, &str)] = &[
        // Long columns (≥ 1024), wide inner (> 128), ≥ 8 outer, ≥ 2^20 elements.
        (
            &[8, 1024, 256],
            1,
            RANDOM,
            "strided_online_lane_large_inner",
        ),
        (
            &[8, 1024, 129],
            -2,
            LARGE,
            "strided_online_lane_large_inner",
        ),
        (&[4, 3, 2000], 1, RANDOM, "strided_online_capacity_fallback"),
        (&[40, 5, 200], 0, EQUAL, "strided_online_capacity_fallback"),
        // Few enough columns for the cooperative dispatch still.
        (&[3, 5, 7], 0, RANDOM, "strided_online_coop"),
    ];
    for dtype in float_types(&ctx) {
        for &(shape, axis, fill, variant) in cases {
            check(&ctx, Planned::For(&caps), dtype, shape, axis, fill, variant);
        }
    }
}

#[test]
fn one_subgroup_per_row() {
    let ctx = test_support::context();
    let caps = ctx.caps();
    if !(caps.has_feature("subgroups") && caps.subgroup_min_size >= 16) {
        eprintln!(
            "subgroups {} of {}..{} lanes: online_subgroup_rows_vec4 needs at least 16, skipped",
            caps.has_feature("subgroups"),
            caps.subgroup_min_size,
            caps.subgroup_max_size
        );
        return;
    }
    check_all(
        &ctx,
        &[
            (&[100, 256], -1, RANDOM, "online_subgroup_rows_vec4"),
            (&[70, 512], -1, LARGE, "online_subgroup_rows_vec4"),
            (&[64, 132], -1, EQUAL, "online_subgroup_rows_vec4"),
            // The most words a lane holds: 8 with 32 lanes.
            (&[64, 1024], -1, RANDOM, "online_subgroup_rows_vec4"),
        ],
    );
    // Past 65535 workgroups of workgroupSize / subgroupMaxSize rows (8 with 32 lanes), the
    // dispatch folds into y.
    let rows_per_workgroup = 256 / caps.subgroup_max_size.clamp(1, 256) as usize;
    check(
        &ctx,
        Planned::Registry,
        DType::F32,
        &[65_536 * rows_per_workgroup + 8, 132],
        -1,
        RANDOM,
        "online_subgroup_rows_vec4",
    );
}

#[test]
fn three_passes() {
    let ctx = test_support::context();
    // The one call only `stable_3pass` accepts, rows of no element, would divide by the row
    // length; its output is empty, so nothing is planned or dispatched.
    let x = common::upload(&ctx, DType::F32, &[3, 0], &[], "x");
    let (variant, y) = common::run(&ctx, "ai.onnx.Softmax", &[&x], &[], "rows of no element");
    assert_eq!((variant, y.shape()), ("stable_3pass", &[3, 0][..]));
    // Its kernels, on the shapes the online variants serve.
    let cases: &[(&[usize], i64, Fill, &str)] = &[
        (&[5, 100], -1, RANDOM, "stable_3pass"),
        (&[2, 3000], -1, LARGE, "stable_3pass"),
        (&[3, 7], -1, EQUAL, "stable_3pass"),
        (&[1, 70_000], -1, RANDOM, "stable_3pass"),
    ];
    for dtype in float_types(&ctx) {
        for &(shape, axis, fill, variant) in cases {
            check(
                &ctx,
                Planned::As(variant),
                dtype,
                shape,
                axis,
                fill,
                variant,
            );
        }
    }
    // More than 65535 rows: all three dispatches fold into y.
    check(
        &ctx,
        Planned::As("stable_3pass"),
        DType::F32,
        &[65_537, 3],
        -1,
        RANDOM,
        "stable_3pass",
    );
}
