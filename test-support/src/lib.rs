//! What the workspace's GPU test binaries share: a time bound per test (`bound.rs`), contexts
//! on the adapter the machine has (`devices.rs`), seeded random data (`data.rs`), comparison
//! with a float64 reference (`close.rs`), the poison values outputs are filled with before a
//! run (`poison.rs`), and conformance suites in the `test.json` format of the Hub's packages
//! (`conformance.rs`).

mod bound;
mod close;
pub mod conformance;
mod data;
mod devices;
mod poison;

pub use bound::{DEFAULT_LIMIT_SECONDS, bound, limit};
pub use close::{assert_close, worst};
pub use data::data;
pub use devices::{context, context_with, context_without, shared};
pub use poison::Poison;
