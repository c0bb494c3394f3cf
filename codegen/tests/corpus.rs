//! The third-party packages of `../shared/corpus` (or `$KERNEL_CORPUS_DIR`), read as a kernel
//! author's packages would be. Skips, saying so, when the corpus is absent; CI has it.

use std::fs;
use std::path::PathBuf;

/// The corpus folder, when present.
fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("KERNEL_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no package corpus at {} (set KERNEL_CORPUS_DIR)",
            dir.display()
        );
        None
    }
}

/// Every package folder (holding a `manifest.json`) of every collection in the corpus.
fn packages(corpus: &PathBuf) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for collection in fs::read_dir(corpus).expect("corpus is readable").flatten() {
        let Ok(entries) = fs::read_dir(collection.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("manifest.json").is_file() {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_corpus_manifest_parses_strictly_in_its_dialect() {
    let Some(corpus) = corpus() else { return };
    let packages = packages(&corpus);
    assert!(
        packages.len() >= 20,
        "only {} packages found",
        packages.len()
    );
    let mut failures = Vec::new();
    for package in &packages {
        let path = package.join("manifest.json");
        let text = fs::read_to_string(&path).expect("manifest is readable");
        match codegen::manifest::parse_any(&text) {
            Ok(codegen::manifest::AnyManifest::V1(_)) => {}
            Ok(codegen::manifest::AnyManifest::Seed(_)) => {
                failures.push(format!("{}: read as the seed dialect", path.display()));
            }
            Err((json_path, message)) => {
                failures.push(format!("{}: {json_path}: {message}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "{} corpus manifests parse as schemaVersion 1",
        packages.len()
    );
}

/// Every corpus package through the generator, one at a time: how many come through (manifest
/// checked, every shader rendered and validated by naga, Rust emitted), and the first
/// diagnostic of the others. Prints the tally and fails when a package that came through no
/// longer does. The emitted Rust of these packages is not compiled here: their typed API
/// (optional scalars, in-place tensors) is not emitted yet.
#[test]
fn corpus_packages_through_the_generator() {
    let Some(corpus) = corpus() else { return };
    let shared = corpus.join("gemma-4/_shared_assets");
    let mut generated = Vec::new();
    let packages = packages(&corpus);
    for package in &packages {
        let mut config = codegen::Config::new();
        config
            .package(package)
            .emit_rerun_if_changed(false)
            .out_dir(std::env::temp_dir().join("corpus-unused"));
        if shared.is_dir() {
            config.include_root(&shared);
        }
        let (inputs, _) = config.read_inputs().expect("corpus is readable");
        let name = package.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        match codegen::generate(&inputs) {
            Ok(_) => generated.push(name.to_owned()),
            Err(diagnostics) => {
                let first = diagnostics
                    .0
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let name = package.file_name().and_then(|n| n.to_str()).unwrap_or("?");
                eprintln!(
                    "{name}: {} diagnostics, first: {}",
                    diagnostics.0.len(),
                    first.lines().next().unwrap_or("")
                );
            }
        }
    }
    eprintln!(
        "{} of {} corpus packages come through the generator",
        generated.len(),
        packages.len()
    );
    // Those that came through once must keep doing so.
    for known in [
        "com.xenova.AddInPlace",
        "com.xenova.MulBroadcast",
        "com.xenova.StridedCopy",
        "com.xenova.gemma4.PleGate",
        "com.xenova.RMSNorm",
        "com.xenova.Rope1d",
        "com.xenova.gemma4.ArgMax",
        "com.xenova.gemma4.DecodeNormAdd",
        "com.xenova.gemma4.DecodeRmsSrq",
        "com.xenova.gemma4.SrqQuantize",
    ] {
        assert!(
            generated.iter().any(|g| g == known),
            "{known} no longer generates"
        );
    }
}
