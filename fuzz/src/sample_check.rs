//! `cargo check` of a sample of the generator's accepted outputs: an accepted manifest whose
//! module does not compile is a defect no in-memory check sees (an empty type list once gave
//! `cannot find type T`). The sample's module trees become modules of one scratch crate that
//! depends on the workspace's runtime, checked once with the workspace's lock file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// The workspace root (the fuzz crate's parent).
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Writes each output (files of one generation run) as module `sample_<i>` of a scratch
/// crate and runs `cargo check` on it. `Err` with cargo's errors, and the inputs' labels,
/// when it fails.
pub fn check(samples: &[(String, kernel_codegen::Output)]) -> Result<()> {
    if samples.is_empty() {
        return Ok(());
    }
    let root = workspace();
    let scratch = root.join("target/fuzz-sample");
    let src = scratch.join("src");
    let _ = fs::remove_dir_all(&src);
    fs::create_dir_all(&src).context("the scratch crate's folder")?;
    let runtime = root.join("kernels/kernel-runtime");
    fs::write(
        scratch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fuzz-sample\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\nkernel-runtime = {{ path = {:?} }}\n\n[workspace]\n",
            runtime.display().to_string()
        ),
    )?;
    // The workspace's versions, so nothing new is resolved (and no network is needed).
    fs::copy(root.join("Cargo.lock"), scratch.join("Cargo.lock")).context("Cargo.lock")?;
    let mut lib = String::from("#![allow(warnings)]\n");
    for (i, (label, output)) in samples.iter().enumerate() {
        let dir = src.join(format!("sample_{i}"));
        for file in &output.files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(&path, &file.contents)?;
        }
        lib.push_str(&format!(
            "/// {}\npub mod sample_{i} {{ include!(\"sample_{i}/mod.rs\"); }}\n",
            label.replace('\n', " ")
        ));
    }
    fs::write(src.join("lib.rs"), lib)?;
    eprintln!(
        "fuzz codegen: cargo check of {} accepted outputs in {}",
        samples.len(),
        scratch.display()
    );
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args(["check", "--offline", "--quiet", "--manifest-path"])
        .arg(scratch.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root.join("target/fuzz-sample-target"))
        .output()
        .context("running cargo check")?;
    if !output.status.success() {
        let errors = String::from_utf8_lossy(&output.stderr);
        let first: Vec<&str> = errors.lines().take(40).collect();
        bail!(
            "an accepted output does not compile (modules sample_N of {}):\n{}",
            src.join("lib.rs").display(),
            first.join("\n")
        );
    }
    Ok(())
}
