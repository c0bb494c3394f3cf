//! GPU contexts for tests: on the preferred adapter (or the one `KERNELS_ADAPTER` names),
//! each bounding its test in time. A test that needs a GPU and finds none fails with what to
//! install: CI installs Mesa lavapipe, so an adapter always exists there.

use std::sync::OnceLock;

use kernel_runtime::{Context, ContextOptions};

/// A context with default options for the calling test, which it bounds ([`crate::bound`]).
pub fn context() -> Context {
    context_with(&ContextOptions::default())
}

/// A context with `opts` for the calling test, which it bounds.
///
/// # Panics
/// When no context can be made: the test needs an adapter.
pub fn context_with(opts: &ContextOptions) -> Context {
    crate::bound();
    Context::with_options(opts).unwrap_or_else(|e| {
        panic!(
            "this GPU test needs a WebGPU adapter ({opts:?}) and could not open one: {e}. \
             Install Mesa lavapipe (Debian/Ubuntu: mesa-vulkan-drivers) for a software Vulkan \
             device, or name an adapter with KERNELS_ADAPTER."
        )
    })
}

/// A context on the same adapter without the WebGPU `features`, to exercise the fallbacks a
/// device lacking them gets.
///
/// # Panics
/// When no context can be made, or the device still has one of `features`.
pub fn context_without(features: &[&'static str]) -> Context {
    let ctx = context_with(&ContextOptions {
        disable_features: features.to_vec(),
        ..ContextOptions::default()
    });
    for feature in features {
        assert!(
            !ctx.caps().has_feature(feature),
            "`{feature}` was disabled but the device still has it"
        );
    }
    ctx
}

/// The context every test of the binary shares (its caches warm up once); bounds the calling
/// test.
pub fn shared() -> &'static Context {
    crate::bound();
    static SHARED: OnceLock<Context> = OnceLock::new();
    SHARED.get_or_init(context)
}
