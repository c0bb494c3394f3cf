//! Fuzzing the generator and `run-op` on the project's own inputs.
//!
//! Inputs are mutations of real packages (the seed packages; the corpus and the Hub's
//! packages when present) written as a small text format ([`mutation`]), so that a failing
//! input found by the fuzzer is printed as a fixture that reproduces it and can be kept as a
//! regression test (`tests/regressions/*.test`). The targets ([`codegen_target`],
//! [`run_op_target`]) are driven by proptest's generators and shrinking under a time budget
//! ([`drive`]).

pub mod codegen_target;
pub mod config_target;
pub mod drive;
pub mod mutation;
#[cfg(feature = "run-op")]
pub mod run_op_target;
pub mod sample_check;
pub mod seeds;
