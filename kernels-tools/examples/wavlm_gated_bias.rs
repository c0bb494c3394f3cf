//! WavLM's gated relative position bias on the GPU: builds a bucketed relative-position bias
//! the way WavLM does, gates it with `kernels::gated_relative_position_bias` in f32 and f16,
//! and checks the result against the float64 reference of SEMANTICS.md §3.2.
//!
//! WavLM-Large attention has 16 heads of 64 and a gate projection `gru_rel_pos_linear` of
//! 64 → 8. Its position bias is `rel_attn_embed(bucket(j - i))`, a learned table of 320
//! buckets × 16 heads looked up by transformers' `_relative_positions_bucket` (bidirectional:
//! half the buckets per direction, exact below 80, log-spaced up to `max_distance` = 800),
//! shared by every utterance of the batch: `rel_pos` has shape `(1, N, S, S)`. The layer's
//! hidden states go straight into the gate linear, so `query_bias` is zero (SEMANTICS.md §3.2), and
//! `gru_rel_pos_const` (`eco_a`) starts at 1 per head, where every gate lies in (1, 2).
//!
//! The table and the activations are seeded random stand-ins for trained values, with the
//! shapes and scales of the model: a decaying per-head profile over the buckets plus noise,
//! unit-variance hidden states, and PyTorch's default `Linear` initialisation range.
//!
//! `cargo run --release -p kernels-tools --example wavlm_gated_bias [-- --batch 2 --seq 300]`

use anyhow::{Context as _, Result, bail, ensure};
use clap::Parser;
use half::f16;
use kernel_runtime::{Context, DType, Float, RuntimeError, Tensor};
use kernels::gated_relative_position_bias::{self as op, Attrs, Inputs, RequiredAttrs};
use kernels_tools::data::{self, DataRng, Tolerance};
use kernels_tools::reference::gated_relative_position_bias::{Problem, Sizes};

/// WavLM-Large: heads, head size, gate projection width.
const HEADS: usize = 16;
const HEAD_SIZE: usize = 64;
const PROJ: usize = 8;
/// WavLM's `num_buckets` and `max_bucket_distance`.
const NUM_BUCKETS: usize = 320;
const MAX_DISTANCE: usize = 800;
/// Gates are recovered as `output / rel_pos` only where `|rel_pos|` is at least this, so the
/// division does not magnify the output's rounding.
const GATE_PROBE: f64 = 0.05;

#[derive(Parser, Debug)]
#[command(about = "WavLM gated relative position bias on the GPU, checked against the CPU")]
struct Args {
    /// Utterances in the batch.
    #[arg(long, default_value_t = 2)]
    batch: usize,
    /// Frames per utterance (WavLM: 50 per second of audio).
    #[arg(long, default_value_t = 300)]
    seq: usize,
    /// Seed of the random table and activations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// transformers' `WavLMAttention._relative_positions_bucket` for one `j - i`: keys after the
/// query use the upper half of the buckets; distances below `max_exact` get a bucket each,
/// longer ones log-spaced buckets up to `max_distance` (in f32, as the model computes them).
fn relative_bucket(relative: i64) -> usize {
    let half = NUM_BUCKETS / 2;
    let max_exact = half / 2;
    let side = if relative > 0 { half } else { 0 };
    let distance = relative.unsigned_abs() as usize;
    if distance < max_exact {
        return side + distance;
    }
    let scale = (MAX_DISTANCE as f64 / max_exact as f64).ln() as f32;
    let large = (distance as f32 / max_exact as f32).ln() / scale * (half - max_exact) as f32;
    // `.to(torch.long)` truncates; the value is positive.
    side + (max_exact + large as usize).min(half - 1)
}

/// A stand-in for the learned `rel_attn_embed` table, `(NUM_BUCKETS, HEADS)`: per head, a
/// bias that decays with the bucket's distance at its own rate, slightly different for keys
/// before and after the query, plus noise.
fn bucket_table(rng: &mut DataRng) -> Vec<f64> {
    let half = NUM_BUCKETS / 2;
    let amplitude = rng.uniform(HEADS, 0.5, 2.0);
    let width = rng.uniform(HEADS, 4.0, 60.0);
    let future = rng.uniform(HEADS, 0.7, 1.0);
    let noise = rng.uniform(NUM_BUCKETS * HEADS, -0.1, 0.1);
    let mut table = Vec::with_capacity(NUM_BUCKETS * HEADS);
    for bucket in 0..NUM_BUCKETS {
        let (after, d) = (bucket >= half, (bucket % half) as f64);
        for h in 0..HEADS {
            let side = if after { future[h] } else { 1.0 };
            let profile = amplitude[h] * side * (-d / width[h]).exp() - 0.2;
            table.push(profile + noise[bucket * HEADS + h]);
        }
    }
    table
}

/// `compute_bias(S, S)` permuted to `(1, N, S, S)`: `rel_pos[n][i][j] = table[bucket(j - i)][n]`.
fn position_bias(table: &[f64], seq: usize) -> Vec<f64> {
    let mut rel_pos = Vec::with_capacity(HEADS * seq * seq);
    for n in 0..HEADS {
        for i in 0..seq {
            for j in 0..seq {
                let bucket = relative_bucket(j as i64 - i as i64);
                rel_pos.push(table[bucket * HEADS + n]);
            }
        }
    }
    rel_pos
}

/// The op's inputs in float64.
struct Workload {
    sizes: Sizes,
    hidden_states: Vec<f64>,
    query_bias: Vec<f64>,
    rel_pos: Vec<f64>,
    weight: Vec<f64>,
    bias: Vec<f64>,
    eco_a: Vec<f64>,
}

impl Workload {
    fn new(args: &Args) -> Workload {
        let mut rng = DataRng::new(args.seed);
        let sizes = Sizes {
            batch: args.batch,
            seq: args.seq,
            heads: HEADS,
            head_size: HEAD_SIZE,
            proj: PROJ,
        };
        let hidden = HEADS * HEAD_SIZE;
        // Unit-variance activations, like LayerNorm outputs.
        let limit = 3f64.sqrt();
        let hidden_states = rng.uniform(args.batch * args.seq * hidden, -limit, limit);
        // nn.Linear(64, 8) initialisation: U(-1/sqrt(64), 1/sqrt(64)) for weight and bias.
        // The op takes the weight as (head_size, D), the transpose of torch's (8, 64).
        let bound = 1.0 / (HEAD_SIZE as f64).sqrt();
        let weight = rng.uniform(HEAD_SIZE * PROJ, -bound, bound);
        let bias = rng.uniform(PROJ, -bound, bound);
        let table = bucket_table(&mut rng);
        Workload {
            sizes,
            hidden_states,
            query_bias: vec![0.0; hidden],
            rel_pos: position_bias(&table, args.seq),
            weight,
            bias,
            eco_a: vec![1.0; HEADS],
        }
    }

    /// The inputs rounded to `T`: what the kernel sees, and what the reference must use.
    fn rounded<T: Float>(&self) -> Workload {
        Workload {
            sizes: self.sizes,
            hidden_states: data::round_to::<T>(&self.hidden_states),
            query_bias: data::round_to::<T>(&self.query_bias),
            rel_pos: data::round_to::<T>(&self.rel_pos),
            weight: data::round_to::<T>(&self.weight),
            bias: data::round_to::<T>(&self.bias),
            eco_a: data::round_to::<T>(&self.eco_a),
        }
    }

    fn problem(&self) -> Problem<'_> {
        Problem {
            sizes: self.sizes,
            query: &self.hidden_states,
            query_bias: &self.query_bias,
            rel_pos: &self.rel_pos,
            weight: &self.weight,
            bias: &self.bias,
            eco_a: &self.eco_a,
        }
    }

    fn output_shape(&self) -> [usize; 4] {
        let s = self.sizes;
        [s.batch, s.heads, s.seq, s.seq]
    }
}

/// Runs the op in `T`; returns the selected variant and the output widened to f64.
fn run_on_gpu<T: Float>(ctx: &Context, w: &Workload) -> Result<(&'static str, Vec<f64>)> {
    let s = w.sizes;
    let upload = |shape: &[usize], values: &[f64]| {
        Tensor::from_slice(ctx, shape, &data::to_elem::<T>(values))
            .with_context(|| format!("uploading a {shape:?} tensor"))
    };
    let query_layer = upload(&[s.batch, s.seq, HEADS * HEAD_SIZE], &w.hidden_states)?;
    let query_bias = upload(&[HEADS * HEAD_SIZE], &w.query_bias)?;
    let rel_pos = upload(&[1, HEADS, s.seq, s.seq], &w.rel_pos)?;
    let weight = upload(&[HEAD_SIZE, PROJ], &w.weight)?;
    let bias = upload(&[PROJ], &w.bias)?;
    let eco_a = upload(&[1, HEADS, 1, 1], &w.eco_a)?;
    let inputs = Inputs {
        query_layer: &query_layer,
        query_bias: &query_bias,
        rel_pos: &rel_pos,
        weight: &weight,
        bias: &bias,
        eco_a: &eco_a,
    };
    let attrs = Attrs::new(RequiredAttrs {
        num_heads: HEADS as i64,
    });
    let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs)?;
    let out = op::run(ctx, &inputs, &attrs)?;
    ensure!(
        out.output.shape() == w.output_shape(),
        "output shape {:?}, want {:?}",
        out.output.shape(),
        w.output_shape()
    );
    Ok((plan.variant, data::from_elem(&out.output.to_vec(ctx)?)))
}

/// How far a gate recovered from a `T` output may stray past (1, 2). `rel_pos` is already
/// rounded to `T`, so only the output's rounding counts: f16 rounds to 2^-11 relative, up to
/// 1e-3 at g = 2 (allow twice that); for f32 the spec's relative tolerance is ample.
fn gate_slack(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2e-3,
        _ => 1e-5,
    }
}

/// Smallest and largest gate recovered from `got`, checked against (1, 2); the error names
/// the first element outside.
fn recovered_gates(w: &Workload, got: &[f64], slack: f64) -> Result<(f64, f64)> {
    let s = w.sizes;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for b in 0..s.batch {
        for n in 0..s.heads {
            for i in 0..s.seq {
                let rel = &w.rel_pos[(n * s.seq + i) * s.seq..][..s.seq];
                let out = &got[((b * s.heads + n) * s.seq + i) * s.seq..][..s.seq];
                let mut probed = false;
                for (t, (&r, &y)) in rel.iter().zip(out).enumerate() {
                    if r.abs() < GATE_PROBE {
                        continue;
                    }
                    let g = y / r;
                    ensure!(
                        g > 1.0 - slack && g < 2.0 + slack,
                        "gate {g} outside (1, 2) at (b, n, s, t) = ({b}, {n}, {i}, {t}): \
                         output {y}, rel_pos {r}"
                    );
                    (lo, hi, probed) = (lo.min(g), hi.max(g), true);
                }
                ensure!(
                    probed,
                    "row (b, n, s) = ({b}, {n}, {i}) has no |rel_pos| >= {GATE_PROBE}"
                );
            }
        }
    }
    Ok((lo, hi))
}

/// Whether `e` says a tensor is larger than the device can bind.
fn too_large(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<RuntimeError>(),
            Some(RuntimeError::TooLarge { .. })
        )
    })
}

/// Runs one element type end to end; prints its line and returns whether it passed, or
/// `None` when the device cannot hold the tensors (f32 at S = 1500 needs 144 MB per
/// tensor, more than the 128 MiB storage binding of lavapipe and WebGPU's default limits).
fn check<T: Float>(ctx: &Context, workload: &Workload) -> Result<Option<bool>> {
    let rounded = workload.rounded::<T>();
    let (variant, got) = match run_on_gpu::<T>(ctx, &rounded) {
        Ok(run) => run,
        Err(e) if too_large(&e) => {
            println!("{:>7}: skipped: {e:#}", T::DTYPE.to_string());
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let want = rounded.problem().output()?;
    let tolerance = Tolerance::gated_bias(T::DTYPE);
    let cmp = data::compare(&got, &want, tolerance);
    let gates = recovered_gates(&rounded, &got, gate_slack(T::DTYPE));
    let passed = cmp.passed() && gates.is_ok();
    println!(
        "{:>7}: variant {variant}, max abs error {:.3e}, max rel error {:.3e} ({:.0e} abs + \
         {:.0e} rel allowed){}",
        T::DTYPE.to_string(),
        cmp.max_abs,
        cmp.max_rel,
        tolerance.abs,
        tolerance.rel,
        match &gates {
            Ok((lo, hi)) => format!(", GPU gates in [{lo:.6}, {hi:.6}]"),
            Err(_) => String::new(),
        }
    );
    if !cmp.passed() {
        let at = cmp
            .worst
            .map(|w| data::unravel(w.index, &workload.output_shape()))
            .unwrap_or_default();
        println!("         vs reference: {cmp} (b, n, s, t: {at:?})");
    }
    if let Err(e) = &gates {
        println!("         gates: {e}");
    }
    println!("         {}", if passed { "PASS" } else { "FAIL" });
    Ok(Some(passed))
}

fn main() -> Result<()> {
    let args = Args::parse();
    ensure!(
        args.batch > 0 && args.seq > 0,
        "--batch and --seq must be positive"
    );
    let ctx = Context::new().context("creating the GPU context")?;
    println!("adapter: {}", ctx.adapter_summary());
    let workload = Workload::new(&args);
    println!(
        "WavLM-Large gated position bias: B = {}, S = {} frames, {HEADS} heads x {HEAD_SIZE}, \
         D = {PROJ}, {NUM_BUCKETS} buckets up to distance {MAX_DISTANCE}, eco_a = 1",
        args.batch, args.seq
    );

    // The CPU side of the (1, 2) claim: every reference gate, on the f32 inputs.
    let rounded = workload.rounded::<f32>();
    let problem = rounded.problem();
    let s = workload.sizes;
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for b in 0..s.batch {
        for n in 0..s.heads {
            for i in 0..s.seq {
                let g = problem.gate(b, n, i);
                (lo, hi) = (lo.min(g), hi.max(g));
            }
        }
    }
    println!("reference gates in [{lo:.6}, {hi:.6}]");
    let mut passed = lo > 1.0 && hi < 2.0;
    if !passed {
        println!("FAIL: a reference gate lies outside (1, 2) with eco_a = 1");
    }

    let mut outcomes = vec![check::<f32>(&ctx, &workload)?];
    if ctx.caps().shader_f16 {
        outcomes.push(check::<f16>(&ctx, &workload)?);
    } else {
        println!("float16: skipped, the device has no shader-f16");
    }
    // Skipped element types neither pass nor fail, but something must have run.
    passed &= outcomes.iter().all(|o| *o != Some(false));
    ensure!(
        outcomes.iter().any(Option::is_some),
        "no element type could run on this device at these sizes"
    );
    if passed {
        println!("PASS");
        return Ok(());
    }
    println!("FAIL");
    bail!("the GPU result differs from the CPU reference or a gate left (1, 2)")
}
