//! Shared code of the runnable programs and GPU tests: float64 CPU references of the ops
//! ([`reference`]) and seeded test data with tolerant comparison ([`data`]).

pub mod bench;
pub mod data;
pub mod reference;
