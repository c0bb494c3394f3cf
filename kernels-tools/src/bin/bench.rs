//! The benchmark harness (`cargo xtask bench`): times every case of `benchmarks/cases/*.bench.json`
//! on the selected adapter with timestamp queries, against the copy-kernel ceiling measured
//! in the same run, and measures the host-side cost of calls. Prints a table and writes JSON.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use kernel_runtime::{Context, ContextOptions, DType};
use kernels_tools::bench::run::{CaseResult, RunOptions, run_case};
use kernels_tools::bench::{churn, compile, copy, host, launch, spec};
use serde::Serialize;

#[derive(Parser)]
#[command(
    about = "Time every benchmark case of benchmarks/cases/*.bench.json on the selected adapter"
)]
struct Args {
    /// Small shapes, each checked against the float64 reference first: for software adapters
    /// and CI, so the harness cannot rot.
    #[arg(long)]
    quick: bool,
    /// Where to write the results as JSON.
    #[arg(long, default_value = "target/bench/results.json")]
    json: PathBuf,
    /// Folder holding the `*.bench.json` files, or one such file.
    #[arg(long, default_value = "benchmarks/cases")]
    cases: PathBuf,
    /// Only cases whose op or name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Timed repetitions per case (after a warm-up); at least 20.
    #[arg(long, default_value_t = 50)]
    repetitions: usize,
    /// Also check full-size cases against the float64 reference (slow on the host).
    #[arg(long)]
    check: bool,
    /// Time the cases against the copy ceiling only, leaving out the element-wise copies,
    /// the launch timings and the host-side table, for comparing builds of a template.
    #[arg(long)]
    cases_only: bool,
    /// A fresh device per case, instead of one device for everything (what applications
    /// have), for comparison.
    #[arg(long)]
    fresh_device: bool,
    /// Run only the device-slowdown experiment: the copy kernel before and after 4 rounds of
    /// creating, filling and dropping two buffers of `--churn-mib` MiB, per way of filling.
    #[arg(long)]
    churn: bool,
    /// Size of each churned buffer and of the probe, in MiB.
    #[arg(long, default_value_t = 1024)]
    churn_mib: u64,
    /// Compile every shader of every op on its own, one after another, and time each (with
    /// the driver's shader cache disabled, e.g. `__GL_SHADER_DISK_CACHE=0`, for cold times).
    #[arg(long)]
    compile_times: bool,
    /// Run only the long run: the inference loop (and an allocating `run`) step after step
    /// for SECONDS on one device, reporting time per step, resident memory and the runtime's
    /// counts in the first and last minute (or tenth of the run).
    #[arg(long, value_name = "SECONDS")]
    soak: Option<u64>,
    /// Run only the host-side measurements (cold and warm calls, recording cost per op and
    /// where a `record_into` spends its time and allocations).
    #[arg(long)]
    host: bool,
}

// Counts heap allocations, for the host-side table's allocations per call.
#[global_allocator]
static ALLOCATOR: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

#[derive(Serialize)]
struct Report {
    adapter: String,
    unix_time: u64,
    quick: bool,
    copy: copy::CopyResult,
    copy_sweep: Vec<copy::CopyResult>,
    element_copies: Vec<copy::CopyResult>,
    launches: Vec<launch::LaunchResult>,
    cases: Vec<CaseResult>,
    host: Vec<host::HostResult>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if args.repetitions < 20 {
        bail!(
            "--repetitions must be at least 20 (got {})",
            args.repetitions
        );
    }
    // Opted in to wgpu's experimental features, so that kernels.MatMul's tensor-core variants
    // (cooperative matrices) run where the adapter has them, as an application that opts in
    // gets them.
    let options = ContextOptions {
        experimental_features: Some(true),
        ..ContextOptions::default()
    };
    if args.churn {
        let results = churn::run(&options, args.churn_mib << 20, 4, args.repetitions)?;
        return write_json(&args.json, &results);
    }
    if let Some(seconds) = args.soak {
        let ctx = Context::with_options(&options).context("no adapter")?;
        println!("adapter: {}", ctx.adapter_summary());
        let report = kernels_tools::bench::soak::run(&ctx, seconds)?;
        kernels_tools::bench::soak::print(&report);
        write_json(&args.json, &report)?;
        let failed: Vec<&str> = report
            .checks
            .iter()
            .filter(|(_, _, ok)| !ok)
            .map(|(stage, _, _)| stage.as_str())
            .collect();
        if !failed.is_empty() {
            bail!(
                "the last step does not match its reference: {}",
                failed.join(", ")
            );
        }
        return Ok(());
    }
    if args.host {
        let host = host::measure(&options, 200, 1000)?;
        print_host(&host);
        return write_json(&args.json, &host);
    }
    if args.compile_times {
        let times = compile::measure(&options)?;
        compile::print(&times);
        return write_json(&args.json, &times);
    }
    let files = spec::load_dir(&args.cases)?;
    // The copy kernels run on a device of their own, dropped before the cases, so the cases'
    // device holds only their own buffers.
    let ctx = Context::with_options(&options).context("no adapter")?;
    println!("adapter: {}", ctx.adapter_summary());
    println!("subgroup matrices: {}", subgroup_matrices(ctx.caps()));

    let copy_bytes: u64 = if args.quick { 16 << 20 } else { 1 << 30 };
    let warm_up = if args.quick {
        std::time::Duration::ZERO
    } else {
        kernels_tools::bench::WARM_UP
    };
    let (copy, copy_sweep) = copy::measure_best(
        &ctx,
        &if args.quick {
            vec![copy::CopyKind::Spread {
                half: false,
                per: 4,
                wg: 256,
            }]
        } else {
            copy::CopyKind::sweep()
        },
        copy_bytes,
        args.repetitions,
        warm_up,
    )?;
    for c in &copy_sweep {
        println!("  {}: {:.1} µs, {:.0} GB/s", c.kernel, c.median_us, c.gbps);
    }
    println!(
        "copy ceiling: {} ({} MiB), {:.1} µs, {:.0} GB/s",
        copy.kernel,
        copy.bytes >> 20,
        copy.median_us,
        copy.gbps
    );
    // Element-wise copies say what scalar f32 and f16 accesses cost on this adapter.
    let mut element_copies = Vec::new();
    let mut kinds = if args.cases_only {
        Vec::new()
    } else {
        vec![
            copy::CopyKind::Vec4,
            copy::CopyKind::F32,
            copy::CopyKind::F32Runs,
            copy::CopyKind::F16Packed,
        ]
    };
    if ctx.caps().shader_f16 && !args.cases_only {
        kinds.extend([
            copy::CopyKind::F16,
            copy::CopyKind::F16Runs,
            copy::CopyKind::F16Vec4,
            copy::CopyKind::F16Vec4Pairs,
        ]);
        // Spread f16 words: whether spacing, not width, is what an f16 kernel lacks.
        for (per, wg) in [(2, 256), (2, 1024), (4, 256), (4, 1024)] {
            kinds.push(copy::CopyKind::Spread {
                half: true,
                per,
                wg,
            });
        }
    }
    for kind in kinds {
        element_copies.push(copy::measure(
            &ctx,
            kind,
            copy_bytes,
            args.repetitions,
            warm_up,
        )?);
    }
    for c in &element_copies {
        println!(
            "{}: {:.0} GB/s ({:.0}% of the ceiling)",
            c.kernel,
            c.gbps,
            100.0 * c.gbps / copy.gbps
        );
    }
    // Workgroups that exit at once: what a case launching as many pays before moving a byte.
    let grids = if args.cases_only {
        Vec::new()
    } else {
        launch::Grid::sweep(args.quick)
    };
    let launches = launch::measure(&ctx, &grids, args.repetitions, warm_up)?;
    for l in &launches {
        println!(
            "launch of {} × {} workgroups of {}: {:.1} µs ({:.2} ns a workgroup)",
            l.workgroups_x, l.workgroups_y, l.workgroup_size, l.median_us, l.ns_per_workgroup
        );
    }

    let run_options = RunOptions {
        repetitions: args.repetitions,
        check: args.quick || args.check,
        copy_gbps: copy.gbps,
        warm_up,
    };
    let mut jobs = Vec::new();
    for file in &files {
        let Some(entry) = kernels_tools::ops().find(|e| e.qualified_name == file.op) else {
            // The `hub` crate builds only the ops whose manifests it found (and that
            // `KERNEL_HUB_OPS` names): a file for one it left out is skipped, not an error.
            if hub::EXPECTED_OPS.contains(&file.op.as_str()) {
                let why = if hub::PRESENT {
                    "the `hub` crate was built without it (no manifest for it was found, or `KERNEL_HUB_OPS` left it out)"
                } else {
                    "the Hub's manifests were not found when the `hub` crate was built (set KERNEL_HUB_DIR)"
                };
                println!("skipping {}: {why}", file.op);
                continue;
            }
            anyhow::bail!("bench file for unknown op `{}`", file.op);
        };
        for case in &file.cases {
            let case = if args.quick {
                case.quick()
            } else {
                case.clone()
            };
            if args
                .filter
                .as_ref()
                .is_some_and(|f| !file.op.contains(f.as_str()) && !case.name.contains(f.as_str()))
            {
                continue;
            }
            for dtype in &case.dtypes {
                let dtype = DType::from_onnx_name(dtype)
                    .with_context(|| format!("unknown dtype `{dtype}`"))?;
                jobs.push((entry, case.clone(), dtype));
            }
        }
    }
    drop(ctx);
    let shared = if args.fresh_device {
        None
    } else {
        Some(Context::with_options(&options)?)
    };
    let mut cases = Vec::new();
    for (i, (entry, case, dtype)) in jobs.iter().enumerate() {
        eprintln!(
            "[{}/{}] {} / {} / {}",
            i + 1,
            jobs.len(),
            entry.name,
            case.name,
            dtype
        );
        // One device for every case, unless `--fresh-device` (BENCHMARKS.md compares both).
        let fresh;
        let case_ctx = match &shared {
            Some(ctx) => ctx,
            None => {
                fresh = Context::with_options(&options)?;
                &fresh
            }
        };
        cases.push(run_case(case_ctx, entry, case, *dtype, &run_options)?);
    }
    drop(shared);

    let host = if args.cases_only {
        Vec::new()
    } else {
        eprintln!("host-side costs…");
        host::measure(&options, 200, 1000)?
    };

    print_tables(&copy, &cases, &host);
    let unix_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let adapter = Context::with_options(&options)?.adapter_summary();
    let report = Report {
        adapter,
        unix_time,
        quick: args.quick,
        copy,
        copy_sweep,
        element_copies,
        launches,
        cases,
        host,
    };
    write_json(&args.json, &report)
}

/// The subgroup-matrix configurations the device has (wgpu's cooperative matrices), or why
/// it has none.
fn subgroup_matrices(caps: &kernel_runtime::DeviceCaps) -> String {
    if !caps.subgroup_matrix {
        return "none (the adapter has no cooperative matrices)".to_owned();
    }
    let configs: Vec<String> = caps
        .subgroup_matrix_configs
        .iter()
        .map(|c| c.feature_name())
        .collect();
    configs.join(", ")
}

fn write_json(path: &std::path::Path, value: &impl Serialize) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, serde_json::to_string_pretty(value)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

fn print_tables(copy: &copy::CopyResult, cases: &[CaseResult], host: &[host::HostResult]) {
    println!();
    println!("copy ceiling: {:.0} GB/s", copy.gbps);
    println!(
        "{:<26} {:<50} {:<8} {:<18} {:>11} {:>9} {:>7} {:>9} {:>8}",
        "op", "case", "dtype", "variant", "median µs", "GB/s", "copy %", "first ms", "TFLOP/s"
    );
    for c in cases {
        let tflops = c.tflops.map_or(String::new(), |t| {
            if t < 10.0 {
                format!("{t:.3}")
            } else {
                format!("{t:.1}")
            }
        });
        println!(
            "{:<26} {:<50} {:<8} {:<18} {:>11.1} {:>9.0} {:>6.1}% {:>9.1} {:>8}",
            c.op.trim_start_matches("com.microsoft."),
            c.case,
            c.dtype,
            c.variant,
            c.median_us,
            c.gbps,
            100.0 * c.fraction_of_copy,
            c.cold_start_ms,
            tflops
        );
        if c.passes.len() > 1 {
            let passes: Vec<String> = c
                .passes
                .iter()
                .map(|p| format!("{} {:.1} µs", p.id, p.median_us))
                .collect();
            println!("{:<26} passes: {}", "", passes.join(", "));
        }
    }
    print_host(host);
}

fn print_host(host: &[host::HostResult]) {
    if host.is_empty() {
        return;
    }
    println!();
    println!(
        "{:<26} {:>14} {:>14} {:>14} {:>14} {:>8} {:>14} {:>12} {:>12} {:>14} {:>12}",
        "op (host side)",
        "cold call ms",
        "precompile ms",
        "from cache ms",
        "1st, cache ms",
        "shaders",
        "then 1st ms",
        "warm run µs",
        "run_into µs",
        "record µs/op",
        "into µs/op"
    );
    for h in host {
        println!(
            "{:<26} {:>14.1} {:>14.1} {:>14} {:>14} {:>8} {:>14.2} {:>12.1} {:>12.1} {:>14.2} {:>12.2}",
            h.op.trim_start_matches("com.microsoft."),
            h.cold_first_call_ms,
            h.precompile_ms,
            h.precompile_from_pipeline_cache_ms
                .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}")),
            h.first_call_from_pipeline_cache_ms
                .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}")),
            h.precompiled_shaders,
            h.first_call_after_precompile_ms,
            h.warm_run_us,
            h.warm_run_into_us,
            h.record_us_per_op,
            h.record_into_us_per_op
        );
    }
    let allocs = |a: Option<f64>| a.map_or_else(|| "n/a".to_owned(), |a| format!("{a:.1}"));
    for h in host {
        println!();
        println!(
            "{} record_into, warm: {:.2} µs and {} allocations per op in an encoder of {}",
            h.op.trim_start_matches("com.microsoft."),
            h.record_into_us_per_op,
            allocs(h.record_into_allocs_per_op),
            h.recorded_ops
        );
        let line = |part: &str, us: f64, a: Option<f64>| {
            println!("  {part:<34} {us:>8.2} µs {:>8} allocations", allocs(a));
        };
        for p in &h.record_into_parts {
            line(p.part, p.us, p.allocs);
        }
        line(
            "bound: record into a shared pass",
            h.bound_record_us_per_dispatch,
            h.bound_record_allocs,
        );
        line(
            "bound: update, same attributes",
            h.bound_update_us,
            h.bound_update_allocs,
        );
        if let Some(us) = h.bound_update_changing_us {
            line(
                "bound: update, a uniform changes",
                us,
                h.bound_update_changing_allocs,
            );
        }
        if let Some(us) = h.bound_upload_us {
            let part = format!("bound: record after {} of those", h.recorded_ops);
            line(&part, us, h.bound_upload_allocs);
        }
    }
}
