//! What a token costs: the decoder on the application's own device (with timestamp queries
//! inside encoders where the adapter has them), an untimed run for what an application gets
//! (tokens per second, host time per token, the runtime's counts) and a run with a timestamp
//! at every stage boundary for the GPU's time per token and per stage.

use std::collections::BTreeMap;

use kernel_runtime::{Context, ContextCounts, wgpu};

use crate::config::Config;
use crate::run::Decoder;
use crate::step::{At, DecodeError, Probe, Stage};
use crate::weights::Weights;

/// A device of the application's own on the preferred adapter (`KERNELS_ADAPTER` names one by
/// part of its name; else a discrete GPU first), with the adapter's limits and the optional
/// features the packages use, plus timestamp queries inside encoders where offered.
pub fn own_context() -> Result<Context, String> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
    let wanted = std::env::var("KERNELS_ADAPTER")
        .ok()
        .map(|s| s.to_lowercase());
    let rank = |a: &wgpu::Adapter| match a.get_info().device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::Cpu => 2,
        _ => 3,
    };
    let adapter = adapters
        .into_iter()
        .filter(|a| {
            wanted
                .as_ref()
                .is_none_or(|w| a.get_info().name.to_lowercase().contains(w))
        })
        .min_by_key(rank)
        .ok_or_else(|| format!("no adapter (KERNELS_ADAPTER={wanted:?})"))?;
    let features = adapter.features()
        & (wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("gemma-decoder"),
        required_features: features,
        required_limits: adapter.limits(),
        ..wgpu::DeviceDescriptor::default()
    }))
    .map_err(|e| format!("requesting a device: {e}"))?;
    Ok(Context::from_wgpu(device, queue, adapter.get_info()))
}

/// What decoding `tokens` tokens cost on one device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Timing {
    pub adapter: String,
    pub config: String,
    pub tokens: usize,
    /// Untimed run: tokens per second, host time per token to record and submit (median
    /// after the first), dispatches and compute passes per token, and the objects created
    /// after the first token.
    pub tokens_per_s: f64,
    pub host_us: f64,
    pub first_host_us: f64,
    pub dispatches: f64,
    pub compute_passes: f64,
    pub created_after_first: [u64; 3],
    /// Timed run: the GPU's time per token (median), and per stage kind summed over the
    /// layers (median over tokens), from timestamps at stage boundaries. `None` without
    /// timestamp queries inside encoders.
    pub gpu_us: Option<f64>,
    pub stage_us: Vec<(Stage, f64)>,
    /// Bytes one token must read at least: every weight but the embedding tables (one row of
    /// each), and the KV cache positions attended, averaged over the run.
    pub bytes_per_token: f64,
}

/// Stage timestamps into one query set, copied after each token into a history buffer.
struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    history: wgpu::Buffer,
    per_token: u32,
    next: u32,
    order: Vec<At>,
}

impl Probe for Stamps {
    fn after(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        at: At,
        _: &[(&'static str, &wgpu::Buffer)],
    ) {
        if self.next < self.per_token {
            encoder.write_timestamp(&self.set, self.next);
            self.next += 1;
            if self.order.len() < self.per_token as usize - 1 {
                self.order.push(at);
            }
        }
    }
}

fn counts_created(c: &ContextCounts) -> [u64; 3] {
    [
        c.buffers_created,
        c.bind_groups_created,
        c.pipelines_created,
    ]
}

/// Decodes `tokens` tokens from position 0 twice (after as many untimed with `warm_up`):
/// untimed, then with timestamps where the device has them.
pub fn time(
    ctx: &Context,
    config: &Config,
    seed: u64,
    tokens: usize,
    warm_up: bool,
) -> Result<Timing, DecodeError> {
    let weights = Weights::seeded(config, seed);
    let bytes_per_token = weights.bytes_read_per_token(config, tokens);
    let mut decoder = Decoder::new(ctx, config, &weights)?;
    drop(weights);
    if warm_up {
        // Pipelines, bind groups and the GPU's clocks, before anything is timed.
        decoder.generate(ctx, 1, tokens)?;
    }
    let report = decoder.generate(ctx, 1, tokens)?;
    let later = tokens.saturating_sub(1).max(1) as f64;
    let per_token = |f: fn(&ContextCounts) -> u64| {
        (f(&report.after_last) - f(&report.after_first)) as f64 / later
    };
    let mut timing = Timing {
        adapter: ctx.adapter_summary(),
        config: config.summary(),
        tokens,
        tokens_per_s: report.tokens_per_s(),
        host_us: report.host_us_median(),
        first_host_us: report.host_us.first().copied().unwrap_or(0.0),
        dispatches: per_token(|c| c.dispatches_recorded),
        compute_passes: per_token(|c| c.compute_passes_recorded),
        created_after_first: {
            let (a, b) = (
                counts_created(&report.after_first),
                counts_created(&report.after_last),
            );
            [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
        },
        gpu_us: None,
        stage_us: Vec::new(),
        bytes_per_token,
    };
    if ctx
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
    {
        let (gpu, stages) = timed_run(ctx, &mut decoder, config, tokens)?;
        timing.gpu_us = Some(gpu);
        timing.stage_us = stages;
    }
    Ok(timing)
}

/// The timed run: a timestamp at the start of each token and after each stage.
fn timed_run(
    ctx: &Context,
    decoder: &mut Decoder,
    config: &Config,
    tokens: usize,
) -> Result<(f64, Vec<(Stage, f64)>), DecodeError> {
    let stages = Stage::BEFORE.len() + config.layers * Stage::LAYER.len() + Stage::AFTER.len();
    let per_token = (stages + 1) as u32;
    let device = ctx.device();
    let bytes = 8 * u64::from(per_token);
    let mut stamps = Stamps {
        set: device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("stage stamps"),
            ty: wgpu::QueryType::Timestamp,
            count: per_token,
        }),
        resolve: device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("stage stamps"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        }),
        history: device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("stage stamp history"),
            size: bytes * tokens as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        }),
        per_token,
        next: 0,
        order: Vec::new(),
    };
    decoder.start(ctx, 1);
    for token in 0..tokens {
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encoder.write_timestamp(&stamps.set, 0);
        stamps.next = 1;
        decoder.record_next(ctx, &mut encoder, &mut stamps)?;
        encoder.resolve_query_set(&stamps.set, 0..per_token, &stamps.resolve, 0);
        encoder.copy_buffer_to_buffer(
            &stamps.resolve,
            0,
            &stamps.history,
            bytes * token as u64,
            bytes,
        );
        ctx.queue().submit(Some(encoder.finish()));
    }
    let raw = ctx.read_buffer(&stamps.history, bytes * tokens as u64)?;
    let ticks: Vec<u64> = raw
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
        .collect();
    let ns = f64::from(ctx.queue().get_timestamp_period());
    let us = |a: u64, b: u64| b.saturating_sub(a) as f64 * ns / 1e3;
    let n = per_token as usize;
    let mut totals = Vec::with_capacity(tokens);
    let mut by_stage: BTreeMap<usize, (Stage, Vec<f64>)> = BTreeMap::new();
    for t in ticks.chunks_exact(n) {
        totals.push(us(t[0], t[n - 1]));
        let mut sums: BTreeMap<usize, (Stage, f64)> = BTreeMap::new();
        for (i, at) in stamps.order.iter().enumerate() {
            let kind = stage_index(at.stage);
            let entry = sums.entry(kind).or_insert((at.stage, 0.0));
            entry.1 += us(t[i], t[i + 1]);
        }
        for (kind, (stage, sum)) in sums {
            by_stage
                .entry(kind)
                .or_insert((stage, Vec::new()))
                .1
                .push(sum);
        }
    }
    let stage_us = by_stage
        .into_values()
        .map(|(stage, times)| (stage, median(times)))
        .collect();
    Ok((median(totals), stage_us))
}

/// A stage's place in the step, for ordering the per-stage table.
fn stage_index(stage: Stage) -> usize {
    Stage::BEFORE
        .iter()
        .chain(Stage::LAYER)
        .chain(Stage::AFTER)
        .position(|&s| s == stage)
        .unwrap_or(usize::MAX)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Prints `timing` as a short table; `copy_gbps` (read + written bytes per second of the copy
/// kernel measured in the same run) gives the streaming bound.
pub fn print(timing: &Timing, copy_gbps: Option<f64>) {
    println!("decode, {}", timing.config);
    println!("  adapter {}", timing.adapter);
    println!(
        "  {} tokens: {:.1} tokens/s ({:.0} µs per token); host {:.0} µs per token to record and submit ({:.0} the first)",
        timing.tokens,
        timing.tokens_per_s,
        1e6 / timing.tokens_per_s,
        timing.host_us,
        timing.first_host_us
    );
    println!(
        "  {:.0} dispatches and {:.0} compute passes per token ({:.2} µs of host time per dispatch); created after the first token: {} buffers, {} bind groups, {} pipelines",
        timing.dispatches,
        timing.compute_passes,
        timing.host_us / timing.dispatches.max(1.0),
        timing.created_after_first[0],
        timing.created_after_first[1],
        timing.created_after_first[2]
    );
    let Some(gpu) = timing.gpu_us else {
        println!("  GPU time: n/a (no timestamp queries inside encoders)");
        return;
    };
    let bound = copy_gbps.map(|gbps| timing.bytes_per_token / (gbps * 1e3));
    println!(
        "  GPU {gpu:.0} µs per token; {:.1} MB read at least{}",
        timing.bytes_per_token / 1e6,
        bound.map_or(String::new(), |b| format!(
            ", {b:.0} µs at the copy ceiling: {:.0}% of the bound",
            100.0 * b / gpu
        ))
    );
    for (stage, us) in &timing.stage_us {
        println!("    {:<14} {us:>9.1} µs", format!("{stage:?}"));
    }
}
