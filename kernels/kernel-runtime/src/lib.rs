//! Thin wgpu runtime that generated kernel crates link: context, tensors, pipeline cache,
//! dispatch, timing.
//!
//! Generated op modules do all the contract checking and planning on the host, without a
//! GPU: they pick a variant, compute dispatch sizes and uniform bytes, and describe the result
//! as a [`Plan`] of [`PlannedPass`]es over pre-rendered [`Kernel`]s. This crate executes plans:
//!
//! - [`Context`] owns the adapter, device and queue. It asks for the adapter's own limits and
//!   for whichever of `shader-f16`, `subgroups` and `timestamp-query` the adapter has, and
//!   describes the result as [`DeviceCaps`], the `device.*` of manifest expressions.
//! - [`Tensor`], [`IndexTensor`] and [`AnyTensor`] hold data in storage buffers. `int64`
//!   index inputs are narrowed to `u32` on upload, with a per-element check; `int8` and
//!   `uint8` tensors are stored one 32-bit word per element (WGSL has no 8-bit storage),
//!   widened on upload and narrowed to the low 8 bits on readback.
//! - [`Context::record_plan`] turns a plan into one compute pass: pipelines come from a cache
//!   keyed by kernel digest, entry point and override values; intermediates from a pool;
//!   uniform buffers are shared by content. [`Dispatch`] implements the manifests' dispatch
//!   forms, including the x/y split of counts above `maxComputeWorkgroupsPerDimension`.
//! - [`Context::time_plan`] measures GPU time with timestamp queries, and
//!   [`Context::time_plan_passes`] the time of each pass too.
//!
//! wgpu reports validation errors through a panicking handler by default. Here every
//! resource creation and submission runs inside error scopes, so a bad plan, an oversized
//! tensor or an invalid shader comes back as a [`RuntimeError`], never as a panic.
//!
//! ```no_run
//! use kernel_runtime::{Arg, Binding, Context, Dispatch, Kernel, Plan, PlannedPass, Tensor};
//!
//! static DOUBLE: Kernel = Kernel {
//!     label: "double",
//!     source: "@group(0) @binding(0) var<storage, read> x: array<f32>;
//!               @group(0) @binding(1) var<storage, read_write> y: array<f32>;
//!               @compute @workgroup_size(64)
//!               fn main(@builtin(global_invocation_id) g: vec3<u32>) {
//!                   if g.x < arrayLength(&y) { y[g.x] = 2.0 * x[g.x]; }
//!               }",
//!     entry_point: "main",
//!     digest: "double-v1",
//!     web_enables: "",
//!     least_sizes: &[],
//! };
//!
//! # fn main() -> Result<(), kernel_runtime::RuntimeError> {
//! let ctx = Context::new()?;
//! let x = Tensor::from_slice(&ctx, &[3], &[1.0f32, 2.0, 3.0])?;
//! let y = Tensor::<f32>::zeros(&ctx, &[3])?;
//! let plan = Plan {
//!     op: "Double",
//!     variant: "default",
//!     passes: vec![PlannedPass {
//!         id: "double",
//!         kernel: &DOUBLE,
//!         overrides: vec![],
//!         bindings: vec![Binding::Arg(0), Binding::Arg(1)],
//!         params: vec![],
//!         dispatch: Dispatch::Threads { threads: 3, workgroup_size: 64 },
//!     }],
//!     intermediates: vec![],
//!     outputs: vec![],
//! };
//! ctx.run_plan(&plan, &[Arg::read("x", x.binding()), Arg::write("y", y.binding())])?;
//! assert_eq!(y.to_vec(&ctx)?, [2.0, 4.0, 6.0]);
//! # Ok(())
//! # }
//! ```
//!
//! Adapter choice: [`ContextOptions::adapter`] or the `KERNELS_ADAPTER` environment variable
//! names one (a case-insensitive substring of its name); otherwise a discrete GPU is preferred
//! over an integrated, virtual or software one (Mesa lavapipe), on Vulkan, Metal or DX12
//! before GL.
//!
//! wgpu's experimental features (today its cooperative matrices, as the WebGPU feature
//! `chromium-experimental-subgroup-matrix`) are requested only when the context's creator opts
//! in: [`ContextOptions::experimental_features`] or the `KERNELS_EXPERIMENTAL_FEATURES`
//! environment variable.

// In unit tests a panic is the failure report; everywhere else `unwrap` is warned.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod adapter;
mod any;
mod args;
mod attrs;
mod bind_cache;
mod bound;
mod caches;
pub mod caps;
mod context;
mod devices;
#[cfg(not(target_arch = "wasm32"))]
mod disk_cache;
pub mod dtype;
pub mod error;
mod gpu;
/// The expression language's arithmetic that generated code calls (`kernel-abi`'s).
pub use kernel_abi::expr;
mod index;
mod op;
mod pipeline;
pub mod plan;
#[doc(hidden)]
pub mod plan_spec;
mod pools;
mod record;
pub mod registry;
#[doc(hidden)]
pub mod shaders;
mod staging;
#[doc(hidden)]
pub mod support;
mod sync;
mod tensor;
mod threads;
mod timing;
pub mod uniform;
mod uniform_arena;
mod untyped;
#[doc(hidden)]
pub mod when;

/// The one module generated op modules name (`use ::kernel_runtime::abi as rt;`): everything
/// they call, under the version [`abi::VERSION`] they are checked against when they compile.
/// Not for hand-written code: it changes with the generator.
#[doc(hidden)]
pub mod abi {
    pub use crate::untyped::plan_untyped;
    pub use crate::{
        AllocatingOp, AnyTensor, Arg, AttrValue, Bound, Context, DType, DeviceCaps, Element, Float,
        IndexTensor, Integer, Op, OpError, OpHooks, OpVisitor, OutputSpec, Plan, PlanError,
        RuntimeError, Tensor,
    };
    pub use crate::{expr, half, plan_spec, registry, shaders, support, wgpu, when};
    pub use kernel_abi::ABI_VERSION as VERSION;

    /// The names a generated module writes its clause and plan tables with
    /// (`use rt::tables::*`), so that an entry reads as data: `Check("n > 0", &[0], 3)`,
    /// `Grid(("x", 2), None, None)`.
    pub mod tables {
        pub use crate::plan::Binding::{Arg, Intermediate, Params};
        pub use crate::plan_spec::DispatchSpec::{Grid, GridStride, Threads, Workgroups};
        pub use crate::plan_spec::Field::{F32, I32, U32};
        pub use crate::plan_spec::{PassSpec, ScratchSpec, Value, VariantSpec};
        pub use crate::when::Clause::{All, Check, Explain, Require};
        pub use crate::when::{Clause, Explanation, Variant};
    }
}

pub use any::AnyTensor;
pub use args::{Access, Arg};
pub use attrs::AttrValue;
pub use bound::Bound;
pub use caches::ContextCounts;
pub use caps::{DeviceCaps, MatrixScalar, SubgroupMatrixConfig};
pub use context::Context;
pub use devices::{ContextOptions, EXPERIMENTAL_FEATURES_ENV};
#[cfg(not(target_arch = "wasm32"))]
pub use disk_cache::PipelineCacheLoad;
pub use dtype::{DType, Element, Float, Integer};
pub use error::{NotBuilt, OpError, PlanError, Rejection, RuntimeError};
pub use expr::EvalError;
pub use index::{IndexTensor, narrow_i64_to_u32};
pub use op::{AllocatingOp, Op, OpHooks, OpVisitor};
pub use plan::{Binding, Dispatch, IntermediateSpec, Kernel, OutputSpec, Plan, PlannedPass};
pub use staging::STAGING_CHUNK;
pub use tensor::Tensor;
pub use timing::PlanTimes;

/// Re-exported so users name the same bytemuck version when they fill their own buffers.
pub use bytemuck;
/// Re-exported so generated crates and their users name the same wgpu and half versions.
pub use half;
/// Re-exported so generated crates and their users name the same wgpu version.
pub use wgpu;
