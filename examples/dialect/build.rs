//! Generates `packages/` into `$OUT_DIR/kernels` with the codegen library, with the hints in
//! `hints/` (each the file a package's errors print): every package must be one codegen
//! accepts, so that this crate builds is the first test of each construct.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    match kernel_codegen::Config::new()
        .root(here)
        .packages_in("packages")
        .hints_dir("hints")
        .generate()
    {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            ExitCode::FAILURE
        }
    }
}
