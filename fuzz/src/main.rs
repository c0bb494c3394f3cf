//! `fuzz`: runs the fuzz targets for a bounded time and prints a failing input as a
//! regression fixture.
//!
//! ```text
//! fuzz [codegen|run-op|all] [--seconds N] [--cases N] [--seed N] [--jobs N] [--check-sample N]
//!      [--seeds TEXT]
//! ```
//! `--jobs N` runs N workers at once, worker `i` with seed `seed + i` (and `--cases` each);
//! `--seeds TEXT` mutates only the generator's seeds whose name contains TEXT (`ai.onnx` for
//! the Hub's packages).
//! Exit status 0 when no input failed, 1 when one did (the fixture is printed), 2 on bad use.

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, ValueEnum};
use fuzz::codegen_target::{self, Outcome};
use fuzz::config_target;
use fuzz::drive::{self, Budget};
use fuzz::mutation::Case;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Target {
    Codegen,
    RunOp,
    All,
}

#[derive(Parser)]
#[command(about = "Fuzz the generator and run-op with mutations of real inputs")]
struct Args {
    #[arg(value_enum, default_value = "all")]
    target: Target,
    /// Seconds per target.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// At most this many inputs per target.
    #[arg(long)]
    cases: Option<u64>,
    /// The generator's seed (the same seed and budget give the same inputs).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// An input running longer than this many seconds is a hang.
    #[arg(long, default_value_t = 60)]
    hang_seconds: u64,
    /// Workers at once (the codegen target only; run-op shares one device).
    #[arg(long, default_value_t = 1)]
    jobs: u64,
    /// After the codegen target, `cargo check` this many of its accepted outputs (every
    /// tenth accepted input, up to this many) as modules of one crate.
    #[arg(long, default_value_t = 0)]
    check_sample: usize,
    /// The codegen target mutates only the seeds whose name contains this text (the seed
    /// packages are `seed packages`; a corpus or Hub package is its op's name).
    #[arg(long)]
    seeds: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let budget = Budget {
        time: Duration::from_secs(args.seconds),
        cases: args.cases,
        seed: args.seed,
        hang: Duration::from_secs(args.hang_seconds),
    };
    let mut failed = false;
    let targets: &[Target] = match args.target {
        Target::All => &[Target::Codegen, Target::RunOp],
        Target::Codegen => &[Target::Codegen],
        Target::RunOp => &[Target::RunOp],
    };
    for target in targets {
        let result = match target {
            Target::Codegen => codegen(
                budget,
                args.jobs.max(1),
                args.check_sample,
                args.seeds.as_deref(),
            ),
            _ => run_op(budget),
        };
        match result {
            Ok(passed) => failed |= !passed,
            Err(err) => {
                eprintln!("fuzz: {err:#}");
                return ExitCode::from(2);
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// What the codegen target saw, for its closing line.
#[derive(Default)]
struct Tally {
    generated: u64,
    rejected: u64,
    /// Rejected inputs whose edits touch one file, and of those, the ones where a diagnostic
    /// names that file.
    single_file: u64,
    names_edited_file: u64,
    /// Inputs also generated through `Config` on real folders.
    on_disk: u64,
    /// Accepted outputs kept for `cargo check`, with their inputs.
    samples: Vec<(String, kernel_codegen::Output)>,
}

fn codegen(budget: Budget, jobs: u64, check_sample: usize, only: Option<&str>) -> Result<bool> {
    let mut seeds = fuzz::seeds::all()?;
    if let Some(only) = only {
        seeds.retain(|s| s.name.contains(only));
        if seeds.is_empty() {
            anyhow::bail!("no seed's name contains `{only}`");
        }
    }
    eprintln!(
        "fuzz codegen: {} seeds ({}), {} s, seed {}, {jobs} workers",
        seeds.len(),
        seeds
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        budget.time.as_secs(),
        budget.seed
    );
    let by_name: HashMap<Option<String>, kernel_codegen::Inputs> = seeds
        .iter()
        .map(|s| {
            let key = (s.name != fuzz::seeds::SEED_PACKAGES).then(|| s.name.clone());
            (key, s.inputs.clone())
        })
        .collect();
    let strategy = codegen_target::cases(&seeds);
    let results: Vec<(drive::Run<Case>, Tally)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..jobs)
            .map(|worker| {
                let (strategy, by_name) = (&strategy, &by_name);
                let budget = Budget {
                    seed: budget.seed + worker,
                    ..budget
                };
                let keep = check_sample.div_ceil(jobs as usize);
                scope.spawn(move || codegen_worker(strategy, by_name, budget, worker, keep))
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let mut total = Tally::default();
    let (mut cases, mut elapsed) = (0, Duration::ZERO);
    let mut failure = None;
    for (run, tally) in results {
        cases += run.cases;
        elapsed = elapsed.max(run.elapsed);
        total.generated += tally.generated;
        total.rejected += tally.rejected;
        total.single_file += tally.single_file;
        total.names_edited_file += tally.names_edited_file;
        total.on_disk += tally.on_disk;
        total.samples.extend(tally.samples);
        failure = failure.or(run.failure);
    }
    eprintln!(
        "fuzz codegen: {cases} inputs in {:.1} s: {} generated, {} rejected ({} also through Config on folders); of {} rejected single-file edits, {} name the edited file",
        elapsed.as_secs_f64(),
        total.generated,
        total.rejected,
        total.on_disk,
        total.single_file,
        total.names_edited_file
    );
    let passed = report(
        failure.map(|f| (f.input.to_string(), f.message)),
        "the input, shrunk, as a regression fixture (fuzz/tests/regressions/<name>.test):",
    )?;
    total.samples.truncate(check_sample);
    if let Err(err) = fuzz::sample_check::check(&total.samples) {
        eprintln!("fuzz: FAILED: {err:#}");
        return Ok(false);
    }
    Ok(passed)
}

fn codegen_worker(
    strategy: &impl proptest::strategy::Strategy<Value = Case>,
    by_name: &HashMap<Option<String>, kernel_codegen::Inputs>,
    budget: Budget,
    worker: u64,
    keep: usize,
) -> (drive::Run<Case>, Tally) {
    let mut tally = Tally::default();
    let show_misattributed = std::env::var_os("FUZZ_SHOW_MISATTRIBUTED").is_some();
    let run = drive::run(
        strategy,
        budget,
        |case: &Case| {
            let Some(seed) = by_name.get(&case.from) else {
                return Ok(());
            };
            // A mutation that does not apply (a line past the end) is no input.
            let Ok(inputs) = case.apply(seed) else {
                return Ok(());
            };
            // Every fourth input also goes through `Config` on real folders, in the next
            // of its layouts.
            let on_disk = (tally.generated + tally.rejected)
                .is_multiple_of(4)
                .then(|| inputs.clone());
            let outcome = codegen_target::check_inputs(inputs, budget.hang)?;
            if let Some(inputs) = on_disk {
                let layouts = config_target::Layout::ALL;
                let layout = layouts[(tally.on_disk as usize) % layouts.len()];
                let accepted = matches!(outcome, Outcome::Generated(_));
                config_target::check(&inputs, layout, accepted, budget.hang)?;
                tally.on_disk += 1;
            }
            match outcome {
                Outcome::Generated(output) => {
                    if tally.generated % 10 == 0 && tally.samples.len() < keep {
                        tally.samples.push((case.to_string(), output));
                    }
                    tally.generated += 1;
                }
                Outcome::Rejected(diagnostics) => {
                    tally.rejected += 1;
                    let mut files: Vec<&str> = case.edits.iter().map(|e| e.file()).collect();
                    files.dedup();
                    if let [file] = files.as_slice() {
                        tally.single_file += 1;
                        if diagnostics.0.iter().any(|d| d.file == *file) {
                            tally.names_edited_file += 1;
                        } else if show_misattributed {
                            let first = diagnostics
                                .0
                                .first()
                                .map(ToString::to_string)
                                .unwrap_or_default();
                            eprintln!(
                                "fuzz codegen: no diagnostic names the edited file:\n{case}=> {first}\n"
                            );
                        }
                    }
                }
            }
            Ok(())
        },
        |cases, elapsed| {
            eprintln!(
                "fuzz codegen [{worker}]: {cases} inputs in {:.0} s",
                elapsed.as_secs_f64()
            );
        },
    );
    (run, tally)
}

fn run_op(budget: Budget) -> Result<bool> {
    let run = fuzz::run_op_target::fuzz(budget)?;
    report(
        run,
        "the input, shrunk: its call, changes and arguments, and the file kept as IN:",
    )
}

/// Prints a failure (a fixture for the generator); `true` when there was none.
fn report(failure: Option<(String, String)>, what: &str) -> Result<bool> {
    let Some((input, message)) = failure else {
        return Ok(true);
    };
    eprintln!("fuzz: FAILED: {message}");
    eprintln!("fuzz: {what}");
    println!("{input}---");
    Ok(false)
}
