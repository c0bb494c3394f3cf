//! `gemma-decode`: decodes tokens greedily with the Gemma-4-style decoder on the best adapter
//! and prints what each token cost.
//!
//! `cargo run --release -p gemma-decoder --bin gemma-decode -- --config small --tokens 32`

#[cfg(corpus)]
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
    /// Decode the tokens once untimed first (pipelines, the GPU's clocks).
    #[arg(long)]
    warm_up: bool,
    /// Measure the copy ceiling on the same device first (the harness's copy kernels, 1 GiB),
    /// and compare the GPU time per token with reading every byte a token needs at that rate.
    #[arg(long)]
    copy: bool,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
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
    use gemma_decoder::timing;
    use kernels_tools::bench::copy;

    let ctx = timing::own_context().map_err(anyhow::Error::msg)?;
    let t = Instant::now();
    let ceiling = if args.copy {
        let bytes = if config.name == "small" {
            16 << 20
        } else {
            1 << 30
        };
        let (best, _) = copy::measure_best(
            &ctx,
            &copy::CopyKind::sweep(),
            bytes,
            50,
            if args.warm_up {
                kernels_tools::bench::WARM_UP
            } else {
                std::time::Duration::ZERO
            },
        )?;
        println!(
            "copy ceiling: {} ({} MiB), {:.0} GB/s",
            best.kernel,
            best.bytes >> 20,
            best.gbps
        );
        Some(best)
    } else {
        None
    };
    let timing = timing::time(&ctx, config, args.seed, args.tokens, args.warm_up)?;
    timing::print(&timing, ceiling.as_ref().map(|c| c.gbps));
    println!(
        "  ({:.1} s in all, weights drawn and uploaded included)",
        t.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "timing": timing,
            "copy": ceiling,
        });
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
