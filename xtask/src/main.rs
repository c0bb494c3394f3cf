//! Project automation, the only entry point for generated code, CI and the demo:
//! `cargo xtask codegen [--check [--tint] [--spirv-val]]`, `cargo xtask corpus`, `cargo xtask ci`, `cargo xtask demo`,
//! `cargo xtask bench [--torch]`, `cargo xtask fuzz`, `cargo xtask web [--serve]`.

mod bench;
mod bench_decode;
mod ci;
mod codegen;
mod corpus;
mod hub;
#[cfg(test)]
mod layers;
mod system;
mod validators;
mod web;

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
    /// Compile the packages in packages/ (with hints/) into kernels/kernels/src/generated/.
    Codegen {
        /// Write nothing; fail if any generated file is stale or orphaned, or a shader is invalid.
        #[arg(long)]
        check: bool,
        /// With --check: also compile every shader with Tint (Chrome's compiler, through
        /// Dawn's `webgpu` npm package in xtask/js, installed with `npm ci` when missing)
        /// and create its pipeline and bind group as the runtime does.
        #[arg(long, requires = "check")]
        tint: bool,
        /// With --check: also validate naga's SPIR-V of every shader with `spirv-val`
        /// (Debian's spirv-tools).
        #[arg(long, requires = "check")]
        spirv_val: bool,
    },
    /// The third-party corpus (`../shared/corpus` or `$KERNEL_CORPUS_DIR`) through the
    /// generator in memory: packages with and without hints, generation time, shaders and
    /// Rust lines per op.
    Corpus {
        /// Also compile every shader with Tint (as `codegen --check --tint` does).
        #[arg(long)]
        tint: bool,
        /// Also validate naga's SPIR-V of every shader with `spirv-val`.
        #[arg(long)]
        spirv_val: bool,
    },
    /// The Hub's packages (`../shared/hub` or `$KERNEL_HUB_DIR`) with the templates of
    /// `examples/hub/packages` through the generator in memory: shaders, variants not built.
    Hub {
        /// Also compile every shader with Tint (as `codegen --check --tint` does).
        #[arg(long)]
        tint: bool,
        /// Also validate naga's SPIR-V of every shader with `spirv-val`.
        #[arg(long)]
        spirv_val: bool,
    },
    /// Everything CI runs: Vulkan driver setup, formatting, codegen freshness, clippy, tests.
    Ci,
    /// The main job: generate, then run every op on the best adapter against a CPU reference
    /// (installing Mesa's Vulkan driver first when no Vulkan driver is present and it may), then
    /// decode 32 tokens with the corpus's Gemma 4 decoder (small) where the corpus is present.
    Demo,
    /// Benchmarks: every case of benchmarks/cases/*.bench.json against the copy-kernel ceiling.
    Bench {
        /// Then run the PyTorch peer (`benchmarks/peers/onnx_torch.py`: eager and
        /// `torch.compile`, CUDA) for the Hub's ai.onnx ops that ran, at the shapes of
        /// benchmarks/cases or of the one `--cases FILE.bench.json` given, and print both side
        /// by side, case by case.
        #[arg(long)]
        torch: bool,
        /// Arguments for the harness (`--quick`, `--json PATH`, `--filter TEXT`, ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The fuzz targets (the generator, run-op) built with optimisations, for a longer run
    /// than CI's: `cargo xtask fuzz -- all --seconds 600 --jobs 2`.
    Fuzz {
        /// Arguments for the fuzz command (`codegen|run-op|all`, `--seconds`, `--jobs`, ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The browser page: build it for wasm32, then run every op in headless Chromium
    /// (SwiftShader's WebGPU adapter) and check each result against the CPU reference.
    Web {
        /// Serve the page on http://127.0.0.1:8000/ for a browser of yours instead.
        #[arg(long)]
        serve: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = project_root();
    let result = match cli.command {
        Command::Codegen {
            check,
            tint,
            spirv_val,
        } => codegen::run(
            &root,
            if check {
                codegen::Mode::Check(codegen::Validators { tint, spirv_val })
            } else {
                codegen::Mode::Write
            },
        ),
        Command::Corpus { tint, spirv_val } => corpus::run(&root, tint, spirv_val),
        Command::Hub { tint, spirv_val } => hub::run(&root, tint, spirv_val),
        Command::Ci => ci::run(&root),
        Command::Demo => system::ensure_vulkan_driver()
            .and_then(|()| codegen::run(&root, codegen::Mode::Write))
            .and_then(|()| {
                system::cargo(
                    &root,
                    &["run", "--release", "-p", "kernels-tools", "--bin", "demo"],
                )
            })
            .and_then(|()| {
                // The corpus's Gemma 4 decoder, small; it says so in one line where the corpus
                // is not beside the repository.
                system::cargo(
                    &root,
                    &[
                        "run",
                        "--release",
                        "-p",
                        "gemma-decoder",
                        "--bin",
                        "gemma-decode",
                        "--",
                        "--config",
                        "small",
                    ],
                )
            }),
        Command::Bench { torch, args } => bench::run(&root, torch, &args),
        Command::Fuzz { args } => system::ensure_vulkan_driver().and_then(|()| {
            let mut cargo_args = vec!["run", "--release", "-p", "fuzz", "--"];
            cargo_args.extend(args.iter().map(String::as_str));
            system::cargo(&root, &cargo_args)
        }),
        Command::Web { serve } => web::run(&root, serve),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Where this repository's generated files live, relative to its root.
const GENERATED_DIR: &str = "kernels/kernels/src/generated";

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
        let check = super::codegen::Mode::Check(super::codegen::Validators::default());
        if let Err(err) = super::codegen::run(&super::project_root(), check) {
            panic!("{err:#}");
        }
    }

    /// `--check` names stale and orphaned files; writing repairs both.
    #[test]
    fn check_names_stale_and_orphaned_files() {
        use std::fs;
        let source = super::project_root();
        let root = std::env::temp_dir().join(format!("xtask-check-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
            fs::create_dir_all(to).expect("temp dir");
            for entry in fs::read_dir(from).expect("source dir").flatten() {
                let path = entry.path();
                if path.is_dir() {
                    copy_tree(&path, &to.join(entry.file_name()));
                } else {
                    fs::copy(&path, to.join(entry.file_name())).expect("copy");
                }
            }
        }
        for dir in ["packages", "hints"] {
            copy_tree(&source.join(dir), &root.join(dir));
        }
        use super::codegen::{Mode, Validators};
        let check = || {
            super::codegen::run(&root, Mode::Check(Validators::default()))
                .map_err(|e| format!("{e:#}"))
        };
        let missing = check().expect_err("nothing generated yet");
        assert!(
            missing.contains("stale:    kernels/kernels/src/generated/mod.rs"),
            "{missing}"
        );
        super::codegen::run(&root, Mode::Write).expect("generation succeeds");
        check().expect("fresh after generating");

        let generated = root.join(super::GENERATED_DIR);
        let header = format!("// {}\n", kernel_codegen::GENERATED_MARK);
        fs::write(
            generated.join("mod.rs"),
            format!("{header}// edited by hand\n"),
        )
        .expect("write");
        fs::write(
            generated.join("leftover.rs"),
            format!("{header}// from a removed op\n"),
        )
        .expect("write");
        let report = check().expect_err("stale and orphaned files");
        assert!(
            report.contains("stale:    kernels/kernels/src/generated/mod.rs"),
            "{report}"
        );
        assert!(
            report.contains("orphaned: kernels/kernels/src/generated/leftover.rs"),
            "{report}"
        );
        super::codegen::run(&root, Mode::Write).expect("regeneration succeeds");
        check().expect("fresh again");
        assert!(!generated.join("leftover.rs").exists());
        let _ = fs::remove_dir_all(&root);
    }
}
