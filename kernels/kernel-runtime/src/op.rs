//! The traits every generated op implements: [`Op`] ties an op's typed attributes, shapes,
//! inputs and provided outputs to its entry points, and [`AllocatingOp`] adds the forms that
//! allocate the outputs, for ops whose output shapes follow from their inputs. Code that drives
//! any op alike (a benchmark, a test, a layer of an inference engine) is written once against
//! them; each op's module also has the same functions free-standing.
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

use crate::caps::DeviceCaps;
use crate::context::Context;
use crate::error::OpError;
use crate::plan::Plan;
use crate::registry::OpEntry;

/// A generated op: `bias_softmax::Op<f32>`, say, its type parameters the element types of the
/// op's type variables.
pub trait Op {
    /// The op's qualified name (`com.microsoft.BiasSoftmax`).
    const NAME: &'static str;
    /// The op in the registry of untyped entry points.
    const ENTRY: OpEntry;
    /// Its attributes and scalar arguments.
    type Attrs;
    /// The element types bound to its type variables.
    type DTypes;
    /// The shapes `plan` takes: inputs, tensors written in place, outputs the caller provides.
    type Shapes<'a>;
    /// The tensors it only reads.
    type Inputs<'a>;
    /// The tensors it writes, provided by the caller.
    type OutputsMut<'a>;

    /// Chooses the variant and computes everything about the dispatch, without a GPU.
    fn plan(
        caps: &DeviceCaps,
        shapes: &Self::Shapes<'_>,
        dtypes: &Self::DTypes,
        attrs: &Self::Attrs,
    ) -> Result<Plan, OpError>;

    /// The shapes and element types of a call.
    fn call_shapes<'a>(
        inputs: &'a Self::Inputs<'_>,
        outputs: &'a Self::OutputsMut<'_>,
    ) -> (Self::Shapes<'a>, Self::DTypes);

    /// Records the op into `encoder`, writing into tensors the caller provides.
    fn record_into(
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        inputs: &Self::Inputs<'_>,
        outputs: Self::OutputsMut<'_>,
        attrs: &Self::Attrs,
    ) -> Result<(), OpError>;

    /// [`Op::record_into`] in an encoder of its own, submitted; waits for the GPU natively.
    fn run_into(
        ctx: &Context,
        inputs: &Self::Inputs<'_>,
        outputs: Self::OutputsMut<'_>,
        attrs: &Self::Attrs,
    ) -> Result<(), OpError> {
        ctx.record_and_submit(|encoder| Self::record_into(ctx, encoder, inputs, outputs, attrs))
    }

    /// Compiles every shader of the op the device can run, ahead of the first call.
    fn precompile(ctx: &Context) -> Result<usize, OpError>;
}

/// An op whose output shapes follow from its inputs, and which writes nothing in place: it
/// can allocate its outputs.
pub trait AllocatingOp: Op {
    /// The outputs it allocates.
    type Outputs;

    /// Records the op into `encoder` with new outputs, valid once the encoder is submitted.
    fn record(
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        inputs: &Self::Inputs<'_>,
        attrs: &Self::Attrs,
    ) -> Result<Self::Outputs, OpError>;

    /// Runs the op with new outputs and waits for the GPU.
    fn run(
        ctx: &Context,
        inputs: &Self::Inputs<'_>,
        attrs: &Self::Attrs,
    ) -> Result<Self::Outputs, OpError> {
        ctx.record_and_submit(|encoder| Self::record(ctx, encoder, inputs, attrs))
    }
}
