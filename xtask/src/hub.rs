//! `cargo xtask hub [--tint] [--spirv-val]`: the Hub's packages (`$KERNEL_HUB_DIR`, else
//! `../shared/hub`) with the templates of `examples/hub/packages`, through the generator in
//! memory as the `hub` crate's build script runs it: shaders per op, the variants not built
//! and why, the time of a generation, and optionally every shader through Tint and `spirv-val`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};

use crate::validators;

/// The folder of the Hub's manifests: `$KERNEL_HUB_DIR`, else `shared/hub` beside the
/// repository.
fn hub_dir(root: &Path) -> PathBuf {
    std::env::var_os("KERNEL_HUB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/hub"))
}

/// Whether the Hub's manifests are where [`run`] looks for them.
pub fn manifests_present(root: &Path) -> bool {
    hub_dir(root).join("ai.onnx.Add.manifest.json").is_file()
}

pub fn run(root: &Path, tint: bool, spirv_val: bool) -> Result<()> {
    let hub = hub_dir(root);
    let templates = root.join("examples/hub/packages");
    let mut config = kernel_codegen::Config::new();
    config.emit_rerun_if_changed(false);
    let mut ops = Vec::new();
    for entry in std::fs::read_dir(&templates)? {
        let op = entry?.file_name().to_string_lossy().into_owned();
        let manifest = hub.join(format!("{op}.manifest.json"));
        if manifest.is_file() {
            config.package_apart(manifest, templates.join(&op));
            ops.push(op);
        }
    }
    if ops.is_empty() {
        bail!("no Hub manifests at {} (set KERNEL_HUB_DIR)", hub.display());
    }
    ops.sort();
    let (mut inputs, _) = config.read_inputs()?;
    inputs.translate = true;
    let started = Instant::now();
    let output = kernel_codegen::generate(&inputs).map_err(|d| anyhow::anyhow!("{d}"))?;
    println!(
        "{}: {} shaders validated by naga and translated by its back ends in {:.1} s",
        ops.join(", "),
        output.shader_count,
        started.elapsed().as_secs_f64()
    );
    for note in &output.notes {
        println!("  {note}");
    }
    for warning in &output.warnings {
        println!("  warning: {warning}");
    }
    validators::run_requested(root, &output.shaders, tint, spirv_val)
}
