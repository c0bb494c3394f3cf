//! A Gemma-4-style decoder composed from the Gemma 4 kernel packages of the corpus
//! (`../shared/corpus/gemma-4`) through their generated typed API, as an inference engine
//! runs it: the application's device, weights uploaded once, every buffer allocated once, and
//! each token one command encoder and one submission with the next token left on the device.
//!
//! [`Config`] chooses the dimensions ([`Config::small`] for tests, [`Config::e2b`] for
//! timing), [`Weights::seeded`] draws weights in the packages' layouts, [`Decoder`] steps.
//! Without the corpus beside the repository the crate has no decoder and [`PRESENT`] is false.

pub mod config;
pub mod weights;

#[cfg(corpus)]
mod calls;
#[cfg(corpus)]
pub mod model;
#[cfg(corpus)]
pub mod run;
#[cfg(corpus)]
pub mod step;
#[cfg(corpus)]
pub mod timing;

pub use config::{Config, Precision};
pub use weights::Weights;

#[cfg(corpus)]
pub use run::{Decoder, Report};
#[cfg(corpus)]
pub use step::{At, DecodeError, Probe, Recording, Stage};

/// Whether the corpus's packages were found when the crate was built.
pub const PRESENT: bool = cfg!(corpus);
