//! Says whether the corpus crate found its packages, as that crate's `build.rs` decides it
//! (`$KERNEL_CORPUS_DIR`, else `../shared/corpus` beside the repository): without them there
//! are no Gemma 4 ops to compose and the decoder is left out.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(corpus)");
    println!("cargo:rerun-if-env-changed=KERNEL_CORPUS_DIR");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let corpus = std::env::var_os("KERNEL_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("../../../shared/corpus"));
    let collection = corpus.join("gemma-4");
    println!("cargo:rerun-if-changed={}", collection.display());
    if collection.is_dir() {
        println!("cargo:rustc-cfg=corpus");
    }
}
