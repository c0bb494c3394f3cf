//! GPU tests of `kernels::mat_mul` (packages/kernels.MatMul) against a float64 reference on
//! random data: odd sizes, K not a multiple of 16, batches with a shared or a per-batch `b`,
//! empty products, float32 and float16, with sums kept in float32 and, where asked
//! (`accumulate_in_float16`), in float16. The variant each call must take follows from the
//! device: the subgroup-matrix (tensor-core) variants where the context opted in to
//! experimental features and the adapter multiplies float16 16 × 16 × 16 matrices into float32
//! (or, for float16 sums, into float16) with subgroups of 32, the SIMT kernel elsewhere (Mesa
//! lavapipe in CI).

#![allow(clippy::unwrap_used)]

use half::f16;
use kernel_runtime::{AttrValue, Context, ContextOptions, Float, Tensor};
use kernels::mat_mul as op;

/// A product: `batches` of `m × k` by `k × n` (`b` shared by the batches unless `b_batched`).
#[derive(Debug, Clone, Copy)]
struct Case {
    batches: usize,
    m: usize,
    k: usize,
    n: usize,
    b_batched: bool,
}

const fn case(batches: usize, m: usize, k: usize, n: usize, b_batched: bool) -> Case {
    Case {
        batches,
        m,
        k,
        n,
        b_batched,
    }
}

/// Odd, aligned, tile-edge and empty shapes, and more batches than a dispatch has workgroups
/// along z on any device (65 535 at most), which the SIMT kernel walks in turn. The two after
/// the first hold whole tiles of the tensor-core variants (128 × 128 by default) beside partial
/// ones, and a K that ends in a partial slice: the loads without a test per element and those
/// with one both run.
const CASES: &[Case] = &[
    case(1, 128, 128, 128, false),
    case(1, 256, 264, 512, false),
    case(2, 130, 136, 520, true),
    case(1, 130, 136, 72, false),
    case(1, 67, 45, 33, false),
    case(1, 16, 8, 8, false),
    case(1, 300, 17, 260, false),
    case(2, 129, 64, 136, true),
    case(3, 40, 24, 48, false),
    case(2, 33, 9, 7, true),
    case(1, 5, 3, 2, false),
    case(1, 64, 0, 16, false),
    case(1, 0, 16, 16, false),
    case(65_537, 2, 3, 2, true),
];

/// Uniform values in [-1, 1) from a seeded generator.
fn values(len: usize, seed: u64) -> Vec<f64> {
    kernels_tools::data::DataRng::new(seed).uniform(len, -1.0, 1.0)
}

/// The variant a call must take on `ctx`, with float16 sums asked for or not.
fn expected_variant<T: Float>(ctx: &Context, c: Case, f16_sums: bool) -> String {
    let caps = ctx.caps();
    let subgroups_of_32 = caps.subgroup_min_size == 32 && caps.subgroup_max_size == 32;
    let tensor_cores = |result: &str| {
        caps.has_feature(&format!("subgroup-matrix-f16-{result}-16x16x16"))
            && caps.has_feature("shader-f16")
            && subgroups_of_32
    };
    if T::DTYPE != kernel_runtime::DType::F16 || c.m < 16 {
        return "simt".into();
    }
    // K = 0 reads nothing: the vec4 variant would bind an empty `a` as words.
    let base = if c.k > 0 && c.k.is_multiple_of(8) && c.n.is_multiple_of(8) {
        "subgroup_matrix_vec4"
    } else {
        "subgroup_matrix"
    };
    if f16_sums && tensor_cores("f16") {
        format!("{base}_f16acc")
    } else if tensor_cores("f32") {
        base.into()
    } else {
        "simt".into()
    }
}

/// Runs `c` in `T` on `ctx`, with float16 sums asked for or not; the failure, if any.
fn check<T: Float>(ctx: &Context, c: Case, seed: u64, f16_sums: bool) -> Result<(), String> {
    let a_shape: Vec<usize> = if c.batches > 1 {
        vec![c.batches, c.m, c.k]
    } else {
        vec![c.m, c.k]
    };
    let b_batches = if c.b_batched { c.batches } else { 1 };
    let b_shape: Vec<usize> = if c.b_batched {
        vec![c.batches, c.k, c.n]
    } else {
        vec![c.k, c.n]
    };
    // The reference multiplies the values the GPU sees: rounded to `T`.
    let round = |v: Vec<f64>| -> Vec<T> { v.into_iter().map(T::from_f64).collect() };
    let a: Vec<T> = round(values(c.batches * c.m * c.k, seed));
    let b: Vec<T> = round(values(b_batches * c.k * c.n, seed + 1));
    let at = Tensor::from_slice(ctx, &a_shape, &a).unwrap();
    let bt = Tensor::from_slice(ctx, &b_shape, &b).unwrap();
    let inputs = op::Inputs { a: &at, b: &bt };
    let attrs = op::Attrs {
        accumulate_in_float16: f16_sums,
    };
    let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs)
        .map_err(|e| format!("{c:?} {:?}: {e}", T::DTYPE))?;
    let want_variant = expected_variant::<T>(ctx, c, f16_sums);
    if !plan.label().ends_with(&format!("/{want_variant}")) {
        return Err(format!(
            "{c:?} {:?}: planned {}, expected `{want_variant}`",
            T::DTYPE,
            plan.label()
        ));
    }
    let y = op::run(ctx, &inputs, &attrs)
        .map_err(|e| format!("{c:?} {:?}: {e}", T::DTYPE))?
        .y;
    let mut want_shape = a_shape.clone();
    *want_shape.last_mut().unwrap() = c.n;
    if y.shape() != want_shape.as_slice() {
        return Err(format!("{c:?}: y has shape {:?}", y.shape()));
    }
    let got = y.to_vec(ctx).unwrap();
    let f16_like = T::DTYPE == kernel_runtime::DType::F16;
    let k = c.k as f64;
    // f32 sums of K products, then (float16) the output's rounding.
    let (abs, rel) = if f16_like {
        (1e-3 + 1e-6 * k, 1.5e-3)
    } else {
        (1e-5 + 1e-6 * k, 1e-5)
    };
    // Float16 sums: each of the K additions may round by half a float16 ulp of the partial
    // sum, which is at most Σ|a·b|, so the error is within (K + 1)·2⁻¹¹·Σ|a·b| besides the
    // output's rounding.
    let f16_sums_ran = plan.variant.ends_with("_f16acc");
    let f16_rounding = 2f64.powi(-11);
    let mut worst = (0.0f64, 0usize);
    for batch in 0..c.batches {
        let b_off = if c.b_batched { batch * c.k * c.n } else { 0 };
        for i in 0..c.m {
            for j in 0..c.n {
                let (mut sum, mut magnitude) = (0.0f64, 0.0f64);
                for p in 0..c.k {
                    let product =
                        a[(batch * c.m + i) * c.k + p].to_f64() * b[b_off + p * c.n + j].to_f64();
                    sum += product;
                    magnitude += product.abs();
                }
                let abs = if f16_sums_ran {
                    abs + (k + 1.0) * f16_rounding * magnitude
                } else {
                    abs
                };
                let at = (batch * c.m + i) * c.n + j;
                let err = (got[at].to_f64() - sum).abs() / (abs + rel * sum.abs());
                // NaN (a missing write) counts as infinitely far.
                let err = if err.is_nan() { f64::INFINITY } else { err };
                if err > worst.0 {
                    worst = (err, at);
                }
            }
        }
    }
    if worst.0 > 1.0 {
        return Err(format!(
            "{c:?} {:?} ({}): element {} off by {:.2}× the tolerance",
            T::DTYPE,
            plan.label(),
            worst.1,
            worst.0
        ));
    }
    Ok(())
}

fn check_all(ctx: &Context) {
    let mut failures = Vec::new();
    for (i, &c) in CASES.iter().enumerate() {
        for f16_sums in [false, true] {
            failures.extend(check::<f32>(ctx, c, 10 * i as u64, f16_sums).err());
            if ctx.caps().has_feature("shader-f16") {
                failures.extend(check::<f16>(ctx, c, 10 * i as u64 + 5, f16_sums).err());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// With experimental features: the tensor-core variants where the adapter has them.
#[test]
fn matches_the_reference_with_experimental_features() {
    let ctx = test_support::context_with(&ContextOptions {
        experimental_features: Some(true),
        ..ContextOptions::default()
    });
    eprintln!(
        "{}: subgroup matrices {}, configurations {:?}",
        ctx.adapter_summary(),
        ctx.caps().subgroup_matrix,
        ctx.caps().subgroup_matrix_configs
    );
    check_all(&ctx);
}

/// Without: the SIMT kernel on every device.
#[test]
fn matches_the_reference_without_experimental_features() {
    let ctx = test_support::context_with(&ContextOptions {
        experimental_features: Some(false),
        ..ContextOptions::default()
    });
    assert!(!ctx.caps().subgroup_matrix);
    check_all(&ctx);
}

/// `accumulateInFloat16` takes 0 or 1 (the manifest's `attributeConstraints`), so it is a
/// `bool` in `Attrs`; from name/value pairs, as tools pass it, another value is refused.
#[test]
fn an_accumulation_flag_other_than_0_or_1_is_refused() {
    let name = String::from("accumulateInFloat16");
    let attrs = op::Attrs::from_raw(&[(name.clone(), AttrValue::Int(1))]).unwrap();
    assert!(attrs.accumulate_in_float16);
    let error = op::Attrs::from_raw(&[(name, AttrValue::Int(2))]).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("accumulateInFloat16"), "{message}");
}
