//! `kernels-codegen`: the codegen library as a command, for projects that generate outside a
//! build script (and commit the output) or want to check a package by hand.
//!
//! ```text
//! kernels-codegen --packages DIR... [--include-root DIR] [--hints DIR] --out DIR
//!                 [--runtime-path PATH] [--host-check OP=PATH]... [--translate] [--strict]
//!                 [--check] [--write-suggested-hints DIR]
//! kernels-codegen check PACKAGE... [--json] [--deny warnings]   (see `check.rs`)
//! ```
//! With `--write-suggested-hints` and no `--out`, the packages are generated in memory only:
//! the hints files do not depend on an output folder.
//! A `--packages` folder is a package (it holds `manifest.json`, or `build/webgpu/manifest.json`
//! as a Hub repository does) or a folder of packages.

mod check;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Parser;
use kernel_codegen::config::{self, HintsFile};

#[derive(Parser)]
#[command(
    name = "kernels-codegen",
    about = "Compile webgpu-kernels packages (manifest.json + Jinja WGSL templates) into a Rust module tree"
)]
struct Args {
    /// A package folder (with `manifest.json`, or a Hub repository with
    /// `build/webgpu/manifest.json`) or a folder of package folders; repeatable.
    #[arg(long, required = true, num_args = 1..)]
    packages: Vec<PathBuf>,
    /// The folder shared templates are included from.
    #[arg(long)]
    include_root: Option<PathBuf>,
    /// A folder of `<domain>.<name>.hints.json` files; repeatable.
    #[arg(long)]
    hints: Vec<PathBuf>,
    /// Where `mod.rs`, the op modules and their shaders go (without it, with
    /// `--write-suggested-hints`, nothing but the hints files is written).
    #[arg(long, required_unless_present = "write_suggested_hints")]
    out: Option<PathBuf>,
    /// The runtime crate's path in the generated code.
    #[arg(long, default_value = "::kernel_runtime")]
    runtime_path: String,
    /// A host-side check: `domain.Name=path::to::check`; repeatable.
    #[arg(long = "host-check", value_name = "OP=PATH")]
    host_checks: Vec<String>,
    /// Also translate every shader with naga's SPIR-V, MSL, HLSL and GLSL back ends, so a
    /// shader one of wgpu's native backends cannot take fails here rather than on a device.
    #[arg(long)]
    translate: bool,
    /// Fail when a static combination of a pass does not render or validate, instead of
    /// leaving it out with a warning (a call that selects it would get `OpError::NotBuilt`).
    #[arg(long)]
    strict: bool,
    /// Write nothing; fail when a file in `--out` is stale or should not be there.
    #[arg(long, requires = "out")]
    check: bool,
    /// When values the shader text depends on have no finite domain, write the hints files
    /// the errors suggest (starting sets of values, to edit) into this folder; a file that
    /// is already there is left alone, a link there is refused. With `--check`, only says
    /// what it would write.
    #[arg(long, value_name = "DIR")]
    write_suggested_hints: Option<PathBuf>,
}

fn main() -> ExitCode {
    if std::env::args_os().nth(1).is_some_and(|a| a == "check") {
        let args = check::CheckArgs::parse_from(std::env::args_os().skip(1));
        return match check::run(args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(err) => {
                eprintln!("error: {err:#}");
                ExitCode::from(2)
            }
        };
    }
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    let mut config = kernel_codegen::Config::new();
    for dir in &args.packages {
        if !dir.is_dir() {
            bail!("{}: not a folder", dir.display());
        }
        // Whatever is named manifest.json makes the folder a package, so a manifest that is
        // a folder or a special file is an error when it is read, not a reason to skip it; so
        // does one in `build/webgpu/`, a Hub repository's layout.
        let is_package = ["manifest.json", "build/webgpu/manifest.json"]
            .iter()
            .any(|manifest| std::fs::symlink_metadata(dir.join(manifest)).is_ok());
        if is_package {
            config.package(dir);
        } else {
            config.packages_in(dir);
        }
    }
    if let Some(root) = &args.include_root {
        config.include_root(root);
    }
    for dir in &args.hints {
        config.hints_dir(dir);
    }
    config.translations(args.translate).strict(args.strict);
    for entry in &args.host_checks {
        let (op, path) = entry
            .split_once('=')
            .with_context(|| format!("--host-check `{entry}`: expected OP=PATH"))?;
        config.host_check(op, path);
    }
    config
        .runtime_path(&args.runtime_path)
        .emit_rerun_if_changed(false);
    if let Some(out) = &args.out {
        config.out_dir(out);
    }
    let result = match (&args.out, args.check) {
        (None, _) => config.generate_in_memory(),
        (Some(_), true) => config.check(),
        (Some(_), false) => config.generate(),
    };
    let report = match result {
        Ok(report) => report,
        Err(err) => {
            let hints = match &err {
                kernel_codegen::ConfigError::Codegen { diagnostics } => suggest_hints(
                    diagnostics,
                    args.write_suggested_hints.as_deref(),
                    args.check,
                ),
                _ => Ok(()),
            };
            // The generator's errors are why there are suggestions: they are printed even when
            // writing those fails, and that failure after them.
            if let Err(write) = hints {
                eprintln!("error: {err}");
                return Err(write);
            }
            return Err(err.into());
        }
    };
    for note in &report.output.notes {
        eprintln!("note: {note}");
    }
    for warning in &report.output.warnings {
        eprintln!("warning: {warning}");
    }
    let Some(out) = &args.out else {
        eprintln!(
            "kernels-codegen: {} packages, {} shaders validated; nothing written (no --out)",
            report.packages, report.output.shader_count
        );
        return Ok(());
    };
    if args.check {
        eprintln!(
            "kernels-codegen: {} packages, {} shaders validated; {} files are fresh",
            report.packages,
            report.output.shader_count,
            report.output.files.len()
        );
    } else {
        eprintln!(
            "kernels-codegen: {} packages, {} shaders validated; {} files written, {} removed, {} unchanged in {}",
            report.packages,
            report.output.shader_count,
            report.written.len(),
            report.removed.len(),
            report.output.files.len() - report.written.len(),
            out.display()
        );
    }
    if !report.foreign.is_empty() {
        eprintln!(
            "kernels-codegen: left alone in {} (not written by the generator): {}",
            out.display(),
            report.foreign.join(", ")
        );
    }
    Ok(())
}

/// Writes the hints files the errors suggest into `dir` (with `check`, says which it would
/// write), or says how to.
fn suggest_hints(
    diagnostics: &kernel_codegen::Diagnostics,
    dir: Option<&Path>,
    check: bool,
) -> Result<()> {
    let count = diagnostics.suggested_hints().len();
    if count == 0 {
        return Ok(());
    }
    let Some(dir) = dir else {
        eprintln!(
            "kernels-codegen: {count} hints file(s) would make the value errors below go away; write them with --write-suggested-hints DIR",
        );
        return Ok(());
    };
    if check {
        let files = config::suggested_hints_files(diagnostics, dir)?;
        let paths: Vec<String> = (files.iter())
            .map(|(path, _)| path.display().to_string())
            .collect();
        eprintln!(
            "kernels-codegen: --check writes nothing; --write-suggested-hints would write {}",
            paths.join(", ")
        );
        return Ok(());
    }
    for file in config::write_suggested_hints(diagnostics, dir)? {
        match file {
            HintsFile::Written(path) => eprintln!(
                "kernels-codegen: wrote {} (a starting set of values: edit it to those your models use, then pass --hints {})",
                path.display(),
                dir.display()
            ),
            HintsFile::LeftAlone(path) => eprintln!(
                "kernels-codegen: {} exists; left alone (merge the suggestion from the error by hand)",
                path.display()
            ),
        }
    }
    Ok(())
}
