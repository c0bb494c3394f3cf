//! The benchmark harness behind `cargo xtask bench`: cases from `manifests/*.bench.json`,
//! the copy-kernel ceiling of the same run, per-case GPU times from timestamp queries, and
//! the host-side cost of calls.

pub mod copy;
pub mod host;
pub mod run;
pub mod spec;
