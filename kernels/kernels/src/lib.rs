//! Typed GPU kernels for ONNX contrib operators, compiled ahead of time from the
//! `webgpu-kernels` packages under `packages/` by `cargo xtask codegen`.
//!
//! Each op is a module with an `Attrs` struct, typed `Inputs`/`Outputs`, a GPU-free `plan`,
//! and `record`/`run` on a [`runtime::Context`]. [`OPS`] lists every op for tools that pick
//! one by name. No template engine or expression interpreter runs here: shaders are
//! pre-rendered and validated, expressions compiled to Rust.

// `include!`d rather than a file module, so that rustfmt leaves the generated files as the
// generator formatted them (prettyplease) and `cargo xtask codegen --check` stays the judge.
mod generated {
    include!("generated/mod.rs");
}
mod host_checks;

pub use generated::*;
pub use kernel_runtime as runtime;
