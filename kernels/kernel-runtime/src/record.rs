//! Recording plans into command encoders: pipelines, intermediates, uniforms, bind groups and
//! one compute pass per plan.

use crate::args::{Arg, check_aliasing};
use crate::bind_cache::BindKey;
use crate::caches::Caches;
use crate::error::RuntimeError;
use crate::gpu::{Gpu, Tally};
use crate::plan::{Binding, Plan, PlannedPass};
use crate::pools::Intermediate;

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
    pub(crate) fn record(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
        timestamps: Timestamps<'_>,
        reuse: bool,
    ) -> Result<bool, RuntimeError> {
        let active = plan.active_passes(self.gpu.max_workgroups_per_dimension())?;
        for (pass, _) in &active {
            check_bindings(plan, pass, args)?;
            check_aliasing(plan, pass, args)?;
            // A range too small for the shader's element is refused here, before any wgpu call.
            for (i, binding) in pass.bindings.iter().enumerate() {
                if let Binding::Arg(a) = *binding {
                    arg_range(plan, pass, i, &args[a])?;
                }
            }
        }
        if active.is_empty() {
            return Ok(false);
        }

        let disk = self.caches.driver_cache();
        let pipelines = active
            .iter()
            .map(|(pass, _)| {
                self.caches.pipelines.pipeline(
                    self.gpu,
                    disk.as_ref(),
                    pass.kernel,
                    &pass.overrides,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;

        let intermediates = self.caches.intermediates.take(self.gpu, plan)?;
        for i in intermediates.iter().filter(|i| i.reused) {
            encoder.clear_buffer(&i.buffer, 0, None);
        }
        let steps = self.bind_all(plan, &active, &pipelines, args, &intermediates, reuse);
        self.caches.intermediates.give_back(intermediates);
        let steps = steps?;
        let label = plan.label();
        let tally = &self.gpu.tally;
        Tally::add(&tally.dispatches, steps.len() as u64);
        Tally::add(
            &tally.compute_passes,
            match timestamps {
                Timestamps::PerPass(..) => steps.len() as u64,
                _ => 1,
            },
        );
        match timestamps {
            Timestamps::None => encode_pass(encoder, &label, &steps, None),
            Timestamps::Whole(query_set, first) => {
                encode_pass(encoder, &label, &steps, Some((query_set, first, first + 1)));
            }
            Timestamps::PerPass(query_set, first) => {
                for (i, step) in steps.iter().enumerate() {
                    let begin = first + 2 * i as u32;
                    let writes = Some((query_set, begin, begin + 1));
                    encode_pass(encoder, &label, std::slice::from_ref(step), writes);
                }
            }
        }
        Ok(true)
    }

    /// The bind group of every active pass, in order.
    fn bind_all<'p>(
        &self,
        plan: &Plan,
        active: &[(&'p PlannedPass, [u32; 3])],
        pipelines: &'p [wgpu::ComputePipeline],
        args: &[Arg<'_>],
        intermediates: &[Intermediate],
        reuse: bool,
    ) -> Result<Vec<Step<'p>>, RuntimeError> {
        active
            .iter()
            .zip(pipelines)
            .map(|(&(pass, workgroups), pipeline)| {
                let bind_group =
                    self.bind_group(plan, pass, pipeline, args, intermediates, reuse)?;
                Ok(Step {
                    pass,
                    workgroups,
                    pipeline,
                    bind_group,
                })
            })
            .collect()
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
        let mut ranges = Vec::with_capacity(pass.bindings.len());
        for (i, binding) in pass.bindings.iter().enumerate() {
            // Indices were checked by `check_bindings`; `invalid` only guards against a plan
            // changed between the check and here, which cannot happen, without a panic.
            let invalid = || RuntimeError::InvalidPlan {
                label: pass.id.to_owned(),
                reason: format!("binding {i} ({binding:?}) has no buffer"),
            };
            let range = match *binding {
                Binding::Arg(a) => match args.get(a) {
                    Some(arg) => Some(arg_range(plan, pass, i, arg)?),
                    None => None,
                },
                Binding::Intermediate(t) => intermediates
                    .get(t)
                    .map(|i| i.buffer.as_entire_buffer_binding()),
                Binding::Params => params.as_ref().map(wgpu::Buffer::as_entire_buffer_binding),
            };
            ranges.push(range.ok_or_else(invalid)?);
        }
        let entries: Vec<wgpu::BindGroupEntry<'_>> = ranges
            .iter()
            .enumerate()
            .map(|(i, range)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(range.clone()),
            })
            .collect();
        let key = reuse.then(|| BindKey {
            pipeline: pipeline.clone(),
            entries: ranges
                .iter()
                .map(|r| (r.buffer.clone(), r.offset, r.size.map(|s| s.get())))
                .collect(),
        });
        if let Some(group) = key.as_ref().and_then(|k| self.caches.bind_groups.get(k)) {
            return Ok(Some(group));
        }
        Tally::add(&self.gpu.tally.bind_groups, 1);
        let bind_group = self.gpu.scoped(pass.id, || {
            let layout = pipeline.get_bind_group_layout(0);
            self.gpu
                .device
                .create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(pass.id),
                    layout: &layout,
                    entries: &entries,
                })
        })?;
        if let Some(key) = key {
            self.caches.bind_groups.insert(key, bind_group.clone());
        }
        Ok(Some(bind_group))
    }
}

/// One dispatch, ready to encode.
struct Step<'p> {
    pass: &'p PlannedPass,
    workgroups: [u32; 3],
    pipeline: &'p wgpu::ComputePipeline,
    bind_group: Option<wgpu::BindGroup>,
}

/// Encodes `steps` as one compute pass labelled `label`. Dispatches in one pass are still
/// ordered: each is its own usage scope, and wgpu inserts the barriers between them.
fn encode_pass(
    encoder: &mut wgpu::CommandEncoder,
    label: &str,
    steps: &[Step<'_>],
    timestamps: Option<(&wgpu::QuerySet, u32, u32)>,
) {
    let timestamp_writes =
        timestamps.map(|(query_set, begin, end)| wgpu::ComputePassTimestampWrites {
            query_set,
            beginning_of_pass_write_index: Some(begin),
            end_of_pass_write_index: Some(end),
        });
    let mut cpass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(label),
        timestamp_writes,
    });
    for step in steps {
        let [x, y, z] = step.workgroups;
        cpass.push_debug_group(step.pass.id);
        cpass.set_pipeline(step.pipeline);
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
