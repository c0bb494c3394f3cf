//! The main job (`cargo xtask demo`): runs every generated op on the best adapter through the
//! op registry, on realistic shapes and random data, and checks each result against the
//! float64 CPU reference. Prints op, adapter, variant, dtype, shape, max error and GPU time;
//! cases the adapter cannot run (float16 without `shader-f16`) are listed as skipped with the
//! reason, and only a wrong result or an error fails the run.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use kernel_runtime::{AnyTensor, Context};
use kernels_tools::bench::median;
use kernels_tools::cases;
use kernels_tools::data::compare;

/// How many timed repetitions each case gets (median reported).
const REPEATS: usize = 20;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("demo: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let ctx = Context::new().map_err(|e| match e {
        kernel_runtime::RuntimeError::NoAdapter { .. } => {
            anyhow::anyhow!("no GPU adapter (install mesa-vulkan-drivers for a software one): {e}")
        }
        other => anyhow::anyhow!("no device: {other}"),
    })?;
    let adapter = ctx.adapter_info().name.clone();
    let adapter = adapter.split_whitespace().next().unwrap_or("");
    println!("adapter: {}", ctx.adapter_summary());
    println!(
        "{:<40} {:<36} {:<9} {:<18} {:<18} {:<8} {:>10} {:>12}  result",
        "op", "case", "adapter", "variant", "shape", "dtype", "max err", "GPU µs"
    );
    let all = kernels_tools::all_cases()?;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for entry in kernels_tools::ops() {
        let op_cases: Vec<&cases::Case> = all
            .iter()
            .filter(|c| c.op == entry.qualified_name)
            .collect();
        if op_cases.is_empty() {
            println!("{:<40} no demo case yet", entry.qualified_name);
            continue;
        }
        for case in op_cases {
            let row = |variant: &str, err: String, gpu: String, result: String| {
                println!(
                    "{:<40} {:<36} {:<9} {:<18} {:<18} {:<8} {:>10} {:>12}  {}",
                    entry.qualified_name,
                    case.name,
                    adapter,
                    variant,
                    format!("{:?}", case.shape),
                    case.dtype.onnx_name(),
                    err,
                    gpu,
                    result
                );
            };
            if let Some(reason) = case.unsupported(ctx.caps()) {
                skipped += 1;
                row("-", "-".into(), "-".into(), format!("skipped: {reason}"));
                continue;
            }
            let inputs = case.upload(&ctx)?;
            let inputs: Vec<&AnyTensor> = inputs.iter().collect();
            let result = if ctx.caps().timestamp_query {
                entry.time(&ctx, &inputs, &case.attrs, REPEATS)
            } else {
                entry.run(&ctx, &inputs, &case.attrs)
            }
            .with_context(|| format!("{} / {}", entry.name, case.name))?;
            let output = result
                .outputs
                .first()
                .context("the op returned no output")?;
            let got = output.to_f64_vec(&ctx)?;
            let comparison = compare(&got, &case.want, case.tolerance);
            let gpu = median(&result.gpu_times).map_or_else(
                || "n/a".to_owned(),
                |t| format!("{:.1}", t.as_secs_f64() * 1e6),
            );
            let verdict = if comparison.passed() {
                passed += 1;
                "ok".to_owned()
            } else {
                failed += 1;
                format!("FAIL: {comparison}")
            };
            row(
                result.variant,
                format!("{:.2e}", comparison.max_abs),
                gpu,
                verdict,
            );
        }
    }
    println!("{passed} passed, {failed} failed, {skipped} skipped on this adapter");
    Ok(failed == 0)
}
