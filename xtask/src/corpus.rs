//! `cargo xtask corpus [--tint] [--spirv-val]`: the whole third-party corpus
//! (`$KERNEL_CORPUS_DIR`, else `../shared/corpus`) through the generator in memory, with the
//! hints of `examples/corpus/hints`: packages that come through with and without hints, the
//! time of a full generation, shaders and generated Rust lines per op, and optionally every
//! shader through Tint and `spirv-val`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::validators;

/// The corpus folder: `$KERNEL_CORPUS_DIR`, else `shared/corpus` beside the repository.
fn corpus_dir(root: &Path) -> PathBuf {
    std::env::var_os("KERNEL_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus"))
}

/// Every package folder of the corpus's collection.
fn packages(collection: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(collection)
        .with_context(|| format!("reading {}", collection.display()))?
    {
        let path = entry?.path();
        if path.join("manifest.json").is_file() {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

fn config(collection: &Path, packages: &[PathBuf], hints: Option<&Path>) -> kernel_codegen::Config {
    let mut config = kernel_codegen::Config::new();
    for package in packages {
        config.package(package);
    }
    config
        .include_root(collection.join("_shared_assets"))
        .emit_rerun_if_changed(false);
    if let Some(hints) = hints {
        config.hints_dir(hints);
    }
    config
}

pub fn run(root: &Path, tint: bool, spirv_val: bool) -> Result<()> {
    let collection = corpus_dir(root).join("gemma-4");
    if !collection.is_dir() {
        bail!(
            "no package corpus at {} (set KERNEL_CORPUS_DIR)",
            collection.display()
        );
    }
    let packages = packages(&collection)?;
    // One package at a time without hints: which come through on their own.
    let mut unhinted = 0;
    for package in &packages {
        let (inputs, _) = config(&collection, std::slice::from_ref(package), None).read_inputs()?;
        match kernel_codegen::generate(&inputs) {
            Ok(output) => {
                unhinted += 1;
                if !output.left_out.is_empty() {
                    eprintln!(
                        "left out: {}: {} static combinations not built ({} passes with a warning)",
                        package.file_name().unwrap_or_default().to_string_lossy(),
                        output.left_out.len(),
                        output.warnings.len()
                    );
                }
            }
            Err(diagnostics) => {
                let first = diagnostics
                    .0
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                eprintln!(
                    "without hints: {}",
                    first.lines().next().unwrap_or_default()
                );
            }
        }
    }
    let hints = root.join("examples/corpus/hints");
    let (mut inputs, _) = config(&collection, &packages, Some(&hints)).read_inputs()?;
    // As a build script generates (validated WGSL only), then with naga's back-end
    // translations, which the validators below need.
    let started = Instant::now();
    kernel_codegen::generate(&inputs).map_err(|d| anyhow::anyhow!("with hints:\n{d}"))?;
    let untranslated = started.elapsed();
    inputs.translate = true;
    let started = Instant::now();
    let output =
        kernel_codegen::generate(&inputs).map_err(|d| anyhow::anyhow!("with hints:\n{d}"))?;
    let elapsed = started.elapsed();
    // Lines of each op module: the typed API and compiled expressions, then the shader table
    // (its `shader_table` module, a row per shader), counted apart.
    let rust: Vec<(&str, usize, usize)> = output
        .files
        .iter()
        .filter(|f| f.path.ends_with(".rs") && f.path != "mod.rs")
        .map(|f| {
            let total = f.contents.lines().count();
            let api = f
                .contents
                .lines()
                .position(|l| l.starts_with("mod shader_table"))
                .unwrap_or(total);
            (f.path.as_str(), api, total - api)
        })
        .collect();
    let api_lines: usize = rust.iter().map(|(_, n, _)| n).sum();
    let table_lines: usize = rust.iter().map(|(_, _, n)| n).sum();
    println!(
        "{unhinted} of {} packages generate without hints, {} with the hints in {}",
        packages.len(),
        packages.len(),
        hints.display()
    );
    let ops = rust.len().max(1);
    println!(
        "full generation: {:.1} s ({:.1} s with naga's back-end translations), {} shaders \
         validated by naga, {} lines of Rust: {} per op on average besides the shader tables, \
         which add {} ({:.2} per shader)",
        untranslated.as_secs_f64(),
        elapsed.as_secs_f64(),
        output.shader_count,
        api_lines + table_lines,
        api_lines / ops,
        table_lines,
        table_lines as f64 / output.shader_count.max(1) as f64
    );
    for (path, api, table) in &rust {
        println!("  {path}: {api} lines, shader table {table}");
    }
    validators::run_requested(root, &output.shaders, tint, spirv_val)
}
