//! The decode loop: a [`Decoder`] owns the model on the device and steps it one token per
//! submission, the next token chosen on the device; [`Decoder::generate`] runs N tokens and
//! reports their cost.

use std::time::Instant;

use kernel_runtime::{Context, ContextCounts, wgpu};

use crate::calls::Calls;
use crate::config::Config;
use crate::model::Model;
use crate::step::{DecodeError, Recording, StepAttrs};
use crate::weights::Weights;

/// A decoder on one device: the model, and every call of a step bound to its tensors.
pub struct Decoder {
    pub model: Model,
    attrs: StepAttrs,
    calls: Calls,
    /// The position of the next token step.
    pos: usize,
}

/// What a run of [`Decoder::generate`] cost.
#[derive(Clone, Debug)]
pub struct Report {
    /// The tokens decoded, in order (the first is the one after the prompt token).
    pub tokens: Vec<u32>,
    /// Wall time of the whole run, from the first record to the last token read back.
    pub wall_s: f64,
    /// Host time recording each token's encoder and submitting it, in µs.
    pub host_us: Vec<f64>,
    /// The part of it that updates the position's calls and records the step (the encoder
    /// and its pass included, not finishing and submitting it), in µs.
    pub record_us: Vec<f64>,
    /// The runtime's counts after the first token and after the last.
    pub after_first: ContextCounts,
    pub after_last: ContextCounts,
}

impl Report {
    /// Tokens per second over the whole run.
    pub fn tokens_per_s(&self) -> f64 {
        self.tokens.len() as f64 / self.wall_s
    }

    /// The median host time per token, after the first (which creates what later ones
    /// reuse).
    pub fn host_us_median(&self) -> f64 {
        later_median(&self.host_us)
    }

    /// The median time to update and record a token, after the first.
    pub fn record_us_median(&self) -> f64 {
        later_median(&self.record_us)
    }
}

impl Decoder {
    /// Checks `config`, uploads `weights` and allocates everything a step uses.
    pub fn new(ctx: &Context, config: &Config, weights: &Weights) -> Result<Self, DecodeError> {
        config.check().map_err(DecodeError::Config)?;
        let mut model = Model::upload(ctx, config, weights)?;
        let mut attrs = StepAttrs::new(config, weights);
        let calls = Calls::bind(ctx, &mut model, &mut attrs)?;
        Ok(Decoder {
            model,
            attrs,
            calls,
            pos: 0,
        })
    }

    /// Starts a sequence at position 0 from `token`.
    pub fn start(&mut self, ctx: &Context, token: u32) {
        self.pos = 0;
        ctx.queue()
            .write_buffer(self.model.act.ids.buffer(), 0, &token.to_le_bytes());
    }

    /// The position the next step decodes at.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Host time to update and record `count` steps into encoders that are dropped, not
    /// submitted, in µs each: the host's cost alone, without a device working beside it (a
    /// software adapter's device is the same CPU). The sequence starts again at position 0
    /// afterwards.
    pub fn record_alone(&mut self, ctx: &Context, count: usize) -> Result<Vec<f64>, DecodeError> {
        self.pos = 0;
        let mut times = Vec::with_capacity(count);
        for _ in 0..count.min(self.model.config.max_positions) {
            let t = Instant::now();
            let mut encoder =
                ctx.device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("decode step, not submitted"),
                    });
            self.record_next(ctx, &mut encoder, Recording::OnePass(None))?;
            times.push(t.elapsed().as_secs_f64() * 1e6);
            drop(encoder);
        }
        self.pos = 0;
        Ok(times)
    }

    /// Each stage's op, the variant its plan chose and its dispatches, in order.
    pub fn schedule(&self) -> Vec<(crate::step::At, &'static str, &'static str, usize)> {
        (self.calls.entries.iter())
            .map(|e| {
                let plan = self.calls.call(e).plan();
                (e.at, plan.op, plan.variant, plan.passes.len())
            })
            .collect()
    }

    /// The stages a step records, in order (the per-layer-embedding combination counts
    /// twice: an add and a scale).
    pub fn stages(&self) -> impl Iterator<Item = crate::step::At> + '_ {
        self.calls.entries.iter().map(|e| e.at)
    }

    /// Sets the attributes that follow the position for the next token's step. Part of
    /// [`Decoder::record_next`]; on its own for measuring it.
    pub fn update(&mut self, ctx: &Context) -> Result<(), DecodeError> {
        if self.pos >= self.model.config.max_positions {
            return Err(DecodeError::PastCache {
                pos: self.pos,
                max: self.model.config.max_positions,
            });
        }
        self.calls
            .update(ctx, &mut self.attrs, &self.model, self.pos)
    }

    /// Records the next token's step into `encoder`: the position's updates, the rotation
    /// rows copied in, every call, and the token copied into the history.
    pub fn record_next(
        &mut self,
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        recording: Recording<'_>,
    ) -> Result<(), DecodeError> {
        self.update(ctx)?;
        self.record_updated(encoder, recording);
        Ok(())
    }

    /// [`Decoder::record_next`] after [`Decoder::update`].
    pub fn record_updated(&mut self, encoder: &mut wgpu::CommandEncoder, recording: Recording<'_>) {
        self.begin_token(encoder);
        match recording {
            Recording::OnePass(timestamp_writes) => {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("decode step"),
                    timestamp_writes,
                });
                self.record_pass(&mut pass);
            }
            Recording::PerStage(probe) => {
                let calls = &self.calls;
                for entry in &calls.entries {
                    {
                        let timestamp_writes = probe.pass_timestamps(entry.at);
                        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                            label: Some("decode stage"),
                            timestamp_writes,
                        });
                        calls.call(entry).record(&mut pass);
                    }
                    probe.after(encoder, entry.at, &entry.outputs);
                }
            }
        }
        self.finish_token(encoder);
    }

    /// The commands of a step before its compute passes: the position's rotation rows copied
    /// in, every call's intermediates cleared.
    pub fn begin_token(&self, encoder: &mut wgpu::CommandEncoder) {
        let (c, k) = (&self.model.config, &self.model.constants);
        let half_bytes = (c.head_dim / 2 * 4) as u64;
        for rotary in [&k.local, &k.global] {
            for (table, row) in [
                (&rotary.cos_table, &rotary.cos),
                (&rotary.sin_table, &rotary.sin),
            ] {
                let from = self.pos as u64 * half_bytes;
                encoder.copy_buffer_to_buffer(table.buffer(), from, row.buffer(), 0, half_bytes);
            }
        }
        for entry in &self.calls.entries {
            self.calls.call(entry).clear(encoder);
        }
    }

    /// Every call of the step, in order, into a compute pass the caller opened after
    /// [`Decoder::begin_token`].
    pub fn record_pass(&self, pass: &mut wgpu::ComputePass<'_>) {
        for entry in &self.calls.entries {
            self.calls.call(entry).record(pass);
        }
    }

    /// The commands of a step after its passes: the token copied into the history; the next
    /// step is at the next position.
    pub fn finish_token(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let a = &self.model.act;
        encoder.copy_buffer_to_buffer(a.ids.buffer(), 0, a.tokens.buffer(), 4 * self.pos as u64, 4);
        self.pos += 1;
    }

    /// Records the next token's step in an encoder of its own, one compute pass, and submits
    /// it without waiting for the device.
    pub fn step(&mut self, ctx: &Context) -> Result<(), DecodeError> {
        let mut encoder = ctx
            .device()
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("decode step"),
            });
        self.record_next(ctx, &mut encoder, Recording::OnePass(None))?;
        ctx.queue().submit(Some(encoder.finish()));
        Ok(())
    }

    /// The tokens decoded so far, read back (waits for the device).
    pub fn tokens(&self, ctx: &Context) -> Result<Vec<u32>, DecodeError> {
        let bytes = ctx.read_buffer(self.model.act.tokens.buffer(), 4 * self.pos as u64)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect())
    }

    /// Decodes `count` tokens greedily after `token`, one submission each, and reports the
    /// cost.
    pub fn generate(
        &mut self,
        ctx: &Context,
        token: u32,
        count: usize,
    ) -> Result<Report, DecodeError> {
        self.start(ctx, token);
        let mut host_us = Vec::with_capacity(count);
        let mut record_us = Vec::with_capacity(count);
        let start = Instant::now();
        let mut after_first = ctx.counts();
        for i in 0..count {
            let t = Instant::now();
            let mut encoder =
                ctx.device()
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("decode step"),
                    });
            self.record_next(ctx, &mut encoder, Recording::OnePass(None))?;
            record_us.push(t.elapsed().as_secs_f64() * 1e6);
            ctx.queue().submit(Some(encoder.finish()));
            host_us.push(t.elapsed().as_secs_f64() * 1e6);
            if i == 0 {
                after_first = ctx.counts();
            }
        }
        let after_last = ctx.counts();
        let tokens = self.tokens(ctx)?;
        let wall_s = start.elapsed().as_secs_f64();
        Ok(Report {
            tokens,
            wall_s,
            host_us,
            record_us,
            after_first,
            after_last,
        })
    }
}

/// The median of `times` after the first (which creates what later ones reuse).
fn later_median(times: &[f64]) -> f64 {
    let mut later: Vec<f64> = times.iter().skip(1).copied().collect();
    if later.is_empty() {
        later = times.to_vec();
    }
    later.sort_by(f64::total_cmp);
    later.get(later.len() / 2).copied().unwrap_or(0.0)
}
