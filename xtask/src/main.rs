//! Project automation, the only entry point for generated code, CI and the demo:
//! `cargo xtask codegen [--check]`, `cargo xtask ci`, `cargo xtask demo`.

mod ci;
mod codegen;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Project automation for the typed WebGPU kernel crates")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile manifests/ and templates/ into kernels/kernels/src/generated/.
    Codegen {
        /// Write nothing; fail if any generated file is stale or orphaned, or a shader is invalid.
        #[arg(long)]
        check: bool,
    },
    /// Everything CI runs: Vulkan driver setup, formatting, codegen freshness, clippy, tests.
    Ci,
    /// The main job: generate, then run every op on the best adapter against a CPU reference.
    Demo,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = project_root();
    let result = match cli.command {
        Command::Codegen { check } => codegen::run(&root, check),
        Command::Ci => ci::run(&root),
        Command::Demo => codegen::run(&root, false).and_then(|()| {
            ci::cargo(
                &root,
                &["run", "--release", "-p", "examples", "--bin", "demo"],
            )
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: xtask lives one level below it.
fn project_root() -> PathBuf {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .parent()
        .map(PathBuf::from)
        .unwrap_or(manifest_dir)
}

#[cfg(test)]
mod tests {
    /// The committed generated files are the golden outputs: plain `cargo test` fails when a
    /// manifest or template changed without `cargo xtask codegen`, or a shader stopped
    /// validating.
    #[test]
    fn generated_code_is_fresh() {
        if let Err(err) = super::codegen::run(&super::project_root(), true) {
            panic!("{err:#}");
        }
    }
}
