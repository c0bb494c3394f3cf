//! Host-side cost of calls, on small tensors so the GPU's share is negligible: the first call
//! on a fresh device (pipeline creation), `precompile`, a warm `run` (record, submit, wait),
//! and recording many ops into one encoder (the CPU cost per recorded op).

use std::time::{Duration, Instant};

use anyhow::Result;
use kernel_runtime::{AllocatingOp, Context, ContextOptions, IndexTensor, OpHooks, Tensor, wgpu};
use kernels::{bias_softmax, gated_relative_position_bias as grpb, mrotary_embedding as mrope};
use serde::Serialize;

/// Host-side measurements of one op.
#[derive(Debug, Clone, Serialize)]
pub struct HostResult {
    pub op: String,
    /// Wall time of the first `run` on a fresh device, pipelines created on demand.
    pub cold_first_call_ms: f64,
    /// Wall time of `precompile` on a fresh device, and how many shaders it prepared.
    pub precompile_ms: f64,
    pub precompiled_shaders: usize,
    /// Wall time of `precompile` on a fresh device that loaded the pipeline cache saved
    /// after the `precompile` and first call above (`None` when the device has no pipeline cache).
    pub precompile_from_pipeline_cache_ms: Option<f64>,
    /// Wall time of the first `run` on a fresh device that loaded that cache, without
    /// `precompile` (the cache was saved after a call, so it holds the call's pipeline).
    pub first_call_from_pipeline_cache_ms: Option<f64>,
    /// Wall time of the first `run` after `precompile`.
    pub first_call_after_precompile_ms: f64,
    /// Median wall time of a warm `run`: plan, record, submit and wait for a tiny dispatch.
    pub warm_run_us: f64,
    /// Median wall time of a warm `run_into` (provided outputs, nothing allocated).
    pub warm_run_into_us: f64,
    /// CPU time per op when recording `recorded_ops` ops into one encoder, new outputs each
    /// (the median of several encoders after a warm-up one).
    pub record_us_per_op: f64,
    /// The same with `record_into` and one provided output: what an inference loop pays.
    pub record_into_us_per_op: f64,
    pub recorded_ops: usize,
    /// Heap allocations per `record_into` in that loop (`None` unless the program counts
    /// allocations: the bench binary does, through [`allocations`]).
    pub record_into_allocs_per_op: Option<f64>,
    /// Where a warm `record_into`'s time and allocations go, part by part.
    pub record_into_parts: Vec<Part>,
    /// A bound call (`Bound`, bound once): recording it into one compute pass shared by
    /// `recorded_ops` calls, per call.
    pub bound_record_us_per_dispatch: f64,
    pub bound_record_allocs: Option<f64>,
    /// `Bound::update` with the same attributes, and with an attribute that changes a uniform
    /// every call (the op's `vary`; `None` for an op without one), per call. A changed uniform
    /// is written into the context's host copy; the next recording uploads it.
    pub bound_update_us: f64,
    pub bound_update_allocs: Option<f64>,
    pub bound_update_changing_us: Option<f64>,
    pub bound_update_changing_allocs: Option<f64>,
    /// The recording after `recorded_ops` such updates, which uploads them (one
    /// `queue.write_buffer`): median µs and mean allocations over a few rounds.
    pub bound_upload_us: Option<f64>,
    pub bound_upload_allocs: Option<f64>,
}

/// One part of a warm `record_into`, measured on its own over many calls: mean wall time and
/// heap allocations per call.
#[derive(Debug, Clone, Serialize)]
pub struct Part {
    pub part: &'static str,
    pub us: f64,
    pub allocs: Option<f64>,
}

/// Heap allocations made so far by this process, when its global allocator is
/// `stats_alloc`'s instrumented one (the bench binary installs it); `None` otherwise.
pub fn allocations() -> Option<u64> {
    let stats = || stats_alloc::INSTRUMENTED_SYSTEM.stats().allocations as u64;
    let before = stats();
    let probe = std::hint::black_box(Box::new(0u64));
    let counted = stats() > before;
    drop(probe);
    counted.then(stats)
}

/// Wall time and allocations of one call of `f` (less the allocation counting's own).
fn once(f: impl FnOnce() -> Result<()>) -> Result<(Duration, Option<u64>)> {
    let probe = allocations().zip(allocations()).map(|(a, b)| b - a);
    let before = allocations();
    let started = Instant::now();
    f()?;
    let elapsed = started.elapsed();
    let after = allocations();
    let allocs = (before.zip(after).zip(probe)).map(|((b, a), p)| (a - b).saturating_sub(p));
    Ok((elapsed, allocs))
}

/// Mean wall time (µs) and allocations per call of `f` over `calls` calls.
fn per_call(calls: usize, mut f: impl FnMut() -> Result<()>) -> Result<(f64, Option<f64>)> {
    let before = allocations();
    let started = Instant::now();
    for _ in 0..calls {
        f()?;
    }
    let elapsed = started.elapsed();
    let after = allocations();
    let n = calls.max(1) as f64;
    let allocs = before.zip(after).map(|(b, a)| (a - b) as f64 / n);
    Ok((elapsed.as_secs_f64() * 1e6 / n, allocs))
}

/// The same small problem of one op, to run and record repeatedly.
trait Problem {
    fn op(&self) -> &'static str;
    fn precompile(&self, ctx: &Context) -> Result<usize>;
    fn run(&self, ctx: &Context) -> Result<()>;
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()>;
    /// Records into the problem's own output (`None`: a plain submission, i.e. `run_into`).
    fn record_into(
        &mut self,
        ctx: &Context,
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()>;
    /// The parts of a warm `record_into`, each measured over `calls` calls.
    fn parts(&mut self, ctx: &Context, calls: usize) -> Result<Vec<Part>>;
    /// A bound call's costs over `calls` calls: record into one shared pass, update with the
    /// same attributes, update with a changing uniform.
    fn bound(&mut self, ctx: &Context, calls: usize) -> Result<BoundCosts>;
}

/// What [`Problem::bound`] measures, each mean µs and allocations per call.
struct BoundCosts {
    record: (f64, Option<f64>),
    update: (f64, Option<f64>),
    update_changing: Option<(f64, Option<f64>)>,
    /// The recording that uploads `calls` changing updates (median µs).
    upload: Option<(f64, Option<f64>)>,
}

/// A problem of any op that writes nothing in place (its `InPlace` is `()`), through the `Op`
/// traits: the input tensors `I` and output tensor `W` it owns, and how the op's typed structs
/// view them.
struct OpProblem<O: for<'a> AllocatingOp<InPlace<'a> = ()> + OpHooks, I, W> {
    inputs: I,
    output: W,
    attrs: O::Attrs,
    view: for<'a> fn(&'a I) -> O::Inputs<'a>,
    view_mut: for<'a> fn(&'a mut W) -> O::OutputsMut<'a>,
    /// Changes an attribute that only a uniform reads, by call number (`None`: the op has
    /// none to change).
    vary: Option<fn(&mut O::Attrs, usize)>,
}

impl<O: for<'a> AllocatingOp<InPlace<'a> = ()> + OpHooks, I, W> Problem for OpProblem<O, I, W> {
    fn op(&self) -> &'static str {
        O::NAME
    }
    fn precompile(&self, ctx: &Context) -> Result<usize> {
        Ok(O::precompile(ctx)?)
    }
    fn run(&self, ctx: &Context) -> Result<()> {
        O::run(ctx, &(self.view)(&self.inputs), (), &self.attrs)?;
        Ok(())
    }
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        O::record(ctx, encoder, &(self.view)(&self.inputs), (), &self.attrs)?;
        Ok(())
    }
    fn record_into(
        &mut self,
        ctx: &Context,
        encoder: Option<&mut wgpu::CommandEncoder>,
    ) -> Result<()> {
        let inputs = (self.view)(&self.inputs);
        let outputs = (self.view_mut)(&mut self.output);
        match encoder {
            Some(encoder) => O::record_into(ctx, encoder, &inputs, outputs, &self.attrs)?,
            None => O::run_into(ctx, &inputs, outputs, &self.attrs)?,
        }
        Ok(())
    }
    fn parts(&mut self, ctx: &Context, calls: usize) -> Result<Vec<Part>> {
        let inputs = (self.view)(&self.inputs);
        let outputs = (self.view_mut)(&mut self.output);
        let attrs = &self.attrs;
        let mut parts = Vec::new();
        let mut part = |part: &'static str, (us, allocs): (f64, Option<f64>)| {
            parts.push(Part { part, us, allocs });
        };
        let (shapes, dtypes) = O::call_shapes(&inputs, &outputs);
        part(
            "plan (Env, select, plan)",
            per_call(calls, || {
                std::hint::black_box(O::plan(ctx.caps(), &shapes, &dtypes, attrs)?);
                Ok(())
            })?,
        );
        part(
            "  of which Env::new",
            per_call(calls, || {
                std::hint::black_box(O::env(&shapes, dtypes, attrs, ctx.caps())?);
                Ok(())
            })?,
        );
        part(
            "args and output shapes",
            per_call(calls, || {
                std::hint::black_box(O::args(&inputs, &outputs));
                std::hint::black_box(O::arg_shapes(&inputs, &outputs));
                Ok(())
            })?,
        );
        let plan = O::plan(ctx.caps(), &shapes, &dtypes, attrs)?;
        part(
            "plan.label()",
            per_call(calls, || {
                std::hint::black_box(plan.label());
                Ok(())
            })?,
        );
        part(
            "  of which pipeline lookups",
            per_call(calls, || {
                for pass in &plan.passes {
                    ctx.precompile(pass.kernel, &pass.overrides)?;
                }
                Ok(())
            })?,
        );
        let (pipeline, bind_group) = trivial_pipeline(ctx);
        let mut encoder = ctx.create_encoder();
        part(
            "  of which wgpu: a pass, a dispatch",
            per_call(calls, || {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("op/variant"),
                    timestamp_writes: None,
                });
                pass.push_debug_group("main");
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(1, 1, 1);
                pass.pop_debug_group();
                Ok(())
            })?,
        );
        ctx.submit(encoder)?;
        let args = O::args(&inputs, &outputs);
        let mut encoder = ctx.create_encoder();
        ctx.record_plan_reusing(&mut encoder, &plan, args.as_ref())?;
        part(
            "record_plan_reusing (runtime)",
            per_call(calls, || {
                Ok(ctx.record_plan_reusing(&mut encoder, &plan, args.as_ref())?)
            })?,
        );
        ctx.submit(encoder)?;
        drop(args);
        drop(outputs);
        let mut encoder = ctx.create_encoder();
        let view_mut = self.view_mut;
        let output = &mut self.output;
        part(
            "record_into (all)",
            per_call(calls, || {
                let outputs = view_mut(output);
                Ok(O::record_into(ctx, &mut encoder, &inputs, outputs, attrs)?)
            })?,
        );
        ctx.submit(encoder)?;
        Ok(parts)
    }
    fn bound(&mut self, ctx: &Context, calls: usize) -> Result<BoundCosts> {
        let inputs = (self.view)(&self.inputs);
        let outputs = (self.view_mut)(&mut self.output);
        let mut call = kernel_runtime::Bound::<O>::new(ctx, &inputs, outputs, &self.attrs)?;
        // Warm: one submission of the call first, and recording into a pass that has grown.
        let mut encoder = ctx.create_encoder();
        call.record_into(&mut encoder);
        ctx.submit(encoder)?;
        let mut encoder = ctx.create_encoder();
        let record = {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            for _ in 0..calls {
                call.record(&mut pass)?;
            }
            per_call(calls, || Ok(call.record(&mut pass)?))?
        };
        ctx.submit(encoder)?;
        let update = per_call(calls, || Ok(call.update(ctx, &self.attrs)?))?;
        let update_changing = match self.vary {
            Some(vary) => {
                let mut attrs = self.attrs.clone();
                let mut i = 0;
                let cost = per_call(calls, || {
                    i += 1;
                    vary(&mut attrs, i);
                    Ok(call.update(ctx, &attrs)?)
                })?;
                call.update(ctx, &self.attrs)?;
                Some(cost)
            }
            None => None,
        };
        // A step's upload: `calls` changing updates, then the recording that uploads them.
        let upload = match self.vary {
            Some(vary) => {
                const ROUNDS: u32 = 20;
                let mut attrs = self.attrs.clone();
                let (mut times, mut allocs) = (Vec::new(), Some(0));
                let mut encoder = ctx.create_encoder();
                {
                    let mut pass =
                        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                    call.record(&mut pass)?;
                    let mut i = 0;
                    for _ in 0..ROUNDS {
                        for _ in 0..calls {
                            i += 1;
                            vary(&mut attrs, i);
                            call.update(ctx, &attrs)?;
                        }
                        let (t, a) = once(|| Ok(call.record(&mut pass)?))?;
                        times.push(t);
                        allocs = allocs.zip(a).map(|(s, a)| s + a);
                    }
                }
                ctx.submit(encoder)?;
                call.update(ctx, &self.attrs)?;
                let n = f64::from(ROUNDS);
                Some((super::median_us(&times), allocs.map(|a| a as f64 / n)))
            }
            None => None,
        };
        // The writes reach the GPU with a submission.
        ctx.submit(ctx.create_encoder())?;
        Ok(BoundCosts {
            record,
            update,
            update_changing,
            upload,
        })
    }
}

/// A pipeline writing one word, with its bind group: what wgpu alone costs per pass.
fn trivial_pipeline(ctx: &Context) -> (wgpu::ComputePipeline, wgpu::BindGroup) {
    let device = ctx.device();
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("trivial"),
        source: wgpu::ShaderSource::Wgsl(
            "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n\
             @compute @workgroup_size(1) fn main() { y[0] = 1u; }"
                .into(),
        ),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("trivial"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let buffer = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("trivial"),
        size: 16,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("trivial"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    (pipeline, bind_group)
}

fn problems(ctx: &Context) -> Result<Vec<Box<dyn Problem>>> {
    let t = |shape: &[usize], v: f32| {
        Tensor::<f32>::from_slice(ctx, shape, &vec![v; shape.iter().product()])
    };
    let mrope = OpProblem::<mrope::Op, _, _> {
        inputs: (
            t(&[1, 16, 128], 0.5)?,
            IndexTensor::from_i64(ctx, &[3, 1, 16], &[3; 48])?,
            t(&[64, 32], 0.25)?,
            t(&[64, 32], 0.75)?,
        ),
        output: t(&[1, 16, 128], 0.0)?,
        attrs: mrope::Attrs {
            num_heads: 2,
            ..mrope::Attrs::new(mrope::RequiredAttrs {
                mrope_section: vec![8, 12, 12],
            })
        },
        view: |(input, position_ids, cos_cache, sin_cache)| mrope::Inputs {
            input,
            position_ids,
            cos_cache,
            sin_cache,
        },
        view_mut: |output| mrope::OutputsMut { output },
        vary: Some(|attrs, i| attrs.scale = 1.0 + (i % 2) as f32),
    };
    let softmax = OpProblem::<bias_softmax::Op, _, _> {
        inputs: (t(&[4, 64], 0.5)?, t(&[1, 64], -0.5)?),
        output: t(&[4, 64], 0.0)?,
        attrs: bias_softmax::Attrs {
            axis: -1,
            ..bias_softmax::Attrs::new(bias_softmax::RequiredAttrs {
                is_inner_broadcast: true,
            })
        },
        view: |(data, bias)| bias_softmax::Inputs { data, bias },
        view_mut: |output| bias_softmax::OutputsMut { output },
        vary: None,
    };
    let gated = OpProblem::<grpb::Op, _, _> {
        inputs: [
            t(&[1, 16, 32], 0.1)?,
            t(&[32], 0.2)?,
            t(&[1, 2, 16, 16], 1.5)?,
            t(&[16, 4], 0.3)?,
            t(&[4], 0.1)?,
            t(&[1, 2, 1, 1], 1.0)?,
        ],
        output: t(&[1, 2, 16, 16], 0.0)?,
        attrs: grpb::Attrs::new(grpb::RequiredAttrs { num_heads: 2 }),
        view: |[query_layer, query_bias, rel_pos, weight, bias, eco_a]| grpb::Inputs {
            query_layer,
            query_bias,
            rel_pos,
            weight,
            bias,
            eco_a,
        },
        view_mut: |output| grpb::OutputsMut { output },
        vary: None,
    };
    Ok(vec![Box::new(mrope), Box::new(softmax), Box::new(gated)])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Rounds of recording into one encoder; the first is a warm-up (the encoder's command
/// storage grows in it), the median of the others is reported.
const RECORD_ROUNDS: usize = 6;

/// The median wall time of recording `ops` ops into one encoder (then submitted), over
/// [`RECORD_ROUNDS`] rounds less the warm-up.
fn record_rounds(
    ctx: &Context,
    ops: usize,
    mut record: impl FnMut(&mut wgpu::CommandEncoder) -> Result<()>,
) -> Result<Duration> {
    let mut rounds = Vec::with_capacity(RECORD_ROUNDS);
    for _ in 0..RECORD_ROUNDS {
        let mut encoder = ctx.create_encoder();
        let started = Instant::now();
        for _ in 0..ops {
            record(&mut encoder)?;
        }
        rounds.push(started.elapsed());
        ctx.submit(encoder)?;
    }
    Ok(crate::data::median(&rounds[1..]).unwrap_or_default())
}

/// Measures every op; `calls` warm runs each and `recorded` ops per encoder.
pub fn measure(options: &ContextOptions, calls: usize, recorded: usize) -> Result<Vec<HostResult>> {
    let mut results = Vec::new();
    let count = problems(&Context::with_options(options)?)?.len();
    let scratch = std::env::temp_dir().join(format!("kernels-bench-{}", std::process::id()));
    for index in 0..count {
        // A fresh device each, so nothing is cached from an earlier op or measurement.
        let cold_ctx = Context::with_options(options)?;
        let problem = problems(&cold_ctx)?.remove(index);
        let started = Instant::now();
        problem.run(&cold_ctx)?;
        let cold_first_call = started.elapsed();

        let ctx = Context::with_options(options)?;
        let mut problem = problems(&ctx)?.remove(index);
        let cache_file = scratch.join(format!("{index}.bin"));
        let cached = ctx.use_pipeline_cache(&cache_file).is_ok();
        let started = Instant::now();
        let precompiled_shaders = problem.precompile(&ctx)?;
        let precompile = started.elapsed();
        let started = Instant::now();
        problem.run(&ctx)?;
        let first_after_precompile = started.elapsed();
        // What a later process gets from the cache this one saves: `precompile`, and a
        // first call without it, each on a fresh device.
        let (from_cache, first_call_from_cache) = if cached && ctx.save_pipeline_cache()?.is_some()
        {
            let fresh = Context::with_options(options)?;
            fresh.use_pipeline_cache(&cache_file)?;
            let again = problems(&fresh)?.remove(index);
            let started = Instant::now();
            again.precompile(&fresh)?;
            let precompile = ms(started.elapsed());
            let fresh = Context::with_options(options)?;
            fresh.use_pipeline_cache(&cache_file)?;
            let again = problems(&fresh)?.remove(index);
            let started = Instant::now();
            again.run(&fresh)?;
            (Some(precompile), Some(ms(started.elapsed())))
        } else {
            (None, None)
        };

        let mut runs = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            problem.run(&ctx)?;
            runs.push(started.elapsed());
        }

        let mut runs_into = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            problem.record_into(&ctx, None)?;
            runs_into.push(started.elapsed());
        }

        let recording = record_rounds(&ctx, recorded, |encoder| problem.record(&ctx, encoder))?;
        let before = allocations();
        let recording_into = record_rounds(&ctx, recorded, |encoder| {
            problem.record_into(&ctx, Some(encoder))
        })?;
        // Every round's calls, the warm-up's among them: encoders and submissions included.
        let into_allocs = before
            .zip(allocations())
            .map(|(b, a)| (a - b) as f64 / (RECORD_ROUNDS * recorded.max(1)) as f64);
        let record_into_parts = problem.parts(&ctx, recorded)?;
        let bound = problem.bound(&ctx, recorded)?;
        let per_op = |d: Duration| d.as_secs_f64() * 1e6 / recorded.max(1) as f64;

        results.push(HostResult {
            op: problem.op().to_owned(),
            cold_first_call_ms: ms(cold_first_call),
            precompile_ms: ms(precompile),
            precompiled_shaders,
            precompile_from_pipeline_cache_ms: from_cache,
            first_call_from_pipeline_cache_ms: first_call_from_cache,
            first_call_after_precompile_ms: ms(first_after_precompile),
            warm_run_us: super::median_us(&runs),
            warm_run_into_us: super::median_us(&runs_into),
            record_us_per_op: per_op(recording),
            record_into_us_per_op: per_op(recording_into),
            recorded_ops: recorded,
            record_into_allocs_per_op: into_allocs,
            record_into_parts,
            bound_record_us_per_dispatch: bound.record.0,
            bound_record_allocs: bound.record.1,
            bound_update_us: bound.update.0,
            bound_update_allocs: bound.update.1,
            bound_update_changing_us: bound.update_changing.map(|c| c.0),
            bound_update_changing_allocs: bound.update_changing.and_then(|c| c.1),
            bound_upload_us: bound.upload.map(|c| c.0),
            bound_upload_allocs: bound.upload.and_then(|c| c.1),
        });
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(results)
}
