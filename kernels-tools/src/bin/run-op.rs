//! `run-op`: runs any generated op on tensors from a safetensors file, or drawn at random by
//! shape, and writes its outputs, for comparing against PyTorch or ONNX Runtime.
//!
//! ```text
//! run-op <OP> [--inputs IN.safetensors] [--random ROLE=DTYPE:DIMS]... [--seed N]
//!             [--output OUT.safetensors] [--attr NAME=VALUE]... [--repeat N]
//! ```
//! Input tensors are named by the manifest's input roles; F32/F16 for float inputs, I64 for
//! index inputs. `--random input=float16:2x0x8` draws an input instead (an ONNX dtype, sizes
//! joined by `x`, none for a scalar; floats in [-1, 1], integers in 0..=3, from `--seed`, 0 by
//! default); each input comes from the file or from `--random`, never both. Without
//! `--output` the outputs are computed and not written. Exit status: 0 on success, 2 for a
//! contract violation, a bad argument or a bad input file, 1 for a runtime failure (no
//! adapter, device lost).

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Parser;
use kernels_tools::run_op::{Args, run};

fn main() -> ExitCode {
    // A usage error is one line, as every other failure; help and version print as usual.
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) if err.use_stderr() => {
            let text = err.to_string();
            let first = text.lines().next().unwrap_or_default();
            eprintln!("run-op: {}", first.strip_prefix("error: ").unwrap_or(first));
            return ExitCode::from(2);
        }
        Err(err) => {
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
    };
    match run(&args, &OnceLock::new()) {
        Ok(done) => {
            for note in &done.notes {
                eprintln!("run-op: note: {note}");
            }
            println!("{}", done.line);
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("run-op: {}", failure.message());
            ExitCode::from(failure.status())
        }
    }
}
