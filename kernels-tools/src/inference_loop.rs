//! A decode loop the way an application runs one: its own wgpu device, its own buffers made
//! once, and per step three ops recorded into one encoder that write into views of those
//! buffers, each output the next op's input, with nothing allocated per step.
//!
//! The chain is one attention-bias step: `MRotaryEmbedding` rotates the queries, their
//! rotated values drive `GatedRelativePositionBias`, and `BiasSoftmax` adds that bias to the
//! attention scores. After the last step every stage is checked against its float64
//! reference, computed from the stage's own inputs as the GPU saw them.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use kernel_runtime::{Context, IndexTensor, Tensor, bytemuck, wgpu};
use kernels::{bias_softmax, gated_relative_position_bias as grpb, mrotary_embedding as mrope};

use crate::data::{Comparison, DataRng, Tolerance, compare, from_elem, median, to_elem};
use crate::reference::bias_softmax::bias_softmax;
use crate::reference::gated_relative_position_bias::{Problem, Sizes};
use crate::reference::mrotary_embedding::{mrotary_embedding, rope_caches};

/// Batch, tokens per step, heads, head size, gate projection.
const B: usize = 1;
const S: usize = 16;
const N: usize = 4;
const H: usize = 32;
const D: usize = 8;
const SECTIONS: [i64; 3] = [4, 6, 6];

/// What a run of the loop measured and checked.
#[derive(Debug)]
pub struct LoopReport {
    pub steps: usize,
    /// Median host time of one step: three ops recorded and submitted, waited for.
    pub step: Duration,
    /// Bind groups the runtime keeps after the first step and after the last: equal when the
    /// steps reuse everything.
    pub kept_after_first: usize,
    pub kept_after_last: usize,
    /// Each stage of the last step against its float64 reference.
    pub checks: Vec<(&'static str, Comparison)>,
}

/// Hands out ranges of one buffer at the device's storage offset alignment.
struct Layout {
    align: u64,
    next: u64,
}

impl Layout {
    fn place(&mut self, elements: usize) -> u64 {
        let at = self.next;
        self.next = (at + elements as u64 * 4).next_multiple_of(self.align);
        at
    }
}

/// A buffer of the application's, as it would make one.
fn app_buffer(ctx: &Context, label: &str, size: u64) -> wgpu::Buffer {
    ctx.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// A buffer of the application's with room for tensors of `shapes`, and their offsets.
fn make_buffer(ctx: &Context, label: &str, shapes: &[&[usize]]) -> (wgpu::Buffer, Vec<u64>) {
    let align = u64::from(ctx.device().limits().min_storage_buffer_offset_alignment).max(4);
    let mut layout = Layout { align, next: 0 };
    let offsets: Vec<u64> = shapes
        .iter()
        .map(|s| layout.place(s.iter().product()))
        .collect();
    (app_buffer(ctx, label, layout.next.max(align)), offsets)
}

/// The chain's buffers, views and attributes, made once; each [`Chain::step`] writes one
/// step's inputs and records the three ops into one encoder.
pub struct Chain {
    rng: DataRng,
    max_positions: usize,
    model: Model,
    inputs: wgpu::Buffer,
    in_at: Vec<u64>,
    query: Tensor<f32>,
    positions: IndexTensor,
    scores: Tensor<f32>,
    rotated: Tensor<f32>,
    probs: Tensor<f32>,
    position_bias: Tensor<f32>,
    mrope_attrs: mrope::Attrs,
    grpb_attrs: grpb::Attrs,
    softmax_attrs: bias_softmax::Attrs,
    /// The last step's queries, positions and scores, for the check.
    last: (Vec<f64>, Vec<u32>, Vec<f64>),
}

/// The model's weights on the host (for the references) and as views of one buffer.
struct Model {
    cos: Vec<f64>,
    sin: Vec<f64>,
    query_bias: Vec<f64>,
    rel_pos: Vec<f64>,
    weight: Vec<f64>,
    bias: Vec<f64>,
    eco_a: Vec<f64>,
    tensors: [Tensor<f32>; 7],
}

fn round(v: Vec<f64>) -> Vec<f64> {
    from_elem(&to_elem::<f32>(&v))
}

const HIDDEN: &[usize] = &[B, S, N * H];
const SCORES: &[usize] = &[B, N, S, S];

impl Chain {
    /// Buffers for a chain whose positions stay below `max_positions` (a multiple of `S`).
    pub fn new(ctx: &Context, max_positions: usize, seed: u64) -> Result<Self> {
        ensure!(
            max_positions >= S && max_positions.is_multiple_of(S),
            "max_positions must be a positive multiple of {S}"
        );
        let mut rng = DataRng::new(seed);
        let (cos, sin) = rope_caches(max_positions, H / 2, 10000.0);
        let (cos, sin) = (round(cos), round(sin));
        let query_bias = round(rng.uniform(N * H, -0.5, 0.5));
        let rel_pos = round(rng.uniform(N * S * S, -1.0, 1.0));
        let weight = round(rng.uniform(H * D, -0.3, 0.3));
        let bias = round(rng.uniform(D, -0.2, 0.2));
        let eco_a = round(rng.uniform(N, 0.5, 1.5));
        let model_shapes: [&[usize]; 7] = [
            &[max_positions, H / 2],
            &[max_positions, H / 2],
            &[N * H],
            &[1, N, S, S],
            &[H, D],
            &[D],
            &[1, N, 1, 1],
        ];
        let (model, at) = make_buffer(ctx, "model", &model_shapes);
        let model_data = [&cos, &sin, &query_bias, &rel_pos, &weight, &bias, &eco_a];
        for (values, &offset) in model_data.iter().zip(&at) {
            let words = to_elem::<f32>(values);
            ctx.queue()
                .write_buffer(&model, offset, bytemuck::cast_slice(&words));
        }
        let view = |buffer: &wgpu::Buffer, offset: u64, shape: &[usize]| {
            Tensor::<f32>::from_buffer(ctx, buffer, offset, shape)
        };
        let mut tensors = Vec::with_capacity(7);
        for (i, shape) in model_shapes.iter().enumerate() {
            tensors.push(view(&model, at[i], shape)?);
        }
        let tensors: [Tensor<f32>; 7] = tensors
            .try_into()
            .map_err(|_| anyhow::anyhow!("seven model tensors"))?;

        // Per-step inputs the application writes, and the outputs. A dispatch may not bind a
        // buffer it writes a second time, so each output's buffer holds nothing its op reads.
        let (inputs, in_at) = make_buffer(ctx, "step inputs", &[HIDDEN, &[3, B, S], SCORES]);
        let (act, act_at) = make_buffer(ctx, "activations", &[HIDDEN, SCORES]);
        let (bias_buffer, _) = make_buffer(ctx, "position bias", &[SCORES]);
        Ok(Chain {
            query: view(&inputs, in_at[0], HIDDEN)?,
            positions: IndexTensor::from_buffer(ctx, &inputs, in_at[1], &[3, B, S])?,
            scores: view(&inputs, in_at[2], SCORES)?,
            rotated: view(&act, act_at[0], HIDDEN)?,
            probs: view(&act, act_at[1], SCORES)?,
            position_bias: view(&bias_buffer, 0, SCORES)?,
            inputs,
            in_at,
            rng,
            max_positions,
            model: Model {
                cos,
                sin,
                query_bias,
                rel_pos,
                weight,
                bias,
                eco_a,
                tensors,
            },
            mrope_attrs: mrope::Attrs {
                num_heads: N as i64,
                ..mrope::Attrs::new(mrope::RequiredAttrs {
                    mrope_section: SECTIONS.to_vec(),
                })
            },
            grpb_attrs: grpb::Attrs::new(grpb::RequiredAttrs {
                num_heads: N as i64,
            }),
            softmax_attrs: bias_softmax::Attrs {
                axis: 3,
                ..bias_softmax::Attrs::new(bias_softmax::RequiredAttrs {
                    is_inner_broadcast: false,
                })
            },
            last: (Vec::new(), Vec::new(), Vec::new()),
        })
    }

    /// Writes step `step`'s queries, positions (wrapping below `max_positions`) and scores,
    /// records the three ops into one encoder and submits it, waiting for the GPU.
    pub fn step(&mut self, ctx: &Context, step: usize) -> Result<()> {
        let q = round(self.rng.uniform(B * S * N * H, -2.0, 2.0));
        let base = (step * S) % self.max_positions;
        let ids: Vec<u32> = (0..3 * B * S).map(|i| (base + i % S) as u32).collect();
        let sc = round(self.rng.uniform(B * N * S * S, -3.0, 3.0));
        let queue = ctx.queue();
        let at = &self.in_at;
        queue.write_buffer(
            &self.inputs,
            at[0],
            bytemuck::cast_slice(&to_elem::<f32>(&q)),
        );
        queue.write_buffer(&self.inputs, at[1], bytemuck::cast_slice(&ids));
        queue.write_buffer(
            &self.inputs,
            at[2],
            bytemuck::cast_slice(&to_elem::<f32>(&sc)),
        );

        let m = &self.model.tensors;
        let mut encoder = ctx.create_encoder();
        let mrope_in = mrope::Inputs {
            input: &self.query,
            position_ids: &self.positions,
            cos_cache: &m[0],
            sin_cache: &m[1],
        };
        let out = mrope::OutputsMut {
            output: &mut self.rotated,
        };
        mrope::record_into(ctx, &mut encoder, &mrope_in, out, &self.mrope_attrs)?;
        let grpb_in = grpb::Inputs {
            query_layer: &self.rotated,
            query_bias: &m[2],
            rel_pos: &m[3],
            weight: &m[4],
            bias: &m[5],
            eco_a: &m[6],
        };
        let out = grpb::OutputsMut {
            output: &mut self.position_bias,
        };
        grpb::record_into(ctx, &mut encoder, &grpb_in, out, &self.grpb_attrs)?;
        let softmax_in = bias_softmax::Inputs {
            data: &self.scores,
            bias: &self.position_bias,
        };
        let out = bias_softmax::OutputsMut {
            output: &mut self.probs,
        };
        bias_softmax::record_into(ctx, &mut encoder, &softmax_in, out, &self.softmax_attrs)?;
        ctx.submit(encoder)?;
        self.last = (q, ids, sc);
        Ok(())
    }

    /// Runs BiasSoftmax once more on the last step's scores and bias through the allocating
    /// `run` (new output tensors each call, dropped after), as a caller without buffers of its
    /// own does.
    pub fn run_allocating(&self, ctx: &Context) -> Result<()> {
        let softmax_in = bias_softmax::Inputs {
            data: &self.scores,
            bias: &self.position_bias,
        };
        bias_softmax::run(ctx, &softmax_in, &self.softmax_attrs)?;
        Ok(())
    }

    /// Each stage of the last step against its float64 reference, computed from the stage's
    /// own inputs as the GPU saw them.
    pub fn check(&self, ctx: &Context) -> Result<Vec<(&'static str, Comparison)>> {
        let (q, ids, sc) = &self.last;
        let m = &self.model;
        let got_rotated = from_elem(&self.rotated.to_vec(ctx)?);
        let got_bias = from_elem(&self.position_bias.to_vec(ctx)?);
        let got_probs = from_elem(&self.probs.to_vec(ctx)?);
        let ids: Vec<i64> = ids.iter().map(|&i| i64::from(i)).collect();
        let want_rotated = mrotary_embedding(
            q,
            HIDDEN,
            &ids,
            &m.cos,
            &m.sin,
            self.max_positions,
            &self.mrope_attrs,
        )?;
        let problem = Problem {
            sizes: Sizes {
                batch: B,
                seq: S,
                heads: N,
                head_size: H,
                proj: D,
            },
            query: &got_rotated,
            query_bias: &m.query_bias,
            rel_pos: &m.rel_pos,
            weight: &m.weight,
            bias: &m.bias,
            eco_a: &m.eco_a,
        };
        let want_bias = problem.output().context("position bias reference")?;
        let want_probs = bias_softmax(sc, SCORES, &got_bias, 3, false)?;
        let f32 = kernel_runtime::DType::F32;
        Ok(vec![
            (
                "MRotaryEmbedding",
                compare(&got_rotated, &want_rotated, Tolerance::mrope(f32)),
            ),
            (
                "GatedRelativePositionBias",
                compare(&got_bias, &want_bias, Tolerance::gated_bias(f32)),
            ),
            (
                "BiasSoftmax",
                compare(&got_probs, &want_probs, Tolerance::bias_softmax(f32)),
            ),
        ])
    }
}

/// Runs `steps` steps of the chain on `ctx` (any context; the example passes one made from
/// the application's own device) and checks the last.
pub fn run(ctx: &Context, steps: usize, seed: u64) -> Result<LoopReport> {
    ensure!(steps >= 1, "the loop needs at least one step");
    let mut chain = Chain::new(ctx, steps * S, seed)?;
    let mut times = Vec::with_capacity(steps);
    let mut kept_after_first = 0;
    for step in 0..steps {
        let started = Instant::now();
        chain.step(ctx, step)?;
        times.push(started.elapsed());
        if step == 0 {
            kept_after_first = ctx.kept_bind_groups();
        }
    }
    Ok(LoopReport {
        steps,
        step: median(&times).unwrap_or_default(),
        kept_after_first,
        kept_after_last: ctx.kept_bind_groups(),
        checks: chain.check(ctx)?,
    })
}
