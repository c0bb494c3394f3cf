//! Recording plans into command encoders: pipelines, intermediates, uniforms, bind groups and
//! one compute pass per plan.

use crate::args::{Arg, check_aliasing};
use crate::bind_cache::BindKey;
use crate::caches::Caches;
use crate::error::RuntimeError;
use crate::gpu::{Gpu, Tally};
use crate::plan::{Binding, Plan, PlannedPass};
use crate::pools::{Intermediate, params_size};
use crate::uniform_arena::UniformSlot;

/// Where a recorded plan writes timestamps, into a query set from index `first` on.
#[derive(Clone, Copy)]
pub(crate) enum Timestamps<'a> {
    None,
    /// Two: the beginning and the end of the plan's one compute pass.
    Whole(&'a wgpu::QuerySet, u32),
    /// Two per active pass, each recorded in a compute pass of its own.
    PerPass(&'a wgpu::QuerySet, u32),
}

/// Records plans with one device's core and one context's caches.
#[derive(Clone, Copy)]
pub(crate) struct Recorder<'a> {
    pub(crate) gpu: &'a Gpu,
    pub(crate) caches: &'a Caches,
}

impl Recorder<'_> {
    /// Records `plan` into a fresh encoder, submits it and waits for completion. Errors in the
    /// recorded commands are labelled `op/variant`.
    pub(crate) fn run(&self, plan: &Plan, args: &[Arg<'_>]) -> Result<(), RuntimeError> {
        let label = plan.label();
        let mut encoder = self.gpu.encoder(&label);
        if self.record(&mut encoder, plan, args, Timestamps::None, false)? {
            self.gpu.submit(encoder, &label)
        } else {
            Ok(())
        }
    }

    /// Records `plan` into `encoder` (see [`crate::Context::record_plan`]) with optional
    /// timestamp writes (see [`Timestamps`]), keeping bind groups when `reuse`; returns
    /// whether anything was recorded.
    ///
    /// Everything is checked and every pipeline and bind group found before the first command
    /// is recorded, so an error records nothing. A warm call allocates nothing of its own: the
    /// dispatches wait in a list kept per thread, and the lookups borrow their keys.
    pub(crate) fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
        timestamps: Timestamps<'_>,
        reuse: bool,
    ) -> Result<bool, RuntimeError> {
        if !check_plan(self.gpu, plan, args)? {
            return Ok(false);
        }
        let intermediates = self.caches.intermediates.take(self.gpu, plan)?;
        for i in intermediates.iter().filter(|i| i.reused) {
            encoder.clear_buffer(&i.buffer, 0, None);
        }
        let steps = with_steps(|steps| {
            let found = self.steps(plan, args, &intermediates, reuse, steps);
            if found.is_ok() {
                self.encode(encoder, plan, steps, timestamps);
            }
            found
        });
        self.caches.intermediates.give_back(intermediates);
        steps.map(|()| true)
    }

    /// The pipeline and bind group of every active pass of `plan`, into `steps`.
    fn steps(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        intermediates: &[Intermediate],
        reuse: bool,
        steps: &mut Vec<Step>,
    ) -> Result<(), RuntimeError> {
        let max = self.gpu.max_workgroups_per_dimension();
        let disk = || self.caches.driver_cache();
        for (index, pass) in plan.passes.iter().enumerate() {
            let workgroups = pass.workgroups(max)?;
            if !dispatches(workgroups) {
                continue;
            }
            let pipeline =
                (self.caches.pipelines).pipeline(self.gpu, &disk, pass.kernel, &pass.overrides)?;
            let bind_group = self.bind_group(plan, pass, &pipeline, args, intermediates, reuse)?;
            steps.push(Step {
                pass: index,
                workgroups,
                pipeline,
                bind_group,
            });
        }
        Ok(())
    }

    /// Encodes `steps` of `plan` into `encoder`, in one compute pass or one per step.
    fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        steps: &[Step],
        timestamps: Timestamps<'_>,
    ) {
        let tally = &self.gpu.tally;
        Tally::add(&tally.dispatches, steps.len() as u64);
        Tally::add(
            &tally.compute_passes,
            match timestamps {
                Timestamps::PerPass(..) => steps.len() as u64,
                _ => 1,
            },
        );
        // The op's name labels the pass (a `&'static str`: nothing is formatted per call); each
        // dispatch is in a debug group named by its pass.
        match timestamps {
            Timestamps::None => encode_pass(encoder, plan, steps, None),
            Timestamps::Whole(query_set, first) => {
                encode_pass(encoder, plan, steps, Some((query_set, first, first + 1)));
            }
            Timestamps::PerPass(query_set, first) => {
                for (i, step) in steps.iter().enumerate() {
                    let begin = first + 2 * i as u32;
                    let writes = Some((query_set, begin, begin + 1));
                    encode_pass(encoder, plan, std::slice::from_ref(step), writes);
                }
            }
        }
    }

    /// The bind group of one pass, or `None` for a pass without bindings; with `reuse`, a
    /// kept one when the pass binds the same ranges as before.
    fn bind_group(
        &self,
        plan: &Plan,
        pass: &PlannedPass,
        pipeline: &wgpu::ComputePipeline,
        args: &[Arg<'_>],
        intermediates: &[Intermediate],
        reuse: bool,
    ) -> Result<Option<wgpu::BindGroup>, RuntimeError> {
        if pass.bindings.is_empty() {
            return Ok(None);
        }
        let params = if pass.bindings.contains(&Binding::Params) {
            Some(
                self.caches
                    .params
                    .buffer(self.gpu, &self.caches.staging, pass)?,
            )
        } else {
            None
        };
        let intermediate = |t: usize| intermediates.get(t).map(|i| &i.buffer);
        let params = params.as_ref().map(wgpu::Buffer::as_entire_buffer_binding);
        let range = |i: usize| binding_range(plan, pass, i, args, &intermediate, params.as_ref());
        if reuse {
            let found = (self.caches.bind_groups).get(pipeline, pass.bindings.len(), &range)?;
            if let Some(group) = found {
                return Ok(Some(group));
            }
        }
        let bind_group = self.create_bind_group(pass, pipeline, &range)?;
        if reuse {
            let key = BindKey::new(pipeline, pass.bindings.len(), &range)?;
            self.caches.bind_groups.insert(key, bind_group.clone());
        }
        Ok(Some(bind_group))
    }

    /// A new bind group of `pass` for `pipeline`, binding `range(i)` at each binding `i`.
    fn create_bind_group<'b>(
        &self,
        pass: &PlannedPass,
        pipeline: &wgpu::ComputePipeline,
        range: &dyn Fn(usize) -> Result<wgpu::BufferBinding<'b>, RuntimeError>,
    ) -> Result<wgpu::BindGroup, RuntimeError> {
        let entries = (0..pass.bindings.len())
            .map(|i| {
                Ok(wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: wgpu::BindingResource::Buffer(range(i)?),
                })
            })
            .collect::<Result<Vec<_>, RuntimeError>>()?;
        Tally::add(&self.gpu.tally.bind_groups, 1);
        self.gpu.scoped(pass.id, || {
            let layout = pipeline.get_bind_group_layout(0);
            self.gpu
                .device
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(pass.id),
                    layout: &layout,
                    entries: &entries,
                })
        })
    }

    /// Pipelines, uniform ranges, intermediates and bind groups of `plan`'s own, for a call
    /// bound once and recorded many times ([`crate::Bound`]): its uniforms are ranges of the
    /// context's uniform arena that no other call shares, so later writes into them change
    /// only it; nothing else is kept by the context. A pass with no workgroups gets no
    /// objects ([`BoundStep::pipeline`] is `None`).
    pub(crate) fn bind(&self, plan: &Plan, args: &[Arg<'_>]) -> Result<BoundPlan, RuntimeError> {
        check_plan(self.gpu, plan, args)?;
        let intermediates = (plan.intermediates.iter())
            .map(|spec| self.caches.intermediates.create(self.gpu, plan, spec))
            .collect::<Result<Vec<_>, _>>()?;
        let max = self.gpu.max_workgroups_per_dimension();
        let disk = || self.caches.driver_cache();
        let mut steps = Vec::with_capacity(plan.passes.len());
        for pass in &plan.passes {
            let workgroups = pass.workgroups(max)?;
            if !dispatches(workgroups) {
                steps.push(BoundStep {
                    workgroups,
                    pipeline: None,
                    bind_group: None,
                    params: None,
                });
                continue;
            }
            let pipeline =
                (self.caches.pipelines).pipeline(self.gpu, &disk, pass.kernel, &pass.overrides)?;
            let params = if pass.bindings.contains(&Binding::Params) {
                let size = params_size(self.gpu, pass)?;
                Some((self.caches.uniforms).take(self.gpu, &pass.params, size)?)
            } else {
                None
            };
            let bind_group = if pass.bindings.is_empty() {
                None
            } else {
                let intermediate = |t: usize| intermediates.get(t);
                let uniforms = params.as_ref().map(UniformSlot::binding);
                let range =
                    |i: usize| binding_range(plan, pass, i, args, &intermediate, uniforms.as_ref());
                Some(self.create_bind_group(pass, &pipeline, &range)?)
            };
            steps.push(BoundStep {
                workgroups,
                pipeline: Some(pipeline),
                bind_group,
                params,
            });
        }
        Ok(BoundPlan {
            steps,
            intermediates,
        })
    }
}

/// What [`Recorder::bind`] made for a plan: one step per pass, in order, and the plan's
/// intermediates.
pub(crate) struct BoundPlan {
    pub(crate) steps: Vec<BoundStep>,
    pub(crate) intermediates: Vec<wgpu::Buffer>,
}

/// One pass of a bound plan: its workgroups, and its pipeline, bind group and uniform range
/// where it dispatches.
pub(crate) struct BoundStep {
    pub(crate) workgroups: [u32; 3],
    pub(crate) pipeline: Option<wgpu::ComputePipeline>,
    pub(crate) bind_group: Option<wgpu::BindGroup>,
    pub(crate) params: Option<UniformSlot>,
}

/// Whether a dispatch of `workgroups` runs anything (an empty tensor's pass does not).
pub(crate) fn dispatches(workgroups: [u32; 3]) -> bool {
    workgroups.iter().all(|&n| n != 0)
}

/// Checks every active pass of `plan` against `args` (bindings given, no aliasing, ranges
/// large enough) and its workgroups against the device; returns whether any pass dispatches.
pub(crate) fn check_plan(gpu: &Gpu, plan: &Plan, args: &[Arg<'_>]) -> Result<bool, RuntimeError> {
    let max = gpu.max_workgroups_per_dimension();
    let mut any = false;
    for pass in &plan.passes {
        if !dispatches(pass.workgroups(max)?) {
            continue;
        }
        any = true;
        check_bindings(plan, pass, args)?;
        check_aliasing(plan, pass, args)?;
        // A range too small for the shader's element is refused here, before any wgpu call.
        for (i, binding) in pass.bindings.iter().enumerate() {
            if let Binding::Arg(a) = *binding {
                arg_range(plan, pass, i, &args[a])?;
            }
        }
    }
    Ok(any)
}

/// The range binding `i` of `pass` binds: an argument's (see [`arg_range`]), a whole
/// intermediate, or the pass's uniforms.
fn binding_range<'a>(
    plan: &Plan,
    pass: &PlannedPass,
    i: usize,
    args: &[Arg<'a>],
    intermediate: &dyn Fn(usize) -> Option<&'a wgpu::Buffer>,
    params: Option<&wgpu::BufferBinding<'a>>,
) -> Result<wgpu::BufferBinding<'a>, RuntimeError> {
    // Indices were checked by `check_bindings`; `invalid` only guards against a plan changed
    // between the check and here, which cannot happen, without a panic.
    let invalid = || RuntimeError::InvalidPlan {
        label: pass.id.to_owned(),
        reason: format!("binding {i} has no buffer"),
    };
    let range = match pass.bindings.get(i).copied() {
        Some(Binding::Arg(a)) => match args.get(a) {
            Some(arg) => Some(arg_range(plan, pass, i, arg)?),
            None => None,
        },
        Some(Binding::Intermediate(t)) => {
            intermediate(t).map(wgpu::Buffer::as_entire_buffer_binding)
        }
        Some(Binding::Params) => params.cloned(),
        None => None,
    };
    range.ok_or_else(invalid)
}

/// One dispatch, ready to encode: the index of its pass in the plan.
struct Step {
    pass: usize,
    workgroups: [u32; 3],
    pipeline: wgpu::ComputePipeline,
    bind_group: Option<wgpu::BindGroup>,
}

thread_local! {
    /// The steps of the plan being recorded on this thread, kept empty between calls so that
    /// recording reuses the list's storage.
    static STEPS: std::cell::Cell<Vec<Step>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's empty list of steps, which it fills; the steps are dropped
/// after and the list kept for the next call.
fn with_steps<R>(f: impl FnOnce(&mut Vec<Step>) -> R) -> R {
    let mut steps = STEPS.take();
    let result = f(&mut steps);
    steps.clear();
    STEPS.set(steps);
    result
}

/// Encodes `steps` of `plan` as one compute pass labelled with the op's name. Dispatches in
/// one pass are still ordered: each is its own usage scope, and wgpu inserts the barriers
/// between them.
fn encode_pass(
    encoder: &mut wgpu::CommandEncoder,
    plan: &Plan,
    steps: &[Step],
    timestamps: Option<(&wgpu::QuerySet, u32, u32)>,
) {
    let timestamp_writes =
        timestamps.map(|(query_set, begin, end)| wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: Some(begin),
            end_of_pass_write_index: Some(end),
        });
    let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(plan.op),
        timestamp_writes,
    });
    for step in steps {
        let [x, y, z] = step.workgroups;
        let id = plan.passes.get(step.pass).map_or("", |p| p.id);
        cpass.push_debug_group(id);
        cpass.set_pipeline(&step.pipeline);
        if let Some(bg) = &step.bind_group {
            cpass.set_bind_group(0, bg, &[]);
        }
        cpass.dispatch_workgroups(x, y, z);
        cpass.pop_debug_group();
    }
}

/// The range binding `index` of `pass` binds for `arg`: the argument's own, widened to one
/// element of the type the shader declares there when it is smaller (an empty or one-element
/// tensor read as `vec4`), as far as the buffer has room; else
/// [`RuntimeError::BindingTooSmall`]. An argument not given is `InvalidPlan`.
fn arg_range<'a>(
    plan: &Plan,
    pass: &PlannedPass,
    index: usize,
    arg: &Arg<'a>,
) -> Result<wgpu::BufferBinding<'a>, RuntimeError> {
    let Some(binding) = arg.binding.clone() else {
        return Err(RuntimeError::InvalidPlan {
            label: pass.id.to_owned(),
            reason: format!("binding {index} (`{}`) was not given", arg.role),
        });
    };
    let needed = (pass.kernel.least_sizes.get(index)).map_or(0, |&n| u64::from(n));
    let available = binding.buffer.size().saturating_sub(binding.offset);
    let bound = binding.size.map_or(available, std::num::NonZeroU64::get);
    if bound >= needed {
        return Ok(binding);
    }
    if available < needed {
        return Err(RuntimeError::BindingTooSmall {
            label: plan.label(),
            pass: pass.id,
            role: arg.role,
            needed,
            available,
        });
    }
    Ok(wgpu::BufferBinding {
        size: std::num::NonZeroU64::new(needed),
        ..binding
    })
}

/// Checks that every binding of `pass` refers to something the plan and `args` provide.
fn check_bindings(plan: &Plan, pass: &PlannedPass, args: &[Arg<'_>]) -> Result<(), RuntimeError> {
    for (i, binding) in pass.bindings.iter().enumerate() {
        let reason = match *binding {
            Binding::Arg(a) if a >= args.len() => format!(
                "binding {i} is argument {a}, but {} arguments were given",
                args.len()
            ),
            Binding::Arg(a) if args[a].binding.is_none() => format!(
                "binding {i} is argument {a} (`{}`), which was not given",
                args[a].role
            ),
            Binding::Intermediate(t) if t >= plan.intermediates.len() => format!(
                "binding {i} is intermediate {t}, but the plan has {}",
                plan.intermediates.len()
            ),
            Binding::Params if pass.params.is_empty() => {
                format!("binding {i} is Params, but the pass has no parameter bytes")
            }
            _ => continue,
        };
        return Err(RuntimeError::InvalidPlan {
            label: pass.id.to_owned(),
            reason,
        });
    }
    Ok(())
}
