//! What the workspace's GPU test binaries share: a time bound per test (`bound.rs`), contexts
//! on the adapter the machine has (`devices.rs`), seeded random data (`data.rs`), comparison
//! with a float64 reference (`close.rs`), the poison values outputs are filled with before a
//! run (`poison.rs`), conformance suites in the `test.json` format of the Hub's packages
//! (`conformance.rs`), and their cases run through an op's registry entry
//! (`conformance_run.rs`), and a float64 reference of a Gemma-4-style decode step (`decode`).
//!
//! Without the default `gpu` feature the crate has no GPU half (contexts, poison values,
//! running cases), so a build script can read suites without building wgpu. On wasm32 (a
//! browser page running suites) there are no contexts: the page makes its own without blocking.

mod bound;
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub mod boundary;
mod close;
pub mod conformance;
#[cfg(feature = "gpu")]
pub mod conformance_run;
mod data;
pub mod decode;
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
mod devices;
#[cfg(feature = "gpu")]
mod poison;

pub use bound::{DEFAULT_LIMIT_SECONDS, bound, limit};
pub use close::{assert_close, worst};
pub use data::data;
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub use devices::{context, context_with, context_without, shared};
#[cfg(feature = "gpu")]
pub use poison::{Poison, first_unwritten, first_written};
