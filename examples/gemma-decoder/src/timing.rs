//! What a token costs: the decoder on the application's own device, an untimed run for what an
//! application gets (tokens per second, host time per token, the runtime's counts), a run with
//! timestamps around each token's one compute pass (the GPU's time per token), and a run with a
//! compute pass per stage, timestamps at each pass's beginning and end (each stage's time, and
//! the gaps between passes).

use kernel_runtime::{Context, ContextCounts, wgpu};

use crate::config::Config;
use crate::run::Decoder;
use crate::step::{At, DecodeError, Probe, Recording, Stage};
use crate::weights::Weights;

/// A device of the application's own on the preferred adapter (`KERNELS_ADAPTER` names one by
/// part of its name; else a discrete GPU first), with the adapter's limits and the optional
/// features the packages use, plus timestamp queries where offered.
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
        & (wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY);
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
    /// Untimed run: tokens per second, host time per token to update and record the step and
    /// submit it (median after the first), dispatches and compute passes per token, and the
    /// objects created after the first token.
    pub tokens_per_s: f64,
    pub host_us: f64,
    pub first_host_us: f64,
    /// The part of `host_us` that updates the position's calls and records the step.
    pub record_us: f64,
    /// The same with no device work beside it (steps recorded and not submitted): the host's
    /// cost alone, per token and per dispatch.
    pub record_alone_us: f64,
    pub dispatches: f64,
    pub compute_passes: f64,
    pub created_after_first: [u64; 3],
    /// The GPU's time per token (median) in one compute pass, from timestamps at its
    /// beginning and end; `None` without timestamp queries.
    pub gpu_us: Option<f64>,
    /// With a compute pass per stage: the token's time, each stage kind's time inside its
    /// passes summed over the layers, and the time between passes, summed (medians).
    pub per_stage_gpu_us: Option<f64>,
    pub stage_us: Vec<(Stage, f64)>,
    pub between_passes_us: Option<f64>,
    /// The bytes each stage kind must read per token (weights, and attention's cache).
    pub stage_bytes: Vec<(&'static str, f64)>,
    /// Each stage kind's op (its name without the domain), the variant chosen (in the first
    /// layer that has the stage) and its dispatches.
    pub variants: Vec<(Stage, String, String, usize)>,
    /// Bytes one token must read at least: every weight but the embedding tables (one row of
    /// each), and the KV cache positions attended, averaged over the run.
    pub bytes_per_token: f64,
}

/// Timestamps into one query set, resolved after each token into a history buffer.
struct Stamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    history: wgpu::Buffer,
    per_token: u32,
    next: u32,
}

impl Stamps {
    fn new(ctx: &Context, per_token: u32, tokens: usize) -> Self {
        let device = ctx.device();
        let bytes = 8 * u64::from(per_token);
        Stamps {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("decode stamps"),
                ty: wgpu::QueryType::Timestamp,
                count: per_token,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("decode stamps"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            history: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("decode stamp history"),
                size: bytes * tokens as u64,
                usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            per_token,
            next: 0,
        }
    }

    /// The next two timestamps, as a pass's beginning and end.
    fn pass(&mut self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let begin = self.next;
        if begin + 1 >= self.per_token {
            return None;
        }
        self.next += 2;
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(begin),
            end_of_pass_write_index: Some(begin + 1),
        })
    }

    /// Resolves this token's timestamps into the history, at token `token`.
    fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder, token: usize) {
        let bytes = 8 * u64::from(self.per_token);
        encoder.resolve_query_set(&self.set, 0..self.per_token, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.history, bytes * token as u64, bytes);
        self.next = 0;
    }

    /// Every token's timestamps, in µs from the token's first.
    fn read(&self, ctx: &Context, tokens: usize) -> Result<Vec<Vec<f64>>, DecodeError> {
        let bytes = 8 * u64::from(self.per_token) * tokens as u64;
        let raw = ctx.read_buffer(&self.history, bytes)?;
        let ns = f64::from(ctx.queue().get_timestamp_period());
        let ticks: Vec<u64> = raw
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect();
        Ok(ticks
            .chunks_exact(self.per_token as usize)
            .map(|t| {
                t.iter()
                    .map(|&v| v.saturating_sub(t[0]) as f64 * ns / 1e3)
                    .collect()
            })
            .collect())
    }
}

impl Probe for Stamps {
    fn pass_timestamps(&mut self, _: At) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        self.pass()
    }

    fn after(&mut self, _: &mut wgpu::CommandEncoder, _: At, _: &[(&'static str, wgpu::Buffer)]) {}
}

fn counts_created(c: &ContextCounts) -> [u64; 3] {
    [
        c.buffers_created,
        c.bind_groups_created,
        c.pipelines_created,
    ]
}

/// Decodes `tokens` tokens from position 0 three times (after as many untimed with
/// `warm_up`): untimed, then with timestamps around each token's pass, then with a pass per
/// stage, where the device has timestamp queries.
pub fn time(
    ctx: &Context,
    config: &Config,
    seed: u64,
    tokens: usize,
    warm_up: bool,
) -> Result<Timing, DecodeError> {
    let weights = Weights::seeded(config, seed);
    let bytes_per_token = weights.bytes_read_per_token(config, tokens);
    let stage_bytes = weights.stage_bytes(config, tokens);
    let mut decoder = Decoder::new(ctx, config, &weights)?;
    drop(weights);
    if warm_up {
        // Pipelines and the GPU's clocks, before anything is timed.
        decoder.generate(ctx, 1, tokens)?;
    }
    let report = decoder.generate(ctx, 1, tokens)?;
    let later = tokens.saturating_sub(1).max(1) as f64;
    let per_token = |f: fn(&ContextCounts) -> u64| {
        (f(&report.after_last) - f(&report.after_first)) as f64 / later
    };
    let (a, b) = (
        counts_created(&report.after_first),
        counts_created(&report.after_last),
    );
    let mut timing = Timing {
        adapter: ctx.adapter_summary(),
        config: config.summary(),
        tokens,
        tokens_per_s: report.tokens_per_s(),
        host_us: report.host_us_median(),
        first_host_us: report.host_us.first().copied().unwrap_or(0.0),
        record_us: report.record_us_median(),
        record_alone_us: median(decoder.record_alone(ctx, tokens)?),
        dispatches: per_token(|c| c.dispatches_recorded),
        // The runtime's passes, and the decoder's own one per token.
        compute_passes: per_token(|c| c.compute_passes_recorded) + 1.0,
        created_after_first: [b[0] - a[0], b[1] - a[1], b[2] - a[2]],
        gpu_us: None,
        per_stage_gpu_us: None,
        stage_us: Vec::new(),
        between_passes_us: None,
        stage_bytes,
        variants: {
            let mut seen: Vec<(Stage, String, String, usize)> = Vec::new();
            for (at, op, variant, passes) in decoder.schedule() {
                let op = op.rsplit('.').next().unwrap_or(op);
                match seen.iter_mut().find(|s| s.0 == at.stage) {
                    // The combination of the per-layer embeddings is two ops.
                    Some(s) if s.1 != op => {
                        s.1 = format!("{} + {op}", s.1);
                        s.2 = format!("{} + {variant}", s.2);
                        s.3 += passes;
                    }
                    Some(_) => {}
                    None => seen.push((at.stage, op.to_owned(), variant.to_owned(), passes)),
                }
            }
            seen
        },
        bytes_per_token,
    };
    if !ctx
        .device()
        .features()
        .contains(wgpu::Features::TIMESTAMP_QUERY)
    {
        return Ok(timing);
    }

    // One pass per token, timed at its beginning and end.
    let mut stamps = Stamps::new(ctx, 2, tokens);
    decoder.start(ctx, 1);
    for token in 0..tokens {
        let mut encoder = ctx.create_encoder();
        decoder.record_next(ctx, &mut encoder, Recording::OnePass(stamps.pass()))?;
        stamps.resolve(&mut encoder, token);
        ctx.queue().submit(Some(encoder.finish()));
    }
    timing.gpu_us = Some(median(
        stamps.read(ctx, tokens)?.iter().map(|t| t[1]).collect(),
    ));

    // A pass per stage, each timed.
    let stages: Vec<At> = decoder.stages().collect();
    let mut stamps = Stamps::new(ctx, 2 * stages.len() as u32, tokens);
    decoder.start(ctx, 1);
    for token in 0..tokens {
        let mut encoder = ctx.create_encoder();
        decoder.record_next(ctx, &mut encoder, Recording::PerStage(&mut stamps))?;
        stamps.resolve(&mut encoder, token);
        ctx.queue().submit(Some(encoder.finish()));
    }
    let times = stamps.read(ctx, tokens)?;
    let mut kinds: Vec<Stage> = Vec::new();
    for at in &stages {
        if !kinds.contains(&at.stage) {
            kinds.push(at.stage);
        }
    }
    let mut per_kind = vec![Vec::with_capacity(tokens); kinds.len()];
    let mut totals = Vec::with_capacity(tokens);
    let mut gaps = Vec::with_capacity(tokens);
    for t in &times {
        let mut sums = vec![0.0; kinds.len()];
        let mut gap = 0.0;
        for (i, at) in stages.iter().enumerate() {
            let k = kinds.iter().position(|&s| s == at.stage).unwrap_or(0);
            sums[k] += t[2 * i + 1] - t[2 * i];
            if i > 0 {
                gap += t[2 * i] - t[2 * i - 1];
            }
        }
        for (k, sum) in sums.into_iter().enumerate() {
            per_kind[k].push(sum);
        }
        totals.push(t[t.len() - 1]);
        gaps.push(gap);
    }
    timing.per_stage_gpu_us = Some(median(totals));
    timing.between_passes_us = Some(median(gaps));
    timing.stage_us = kinds
        .into_iter()
        .zip(per_kind.into_iter().map(median))
        .collect();
    Ok(timing)
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
        "  {} tokens: {:.1} tokens/s ({:.0} µs per token); host {:.0} µs per token to update, record and submit ({:.0} the first)",
        timing.tokens,
        timing.tokens_per_s,
        1e6 / timing.tokens_per_s,
        timing.host_us,
        timing.first_host_us
    );
    let per_dispatch = |us: f64| us / timing.dispatches.max(1.0);
    println!(
        "  {:.0} dispatches in {:.0} compute passes per token; to update and record a token {:.1} µs ({:.3} per dispatch), {:.1} µs with no device work beside it ({:.3} per dispatch)",
        timing.dispatches,
        timing.compute_passes,
        timing.record_us,
        per_dispatch(timing.record_us),
        timing.record_alone_us,
        per_dispatch(timing.record_alone_us),
    );
    println!(
        "  created after the first token: {} buffers, {} bind groups, {} pipelines",
        timing.created_after_first[0], timing.created_after_first[1], timing.created_after_first[2]
    );
    let Some(gpu) = timing.gpu_us else {
        println!("  GPU time: n/a (no timestamp queries)");
        return;
    };
    let bound = copy_gbps.map(|gbps| timing.bytes_per_token / (gbps * 1e3));
    println!(
        "  GPU {gpu:.0} µs per token in one pass; {:.1} MB read at least{}",
        timing.bytes_per_token / 1e6,
        bound.map_or(String::new(), |b| format!(
            ", {b:.0} µs at the copy ceiling: {:.0}% of the bound",
            100.0 * b / gpu
        ))
    );
    if let (Some(total), Some(gaps)) = (timing.per_stage_gpu_us, timing.between_passes_us) {
        println!(
            "  with a pass per stage: {total:.0} µs per token, {:.0} inside the passes and {gaps:.0} between them",
            total - gaps
        );
    }
    for (stage, us) in &timing.stage_us {
        let name = format!("{stage:?}");
        let rate = (timing.stage_bytes.iter())
            .find(|(s, _)| *s == name)
            .map_or(String::new(), |(_, bytes)| {
                format!("{:>8.1} MB {:>6.0} GB/s", bytes / 1e6, bytes / (us * 1e3))
            });
        let variant = (timing.variants.iter()).find(|v| v.0 == *stage).map_or(
            String::new(),
            |(_, op, variant, passes)| {
                let s = if *passes == 1 { "" } else { "es" };
                format!("{op}/{variant} ({passes} pass{s})")
            },
        );
        println!("    {name:<14} {us:>9.1} µs {rate:<24} {variant}");
    }
}
