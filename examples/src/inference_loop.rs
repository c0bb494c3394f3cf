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

/// Runs `steps` steps of the chain on `ctx` (any context; the example passes one made from
/// the application's own device) and checks the last.
pub fn run(ctx: &Context, steps: usize, seed: u64) -> Result<LoopReport> {
    ensure!(steps >= 1, "the loop needs at least one step");
    let max_positions = steps * S;
    let mut rng = DataRng::new(seed);
    let round = |v: Vec<f64>| from_elem(&to_elem::<f32>(&v));

    // The model: written once.
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
    let cos_t = view(&model, at[0], model_shapes[0])?;
    let sin_t = view(&model, at[1], model_shapes[1])?;
    let query_bias_t = view(&model, at[2], model_shapes[2])?;
    let rel_pos_t = view(&model, at[3], model_shapes[3])?;
    let weight_t = view(&model, at[4], model_shapes[4])?;
    let bias_t = view(&model, at[5], model_shapes[5])?;
    let eco_a_t = view(&model, at[6], model_shapes[6])?;

    // Per-step inputs the application writes, and the outputs. A dispatch may not bind a
    // buffer it writes a second time, so each output's buffer holds nothing its op reads.
    let hidden: &[usize] = &[B, S, N * H];
    let scores_shape: &[usize] = &[B, N, S, S];
    let (inputs, in_at) = make_buffer(ctx, "step inputs", &[hidden, &[3, B, S], scores_shape]);
    let (act, act_at) = make_buffer(ctx, "activations", &[hidden, scores_shape]);
    let (bias_buffer, _) = make_buffer(ctx, "position bias", &[scores_shape]);
    let query = view(&inputs, in_at[0], hidden)?;
    let positions = IndexTensor::from_buffer(ctx, &inputs, in_at[1], &[3, B, S])?;
    let scores = view(&inputs, in_at[2], scores_shape)?;
    let mut rotated = view(&act, act_at[0], hidden)?;
    let mut probs = view(&act, act_at[1], scores_shape)?;
    let mut position_bias = view(&bias_buffer, 0, scores_shape)?;

    let mrope_attrs = mrope::Attrs {
        num_heads: N as i64,
        ..mrope::Attrs::new(SECTIONS.to_vec())
    };
    let grpb_attrs = grpb::Attrs::new(N as i64);
    let softmax_attrs = bias_softmax::Attrs {
        axis: 3,
        ..bias_softmax::Attrs::new(false)
    };

    let mut times = Vec::with_capacity(steps);
    let mut kept_after_first = 0;
    let mut last = (Vec::new(), Vec::new(), Vec::new());
    for step in 0..steps {
        // The application's own uploads: this step's queries, positions and scores.
        let q = round(rng.uniform(B * S * N * H, -2.0, 2.0));
        let ids: Vec<u32> = (0..3 * B * S).map(|i| (step * S + i % S) as u32).collect();
        let sc = round(rng.uniform(B * N * S * S, -3.0, 3.0));
        let started = Instant::now();
        let queue = ctx.queue();
        queue.write_buffer(&inputs, in_at[0], bytemuck::cast_slice(&to_elem::<f32>(&q)));
        queue.write_buffer(&inputs, in_at[1], bytemuck::cast_slice(&ids));
        queue.write_buffer(
            &inputs,
            in_at[2],
            bytemuck::cast_slice(&to_elem::<f32>(&sc)),
        );

        let mut encoder = ctx.create_encoder();
        let mrope_in = mrope::Inputs {
            input: &query,
            position_ids: &positions,
            cos_cache: &cos_t,
            sin_cache: &sin_t,
        };
        let out = mrope::OutputsMut {
            output: &mut rotated,
        };
        mrope::record_into(ctx, &mut encoder, &mrope_in, out, &mrope_attrs)?;
        let grpb_in = grpb::Inputs {
            query_layer: &rotated,
            query_bias: &query_bias_t,
            rel_pos: &rel_pos_t,
            weight: &weight_t,
            bias: &bias_t,
            eco_a: &eco_a_t,
        };
        let out = grpb::OutputsMut {
            output: &mut position_bias,
        };
        grpb::record_into(ctx, &mut encoder, &grpb_in, out, &grpb_attrs)?;
        let softmax_in = bias_softmax::Inputs {
            data: &scores,
            bias: &position_bias,
        };
        let out = bias_softmax::OutputsMut { output: &mut probs };
        bias_softmax::record_into(ctx, &mut encoder, &softmax_in, out, &softmax_attrs)?;
        ctx.submit(encoder)?;
        times.push(started.elapsed());
        if step == 0 {
            kept_after_first = ctx.kept_bind_groups();
        }
        last = (q, ids, sc);
    }

    let (q, ids, sc) = last;
    let got_rotated = from_elem(&rotated.to_vec(ctx)?);
    let got_bias = from_elem(&position_bias.to_vec(ctx)?);
    let got_probs = from_elem(&probs.to_vec(ctx)?);
    let ids: Vec<i64> = ids.into_iter().map(i64::from).collect();
    let want_rotated =
        mrotary_embedding(&q, hidden, &ids, &cos, &sin, max_positions, &mrope_attrs)?;
    let problem = Problem {
        sizes: Sizes {
            batch: B,
            seq: S,
            heads: N,
            head_size: H,
            proj: D,
        },
        query: &got_rotated,
        query_bias: &query_bias,
        rel_pos: &rel_pos,
        weight: &weight,
        bias: &bias,
        eco_a: &eco_a,
    };
    let want_bias = problem.output().context("position bias reference")?;
    let want_probs = bias_softmax(&sc, scores_shape, &got_bias, 3, false)?;
    let f32 = kernel_runtime::DType::F32;
    Ok(LoopReport {
        steps,
        step: median(&times).unwrap_or_default(),
        kept_after_first,
        kept_after_last: ctx.kept_bind_groups(),
        checks: vec![
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
        ],
    })
}
