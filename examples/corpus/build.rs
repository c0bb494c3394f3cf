//! Generates packages of the third-party corpus into `$OUT_DIR/kernels` with the codegen
//! library, reading them where they are (`$KERNEL_CORPUS_DIR`, else `../shared/corpus` beside
//! the repository): nothing of the corpus is copied into the repository. Without a corpus the
//! crate builds empty and its tests say they skipped.

use std::path::PathBuf;
use std::process::ExitCode;

/// The packages built and run here: those with CPU references in `tests/`, and one that needs
/// the hints beside this crate.
const PACKAGES: &[&str] = &[
    "com.xenova.AddInPlace",
    "com.xenova.MulBroadcast",
    "com.xenova.RMSNorm",
    "com.xenova.Rope1d",
    "com.xenova.StridedCopy",
    "com.xenova.gemma4.ArgMax",
    "com.xenova.gemma4.Attention",
    "com.xenova.gemma4.DenseGemv",
    "com.xenova.gemma4.QatEmbedGather",
];

fn main() -> ExitCode {
    println!("cargo::rustc-check-cfg=cfg(corpus)");
    println!("cargo:rerun-if-env-changed=KERNEL_CORPUS_DIR");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let corpus = std::env::var_os("KERNEL_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("../../../shared/corpus"));
    let collection = corpus.join("gemma-4");
    println!("cargo:rerun-if-changed={}", collection.display());
    if !collection.is_dir() {
        println!(
            "cargo:warning=no package corpus at {}: the corpus crate is empty (set KERNEL_CORPUS_DIR)",
            collection.display()
        );
        return ExitCode::SUCCESS;
    }
    let mut config = codegen::Config::new();
    for package in PACKAGES {
        config.package(collection.join(package));
    }
    config
        .include_root(collection.join("_shared_assets"))
        .hints_dir(manifest_dir.join("hints"));
    match config.generate() {
        Ok(_) => {
            println!("cargo:rustc-cfg=corpus");
            ExitCode::SUCCESS
        }
        Err(err) => {
            // Cargo shows a failing build script's stderr.
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
