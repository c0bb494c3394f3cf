//! Qwen2-VL multimodal RoPE on the GPU: builds the three position streams of a prompt with one
//! image, applies `kernels::mrotary_embedding` and checks it against two CPU versions.
//!
//! The prompt is `prefix` text tokens, one image frame of `grid_h × grid_w` patches, then `suffix`
//! text tokens, positioned as Qwen2-VL's `get_rope_index` does: text tokens share one position on
//! all three streams; image patches get temporal = start, height = start + row, width = start +
//! col; text after the image continues from one past the largest position so far. Head size 128
//! with `mrope_section = [16, 24, 24]` (sectioned layout, rotate_half pairing), caches from
//! `inv_freq[j] = 10000^(-2j/128)`.
//!
//! The CPU checks are the float64 reference of SEMANTICS.md §1.3 and an independent transcription
//! of transformers' `apply_multimodal_rotary_pos_emb` (full-width cos/sin split into
//! `mrope_section * 2` chunks, chunk `i` taken from stream `i % 3`, then `rotate_half`), which
//! also shows that ORT's sectioned layout is exactly what the model computes.
//!
//! `cargo run --release -p kernels-tools --example mrope_qwen2vl [-- --heads 4 --grid-w 8]`

use anyhow::{Context as _, Result, bail, ensure};
use clap::Parser;
use kernel_runtime::{Context, IndexTensor, Tensor};
use kernels::mrotary_embedding::{self as op, Attrs, Inputs, RequiredAttrs};
use kernels_tools::data::{self, DataRng, Tolerance};
use kernels_tools::reference::mrotary_embedding::{mrotary_embedding, rope_caches};

/// Qwen2-VL's head size and rotary sections.
const HEAD_SIZE: usize = 128;
const SECTIONS: [usize; 3] = [16, 24, 24];
const THETA: f64 = 10000.0;

#[derive(Parser, Debug)]
#[command(about = "MRotaryEmbedding on a Qwen2-VL position grid, checked against the CPU")]
struct Args {
    /// Attention heads (the input is rank 3: (1, tokens, heads * 128)).
    #[arg(long, default_value_t = 2)]
    heads: usize,
    /// Image patch rows.
    #[arg(long, default_value_t = 4)]
    grid_h: usize,
    /// Image patch columns.
    #[arg(long, default_value_t = 6)]
    grid_w: usize,
    /// Text tokens before the image.
    #[arg(long, default_value_t = 3)]
    prefix: usize,
    /// Text tokens after the image.
    #[arg(long, default_value_t = 5)]
    suffix: usize,
    /// Seed of the random activations.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// Temporal, height and width positions of every token of the prompt.
fn position_grid(args: &Args) -> [Vec<i64>; 3] {
    let mut streams: [Vec<i64>; 3] = Default::default();
    let push_text = |streams: &mut [Vec<i64>; 3], start: i64, count: usize| {
        for i in 0..count as i64 {
            streams.iter_mut().for_each(|s| s.push(start + i));
        }
    };
    push_text(&mut streams, 0, args.prefix);
    // One frame (t = 1): the image starts right after the prefix text.
    let start = args.prefix as i64;
    for row in 0..args.grid_h as i64 {
        for col in 0..args.grid_w as i64 {
            streams[0].push(start);
            streams[1].push(start + row);
            streams[2].push(start + col);
        }
    }
    let next = streams.iter().flatten().max().map_or(0, |&m| m + 1);
    push_text(&mut streams, next, args.suffix);
    streams
}

/// transformers' `apply_multimodal_rotary_pos_emb` for one head vector `x` of token `t`.
fn transformers_mrope(x: &[f64], positions: &[Vec<i64>; 3], t: usize) -> Vec<f64> {
    let half = HEAD_SIZE / 2;
    // emb = cat(freqs, freqs): column d uses inv_freq[d % half].
    let angle = |stream: usize, d: usize| {
        let inv_freq = THETA.powf(-((2 * (d % half)) as f64) / HEAD_SIZE as f64);
        positions[stream][t] as f64 * inv_freq
    };
    // Split the 128 columns into chunks of mrope_section * 2; chunk i reads stream i % 3.
    let chunks = SECTIONS.iter().chain(&SECTIONS);
    let mut stream_of_column = Vec::with_capacity(HEAD_SIZE);
    for (i, &len) in chunks.enumerate() {
        stream_of_column.extend(std::iter::repeat_n(i % 3, len));
    }
    (0..HEAD_SIZE)
        .map(|d| {
            let a = angle(stream_of_column[d], d);
            // rotate_half(x) = cat(-x[half..], x[..half]).
            let rotated = if d < half { -x[d + half] } else { x[d - half] };
            x[d] * a.cos() + rotated * a.sin()
        })
        .collect()
}

fn main() -> Result<()> {
    let args = Args::parse();
    ensure!(args.heads > 0, "--heads must be positive");
    let positions = position_grid(&args);
    let tokens = positions[0].len();
    ensure!(tokens > 0, "the prompt has no tokens");
    let max_positions = positions
        .iter()
        .flatten()
        .max()
        .map_or(1, |&m| m as usize + 1);
    let hidden = args.heads * HEAD_SIZE;

    let ctx = Context::new().context("creating the GPU context")?;
    println!("adapter: {}", ctx.adapter_summary());
    println!(
        "prompt: {} text + {} image ({}x{} patches) + {} text = {tokens} tokens; \
         {} heads x {HEAD_SIZE}, sections {SECTIONS:?}, {max_positions} cache rows",
        args.prefix,
        args.grid_h * args.grid_w,
        args.grid_h,
        args.grid_w,
        args.suffix,
        args.heads
    );

    // Activations and caches as the f32 kernel sees them; the CPU works on the same values.
    let shape = [1, tokens, hidden];
    let x = data::round_to::<f32>(&DataRng::new(args.seed).uniform(tokens * hidden, -2.0, 2.0));
    let (cos, sin) = rope_caches(max_positions, HEAD_SIZE / 2, THETA);
    let (cos32, sin32) = (data::round_to::<f32>(&cos), data::round_to::<f32>(&sin));
    let flat_positions: Vec<i64> = positions.iter().flatten().copied().collect();

    let mut attrs = Attrs::new(RequiredAttrs {
        mrope_section: SECTIONS.iter().map(|&s| s as i64).collect(),
    });
    attrs.num_heads = args.heads as i64;
    let cache_shape = [max_positions, HEAD_SIZE / 2];
    let input = Tensor::from_slice(&ctx, &shape, &data::to_elem::<f32>(&x))?;
    let position_ids = IndexTensor::from_i64(&ctx, &[3, 1, tokens], &flat_positions)?;
    let cos_cache = Tensor::from_slice(&ctx, &cache_shape, &data::to_elem::<f32>(&cos32))?;
    let sin_cache = Tensor::from_slice(&ctx, &cache_shape, &data::to_elem::<f32>(&sin32))?;
    let inputs = Inputs {
        input: &input,
        position_ids: &position_ids,
        cos_cache: &cos_cache,
        sin_cache: &sin_cache,
    };
    let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs)?;
    println!("variant: {}", plan.variant);
    let out = op::run(&ctx, &inputs, &attrs)?;
    let got = data::from_elem(&out.output.to_vec(&ctx)?);

    let reference = mrotary_embedding(
        &x,
        &shape,
        &flat_positions,
        &cos32,
        &sin32,
        max_positions,
        &attrs,
    )?;
    let mut hf = Vec::with_capacity(x.len());
    for (t, token) in x.chunks(hidden).enumerate() {
        for head in token.chunks(HEAD_SIZE) {
            hf.extend(transformers_mrope(head, &positions, t));
        }
    }

    let tolerance = Tolerance::MROPE_F32;
    let vs_reference = data::compare(&got, &reference, tolerance);
    let vs_transformers = data::compare(&got, &hf, tolerance);
    println!(
        "max abs error: {:.3e} vs float64 reference, {:.3e} vs transformers-style CPU",
        vs_reference.max_abs, vs_transformers.max_abs
    );
    if vs_reference.passed() && vs_transformers.passed() {
        println!("PASS");
        return Ok(());
    }
    println!("FAIL");
    for (what, cmp) in [
        ("reference", vs_reference),
        ("transformers", vs_transformers),
    ] {
        if !cmp.passed() {
            let at = cmp.worst.map(|w| data::unravel(w.index, &shape));
            let at = at.unwrap_or_default();
            println!("  vs {what}: {cmp} (batch, token, channel: {at:?})");
        }
    }
    bail!("the GPU result differs from the CPU beyond {tolerance:?}")
}
