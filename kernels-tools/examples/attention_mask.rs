//! Attention softmax with a padding mask on the GPU: `softmax(scores + mask)` through
//! `kernels::bias_softmax`, checked against a host Add + Softmax.
//!
//! Scores `(B, N, S, S)` = `(2, 4, 64, 64)` are `Q·Kᵀ / √d` of random queries and keys. The mask
//! `(B, 1, 1, S)` is the usual BERT padding mask: 0 for the first `valid[b]` keys of batch `b` (50
//! and 37), -10000 for the padded ones. BiasSoftmax with `axis = -1` and inner broadcast reuses
//! mask row `b` for all `N·S` score rows of batch `b`, which is exactly numpy's broadcast of
//! `(B,1,1,S)` against `(B,N,S,S)` (SEMANTICS.md §2.3).
//!
//! The program runs f32 and (if the device has `shader-f16`) f16, and checks each against the host
//! in float64 on the same rounded inputs (SEMANTICS.md §5 tolerances), that padded keys get
//! probability below 1e-6, and that every row sums to 1.
//!
//! `cargo run --release -p kernels-tools --example attention_mask`

use anyhow::{Context as _, Result, bail};
use kernel_runtime::{Context, Float, Tensor};
use kernels::bias_softmax::{self as op, Attrs, Inputs, RequiredAttrs};
use kernels_tools::data::{self, DataRng, Tolerance};

const BATCH: usize = 2;
const HEADS: usize = 4;
const SEQ: usize = 64;
const HEAD_DIM: usize = 16;
/// Valid (unpadded) tokens of each batch.
const VALID: [usize; BATCH] = [50, 37];
/// The additive mask value of padded keys, as BERT-style exports use.
const MASKED: f64 = -10000.0;
/// Padded keys must get less probability than this.
const PADDED_MAX: f64 = 1e-6;

/// `Q·Kᵀ / √d` for random `Q` and `K` of shape `(B, N, S, d)`, as `(B, N, S, S)` row-major.
fn attention_scores(seed: u64) -> Vec<f64> {
    let mut rng = DataRng::new(seed);
    let q = rng.uniform(BATCH * HEADS * SEQ * HEAD_DIM, -1.0, 1.0);
    let k = rng.uniform(BATCH * HEADS * SEQ * HEAD_DIM, -1.0, 1.0);
    let scale = 1.0 / (HEAD_DIM as f64).sqrt();
    let mut scores = Vec::with_capacity(BATCH * HEADS * SEQ * SEQ);
    for (qh, kh) in q.chunks(SEQ * HEAD_DIM).zip(k.chunks(SEQ * HEAD_DIM)) {
        for qi in qh.chunks(HEAD_DIM) {
            for kj in kh.chunks(HEAD_DIM) {
                let dot: f64 = qi.iter().zip(kj).map(|(a, b)| a * b).sum();
                scores.push(dot * scale);
            }
        }
    }
    scores
}

/// The `(B, 1, 1, S)` padding mask: 0 for valid keys, [`MASKED`] for padded ones.
fn padding_mask() -> Vec<f64> {
    let mut mask = vec![0.0; BATCH * SEQ];
    for (b, &valid) in VALID.iter().enumerate() {
        mask[b * SEQ + valid..(b + 1) * SEQ].fill(MASKED);
    }
    mask
}

/// Host Add + Softmax in float64: each score row `(b, n, i)` plus mask row `b`, normalised.
fn host_softmax(scores: &[f64], mask: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(scores.len());
    for (row, s) in scores.chunks(SEQ).enumerate() {
        let b = row / (HEADS * SEQ);
        let z: Vec<f64> = s.iter().zip(&mask[b * SEQ..]).map(|(x, m)| x + m).collect();
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        out.extend(e.iter().map(|v| v / sum));
    }
    out
}

/// Runs the op in `T` and checks it; returns whether every check passed.
fn run<T: Float>(ctx: &Context, scores: &[f64], mask: &[f64]) -> Result<bool> {
    let dtype = T::DTYPE;
    let (scores, mask) = (data::round_to::<T>(scores), data::round_to::<T>(mask));
    let shape = [BATCH, HEADS, SEQ, SEQ];
    let data = Tensor::from_slice(ctx, &shape, &data::to_elem::<T>(&scores))?;
    let bias = Tensor::from_slice(ctx, &[BATCH, 1, 1, SEQ], &data::to_elem::<T>(&mask))?;
    let inputs = Inputs {
        data: &data,
        bias: &bias,
    };
    let mut attrs = Attrs::new(RequiredAttrs {
        is_inner_broadcast: true,
    });
    attrs.axis = -1;
    let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs)?;
    let out = op::run(ctx, &inputs, &attrs)?;
    let got = data::from_elem(&out.output.to_vec(ctx)?);

    let tolerance = Tolerance::bias_softmax(dtype);
    let cmp = data::compare(&got, &host_softmax(&scores, &mask), tolerance);
    // Padded keys: every score row of batch b, columns valid[b]..S.
    let padded_max = got
        .chunks(SEQ)
        .enumerate()
        .flat_map(|(row, p)| p[VALID[row / (HEADS * SEQ)]..].iter().copied())
        .fold(0.0, f64::max);
    // f16 rounds each probability by up to 2^-11 of itself, so a row sum drifts by at most
    // about 5e-4; f32 by far less.
    let sum_tolerance = if dtype == kernel_runtime::DType::F16 {
        1e-3
    } else {
        1e-5
    };
    let worst_sum = got
        .chunks(SEQ)
        .map(|p| (p.iter().sum::<f64>() - 1.0).abs())
        .fold(0.0, f64::max);

    let passed = cmp.passed() && padded_max < PADDED_MAX && worst_sum <= sum_tolerance;
    println!(
        "{dtype}: variant {}, max abs error {:.3e} (tolerance {:.0e}), largest padded-key \
         probability {padded_max:.3e}, worst |row sum - 1| {worst_sum:.3e}: {}",
        plan.variant,
        cmp.max_abs,
        tolerance.abs,
        if passed { "PASS" } else { "FAIL" }
    );
    if !cmp.passed() {
        let at = cmp.worst.map(|w| data::unravel(w.index, &shape));
        println!("  {cmp} (b, n, query, key: {:?})", at.unwrap_or_default());
    }
    Ok(passed)
}

fn main() -> Result<()> {
    let ctx = Context::new().context("creating the GPU context")?;
    println!("adapter: {}", ctx.adapter_summary());
    println!(
        "scores ({BATCH}, {HEADS}, {SEQ}, {SEQ}) + padding mask ({BATCH}, 1, 1, {SEQ}), \
         valid tokens {VALID:?}, padded keys {MASKED}"
    );
    let scores = attention_scores(0);
    let mask = padding_mask();

    let mut passed = run::<f32>(&ctx, &scores, &mask)?;
    if ctx.caps().shader_f16 {
        passed &= run::<half::f16>(&ctx, &scores, &mask)?;
    } else {
        println!("float16: skipped, the device lacks shader-f16");
    }
    if passed {
        println!("PASS");
        Ok(())
    } else {
        println!("FAIL");
        bail!("the GPU result differs from the host Add + Softmax")
    }
}
