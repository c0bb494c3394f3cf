//! The repository's kernels, generated at build time by `build.rs` through
//! [`kernel_codegen::Config`](../kernel-codegen/struct.Config.html) rather than committed: the way a crate
//! with its own packages uses the generator. It depends on `kernel-runtime` alone; the
//! generated code names wgpu and half through the runtime's re-exports.

/// The generated op modules (`bias_softmax`, …) and their registry `OPS`.
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs"));
}

pub use kernel_runtime as runtime;
