//! `kernels-codegen check`: a package's defects, found before its users meet them.
//!
//! ```text
//! kernels-codegen check PACKAGE... [--apart MANIFEST=DIR]... [--include-root DIR] [--hints DIR] [--json]
//!                       [--deny warnings] [--inputs N] [--seed N]
//! ```
//! Prints one block per finding (kind, op, manifest and JSON path, the message, how many
//! drawn calls showed it, a witness and the `run-op` arguments that reproduce it), then a
//! count per op and kind. Exit status 1 with `--deny warnings` when any warning was found.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Parser;
use kernel_codegen::check::{Finding, Kind, OpReport, Options};
use serde_json::json;

#[derive(Parser)]
#[command(
    name = "kernels-codegen check",
    about = "Find a package's defects at build time: variants that never run, valid calls no variant accepts, plans that fail, bindings smaller than their element type"
)]
pub struct CheckArgs {
    /// Package folders, or folders of packages.
    #[arg(required_unless_present = "apart", num_args = 0..)]
    packages: Vec<PathBuf>,
    /// A package whose manifest is a file of its own (as the Hub publishes them):
    /// `MANIFEST=TEMPLATE_FOLDER`; repeatable.
    #[arg(long, value_name = "MANIFEST=DIR")]
    apart: Vec<String>,
    /// The folder shared templates are included from.
    #[arg(long)]
    include_root: Option<PathBuf>,
    /// A folder of `<domain>.<name>.hints.json` files; repeatable.
    #[arg(long)]
    hints: Vec<PathBuf>,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
    /// `warnings`: exit with status 1 when any warning was found (for CI).
    #[arg(long, value_name = "LEVEL")]
    deny: Option<String>,
    /// Inputs drawn per op (each evaluated on every device).
    #[arg(long, default_value_t = Options::default().inputs_per_op)]
    inputs: usize,
    /// The seed inputs are drawn from.
    #[arg(long, default_value_t = Options::default().seed)]
    seed: u64,
}

/// Runs `kernels-codegen check` with the arguments after `check`.
pub fn run(args: CheckArgs) -> Result<bool> {
    if let Some(level) = &args.deny
        && level != "warnings"
    {
        bail!("--deny {level}: the only level is `warnings`");
    }
    let mut config = kernel_codegen::Config::new();
    for dir in &args.packages {
        if !dir.is_dir() {
            bail!("{}: not a folder", dir.display());
        }
        if dir.join("manifest.json").exists() || dir.join("build/webgpu/manifest.json").exists() {
            config.package(dir);
        } else {
            config.packages_in(dir);
        }
    }
    for entry in &args.apart {
        let Some((manifest, dir)) = entry.split_once('=') else {
            bail!("--apart `{entry}`: expected MANIFEST=TEMPLATE_FOLDER");
        };
        config.package_apart(manifest, dir);
    }
    if let Some(root) = &args.include_root {
        config.include_root(root);
    }
    for dir in &args.hints {
        config.hints_dir(dir);
    }
    config.emit_rerun_if_changed(false);
    let started = Instant::now();
    let options = Options {
        inputs_per_op: args.inputs,
        seed: args.seed,
    };
    let reports = config.check_packages(options)?;
    let elapsed = started.elapsed();
    if args.json {
        let value: Vec<_> = reports.iter().map(report_json).collect();
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        for report in &reports {
            for finding in &report.findings {
                print_finding(finding);
            }
        }
        print_summary(&reports);
        eprintln!(
            "kernels-codegen check: {} ops in {:.1} s",
            reports.len(),
            elapsed.as_secs_f64()
        );
    }
    let warnings = reports
        .iter()
        .flat_map(|r| &r.findings)
        .filter(|f| f.kind.is_warning())
        .count();
    Ok(args.deny.is_none() || warnings == 0)
}

fn print_finding(f: &Finding) {
    let level = if f.kind.is_warning() {
        "warning"
    } else {
        "note"
    };
    println!("{level}[{}]: {}: {}", f.kind.name(), f.op, f.message);
    println!("  --> {} at {}", f.file, f.path);
    if f.calls > 0 {
        println!("  = {} drawn call(s) show it", f.calls);
    }
    if let Some(w) = &f.witness {
        println!("  = witness: {w}");
        println!(
            "  = reproduce: cargo run -p kernels-tools --bin run-op -- {}",
            w.run_op_args(&f.op)
        );
    }
    println!();
}

fn print_summary(reports: &[OpReport]) {
    for report in reports {
        let mut counts: BTreeMap<Kind, usize> = BTreeMap::new();
        for f in &report.findings {
            *counts.entry(f.kind).or_default() += 1;
        }
        let counts: Vec<String> = counts
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        println!(
            "{}: {} calls, {} valid: {}",
            report.op,
            report.calls,
            report.valid,
            if counts.is_empty() {
                "no findings".to_owned()
            } else {
                counts.join(", ")
            }
        );
    }
}

fn report_json(report: &OpReport) -> serde_json::Value {
    let findings: Vec<_> = report
        .findings
        .iter()
        .map(|f| {
            json!({
                "kind": f.kind.name(),
                "level": if f.kind.is_warning() { "warning" } else { "note" },
                "file": f.file,
                "path": f.path,
                "message": f.message,
                "calls": f.calls,
                "witness": f.witness.as_ref().map(|w| json!({
                    "device": w.device,
                    "tensors": w.tensors.iter().map(|(role, dtype, shape)| json!({
                        "role": role, "dtype": dtype, "shape": shape,
                    })).collect::<Vec<_>>(),
                    "attrs": w.attrs.iter().map(|(n, v)| (n.clone(), json!(v.to_string()))).collect::<serde_json::Map<_, _>>(),
                    "runOp": format!("run-op {}", w.run_op_args(&f.op)),
                    "ranInstead": w.ran_instead,
                    "outputsEmpty": w.outputs_empty,
                })),
            })
        })
        .collect();
    json!({
        "op": report.op,
        "calls": report.calls,
        "valid": report.valid,
        "findings": findings,
    })
}
