//! The device-slowdown experiment (`bench --churn`): the copy kernel's time on one device
//! before and after rounds of creating, filling and dropping large buffers, one fresh device
//! per way of filling them, so the ways can be told apart.
//!
//! Every way but `runtime` uses wgpu directly: `clear_buffer`, one whole-buffer
//! `queue.write_buffer`, a `mapped_at_creation` buffer, or a `MAP_WRITE` buffer of the whole
//! size created and dropped without any copy. `runtime` is `Tensor::from_slice`, whose
//! uploads go through the context's bounded staging.

use anyhow::Result;
use kernel_runtime::{Context, ContextOptions, Tensor, wgpu};
use serde::Serialize;

use super::copy::{CopyKind, CopyProbe};

/// How the churned buffers are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// No buffers: the host sleeps as long as a round of whole-buffer writes takes.
    Idle,
    /// Many 64 MiB buffers instead of two large ones, cleared.
    ClearSmall,
    Clear,
    WriteBufferWhole,
    MappedAtCreation,
    MapWriteAllocationOnly,
    Runtime,
}

impl Fill {
    pub const ALL: [Fill; 7] = [
        Fill::Idle,
        Fill::ClearSmall,
        Fill::Clear,
        Fill::WriteBufferWhole,
        Fill::MappedAtCreation,
        Fill::MapWriteAllocationOnly,
        Fill::Runtime,
    ];
}

/// One way of filling, measured.
#[derive(Debug, Clone, Serialize)]
pub struct ChurnResult {
    pub fill: Fill,
    /// Bytes of each churned buffer (two per round) and of the large probe.
    pub bytes: u64,
    pub rounds: usize,
    /// The large probe (made before the churn) before and after it, µs.
    pub before_us: f64,
    pub after_us: f64,
    /// The large probe measured again, four more times in a row after the churn.
    pub after_series_us: Vec<f64>,
    /// The large probe after about a second of copies keeping the GPU busy.
    pub after_busy_us: f64,
    /// A new large probe made after the churn, measured after a second of its copies.
    pub new_after_busy_us: f64,
    /// A 64 MiB probe made after the churn.
    pub small_after_us: f64,
    /// A 64 MiB probe on a fresh device, for comparison.
    pub small_fresh_us: f64,
    /// Host time of all rounds, seconds.
    pub churn_s: f64,
}

const SMALL: u64 = 64 << 20;

/// Runs every fill on a device of its own.
pub fn run(
    options: &ContextOptions,
    bytes: u64,
    rounds: usize,
    repetitions: usize,
) -> Result<Vec<ChurnResult>> {
    let mut results = Vec::new();
    for fill in Fill::ALL {
        let ctx = Context::with_options(options)?;
        let small_fresh =
            CopyProbe::new(&ctx, CopyKind::Vec4, SMALL)?.measure(&ctx, repetitions)?;
        let probe = CopyProbe::new(&ctx, CopyKind::Vec4, bytes)?;
        let before = probe.measure(&ctx, repetitions)?;
        let started = std::time::Instant::now();
        for _ in 0..rounds {
            churn(&ctx, fill, bytes)?;
        }
        let churn_s = started.elapsed().as_secs_f64();
        let after = probe.measure(&ctx, repetitions)?;
        let mut after_series_us = Vec::new();
        for _ in 0..4 {
            after_series_us.push(probe.measure(&ctx, repetitions)?.median_us);
        }
        let busy_repetitions = ((1e6 / before.median_us.max(1.0)) as usize).clamp(20, 4096);
        probe.measure(&ctx, busy_repetitions)?;
        let after_busy_us = probe.measure(&ctx, repetitions)?.median_us;
        let new_probe = CopyProbe::new(&ctx, CopyKind::Vec4, bytes)?;
        new_probe.measure(&ctx, busy_repetitions)?;
        let new_after_busy_us = new_probe.measure(&ctx, repetitions)?.median_us;
        drop(new_probe);
        let small_after =
            CopyProbe::new(&ctx, CopyKind::Vec4, SMALL)?.measure(&ctx, repetitions)?;
        let result = ChurnResult {
            fill,
            bytes,
            rounds,
            before_us: before.median_us,
            after_us: after.median_us,
            after_series_us,
            after_busy_us,
            new_after_busy_us,
            small_after_us: small_after.median_us,
            small_fresh_us: small_fresh.median_us,
            churn_s,
        };
        eprintln!(
            "churn {fill:?}: probe {:.1} → {:.1} µs (then {:?}; after 1 s busy {:.1}; a new one {:.1}); 64 MiB {:.1} (fresh {:.1}); {rounds} rounds in {:.1} s",
            result.before_us,
            result.after_us,
            result
                .after_series_us
                .iter()
                .map(|t| t.round())
                .collect::<Vec<_>>(),
            result.after_busy_us,
            result.new_after_busy_us,
            result.small_after_us,
            result.small_fresh_us,
            churn_s
        );
        results.push(result);
    }
    Ok(results)
}

/// Creates two buffers of `bytes`, fills them by `fill`, waits, and drops them.
fn churn(ctx: &Context, fill: Fill, bytes: u64) -> Result<()> {
    let device = ctx.device();
    let queue = ctx.queue();
    let storage = |mapped| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("churn"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_DST
                | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: mapped,
        })
    };
    // Host data only for the fills that write it, made once for both buffers.
    let data = matches!(fill, Fill::WriteBufferWhole | Fill::MappedAtCreation)
        .then(|| vec![0x3fu8; bytes as usize])
        .unwrap_or_default();
    match fill {
        Fill::Idle => {
            std::thread::sleep(std::time::Duration::from_millis(1500));
            return Ok(());
        }
        Fill::ClearSmall => {
            let pieces = (2 * bytes / SMALL).max(1);
            let buffers: Vec<wgpu::Buffer> = (0..pieces)
                .map(|_| {
                    device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("churn piece"),
                        size: SMALL,
                        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    })
                })
                .collect();
            let mut encoder = ctx.create_encoder();
            for buffer in &buffers {
                encoder.clear_buffer(buffer, 0, None);
            }
            ctx.submit(encoder)?;
            return Ok(());
        }
        _ => {}
    }
    for _ in 0..2 {
        match fill {
            Fill::Idle | Fill::ClearSmall => {}
            Fill::Clear => {
                let buffer = storage(false);
                let mut encoder = ctx.create_encoder();
                encoder.clear_buffer(&buffer, 0, None);
                ctx.submit(encoder)?;
            }
            Fill::WriteBufferWhole => {
                let buffer = storage(false);
                queue.write_buffer(&buffer, 0, &data);
                ctx.submit(ctx.create_encoder())?;
            }
            Fill::MappedAtCreation => {
                let buffer = storage(true);
                buffer.get_mapped_range_mut(..)?.copy_from_slice(&data);
                buffer.unmap();
                ctx.submit(ctx.create_encoder())?;
            }
            Fill::MapWriteAllocationOnly => {
                let staging = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("churn staging"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                drop(staging);
                ctx.submit(ctx.create_encoder())?;
            }
            Fill::Runtime => {
                let floats = vec![1.5f32; bytes as usize / 4];
                let tensor = Tensor::<f32>::from_slice(ctx, &[floats.len()], &floats)?;
                drop(tensor);
            }
        }
    }
    Ok(())
}
