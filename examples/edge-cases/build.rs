//! Generates every case of `cases/*.mutations` (a mutation of the repository's seed packages,
//! in the fuzz crate's format) into `$OUT_DIR/<case>/`. A case codegen rejects fails the
//! build with its diagnostics: every case here must be one codegen accepts.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    for folder in ["cases", "../../packages", "../../hints"] {
        println!("cargo:rerun-if-changed={}", here.join(folder).display());
    }
    let seed = fuzz::seeds::seed_packages().map_err(|e| format!("{e:#}"))?;
    let mut cases: Vec<PathBuf> = std::fs::read_dir(here.join("cases"))
        .map_err(|e| format!("reading cases/: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "mutations"))
        .collect();
    cases.sort();
    for path in cases {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_owned();
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let case =
            fuzz::mutation::Case::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let inputs = case
            .apply(&seed)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let output = kernel_codegen::generate(&inputs)
            .map_err(|d| format!("case `{name}` is rejected by codegen:\n{d}"))?;
        write_all(&out.join(&name), &output.files)?;
    }
    Ok(())
}

fn write_all(dir: &Path, files: &[kernel_codegen::GeneratedFile]) -> Result<(), String> {
    for file in files {
        let target = dir.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&target, &file.contents)
            .map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(())
}
