//! The `decode` section of `cargo xtask bench`: the Gemma 4 decoder of `examples/gemma-decoder`
//! timed per token on the application's own device beside the copy ceiling measured on it
//! (`gemma-decode --copy`), and with `--torch` its PyTorch peer
//! (`benchmarks/peers/gemma_decode_torch.py`) at the same shapes, side by side.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::system;

/// Where the section writes its results, under the root.
const OURS: &str = "target/bench/decode.json";
const THEIRS: &str = "target/bench/decode-torch.json";

/// Runs the decoder (the small configuration with `quick`, else E2B's dimensions), then with
/// `torch` the peer, and prints the comparison.
pub fn run(root: &Path, quick: bool, torch: bool) -> Result<()> {
    let (config, tokens) = if quick {
        ("small", "16")
    } else {
        ("e2b", "128")
    };
    let mut args = vec![
        "run",
        "--release",
        "-p",
        "gemma-decoder",
        "--bin",
        "gemma-decode",
        "--",
        "--config",
        config,
        "--tokens",
        tokens,
        "--copy",
        "--json",
        OURS,
    ];
    if !quick {
        args.push("--warm-up");
    }
    system::cargo(root, &args)?;
    if !torch {
        return Ok(());
    }
    let script = root.join("benchmarks/peers/gemma_decode_torch.py");
    let status = Command::new("python3")
        .arg(&script)
        .args(["--config", config, "--tokens", tokens])
        .arg(root.join(THEIRS))
        .current_dir(root)
        .status()
        .context("starting python3: the decode peer needs python3 with torch")?;
    if !status.success() {
        bail!(
            "the decode peer exited with {status}: it needs python3 with torch (CUDA) and a CUDA GPU"
        );
    }
    let ours = read(&root.join(OURS))?;
    let theirs = read(&root.join(THEIRS))?;
    print!("{}", comparison(&ours, &theirs));
    Ok(())
}

fn read(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Ours (GPU time per token in one pass, and wall time per token) beside each of the peer's
/// modes, in µs per token.
fn comparison(ours: &Value, theirs: &Value) -> String {
    let t = &ours["timing"];
    let gpu = t["gpu_us"].as_f64();
    let wall = t["tokens_per_s"].as_f64().map(|r| 1e6 / r);
    let mut text = format!(
        "\ndecode, {}\n| engine | µs per token | ours against it |\n|---|--:|--:|\n",
        t["config"].as_str().unwrap_or("")
    );
    let fmt = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.0}"));
    text.push_str(&format!("| ours, GPU (timestamps) | {} | |\n", fmt(gpu)));
    text.push_str(&format!("| ours, wall (tokens/s) | {} | |\n", fmt(wall)));
    if let Some(modes) = theirs["modes"].as_object() {
        for (name, mode) in modes {
            let us = mode["us_per_token_median"].as_f64();
            let against = match (us, wall) {
                (Some(us), Some(w)) => format!("{:.2}×", us / w),
                _ => String::new(),
            };
            text.push_str(&format!("| PyTorch {name} | {} | {against} |\n", fmt(us)));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comparison_puts_each_peer_mode_beside_ours() {
        let ours = serde_json::json!({"timing": {"config": "`e2b`", "gpu_us": 400.0, "tokens_per_s": 2000.0}});
        let theirs = serde_json::json!({"modes": {"eager": {"us_per_token_median": 1000.0}, "compile_graph": {"error": "x"}}});
        let text = comparison(&ours, &theirs);
        assert!(
            text.contains("| ours, GPU (timestamps) | 400 | |"),
            "{text}"
        );
        assert!(text.contains("| ours, wall (tokens/s) | 500 | |"), "{text}");
        assert!(text.contains("| PyTorch eager | 1000 | 2.00× |"), "{text}");
        assert!(
            text.contains("| PyTorch compile_graph | n/a |  |"),
            "{text}"
        );
    }
}
