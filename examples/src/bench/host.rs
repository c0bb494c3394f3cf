//! Host-side cost of calls, on small tensors so the GPU's share is negligible: the first call
//! on a fresh device (pipeline creation), `precompile`, a warm `run` (record, submit, wait),
//! and recording many ops into one encoder (the CPU cost per recorded op).

use std::time::{Duration, Instant};

use anyhow::Result;
use kernel_runtime::{Context, ContextOptions, IndexTensor, Tensor, wgpu};
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
    /// Wall time of the first `run` after `precompile`.
    pub first_call_after_precompile_ms: f64,
    /// Median wall time of a warm `run`: plan, record, submit and wait for a tiny dispatch.
    pub warm_run_us: f64,
    /// CPU time per op when recording `recorded_ops` ops into one encoder.
    pub record_us_per_op: f64,
    pub recorded_ops: usize,
}

/// The same small problem of one op, to run and record repeatedly.
trait Problem {
    fn op(&self) -> &'static str;
    fn precompile(&self, ctx: &Context) -> Result<usize>;
    fn run(&self, ctx: &Context) -> Result<()>;
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()>;
}

struct Mrope {
    x: Tensor<f32>,
    positions: IndexTensor,
    cos: Tensor<f32>,
    sin: Tensor<f32>,
    attrs: mrope::Attrs,
}

impl Mrope {
    fn new(ctx: &Context) -> Result<Self> {
        let attrs = mrope::Attrs {
            num_heads: 2,
            ..mrope::Attrs::new(vec![8, 12, 12])
        };
        Ok(Mrope {
            x: Tensor::from_slice(ctx, &[1, 16, 128], &vec![0.5; 16 * 128])?,
            positions: IndexTensor::from_i64(ctx, &[3, 1, 16], &[3; 48])?,
            cos: Tensor::from_slice(ctx, &[64, 32], &vec![0.25; 64 * 32])?,
            sin: Tensor::from_slice(ctx, &[64, 32], &vec![0.75; 64 * 32])?,
            attrs,
        })
    }

    fn inputs(&self) -> mrope::Inputs<'_, f32> {
        mrope::Inputs {
            input: &self.x,
            position_ids: &self.positions,
            cos_cache: &self.cos,
            sin_cache: &self.sin,
        }
    }
}

impl Problem for Mrope {
    fn op(&self) -> &'static str {
        mrope::OP_NAME
    }
    fn precompile(&self, ctx: &Context) -> Result<usize> {
        Ok(mrope::precompile(ctx)?)
    }
    fn run(&self, ctx: &Context) -> Result<()> {
        mrope::run(ctx, &self.inputs(), &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        mrope::record(ctx, encoder, &self.inputs(), &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
}

struct Softmax {
    data: Tensor<f32>,
    bias: Tensor<f32>,
    attrs: bias_softmax::Attrs,
}

impl Problem for Softmax {
    fn op(&self) -> &'static str {
        bias_softmax::OP_NAME
    }
    fn precompile(&self, ctx: &Context) -> Result<usize> {
        Ok(bias_softmax::precompile(ctx)?)
    }
    fn run(&self, ctx: &Context) -> Result<()> {
        let inputs = bias_softmax::Inputs {
            data: &self.data,
            bias: &self.bias,
        };
        bias_softmax::run(ctx, &inputs, &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let inputs = bias_softmax::Inputs {
            data: &self.data,
            bias: &self.bias,
        };
        bias_softmax::record(ctx, encoder, &inputs, &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
}

struct Gated {
    tensors: [Tensor<f32>; 6],
    attrs: grpb::Attrs,
}

impl Gated {
    fn inputs(&self) -> grpb::Inputs<'_, f32> {
        let [query_layer, query_bias, rel_pos, weight, bias, eco_a] = &self.tensors;
        grpb::Inputs {
            query_layer,
            query_bias,
            rel_pos,
            weight,
            bias,
            eco_a,
        }
    }
}

impl Problem for Gated {
    fn op(&self) -> &'static str {
        grpb::OP_NAME
    }
    fn precompile(&self, ctx: &Context) -> Result<usize> {
        Ok(grpb::precompile(ctx)?)
    }
    fn run(&self, ctx: &Context) -> Result<()> {
        grpb::run(ctx, &self.inputs(), &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
    fn record(&self, ctx: &Context, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        grpb::record(ctx, encoder, &self.inputs(), &self.attrs)
            .map(drop)
            .map_err(Into::into)
    }
}

fn problems(ctx: &Context) -> Result<Vec<Box<dyn Problem>>> {
    let t = |shape: &[usize], v: f32| {
        Tensor::<f32>::from_slice(ctx, shape, &vec![v; shape.iter().product()])
    };
    Ok(vec![
        Box::new(Mrope::new(ctx)?),
        Box::new(Softmax {
            data: t(&[4, 64], 0.5)?,
            bias: t(&[1, 64], -0.5)?,
            attrs: bias_softmax::Attrs {
                axis: -1,
                ..bias_softmax::Attrs::new(true)
            },
        }),
        Box::new(Gated {
            tensors: [
                t(&[1, 16, 32], 0.1)?,
                t(&[32], 0.2)?,
                t(&[1, 2, 16, 16], 1.5)?,
                t(&[16, 4], 0.3)?,
                t(&[4], 0.1)?,
                t(&[1, 2, 1, 1], 1.0)?,
            ],
            attrs: grpb::Attrs::new(2),
        }),
    ])
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Measures every op; `calls` warm runs each and `recorded` ops per encoder.
pub fn measure(options: &ContextOptions, calls: usize, recorded: usize) -> Result<Vec<HostResult>> {
    let mut results = Vec::new();
    let count = problems(&Context::with_options(options)?)?.len();
    for index in 0..count {
        // A fresh device each, so nothing is cached from an earlier op or measurement.
        let cold_ctx = Context::with_options(options)?;
        let problem = problems(&cold_ctx)?.remove(index);
        let started = Instant::now();
        problem.run(&cold_ctx)?;
        let cold_first_call = started.elapsed();

        let ctx = Context::with_options(options)?;
        let problem = problems(&ctx)?.remove(index);
        let started = Instant::now();
        let precompiled_shaders = problem.precompile(&ctx)?;
        let precompile = started.elapsed();
        let started = Instant::now();
        problem.run(&ctx)?;
        let first_after_precompile = started.elapsed();

        let mut runs = Vec::with_capacity(calls);
        for _ in 0..calls {
            let started = Instant::now();
            problem.run(&ctx)?;
            runs.push(started.elapsed());
        }

        let mut encoder = ctx.create_encoder();
        let started = Instant::now();
        for _ in 0..recorded {
            problem.record(&ctx, &mut encoder)?;
        }
        let recording = started.elapsed();
        ctx.submit(encoder)?;

        results.push(HostResult {
            op: problem.op().to_owned(),
            cold_first_call_ms: ms(cold_first_call),
            precompile_ms: ms(precompile),
            precompiled_shaders,
            first_call_after_precompile_ms: ms(first_after_precompile),
            warm_run_us: super::median_us(&runs),
            record_us_per_op: recording.as_secs_f64() * 1e6 / recorded.max(1) as f64,
            recorded_ops: recorded,
        });
    }
    Ok(results)
}
