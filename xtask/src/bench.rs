//! `cargo xtask bench [--torch]`: the harness (`examples`' `bench`), and with `--torch` the
//! PyTorch peer (`benchmarks/peers/onnx_torch.py`) run right after it at the same shapes (those
//! of `benchmarks/cases`, or of the one `--cases` file given, a sweep), the two result files
//! joined case by case; then the decode section (`bench_decode.rs`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::system;

/// The ops the peer script times, each at the shapes of `benchmarks/cases/<op>.bench.json`
/// (`kernels.MatMul`, the seed packages' tensor-core MatMul, with `torch.matmul` as
/// `ai.onnx.MatMul`).
const PEER_OPS: &[&str] = &[
    "ai.onnx.Add",
    "ai.onnx.Softmax",
    "ai.onnx.MatMul",
    "kernels.MatMul",
];

/// Harness arguments that run one part of it, after which the decode section is left out.
const PARTS: &[&str] = &[
    "--host",
    "--soak",
    "--churn",
    "--compile-times",
    "--cases-only",
    "--filter",
    "--cases",
];

/// Runs the harness with `args`, then, with `torch`, the peer and the joined table; then the
/// decode section (and its peer with `torch`) unless `args` ask for one part of the harness.
/// `--decode` runs the decode section alone.
pub fn run(root: &Path, torch: bool, args: &[String]) -> Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    if args.iter().any(|a| a == "--decode") {
        return crate::bench_decode::run(root, quick, torch);
    }
    let sweep = if torch { check_args(args)? } else { None };
    let mut cargo_args = vec![
        "run",
        "--release",
        "-p",
        "kernels-tools",
        "--bin",
        "bench",
        "--",
    ];
    cargo_args.extend(args.iter().map(String::as_str));
    system::cargo(root, &cargo_args)?;
    if torch {
        run_peer(root, &results_path(root, args), sweep.as_deref())?;
    }
    let part = args.iter().any(|a| {
        PARTS
            .iter()
            .any(|p| a == p || a.starts_with(&format!("{p}=")))
    });
    if !part {
        crate::bench_decode::run(root, quick, torch)?;
    }
    Ok(())
}

/// Where the harness writes its results: the path after `--json` in its `args` (relative to
/// the root, where cargo runs it), else its default.
fn results_path(root: &Path, args: &[String]) -> PathBuf {
    let mut path = root.join("target/bench/results.json");
    for (i, arg) in args.iter().enumerate() {
        if arg == "--json" {
            if let Some(value) = args.get(i + 1) {
                path = root.join(value);
            }
        } else if let Some(value) = arg.strip_prefix("--json=") {
            path = root.join(value);
        }
    }
    path
}

/// Refuses harness arguments the peer cannot match (`--quick`'s small shapes, a `--cases`
/// folder other than `benchmarks/cases`), and returns the `--cases` file given, whose cases the
/// peer then times instead of `benchmarks/cases`.
fn check_args(args: &[String]) -> Result<Option<String>> {
    let mut sweep = None;
    for (i, arg) in args.iter().enumerate() {
        if arg == "--quick" {
            bail!("--torch compares at the cases' full shapes; `--quick` runs small ones");
        }
        let value = if arg == "--cases" {
            let Some(value) = args.get(i + 1) else {
                bail!("--cases needs a folder or a `*.bench.json` file");
            };
            Some(value.clone())
        } else {
            arg.strip_prefix("--cases=").map(str::to_owned)
        };
        match value {
            Some(value) if value.trim_end_matches('/') == "benchmarks/cases" => sweep = None,
            Some(value) if value.ends_with(".bench.json") => sweep = Some(value),
            Some(value) => bail!(
                "--torch: the PyTorch peer times benchmarks/cases or one `*.bench.json` file, \
                 not {value}"
            ),
            None => {}
        }
    }
    Ok(sweep)
}

/// Runs the peer for the ops of `results` that it times (at the shapes of `sweep`, a cases
/// file, where given), writing `torch.json` beside them, and prints the joined table.
fn run_peer(root: &Path, results: &Path, sweep: Option<&str>) -> Result<()> {
    let ours = read_json(results)?;
    let mut ops: Vec<&str> = peer_ops(&ours);
    if ops.is_empty() {
        bail!(
            "--torch: no case of {} ran (the PyTorch peer times only those), so there is nothing \
             to compare; run it with `--filter ai.onnx`, `--filter MatMul` or without a filter",
            PEER_OPS.join(", ")
        );
    }
    if let Some(sweep) = sweep {
        // The peer reads the file's op from it, as the harness did.
        ops = vec![sweep];
    }
    let out = results.with_file_name("torch.json");
    let script = root.join("benchmarks/peers/onnx_torch.py");
    eprintln!(
        "PyTorch peer: python3 {} {} {}",
        script.display(),
        out.display(),
        ops.join(" ")
    );
    let status = Command::new("python3")
        .arg(&script)
        .arg(&out)
        .args(&ops)
        .current_dir(root)
        .status()
        .context("starting python3: the PyTorch peer needs python3 with torch and triton")?;
    if !status.success() {
        bail!(
            "the PyTorch peer exited with {status}: it needs python3 with torch (CUDA) and \
             triton, and a CUDA GPU"
        );
    }
    let theirs = read_json(&out)?;
    print!("{}", comparison(&ours, &theirs));
    Ok(())
}

fn read_json(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The ops of the harness's results that the peer times, in the peer's order.
fn peer_ops(ours: &Value) -> Vec<&'static str> {
    let ran: Vec<&str> = cases(ours).filter_map(|c| c["op"].as_str()).collect();
    PEER_OPS
        .iter()
        .copied()
        .filter(|op| ran.contains(op))
        .collect()
}

fn cases(ours: &Value) -> impl Iterator<Item = &Value> {
    ours["cases"].as_array().into_iter().flatten()
}

/// The peer's row for one case and engine (`eager`, `compile`; `torch` for its copy).
fn peer_row<'a>(
    theirs: &'a Value,
    engine: &str,
    op: &str,
    case: &str,
    dtype: &str,
) -> Option<&'a Value> {
    theirs.as_array()?.iter().find(|row| {
        row["engine"] == engine && row["op"] == op && row["case"] == case && row["dtype"] == dtype
    })
}

/// The peer's time for one case and engine, in microseconds.
fn peer_us(theirs: &Value, engine: &str, op: &str, case: &str, dtype: &str) -> Option<f64> {
    peer_row(theirs, engine, op, case, dtype)?["us"].as_f64()
}

/// A Markdown table of every case of the peer's ops: ours beside `torch.compile` and eager,
/// with each side's copy rate above it. A case the peer did not time keeps empty cells.
fn comparison(ours: &Value, theirs: &Value) -> String {
    let mut text = String::new();
    if let Some(gbps) = ours["copy"]["gbps"].as_f64() {
        text.push_str(&format!("copy ceiling: {gbps:.0} GB/s\n"));
    }
    if let Some(gbps) =
        peer_row(theirs, "torch", "copy", "1 GiB", "float32").and_then(|row| row["gbps"].as_f64())
    {
        text.push_str(&format!("PyTorch's copy: {gbps:.0} GB/s\n"));
    }
    text.push_str(
        "\n| op | case | dtype | variant | µs | of copy | TFLOP/s | eager µs | torch.compile µs \
         | speed vs compile |\n|---|---|---|---|--:|--:|--:|--:|--:|--:|\n",
    );
    for case in cases(ours) {
        let (Some(op), Some(name), Some(dtype), Some(us)) = (
            case["op"].as_str(),
            case["case"].as_str(),
            case["dtype"].as_str(),
            case["median_us"].as_f64(),
        ) else {
            continue;
        };
        if !PEER_OPS.contains(&op) {
            continue;
        }
        let percent = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{:.1}%", v * 100.0));
        let tenths = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.1}"));
        let compile = peer_us(theirs, "compile", op, name, dtype);
        text.push_str(&format!(
            "| {op} | {name} | {dtype} | `{}` | {us:.1} | {} | {} | {} | {} | {} |\n",
            case["variant"].as_str().unwrap_or(""),
            percent(case["fraction_of_copy"].as_f64()),
            tenths(case["tflops"].as_f64()),
            tenths(peer_us(theirs, "eager", op, name, dtype)),
            tenths(compile),
            compile.map_or_else(String::new, |c| format!("{:.2}×", c / us)),
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_results_path_follows_the_harness_arguments() {
        let root = Path::new("/r");
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            results_path(root, &args(&["--filter", "x"])),
            Path::new("/r/target/bench/results.json")
        );
        assert_eq!(
            results_path(root, &args(&["--json", "out/a.json"])),
            Path::new("/r/out/a.json")
        );
        assert_eq!(
            results_path(root, &args(&["--json=/tmp/b.json"])),
            Path::new("/tmp/b.json")
        );
    }

    #[test]
    fn cases_are_joined_by_op_case_and_dtype() {
        let ours = json!({
            "copy": {"gbps": 4206.4},
            "cases": [
                {"op": "ai.onnx.Add", "case": "same shape", "dtype": "float32",
                 "variant": "same_shape_vec4", "median_us": 189.6, "fraction_of_copy": 1.0098,
                 "tflops": null},
                {"op": "ai.onnx.Add", "case": "same shape", "dtype": "float16",
                 "variant": "same_shape_vec4", "median_us": 113.6, "fraction_of_copy": 0.842,
                 "tflops": null},
                {"op": "ai.onnx.MatMul", "case": "square 4096", "dtype": "float32",
                 "variant": "rank2_notrans_f32_vec4_tiled_reg", "median_us": 5955.7,
                 "fraction_of_copy": 0.008, "tflops": 23.08},
                {"op": "com.microsoft.BiasSoftmax", "case": "inner", "dtype": "float32",
                 "variant": "adaptive_row", "median_us": 522.6, "fraction_of_copy": 0.97},
                {"op": "kernels.MatMul", "case": "square 4096", "dtype": "float16",
                 "variant": "subgroup_matrix_vec4", "median_us": 687.2,
                 "fraction_of_copy": 0.029, "tflops": 200.0}
            ]
        });
        let theirs = json!([
            {"engine": "torch", "op": "copy", "case": "1 GiB", "dtype": "float32", "us": 505.6,
             "gbps": 4247.2},
            {"engine": "eager", "op": "ai.onnx.Add", "case": "same shape", "dtype": "float32",
             "us": 190.5},
            {"engine": "compile", "op": "ai.onnx.Add", "case": "same shape", "dtype": "float32",
             "us": 189.9},
            {"engine": "compile", "op": "ai.onnx.MatMul", "case": "square 4096",
             "dtype": "float32", "us": 2677.3},
            {"engine": "eager", "op": "kernels.MatMul", "case": "square 4096",
             "dtype": "float16", "us": 300.1},
            {"engine": "compile", "op": "kernels.MatMul", "case": "square 4096",
             "dtype": "float16", "us": 309.3}
        ]);
        assert_eq!(
            peer_ops(&ours),
            ["ai.onnx.Add", "ai.onnx.MatMul", "kernels.MatMul"]
        );
        expect![[r#"
            copy ceiling: 4206 GB/s
            PyTorch's copy: 4247 GB/s

            | op | case | dtype | variant | µs | of copy | TFLOP/s | eager µs | torch.compile µs | speed vs compile |
            |---|---|---|---|--:|--:|--:|--:|--:|--:|
            | ai.onnx.Add | same shape | float32 | `same_shape_vec4` | 189.6 | 101.0% |  | 190.5 | 189.9 | 1.00× |
            | ai.onnx.Add | same shape | float16 | `same_shape_vec4` | 113.6 | 84.2% |  |  |  |  |
            | ai.onnx.MatMul | square 4096 | float32 | `rank2_notrans_f32_vec4_tiled_reg` | 5955.7 | 0.8% | 23.1 |  | 2677.3 | 0.45× |
            | kernels.MatMul | square 4096 | float16 | `subgroup_matrix_vec4` | 687.2 | 2.9% | 200.0 | 300.1 | 309.3 | 0.45× |
        "#]]
        .assert_eq(&comparison(&ours, &theirs));
    }

    #[test]
    fn arguments_the_peer_cannot_match_are_refused() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(check_args(&args(&["--filter", "ai.onnx"])).ok(), Some(None));
        assert_eq!(
            check_args(&args(&["--cases", "benchmarks/sweeps/s.bench.json"])).ok(),
            Some(Some("benchmarks/sweeps/s.bench.json".to_owned()))
        );
        assert_eq!(
            check_args(&args(&["--cases=s.bench.json", "--filter", "rows"])).ok(),
            Some(Some("s.bench.json".to_owned()))
        );
        assert_eq!(
            check_args(&args(&["--cases", "benchmarks/cases/"])).ok(),
            Some(None)
        );
        for bad in [
            &["--quick"][..],
            &["--cases", "benchmarks/sweeps"],
            &["--cases=x.json"],
            &["--cases"],
        ] {
            assert!(check_args(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn no_op_of_the_peer_means_nothing_to_run() {
        let ours = json!({"cases": [{"op": "com.microsoft.BiasSoftmax"}]});
        assert!(peer_ops(&ours).is_empty());
        assert!(peer_ops(&json!({})).is_empty());
    }
}
