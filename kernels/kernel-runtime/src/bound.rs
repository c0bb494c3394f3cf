//! A call bound once and recorded many times: [`Bound`], what an engine keeps per call site
//! (per layer, per stage) of a loop that records the same op on the same tensors every step,
//! with attributes that may change (a cache's write offset, a key length).
//!
//! Binding plans the call, checks it as `record_into` does, and makes the call's own objects:
//! pipelines (from the context's cache), a uniform range per pass (in the context's uniform
//! arena, `uniform_arena.rs`) and the bind groups, with clones of its tensors' buffers and
//! their shapes kept. [`Bound::update`] plans again with the kept shapes and new attributes:
//! while the variant, shaders, overrides and bindings stay the same it only writes the uniform
//! bytes that changed into the arena's host copy and takes the new workgroup counts, creating
//! nothing and allocating nothing. Recording uploads what the context's bound calls changed
//! since the last upload (one `queue.write_buffer` per chunk of the arena), then looks nothing
//! up: a pipeline, a bind group and a dispatch per pass.

use std::marker::PhantomData;
use std::num::NonZeroU64;
use std::sync::Arc;

use crate::args::{Access, Arg};
use crate::context::Context;
use crate::error::{OpError, RuntimeError};
use crate::gpu::Tally;
use crate::op::{Op, check_outputs, check_outputs_by};
use crate::plan::Plan;
use crate::record::{BoundPlan, dispatches};
use crate::uniform_arena::UniformArena;

/// A call of the op `O` bound to its tensors: plan once, then [`Bound::update`] with new
/// attributes and [`Bound::record`] into a compute pass, step after step.
///
/// ```no_run
/// # use kernel_runtime::{Bound, Context, Op, OpError};
/// /// One decode step's call of any op whose attributes change per token.
/// fn step<O: Op>(
///     ctx: &Context,
///     call: &mut Bound<O>,
///     attrs: &O::Attrs,
///     encoder: &mut kernel_runtime::wgpu::CommandEncoder,
/// ) -> Result<(), OpError> {
///     call.update(ctx, attrs)?;
///     let mut pass = encoder.begin_compute_pass(&Default::default());
///     call.record(&mut pass)?;
///     Ok(())
/// }
/// ```
///
/// The contract:
///
/// - **Uniforms are written through the queue, at the next recording.** [`Bound::update`]
///   writes changed uniform bytes into the context's host copy of its uniforms; recording any
///   bound call of the context ([`Bound::record`], [`Bound::record_cleared`],
///   [`Bound::record_into`]), [`Context::flush_uniforms`] and [`Context::submit`] upload
///   everything changed since the last upload, with one `queue.write_buffer` per chunk of
///   uniforms (64 KiB), which takes effect at the next submission, before its command buffers
///   run. A bound call recorded into a submission therefore runs with the attributes of its
///   last `update` before the last upload before that submission: in a step that updates,
///   records and submits, those of its `update` in that step. An `update` after the step's
///   last recording, submitted with `queue.submit` directly, takes effect only once uploaded
///   (call [`Context::flush_uniforms`]). Recording one bound call twice in one submission with
///   different attributes in between is an error of the caller's (both dispatches see the
///   last ones). Keep one bound call per use site.
/// - **Its uniform ranges are its own while it lives.** Dropped (or rebuilt by an `update`
///   that changes the variant), a call gives its ranges back to the context, and the next call
///   bound takes them: drop a call only once what it recorded has been submitted.
/// - **Its tensors are the ones it was bound with.** It keeps their buffers alive and writes
///   into its outputs whenever it is recorded; the caller's tensors may be dropped. An op's
///   hand-written checks of input values (index ranges) run when it is bound, not on `update`.
/// - **Errors are `record_into`'s.** A failed `update` leaves the call as it was before it.
/// - **A plan with intermediates** (zeroed before each use) is recorded with
///   [`Bound::record_into`], which clears them, or with [`Bound::clear_intermediates`] into
///   the encoder and then [`Bound::record_cleared`] into a compute pass the caller opened
///   after it (several calls in one pass: clear them all, then record them all);
///   [`Bound::record`] refuses it. Passes with no workgroups are skipped, as everywhere.
pub struct Bound<O: Op> {
    tensors: Vec<BoundTensor>,
    dtypes: O::DTypes,
    /// The plan recorded, and the one `update` plans into (their storage swapped in turn).
    plan: Plan,
    next: Plan,
    objects: BoundPlan,
    /// The context's uniforms, uploaded when the call is recorded, and its queue.
    uniforms: Arc<UniformArena>,
    queue: wgpu::Queue,
    tally: Arc<Tally>,
    op: PhantomData<fn() -> O>,
}

/// A tensor of a bound call: its role, how the op uses it, its buffer range and its shape.
struct BoundTensor {
    role: &'static str,
    access: Access,
    binding: Option<(wgpu::Buffer, u64, Option<NonZeroU64>)>,
    shape: Option<Vec<usize>>,
}

impl<O: Op> std::fmt::Debug for Bound<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("op", &O::NAME)
            .field("variant", &self.plan.variant)
            .field("passes", &self.plan.passes.len())
            .finish_non_exhaustive()
    }
}

impl<O: Op> Bound<O> {
    /// Binds a call of `O` on these tensors with `attrs`: plans it, checks it (output shapes,
    /// aliasing, binding sizes, dispatch limits, absent arguments, the op's checks of input
    /// values) and creates its objects.
    pub fn new(
        ctx: &Context,
        inputs: &O::Inputs<'_>,
        outputs: O::OutputsMut<'_>,
        attrs: &O::Attrs,
    ) -> Result<Self, OpError> {
        let (shapes, dtypes) = O::call_shapes(inputs, &outputs);
        let mut plan = Plan::default();
        O::plan_into(ctx.caps(), &shapes, &dtypes, attrs, &mut plan)?;
        O::check_inputs(inputs, attrs)?;
        let args = O::args(inputs, &outputs);
        let arg_shapes = O::arg_shapes(inputs, &outputs);
        check_outputs(O::NAME, &plan, arg_shapes.as_ref())?;
        let objects = ctx.recorder().bind(&plan, args.as_ref())?;
        let tensors = (args.as_ref().iter().zip(arg_shapes.as_ref()))
            .map(|(arg, shape)| BoundTensor {
                role: arg.role,
                access: arg.access,
                binding: (arg.binding.as_ref()).map(|b| (b.buffer.clone(), b.offset, b.size)),
                shape: shape.map(<[usize]>::to_vec),
            })
            .collect();
        Ok(Self {
            tensors,
            dtypes,
            next: plan.clone(),
            plan,
            objects,
            uniforms: Arc::clone(ctx.uniforms()),
            queue: ctx.queue().clone(),
            tally: Arc::clone(&ctx.gpu().tally),
            op: PhantomData,
        })
    }

    /// Plans the call again with new attributes, on the tensors it was bound with. While the
    /// plan keeps its variant, shaders, overrides, bindings and intermediates, only the uniform
    /// bytes that changed are written, into the host copy the next recording uploads, and the
    /// workgroup counts taken: nothing is created, allocated or handed to wgpu. Otherwise the
    /// call's objects are made again, as when it was bound.
    pub fn update(&mut self, ctx: &Context, attrs: &O::Attrs) -> Result<(), OpError> {
        let Self {
            tensors,
            next,
            dtypes,
            ..
        } = self;
        let shape_of = |role: &str| {
            (tensors.iter())
                .find(|t| t.role == role)
                .and_then(|t| t.shape.as_deref())
        };
        let shapes = O::shapes_from(&shape_of);
        O::plan_into(ctx.caps(), &shapes, dtypes, attrs, next)?;
        let provided = |i: usize| tensors.get(i).and_then(|t| t.shape.as_deref());
        check_outputs_by(O::NAME, next, tensors.len(), &provided)?;
        if self.keeps_objects(ctx)? {
            let max = ctx.gpu().max_workgroups_per_dimension();
            let passes = self.plan.passes.iter().zip(&self.next.passes);
            for ((old, new), step) in passes.zip(&mut self.objects.steps) {
                // Checked by `keeps_objects`, so this cannot fail halfway.
                step.workgroups = new.workgroups(max).unwrap_or([0; 3]);
                if let Some(uniforms) = &step.params
                    && old.params != new.params
                {
                    uniforms.write(&new.params);
                }
            }
        } else {
            let args = self.args();
            let objects = ctx.recorder().bind(&self.next, &args)?;
            drop(args);
            self.objects = objects;
            // Its uniforms are now `ctx`'s, whose recordings upload them.
            self.uniforms = Arc::clone(ctx.uniforms());
            self.queue = ctx.queue().clone();
        }
        std::mem::swap(&mut self.plan, &mut self.next);
        Ok(())
    }

    /// Whether the planned `next` runs on the objects made for `plan`: the same variant,
    /// shaders, overrides, bindings, uniform sizes and intermediates, and objects for every
    /// pass that dispatches now. A dispatch over the device's limits is an error here, before
    /// anything is written.
    fn keeps_objects(&self, ctx: &Context) -> Result<bool, RuntimeError> {
        let (old, new) = (&self.plan, &self.next);
        if old.variant != new.variant
            || old.passes.len() != new.passes.len()
            || old.intermediates != new.intermediates
        {
            return Ok(false);
        }
        let max = ctx.gpu().max_workgroups_per_dimension();
        let passes = old.passes.iter().zip(&new.passes);
        for ((a, b), step) in passes.zip(&self.objects.steps) {
            let workgroups = b.workgroups(max)?;
            let same = std::ptr::eq(a.kernel, b.kernel)
                && a.bindings == b.bindings
                && a.params.len() == b.params.len()
                && a.overrides.len() == b.overrides.len()
                && (a.overrides.iter().zip(&b.overrides))
                    .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits());
            if !same || (step.pipeline.is_none() && dispatches(workgroups)) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The call's arguments, from the buffers it keeps.
    fn args(&self) -> Vec<Arg<'_>> {
        (self.tensors.iter())
            .map(|t| Arg {
                role: t.role,
                access: t.access,
                binding: (t.binding.as_ref()).map(|(buffer, offset, size)| wgpu::BufferBinding {
                    buffer,
                    offset: *offset,
                    size: *size,
                }),
            })
            .collect()
    }

    /// Records the call into a compute pass the caller opened (with other calls): per pass
    /// that dispatches, its pipeline, its bind group and the dispatch, nothing looked up. A
    /// plan with intermediates is refused ([`RuntimeError::InvalidPlan`]): they are zeroed
    /// before each use, outside a pass; [`Bound::record_cleared`] records such a call after
    /// [`Bound::clear_intermediates`], [`Bound::record_into`] in a pass of its own.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) -> Result<(), RuntimeError> {
        if !self.objects.intermediates.is_empty() {
            return Err(RuntimeError::InvalidPlan {
                label: self.plan.label(),
                reason: "the plan has intermediates, zeroed before each use: clear them with \
                         `Bound::clear_intermediates` before the pass and record it with \
                         `Bound::record_cleared`, or record it with `Bound::record_into`"
                    .to_owned(),
            });
        }
        self.encode(pass);
        Ok(())
    }

    /// Zeroes the call's intermediates (a no-op for a plan without any): recorded into the
    /// encoder before the compute pass that [`Bound::record_cleared`] records the call into.
    pub fn clear_intermediates(&self, encoder: &mut wgpu::CommandEncoder) {
        for buffer in &self.objects.intermediates {
            encoder.clear_buffer(buffer, 0, None);
        }
    }

    /// Records the call into a compute pass the caller opened, as [`Bound::record`] does,
    /// for a call with or without intermediates: its [`Bound::clear_intermediates`] must
    /// have been recorded into the same encoder before that pass, once per recording (a plan
    /// that accumulates into an intermediate would otherwise add to the last run's values).
    ///
    /// Each bound call owns its intermediates, so a step may clear those of all its calls
    /// first and then record every call in one compute pass: that runs as recording each
    /// call with [`Bound::record_into`] in a pass of its own.
    pub fn record_cleared(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.encode(pass);
    }

    /// Records the call into `encoder` in a compute pass of its own (labelled with the op's
    /// name), its intermediates cleared first; a plan with no work records nothing.
    pub fn record_into(&self, encoder: &mut wgpu::CommandEncoder) {
        if !self.objects.steps.iter().any(|s| dispatches(s.workgroups)) {
            self.uniforms.flush(&self.queue);
            return;
        }
        self.clear_intermediates(encoder);
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(O::NAME),
            timestamp_writes: None,
        });
        Tally::add(&self.tally.compute_passes, 1);
        self.encode(&mut pass);
    }

    /// Uploads the context's changed uniforms, then records the call's passes into `pass`.
    fn encode(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.uniforms.flush(&self.queue);
        let mut recorded = 0;
        for step in &self.objects.steps {
            let Some(pipeline) = &step.pipeline else {
                continue;
            };
            if !dispatches(step.workgroups) {
                continue;
            }
            pass.set_pipeline(pipeline);
            if let Some(group) = &step.bind_group {
                pass.set_bind_group(0, group, &[]);
            }
            let [x, y, z] = step.workgroups;
            pass.dispatch_workgroups(x, y, z);
            recorded += 1;
        }
        Tally::add(&self.tally.dispatches, recorded);
    }

    /// The plan the call records (that of its last successful `update`).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}
