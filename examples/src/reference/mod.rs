//! Float64 CPU references of the ops, written from `spec/semantics.md` and independent of
//! the WGSL templates, so a conformance test compares two implementations of the spec rather
//! than a shader with itself.

pub mod bias_softmax;
pub mod gated_relative_position_bias;
pub mod mrotary_embedding;
