//! Recording plans into command encoders: pipelines, intermediates, uniforms, bind groups and
//! one compute pass per plan.

use std::collections::HashMap;

use crate::args::{Arg, check_aliasing};
use crate::bind_cache::BindKey;
use crate::context::Context;
use crate::error::RuntimeError;
use crate::plan::{Binding, Plan, PlannedPass};
use crate::sync::lock;

/// Pooled intermediates kept per exact byte size.
///
/// Reusing a buffer as soon as its plan is recorded is safe because a plan always writes its
/// intermediates before reading them, the buffer is cleared first, and one queue executes
/// everything in submission order (wgpu inserts the barriers between submissions).
#[derive(Default)]
pub(crate) struct IntermediatePool {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    pooled_bytes: u64,
}

impl IntermediatePool {
    /// Buffers kept, and their bytes.
    pub(crate) fn held(&self) -> (usize, u64) {
        (self.free.values().map(Vec::len).sum(), self.pooled_bytes)
    }
}

/// Pooled intermediate bytes kept at most; beyond it, returned buffers are dropped.
const POOL_MAX_BYTES: u64 = 1 << 30;

/// Uniform buffers by content. They are written once at creation and never again, so one
/// buffer can serve every plan (and every submission) with the same parameter bytes.
#[derive(Default)]
pub(crate) struct ParamsCache {
    buffers: HashMap<Vec<u8>, wgpu::Buffer>,
}

impl ParamsCache {
    pub(crate) fn len(&self) -> usize {
        self.buffers.len()
    }
}

/// Distinct parameter blocks kept at most; the cache is emptied when it grows past this.
const PARAMS_CACHE_MAX: usize = 4096;

/// Smallest buffer the runtime creates (empty tensors still need a bindable buffer). Buffers
/// are otherwise exactly the tensor's bytes rounded up to 4, so `arrayLength` in a shader is
/// the element count (plus one padding element for an odd count of f16).
pub(crate) const MIN_BUFFER_BYTES: u64 = 4;

/// Optional timestamp writes for the plan's compute pass (query set, begin index, end index).
/// Where a recorded plan writes timestamps, into a query set from index `first` on.
#[derive(Clone, Copy)]
pub(crate) enum Timestamps<'a> {
    None,
    /// Two: the beginning and the end of the plan's one compute pass.
    Whole(&'a wgpu::QuerySet, u32),
    /// Two per active pass, each recorded in a compute pass of its own.
    PerPass(&'a wgpu::QuerySet, u32),
}

impl Context {
    /// Records `plan` into `encoder` with `args` as its arguments (inputs in manifest order,
    /// then outputs), each a bound buffer range.
    ///
    /// A pass that binds the buffer of an argument it writes a second time is
    /// [`RuntimeError::Alias`], and a pass that binds an absent argument is
    /// [`RuntimeError::InvalidPlan`], both before anything is recorded.
    ///
    /// Pipelines come from the cache; intermediates from a pool (zeroed before use); uniform
    /// buffers are created or reused by content. Everything runs in one compute pass labelled
    /// `op/variant`, one dispatch per non-empty pass; passes with zero workgroups are skipped,
    /// and a plan with no work records nothing. Errors wgpu raises here come back labelled
    /// with the kernel or pass; errors in the recorded commands surface at
    /// [`Context::submit`].
    pub fn record_plan(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
    ) -> Result<(), RuntimeError> {
        self.record_with_timestamps(encoder, plan, args, Timestamps::None, false)
            .map(drop)
    }

    /// [`Context::record_plan`] for arguments the caller passes again and again (an
    /// inference loop's buffers, the provided outputs of `record_into`): the bind groups it
    /// creates are kept, so the next call with the same buffer ranges skips creating them.
    ///
    /// A kept bind group keeps its buffers alive until it is evicted (at most 256 are kept)
    /// or [`Context::trim_pools`] is called.
    pub fn record_plan_reusing(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
    ) -> Result<(), RuntimeError> {
        self.record_with_timestamps(encoder, plan, args, Timestamps::None, true)
            .map(drop)
    }

    /// Records `plan` into a fresh encoder, submits it and waits for completion. Errors in the
    /// recorded commands are labelled `op/variant`.
    pub fn run_plan(&self, plan: &Plan, args: &[Arg<'_>]) -> Result<(), RuntimeError> {
        let label = plan.label();
        let mut encoder = self.create_labelled_encoder(&label);
        let recorded =
            self.record_with_timestamps(&mut encoder, plan, args, Timestamps::None, false)?;
        if recorded {
            self.submit_labelled(encoder, &label)
        } else {
            Ok(())
        }
    }

    /// [`Context::record_plan`] with optional timestamp writes (see [`Timestamps`]), keeping
    /// bind groups when `reuse`; returns whether anything was recorded.
    pub(crate) fn record_with_timestamps(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
        timestamps: Timestamps<'_>,
        reuse: bool,
    ) -> Result<bool, RuntimeError> {
        let active = plan.active_passes(self.max_workgroups_per_dimension())?;
        for (pass, _) in &active {
            check_bindings(plan, pass, args)?;
            check_aliasing(plan, pass, args)?;
        }
        if active.is_empty() {
            return Ok(false);
        }

        let pipelines = active
            .iter()
            .map(|(pass, _)| self.pipeline(pass.kernel, &pass.overrides))
            .collect::<Result<Vec<_>, _>>()?;

        let intermediates = self.take_intermediates(plan)?;
        for (buffer, reused) in &intermediates {
            if *reused {
                encoder.clear_buffer(buffer, 0, None);
            }
        }
        let steps = self.bind_all(&active, &pipelines, args, &intermediates, reuse);
        self.return_intermediates(intermediates);
        let steps = steps?;
        let label = plan.label();
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
        active: &[(&'p PlannedPass, [u32; 3])],
        pipelines: &'p [wgpu::ComputePipeline],
        args: &[Arg<'_>],
        intermediates: &[(wgpu::Buffer, bool)],
        reuse: bool,
    ) -> Result<Vec<Step<'p>>, RuntimeError> {
        active
            .iter()
            .zip(pipelines)
            .map(|(&(pass, workgroups), pipeline)| {
                let bind_group = self.bind_group(pass, pipeline, args, intermediates, reuse)?;
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
        pass: &PlannedPass,
        pipeline: &wgpu::ComputePipeline,
        args: &[Arg<'_>],
        intermediates: &[(wgpu::Buffer, bool)],
        reuse: bool,
    ) -> Result<Option<wgpu::BindGroup>, RuntimeError> {
        if pass.bindings.is_empty() {
            return Ok(None);
        }
        let params = if pass.bindings.contains(&Binding::Params) {
            Some(self.params_buffer(pass)?)
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
                Binding::Arg(a) => args.get(a).and_then(|arg| arg.binding.clone()),
                Binding::Intermediate(t) => intermediates
                    .get(t)
                    .map(|(b, _)| b.as_entire_buffer_binding()),
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
        if let Some(group) = key.as_ref().and_then(|k| lock(&self.bind_groups).get(k)) {
            return Ok(Some(group));
        }
        let bind_group = self.scoped(pass.id, || {
            let layout = pipeline.get_bind_group_layout(0);
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(pass.id),
                layout: &layout,
                entries: &entries,
            })
        })?;
        if let Some(key) = key {
            lock(&self.bind_groups).insert(key, bind_group.clone());
        }
        Ok(Some(bind_group))
    }

    /// The uniform buffer holding `pass.params`, padded to a multiple of 16 bytes (the WGSL
    /// uniform struct alignment), shared with every other pass with the same bytes.
    fn params_buffer(&self, pass: &PlannedPass) -> Result<wgpu::Buffer, RuntimeError> {
        if pass.params.is_empty() {
            return Err(RuntimeError::InvalidPlan {
                label: pass.id.to_owned(),
                reason: "a Params binding but no parameter bytes".to_owned(),
            });
        }
        let limit = self.caps.limits.max_uniform_buffer_binding_size;
        let size = crate::uniform::padded_len(pass.params.len()) as u64;
        if size > limit {
            return Err(RuntimeError::TooLarge {
                what: format!("{} params", pass.id),
                bytes: size,
                limit,
            });
        }
        let mut cache = lock(&self.params);
        if let Some(b) = cache.buffers.get(&pass.params) {
            return Ok(b.clone());
        }
        let buffer = self.create_initialized_buffer(
            pass.id,
            &pass.params,
            size,
            wgpu::BufferUsages::UNIFORM,
        )?;
        if cache.buffers.len() >= PARAMS_CACHE_MAX {
            cache.buffers.clear();
        }
        cache.buffers.insert(pass.params.clone(), buffer.clone());
        Ok(buffer)
    }

    /// One buffer per intermediate of `plan`, with whether it came from the pool (and so
    /// holds stale data that must be cleared).
    fn take_intermediates(&self, plan: &Plan) -> Result<Vec<(wgpu::Buffer, bool)>, RuntimeError> {
        let mut out = Vec::with_capacity(plan.intermediates.len());
        for spec in &plan.intermediates {
            let what = format!("intermediate `{}` of {}", spec.id, plan.label());
            let bytes = spec.byte_len().ok_or_else(|| RuntimeError::TooLarge {
                what: what.clone(),
                bytes: u64::MAX,
                limit: self.storage_limit(),
            })?;
            let size = storage_size(bytes);
            self.check_storage_size(&what, size)?;
            let pooled = lock(&self.intermediates).take(size);
            match pooled {
                Some(b) => out.push((b, true)),
                None => {
                    let usage = wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC;
                    let b = self.create_buffer_checked(&what, size, usage)?;
                    out.push((b, false));
                }
            }
        }
        Ok(out)
    }

    fn return_intermediates(&self, buffers: Vec<(wgpu::Buffer, bool)>) {
        let mut pool = lock(&self.intermediates);
        for (b, _) in buffers {
            pool.give(b);
        }
    }

    /// Drops pooled intermediates, cached uniform buffers, kept bind groups (and with them
    /// the buffers they bind) and the staging buffers, releasing their memory.
    pub fn trim_pools(&self) {
        *lock(&self.intermediates) = IntermediatePool::default();
        lock(&self.bind_groups).clear();
        lock(&self.params).buffers.clear();
        self.staging.clear();
    }
}

impl IntermediatePool {
    fn take(&mut self, size: u64) -> Option<wgpu::Buffer> {
        let b = self.free.get_mut(&size)?.pop()?;
        self.pooled_bytes -= size;
        Some(b)
    }

    fn give(&mut self, buffer: wgpu::Buffer) {
        let size = buffer.size();
        if self.pooled_bytes + size > POOL_MAX_BYTES {
            return;
        }
        self.pooled_bytes += size;
        self.free.entry(size).or_default().push(buffer);
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

/// Byte size of a storage buffer holding `bytes`: a multiple of 4 (copy and binding
/// alignment) and at least [`MIN_BUFFER_BYTES`].
pub(crate) fn storage_size(bytes: u64) -> u64 {
    bytes.next_multiple_of(4).max(MIN_BUFFER_BYTES)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_sizes_are_aligned_and_never_empty() {
        assert_eq!(storage_size(0), 4);
        assert_eq!(storage_size(2), 4);
        assert_eq!(storage_size(18), 20);
        assert_eq!(storage_size(1024), 1024);
    }
}
