//! The traits every generated op implements: [`Op`] ties an op's typed attributes, shapes,
//! inputs and provided outputs to its entry points, and [`AllocatingOp`] adds the forms that
//! allocate the outputs, for ops whose output shapes follow from their inputs (and from the
//! tensors they write in place, which the caller still passes). Code that drives any op alike
//! (a benchmark, a test, a layer of an inference engine) is written once against them; each
//! op's module also has the same functions free-standing.
//!
//! ```no_run
//! use kernel_runtime::{Context, Op, OpError, Plan};
//!
//! /// The plan any op makes for a call, on the context's device.
//! fn plan_of<O: Op>(
//!     ctx: &Context,
//!     shapes: &O::Shapes<'_>,
//!     dtypes: &O::DTypes,
//!     attrs: &O::Attrs,
//! ) -> Result<Plan, OpError> {
//!     O::plan(ctx.caps(), shapes, dtypes, attrs)
//! }
//! ```

use crate::args::Arg;
use crate::caps::DeviceCaps;
use crate::context::Context;
use crate::dtype::DType;
use crate::error::OpError;
use crate::plan::Plan;
use crate::registry::{ArgView, OpEntry};
use crate::support::{AttrValue, Failure};

/// A generated op: `bias_softmax::Op<f32>`, say, its type parameters the element types of the
/// op's type variables. The generated code supplies the types, `attrs`, `plan` and the shapes
/// and arguments of a call; recording, running and precompiling are the same for every op and
/// written here once.
pub trait Op {
    /// The op's qualified name (`com.microsoft.BiasSoftmax`).
    const NAME: &'static str;
    /// The op in the registry of untyped entry points.
    const ENTRY: OpEntry;
    /// Its attributes and scalar arguments.
    type Attrs: Clone + std::fmt::Debug;
    /// The element types bound to its type variables.
    type DTypes: Copy + std::fmt::Debug;
    /// The shapes `plan` takes: inputs, tensors written in place, outputs the caller provides.
    type Shapes<'a>: Copy + std::fmt::Debug;
    /// The tensors it only reads.
    type Inputs<'a>;
    /// The tensors it writes, provided by the caller.
    type OutputsMut<'a>;

    /// Attributes from name/value pairs, as tools receive them: unknown names, wrong kinds
    /// and missing required attributes are errors.
    fn attrs(values: &[(String, AttrValue)]) -> Result<Self::Attrs, OpError>;

    /// Chooses the variant and computes everything about the dispatch, without a GPU.
    fn plan(
        caps: &DeviceCaps,
        shapes: &Self::Shapes<'_>,
        dtypes: &Self::DTypes,
        attrs: &Self::Attrs,
    ) -> Result<Plan, OpError>;

    /// [`Op::plan`] into `plan`, reusing its storage: planning again for the same op
    /// allocates nothing once its shapes have been seen. On an error `plan` holds part of a
    /// plan, to be planned again before it is used.
    fn plan_into(
        caps: &DeviceCaps,
        shapes: &Self::Shapes<'_>,
        dtypes: &Self::DTypes,
        attrs: &Self::Attrs,
        plan: &mut Plan,
    ) -> Result<(), OpError>;

    /// The shapes and element types of a call.
    fn call_shapes<'a>(
        inputs: &'a Self::Inputs<'_>,
        outputs: &'a Self::OutputsMut<'_>,
    ) -> (Self::Shapes<'a>, Self::DTypes);

    /// A call's arguments: an array of one [`Arg`] per tensor.
    #[doc(hidden)]
    type Args<'t>: AsRef<[Arg<'t>]>;
    /// A call's tensor shapes: an array of one per tensor, in the order of [`Op::Args`].
    #[doc(hidden)]
    type ArgShapes<'t>: AsRef<[Option<&'t [usize]>]>;

    /// A call's tensors as its plan binds them: the inputs in manifest order (those written
    /// in place among them), then the outputs.
    #[doc(hidden)]
    fn args<'t>(inputs: &'t Self::Inputs<'_>, outputs: &'t Self::OutputsMut<'_>) -> Self::Args<'t>;

    /// The shape of each tensor of a call, in the order of [`Op::args`] (`None` for an
    /// optional tensor left out); the outputs, last, must have the shapes the plan produces.
    #[doc(hidden)]
    fn arg_shapes<'t>(
        inputs: &'t Self::Inputs<'_>,
        outputs: &'t Self::OutputsMut<'_>,
    ) -> Self::ArgShapes<'t>;

    /// The shapes `plan` takes, by tensor role (an absent required one is empty): how a
    /// bound call plans again from the shapes it kept.
    #[doc(hidden)]
    fn shapes_from<'a>(get: &dyn Fn(&str) -> Option<&'a [usize]>) -> Self::Shapes<'a>;

    /// The op's hand-written checks of a call's input values, beyond what its manifest says
    /// (index ranges, say); none by default.
    #[doc(hidden)]
    fn check_inputs(inputs: &Self::Inputs<'_>, attrs: &Self::Attrs) -> Result<(), OpError> {
        let _ = (inputs, attrs);
        Ok(())
    }

    /// Records the op into `encoder`, writing into tensors the caller provides (tensors of
    /// its own or views of its buffers), so a loop allocates nothing per step and an output
    /// can be the next op's input. Bind groups are kept for the next call with the same
    /// tensors ([`Context::record_plan_reusing`]). A provided output of the wrong shape is
    /// [`OpError::Output`]; one that shares bytes with another argument is
    /// [`crate::RuntimeError::Alias`].
    ///
    /// It plans into a plan kept per thread, so a warm call allocates nothing in the runtime
    /// or the generated code; a call site recorded every step does better still bound once
    /// ([`crate::Bound`]), which looks nothing up per call.
    fn record_into(
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        inputs: &Self::Inputs<'_>,
        outputs: Self::OutputsMut<'_>,
        attrs: &Self::Attrs,
    ) -> Result<(), OpError> {
        let (shapes, dtypes) = Self::call_shapes(inputs, &outputs);
        with_scratch_plan(|plan| {
            Self::plan_into(ctx.caps(), &shapes, &dtypes, attrs, plan)?;
            Self::check_inputs(inputs, attrs)?;
            check_outputs(
                Self::NAME,
                plan,
                Self::arg_shapes(inputs, &outputs).as_ref(),
            )?;
            ctx.record_plan_reusing(encoder, plan, Self::args(inputs, &outputs).as_ref())?;
            Ok(())
        })
    }

    /// [`Op::record_into`] in an encoder of its own, submitted; waits for the GPU natively.
    fn run_into(
        ctx: &Context,
        inputs: &Self::Inputs<'_>,
        outputs: Self::OutputsMut<'_>,
        attrs: &Self::Attrs,
    ) -> Result<(), OpError> {
        ctx.record_and_submit(|encoder| Self::record_into(ctx, encoder, inputs, outputs, attrs))
    }

    /// Compiles, ahead of the first call, every shader of the op the device can run: the
    /// whole pipeline where one serves all shapes, the shader module where pipelines take
    /// shape-dependent overrides. Returns the number of shaders prepared.
    fn precompile(ctx: &Context) -> Result<usize, OpError> {
        crate::support::precompile(ctx, Self::ENTRY.shaders)
    }
}

/// An op whose outputs all have shapes that follow from its inputs and are always produced:
/// it can allocate them. An op that also writes tensors in place takes them as
/// [`AllocatingOp::InPlace`] (`()` for an op that writes none), since the caller owns them.
pub trait AllocatingOp: Op {
    /// The outputs it allocates.
    type Outputs;
    /// The tensors it writes in place, which the caller passes beside the inputs: the op's
    /// `InPlace` struct, or `()` when it writes none.
    type InPlace<'a>;

    /// The shapes and element types of a call, from its inputs and in-place tensors alone.
    #[doc(hidden)]
    fn input_shapes<'a>(
        inputs: &'a Self::Inputs<'_>,
        in_place: &'a Self::InPlace<'_>,
    ) -> (Self::Shapes<'a>, Self::DTypes);

    /// New outputs of the shapes `plan` produces.
    #[doc(hidden)]
    fn allocate(ctx: &Context, plan: &Plan) -> Result<Self::Outputs, OpError>;

    /// The in-place tensors and the outputs, as a call that writes into them takes them.
    #[doc(hidden)]
    fn outputs_mut<'a>(
        in_place: &'a mut Self::InPlace<'_>,
        outputs: &'a mut Self::Outputs,
    ) -> Self::OutputsMut<'a>;

    /// Records the op into `encoder` with new outputs, so several ops can share one
    /// submission. The outputs, and what it writes in place, are valid once the encoder has
    /// been submitted.
    fn record(
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        inputs: &Self::Inputs<'_>,
        mut in_place: Self::InPlace<'_>,
        attrs: &Self::Attrs,
    ) -> Result<Self::Outputs, OpError> {
        let (shapes, dtypes) = Self::input_shapes(inputs, &in_place);
        let plan = Self::plan(ctx.caps(), &shapes, &dtypes, attrs)?;
        Self::check_inputs(inputs, attrs)?;
        let mut outputs = Self::allocate(ctx, &plan)?;
        let written = Self::outputs_mut(&mut in_place, &mut outputs);
        ctx.record_plan(encoder, &plan, Self::args(inputs, &written).as_ref())?;
        drop(written);
        Ok(outputs)
    }

    /// Runs the op with new outputs and waits for the GPU.
    fn run(
        ctx: &Context,
        inputs: &Self::Inputs<'_>,
        in_place: Self::InPlace<'_>,
        attrs: &Self::Attrs,
    ) -> Result<Self::Outputs, OpError> {
        ctx.record_and_submit(|encoder| Self::record(ctx, encoder, inputs, in_place, attrs))
    }
}

/// What tests and tools that compare an op with the manifest's expressions need besides
/// [`Op`]: the op's call as lookups by name, its expression environment, and each variant's
/// check and plan on its own. Not part of the API: it changes with the generator.
#[doc(hidden)]
pub trait OpHooks: Op {
    /// The environment the op's compiled expressions read.
    type Env<'a>;
    /// The variant ids, in selection order.
    const VARIANT_IDS: &'static [&'static str];

    /// The element types by type variable name.
    fn dtypes_from(get: &dyn Fn(&str) -> DType) -> Self::DTypes;
    /// The environment of a call: input shapes as given, output shapes computed.
    fn env<'a>(
        shapes: &Self::Shapes<'_>,
        dtypes: Self::DTypes,
        attrs: &'a Self::Attrs,
        caps: &'a DeviceCaps,
    ) -> Result<Self::Env<'a>, OpError>;
    /// The `when` check of variant `id`: why it rejects `env`, if it does.
    fn accepts(id: &str, env: &Self::Env<'_>) -> Option<Result<(), Failure>>;
    /// The plan of variant `id` for `env`, whether or not its `when` holds.
    fn plan_of(id: &str, env: &Self::Env<'_>) -> Option<Result<Plan, crate::PlanError>>;
    /// [`Op::check_inputs`] on untyped inputs, seen by role.
    fn check_views(views: &[ArgView<'_>], attrs: &Self::Attrs) -> Result<(), OpError> {
        let _ = (views, attrs);
        Ok(())
    }
}

/// Something done with an op's type, for tests and tools that reach a generated op's
/// [`OpHooks`] by its module's name: each generated root module has `visit_op(module,
/// visitor)`, which calls [`OpVisitor::visit`] with the op of that name. A crate whose ops
/// are generated only where their packages are found can then offer the same function,
/// answering `None` without them, and its users need no stand-in modules.
#[doc(hidden)]
pub trait OpVisitor {
    /// What the visit returns.
    type Output;
    /// The visit, with the op's type.
    fn visit<O: OpHooks>(self) -> Self::Output;
}

/// Checks the outputs a call provides, the last of its tensors' shapes `shapes` (in
/// [`Op::args`] order), against those `plan` produces.
pub(crate) fn check_outputs(
    op: &'static str,
    plan: &Plan,
    shapes: &[Option<&[usize]>],
) -> Result<(), OpError> {
    check_outputs_by(op, plan, shapes.len(), &|i| {
        shapes.get(i).copied().flatten()
    })
}

/// [`check_outputs`] over `len` tensors whose shapes `shape(i)` gives.
pub(crate) fn check_outputs_by<'s>(
    op: &'static str,
    plan: &Plan,
    len: usize,
    shape: &dyn Fn(usize) -> Option<&'s [usize]>,
) -> Result<(), OpError> {
    let first = len.saturating_sub(plan.outputs.len());
    for (i, spec) in (first..len).zip(&plan.outputs) {
        if let Some(shape) = shape(i) {
            crate::support::check_output(op, spec, shape)?;
        }
    }
    Ok(())
}

thread_local! {
    /// The plan `Op::record_into` plans into on this thread, kept between calls for its
    /// storage.
    static SCRATCH: std::cell::Cell<Plan> = std::cell::Cell::new(Plan::default());
}

/// Runs `f` with this thread's kept plan (an empty one if `f` is already running on the
/// thread), which `f` plans into; the plan's storage is kept for the next call.
pub(crate) fn with_scratch_plan<R>(f: impl FnOnce(&mut Plan) -> R) -> R {
    let mut plan = SCRATCH.take();
    let result = f(&mut plan);
    SCRATCH.set(plan);
    result
}
