//! `gemma-decode`: decodes tokens greedily with the Gemma-4-style decoder on the best adapter
//! and prints what each token cost.
//!
//! `cargo run --release -p gemma-decoder --bin gemma-decode -- --config small --tokens 32`

use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::Parser;
use gemma_decoder::{Config, Precision};

#[derive(Parser)]
#[command(
    about = "Decodes tokens greedily with a Gemma-4-style decoder built from the corpus's \
                   Gemma 4 packages, and prints tokens per second, host time and dispatches \
                   per token"
)]
struct Args {
    /// The dimensions: `small` (2 layers, for tests) or `e2b` (Gemma 4 E2B's size).
    #[arg(long, default_value = "small")]
    config: String,
    /// Tokens to decode.
    #[arg(long, default_value_t = 32)]
    tokens: usize,
    /// The seed of the random weights.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// The first token.
    #[arg(long, default_value_t = 1)]
    token: u32,
    /// float16 weights where the packages offer a dense form (else packed codes).
    #[arg(long)]
    dense: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if !gemma_decoder::PRESENT {
        println!(
            "gemma-decode: left out, the corpus's Gemma 4 packages were not found when this was \
             built (../shared/corpus beside the repository, or KERNEL_CORPUS_DIR)"
        );
        return Ok(());
    }
    let Some(config) = Config::named(&args.config) else {
        bail!(
            "no configuration `{}`: choose one of {}",
            args.config,
            Config::NAMES.join(", ")
        );
    };
    let config = config.with_precision(if args.dense {
        Precision::Dense
    } else {
        Precision::Quantized
    });
    if args.tokens == 0 || args.tokens > config.max_positions {
        bail!(
            "--tokens {} is outside 1..={}, the KV cache's positions",
            args.tokens,
            config.max_positions
        );
    }
    run(&config, &args)
}

#[cfg(not(corpus))]
fn run(_: &Config, _: &Args) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(corpus)]
fn run(config: &Config, args: &Args) -> anyhow::Result<()> {
    use gemma_decoder::{Decoder, Weights};
    use kernel_runtime::Context;

    let ctx = Context::new().context("opening the best adapter")?;
    println!("adapter: {}", ctx.adapter_summary());
    println!("config {}", config.summary());
    let t = Instant::now();
    let weights = Weights::seeded(config, args.seed);
    println!(
        "weights: {:.1} MB drawn from seed {} in {:.2} s",
        weights.bytes() as f64 / 1e6,
        args.seed,
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    let mut decoder = Decoder::new(&ctx, config, &weights)?;
    drop(weights);
    println!("uploaded in {:.2} s", t.elapsed().as_secs_f64());
    let report = decoder.generate(&ctx, args.token, args.tokens)?;
    let created = |c: &kernel_runtime::ContextCounts| {
        (
            c.buffers_created,
            c.bind_groups_created,
            c.pipelines_created,
        )
    };
    let (b0, g0, p0) = created(&report.after_first);
    let (b1, g1, p1) = created(&report.after_last);
    println!(
        "{} tokens in {:.3} s: {:.1} tokens/s, {:.0} µs per token",
        report.tokens.len(),
        report.wall_s,
        report.tokens_per_s(),
        1e6 / report.tokens_per_s()
    );
    println!(
        "host: {:.0} µs per token to record and submit (median after the first; the first {:.0} µs)",
        report.host_us_median(),
        report.host_us.first().copied().unwrap_or(0.0)
    );
    println!(
        "dispatches: {:.0} per token; created after the first token: {} buffers, {} bind groups, {} pipelines",
        report.dispatches_per_token(),
        b1 - b0,
        g1 - g0,
        p1 - p0
    );
    let shown: Vec<String> = report.tokens.iter().take(16).map(u32::to_string).collect();
    println!(
        "tokens: {}{}",
        shown.join(" "),
        if report.tokens.len() > 16 { " …" } else { "" }
    );
    Ok(())
}
