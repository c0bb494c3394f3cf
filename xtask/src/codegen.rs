//! `cargo xtask codegen [--check [--tint] [--spirv-val]]`: this repository's use of the
//! codegen library: the packages in `packages/` (shared templates in `packages/_shared`),
//! hints in `hints/`, the hand-written host checks, into `kernels/kernels/src/generated`;
//! `--check` can also run the shader validators of [`crate::validators`].

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::GENERATED_DIR;
use crate::validators;

/// Ops with hand-written host-side checks (`kernels/kernels/src/host_checks/`), and the
/// function each one's `plan` calls.
const HOST_CHECKS: &[(&str, &str)] = &[(
    "com.microsoft.MRotaryEmbedding",
    "crate::host_checks::mrotary_embedding::check",
)];

/// The library's configuration for this repository, rooted at `root`.
pub fn config(root: &Path) -> kernel_codegen::Config {
    let mut config = kernel_codegen::Config::new();
    config
        .root(root)
        .packages_in("packages")
        .include_root("packages/_shared")
        .hints_dir("hints")
        .runtime_path("::kernel_runtime")
        .out_dir(GENERATED_DIR)
        .translations(true)
        // This repository's own packages build whole: a combination that fails is an error.
        .strict(true)
        .emit_rerun_if_changed(false);
    for (op, check) in HOST_CHECKS {
        config.host_check(*op, *check);
    }
    config
}

/// What [`run`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Write the generated files.
    Write,
    /// Write nothing; fail when a file is stale or orphaned, or a validator finds a problem.
    Check(Validators),
}

/// The validators `--check` runs beyond naga (which always runs, inside codegen).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Validators {
    /// Tint (Chrome's WGSL compiler) through Dawn's node binding.
    pub tint: bool,
    /// `spirv-val` on naga's SPIR-V.
    pub spirv_val: bool,
}

impl Validators {
    pub const ALL: Validators = Validators {
        tint: true,
        spirv_val: true,
    };
}

/// Generates, or with [`Mode::Check`] verifies that the committed files are what would be
/// generated and that the shaders pass the chosen validators; the check prints a Markdown
/// summary table (stdout) of every shader's validation and translations.
pub fn run(root: &Path, mode: Mode) -> Result<()> {
    let started = Instant::now();
    let config = config(root);
    let report = match mode {
        Mode::Write => config.generate(),
        Mode::Check(_) => config.check(),
    };
    let report = match report {
        Ok(report) => report,
        Err(kernel_codegen::ConfigError::Stale { stale, orphaned }) => {
            // Named by their place in this repository, with the command that mends them.
            let here = |paths: Vec<String>| {
                paths
                    .into_iter()
                    .map(|p| format!("{GENERATED_DIR}/{p}"))
                    .collect()
            };
            let err = kernel_codegen::ConfigError::Stale {
                stale: here(stale),
                orphaned: here(orphaned),
            };
            bail!("{err}\n(run `cargo xtask codegen`)");
        }
        Err(err) => bail!("{err}"),
    };
    for note in &report.output.notes {
        eprintln!("note: {note}");
    }
    for warning in &report.output.warnings {
        eprintln!("warning: {warning}");
    }
    let output = &report.output;
    let Mode::Check(validators) = mode else {
        eprintln!(
            "codegen: {} packages, {} shaders validated; {} files written, {} removed, {} unchanged",
            report.packages,
            output.shader_count,
            report.written.len(),
            report.removed.len(),
            output.files.len() - report.written.len()
        );
        return Ok(());
    };
    // Validators name shaders by their place in this repository.
    let shaders: Vec<kernel_codegen::GeneratedShader> = output
        .shaders
        .iter()
        .cloned()
        .map(|mut shader| {
            shader.path = format!("{GENERATED_DIR}/{}", shader.path);
            shader
        })
        .collect();
    let spirv = if validators.spirv_val {
        Some(validators::spirv_val(root, &shaders)?)
    } else {
        None
    };
    let tint = if validators.tint {
        Some(validators::tint(root, &shaders)?)
    } else {
        None
    };
    println!(
        "{}",
        validators::summary_table(&shaders, spirv.as_deref(), tint.as_deref())
    );
    let mut ran = vec!["naga"];
    if spirv.is_some() {
        ran.push("spirv-val");
    }
    if tint.is_some() {
        ran.push("Tint");
    }
    let problems: Vec<String> = [spirv, tint]
        .iter()
        .flatten()
        .flat_map(|findings| validators::problems(findings))
        .collect();
    if !problems.is_empty() {
        let mut report = format!("shader validation found {} problem(s):", problems.len());
        for problem in &problems {
            report.push_str(&format!("\n  {problem}"));
        }
        bail!("{report}");
    }
    eprintln!(
        "codegen --check: {} generated files are fresh; {} shaders pass {} ({:.1?})",
        output.files.len(),
        output.shader_count,
        ran.join(", "),
        started.elapsed()
    );
    Ok(())
}
