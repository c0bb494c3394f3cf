//! The Hub's `ai.onnx` packages, generated at build time by `build.rs` from their manifests
//! where they are (`$KERNEL_HUB_DIR`, else `../shared/hub`) and the templates in `packages/`.
//! Without the manifests the crate has no ops and [`PRESENT`] is false.

/// Whether the manifests were found when the crate was built.
pub const PRESENT: bool = cfg!(hub);

/// The ops this crate has templates for (its `packages/` folders), built or not: an op of
/// these missing from [`ops`] was left out at build time (no manifest, or `KERNEL_HUB_OPS`).
pub const EXPECTED_OPS: &[&str] = include!(concat!(env!("OUT_DIR"), "/expected_ops.rs"));

/// The generated op modules and their registry `OPS`.
#[cfg(hub)]
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs"));
}

pub use kernel_runtime as runtime;

/// `visitor` with the type of the generated op whose module is named `module`
/// (`kernels::visit_op`); `None` for another name, and for every name without the manifests,
/// so that code reaching these ops by name builds either way.
pub fn visit_op<V: runtime::OpVisitor>(module: &str, visitor: V) -> Option<V::Output> {
    #[cfg(hub)]
    return kernels::visit_op(module, visitor);
    #[cfg(not(hub))]
    {
        let _ = (module, visitor);
        None
    }
}

/// The registry of the generated ops: empty without the manifests.
pub fn ops() -> &'static [runtime::registry::OpEntry] {
    #[cfg(hub)]
    return kernels::OPS;
    #[cfg(not(hub))]
    return &[];
}
