//! `cargo xtask codegen [--check [--tint] [--spirv-val]]`: reads manifests, templates and the
//! list of hand-written host checks, runs the pure `codegen` library and writes (or compares)
//! the generated files; `--check` can also run the shader validators of [`crate::validators`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::validators;

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
    let inputs = read_inputs(root)?;
    let output = match codegen::generate(&inputs) {
        Ok(output) => output,
        Err(diagnostics) => bail!(
            "codegen found {} error(s):\n{diagnostics}",
            diagnostics.0.len()
        ),
    };
    for note in &output.notes {
        eprintln!("note: {note}");
    }
    let generated_dir = root.join(codegen::GENERATED_DIR);
    let on_disk = list_files(root, &generated_dir)?;
    let wanted: BTreeSet<&str> = output.files.iter().map(|f| f.path.as_str()).collect();
    let orphans: Vec<&String> = on_disk
        .iter()
        .filter(|p| !wanted.contains(p.as_str()))
        .collect();
    let mut stale = Vec::new();
    for file in &output.files {
        let current = fs::read_to_string(root.join(&file.path)).ok();
        if current.as_deref() != Some(file.contents.as_str()) {
            stale.push(file);
        }
    }
    if let Mode::Check(validators) = mode {
        let spirv = if validators.spirv_val {
            Some(validators::spirv_val(root, &output.shaders)?)
        } else {
            None
        };
        let tint = if validators.tint {
            Some(validators::tint(root, &output.shaders)?)
        } else {
            None
        };
        println!(
            "{}",
            validators::summary_table(&output.shaders, spirv.as_deref(), tint.as_deref())
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
        if stale.is_empty() && orphans.is_empty() && problems.is_empty() {
            eprintln!(
                "codegen --check: {} generated files are fresh; {} shaders pass {} ({:.1?})",
                output.files.len(),
                output.shader_count,
                ran.join(", "),
                started.elapsed()
            );
            return Ok(());
        }
        let mut report = String::new();
        if !stale.is_empty() || !orphans.is_empty() {
            report.push_str("generated code is out of date; run `cargo xtask codegen`:");
            for file in &stale {
                report.push_str(&format!("\n  stale:    {}", file.path));
            }
            for path in &orphans {
                report.push_str(&format!("\n  orphaned: {path}"));
            }
        }
        if !problems.is_empty() {
            if !report.is_empty() {
                report.push('\n');
            }
            report.push_str(&format!(
                "shader validation found {} problem(s):",
                problems.len()
            ));
            for problem in &problems {
                report.push_str(&format!("\n  {problem}"));
            }
        }
        bail!("{report}");
    }
    for file in &stale {
        let path = root.join(&file.path);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::write(&path, &file.contents).with_context(|| format!("writing {}", path.display()))?;
    }
    for path in &orphans {
        fs::remove_file(root.join(path)).with_context(|| format!("removing {path}"))?;
    }
    remove_empty_dirs(&generated_dir);
    eprintln!(
        "codegen: {} manifests, {} shaders validated; {} files written, {} removed, {} unchanged",
        inputs.manifests.len(),
        output.shader_count,
        stale.len(),
        orphans.len(),
        output.files.len() - stale.len()
    );
    Ok(())
}

/// Reads `manifests/*.manifest.json` and `*.hints.json`, `templates/**` and
/// `kernels/kernels/src/host_checks/*.rs`.
pub fn read_inputs(root: &Path) -> Result<codegen::Inputs> {
    let mut manifests = BTreeMap::new();
    let mut hints = BTreeMap::new();
    for path in list_files(root, &root.join("manifests"))? {
        let target = if path.ends_with(".manifest.json") {
            &mut manifests
        } else if path.ends_with(".hints.json") {
            &mut hints
        } else {
            continue;
        };
        let text =
            fs::read_to_string(root.join(&path)).with_context(|| format!("reading {path}"))?;
        target.insert(path, text);
    }
    let mut templates = BTreeMap::new();
    let template_dir = root.join("templates");
    for path in list_files(root, &template_dir)? {
        let text =
            fs::read_to_string(root.join(&path)).with_context(|| format!("reading {path}"))?;
        let name = path.trim_start_matches("templates/").to_owned();
        templates.insert(name, text);
    }
    let mut host_checks = BTreeSet::new();
    for path in list_files(root, &root.join("kernels/kernels/src/host_checks"))? {
        if let Some(stem) = Path::new(&path).file_stem().and_then(|s| s.to_str())
            && path.ends_with(".rs")
            && stem != "mod"
        {
            host_checks.insert(stem.to_owned());
        }
    }
    Ok(codegen::Inputs {
        manifests,
        templates,
        hints,
        host_checks,
    })
}

/// Every file under `dir`, as `/`-separated paths relative to `root`, sorted.
fn list_files(root: &Path, dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    if !dir.exists() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in
            fs::read_dir(&current).with_context(|| format!("listing {}", current.display()))?
        {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(relative) = path.strip_prefix(root) {
                let parts: Vec<String> = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                out.push(parts.join("/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

fn remove_empty_dirs(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            remove_empty_dirs(&path);
            let _ = fs::remove_dir(&path);
        }
    }
}
