//! Generates the Hub's packages into `$OUT_DIR/kernels`: each manifest read where it is
//! (`$KERNEL_HUB_DIR`, else `../shared/hub` beside the repository; nothing of it is copied
//! into the repository) with the templates this crate writes for it in `packages/<op>/`.
//! Without the manifests the crate builds empty and its test files have no tests;
//! `KERNEL_HUB_OPS` (`ai.onnx.Add,ai.onnx.Softmax`) builds a subset. Either way it writes
//! `$OUT_DIR/expected_ops.rs`, the ops it has templates for, so that users can tell an op
//! left out from one unknown.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rustc-check-cfg=cfg(hub)");
    println!("cargo:rerun-if-env-changed=KERNEL_HUB_DIR");
    println!("cargo:rerun-if-env-changed=KERNEL_HUB_OPS");
    // A comma-separated subset of the ops to generate (all that have templates by default).
    let only: Option<Vec<String>> = std::env::var("KERNEL_HUB_OPS")
        .ok()
        .map(|ops| ops.split(',').map(|op| op.trim().to_owned()).collect());
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let hub = std::env::var_os("KERNEL_HUB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("../../../shared/hub"));
    println!("cargo:rerun-if-changed={}", hub.display());
    let packages = manifest_dir.join("packages");
    // A template folder added or removed changes `EXPECTED_OPS`, manifests or not.
    println!("cargo:rerun-if-changed={}", packages.display());
    let mut config = kernel_codegen::Config::new();
    let mut found = 0;
    let ops = std::fs::read_dir(&packages)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned());
    let mut ops: Vec<String> = ops.collect();
    ops.sort();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let expected = out_dir.join("expected_ops.rs");
    // `{:?}` of a `str` is a Rust string literal.
    if let Err(err) = std::fs::write(&expected, format!("&{ops:?}")) {
        eprintln!("writing {}: {err}", expected.display());
        return ExitCode::FAILURE;
    }
    for op in ops {
        if only.as_ref().is_some_and(|only| !only.contains(&op)) {
            continue;
        }
        let manifest = hub.join(format!("{op}.manifest.json"));
        if manifest.is_file() {
            config.package_apart(manifest, packages.join(&op));
            found += 1;
        } else {
            println!(
                "cargo:warning=no manifest for {op} at {}: it is left out (set KERNEL_HUB_DIR)",
                manifest.display()
            );
        }
    }
    if found == 0 {
        return ExitCode::SUCCESS;
    }
    match config.generate() {
        Ok(_) => {
            println!("cargo:rustc-cfg=hub");
            ExitCode::SUCCESS
        }
        Err(err) => {
            // Cargo shows a failing build script's stderr.
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
