//! Generates packages of the third-party corpus into `$OUT_DIR/kernels` with the codegen
//! library, reading them where they are (`$KERNEL_CORPUS_DIR`, else `../shared/corpus` beside
//! the repository): nothing of the corpus is copied into the repository. Without a corpus the
//! crate builds empty and its tests say they skipped.

use std::path::PathBuf;
use std::process::ExitCode;

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
    // Every package of the collection, with the hints beside this crate for those that need
    // them.
    let mut config = kernel_codegen::Config::new();
    config
        .packages_in(&collection)
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
