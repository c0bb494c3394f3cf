//! The Hub's `ai.onnx` packages, generated at build time by `build.rs` from their manifests
//! where they are (`$KERNEL_HUB_DIR`, else `../shared/hub`) and the templates in `packages/`.
//! Without the manifests the crate is empty and [`PRESENT`] is false.

/// Whether the manifests were found when the crate was built.
pub const PRESENT: bool = cfg!(hub);

/// The generated op modules and their registry `OPS`.
#[cfg(hub)]
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs"));
}

pub use kernel_runtime as runtime;

/// The registry of the generated ops: empty without the manifests.
pub fn ops() -> &'static [runtime::registry::OpEntry] {
    #[cfg(hub)]
    return kernels::OPS;
    #[cfg(not(hub))]
    return &[];
}

/// Says, once per test, that the manifests were absent.
pub fn skip_without_hub(test: &str) -> bool {
    if !PRESENT {
        eprintln!("{test}: skipped, no Hub manifests (set KERNEL_HUB_DIR)");
    }
    !PRESENT
}
