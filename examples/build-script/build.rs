//! Generates the repository's packages into `$OUT_DIR/kernels` with the codegen library, as a
//! user's crate would from its own packages.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let result = kernel_codegen::Config::new()
        .root(manifest_dir.join("../.."))
        .packages_in("packages")
        .include_root("packages/_shared")
        .hints_dir("hints")
        .generate();
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            // Cargo shows a failing build script's stderr.
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
