//! The long run (`bench --soak SECONDS`): the inference loop's chain, step after step on one
//! device, plus an allocating `run` per step, for as long as asked after a second of warm-up. It reports the time per
//! step and what the process and the runtime hold (resident memory; pipelines, bind groups,
//! uniform buffers and pooled intermediates) in the first and the last window of the run, so
//! growth or a slowdown over hours shows up as a difference between the two.
//!
//! Two controls run beside every step, and touch none of the runtime's caches or pools: an empty
//! submission waited for (the driver's and the wait's floor) and a fixed piece of host
//! arithmetic (the CPU's speed). When a step's time moves with them, the machine moved, not the
//! runtime.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use kernel_runtime::{Context, ContextCounts};
use serde::Serialize;

use crate::data::median;
use crate::inference_loop::Chain;

/// Positions the chain cycles through (its rotary caches hold this many).
const MAX_POSITIONS: usize = 4096;

/// One window of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// Seconds since the start at which the window begins.
    pub from_s: f64,
    pub steps: usize,
    /// Median and mean host time of one step (chain plus allocating run), microseconds.
    pub median_step_us: f64,
    pub mean_step_us: f64,
    /// Median time of an empty submission waited for, microseconds.
    pub median_empty_submit_us: f64,
    /// Median time of the fixed host arithmetic, microseconds.
    pub median_host_us: f64,
    /// Resident set size at the window's end, in KiB (`None` where the OS does not say).
    pub rss_kib: Option<u64>,
    pub pipelines: usize,
    pub bind_groups: usize,
    pub uniform_buffers: usize,
    pub pooled_intermediates: usize,
    pub pooled_intermediate_bytes: u64,
}

/// What the run measured.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub adapter: String,
    pub seconds: f64,
    pub steps: usize,
    pub window_s: f64,
    pub first: Window,
    pub last: Window,
    /// `last.median_step_us / first.median_step_us - 1`, in percent.
    pub step_change_percent: f64,
    /// The same for the two controls.
    pub empty_submit_change_percent: f64,
    pub host_change_percent: f64,
    /// Every full window in order (the first and the last among them): whether the medians
    /// drift or only scatter.
    pub windows: Vec<Window>,
    /// Whether every runtime count is the same after the last window as after the first.
    pub counts_flat: bool,
    /// Each stage of the last step against its float64 reference: (stage, max error, ok).
    pub checks: Vec<(String, f64, bool)>,
}

/// The process's resident set size in KiB, from `/proc/self/statm` (Linux).
pub fn rss_kib() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4)
}

/// Host arithmetic of a fixed size whose result the optimiser cannot drop.
fn host_control() -> f64 {
    (0..1024)
        .map(|i| std::hint::black_box(f64::from(i) * 1e-3).sin())
        .sum()
}

/// Host times of one window: the steps and the two controls beside each.
#[derive(Default)]
struct Times {
    steps: Vec<Duration>,
    empty_submits: Vec<Duration>,
    host: Vec<Duration>,
}

impl Times {
    fn clear(&mut self) {
        self.steps.clear();
        self.empty_submits.clear();
        self.host.clear();
    }
}

fn micros(times: &[Duration]) -> f64 {
    median(times).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

fn window(from: Duration, times: &Times, counts: ContextCounts) -> Window {
    let steps = &times.steps;
    let mean = steps.iter().map(|d| d.as_secs_f64() * 1e6).sum::<f64>() / steps.len().max(1) as f64;
    Window {
        from_s: from.as_secs_f64(),
        steps: steps.len(),
        median_step_us: micros(steps),
        mean_step_us: mean,
        median_empty_submit_us: micros(&times.empty_submits),
        median_host_us: micros(&times.host),
        rss_kib: rss_kib(),
        pipelines: counts.pipelines,
        bind_groups: counts.bind_groups,
        uniform_buffers: counts.uniform_buffers,
        pooled_intermediates: counts.pooled_intermediates,
        pooled_intermediate_bytes: counts.pooled_intermediate_bytes,
    }
}

/// Runs the chain for `seconds` on `ctx`. The windows are a minute long, or a tenth of the
/// run when it is shorter than ten minutes. Progress is printed every window.
pub fn run(ctx: &Context, seconds: u64) -> Result<SoakReport> {
    ensure!(seconds >= 2, "--soak needs at least 2 seconds");
    let total = Duration::from_secs(seconds);
    let window_len = Duration::from_secs(60).min(total / 10);
    let mut chain = Chain::new(ctx, MAX_POSITIONS, 7)?;
    // Pipelines compile and clocks rise in the first steps: a warm-up the windows leave out.
    let mut step = 0;
    let warming = Instant::now();
    while warming.elapsed() < super::WARM_UP {
        chain.step(ctx, step)?;
        chain.run_allocating(ctx)?;
        step += 1;
    }
    let warm_up_steps = step;
    let started = Instant::now();
    let mut current = Times::default();
    let mut window_start = Duration::ZERO;
    let mut windows: Vec<Window> = Vec::new();
    while started.elapsed() < total {
        let t = Instant::now();
        chain.step(ctx, step)?;
        chain.run_allocating(ctx)?;
        current.steps.push(t.elapsed());
        let t = Instant::now();
        ctx.submit(ctx.create_encoder())?;
        current.empty_submits.push(t.elapsed());
        let t = Instant::now();
        std::hint::black_box(host_control());
        current.host.push(t.elapsed());
        step += 1;
        let now = started.elapsed();
        if now - window_start >= window_len {
            let w = window(window_start, &current, ctx.counts());
            println!(
                "  {:>7.1} s: {} steps, median {:.1} µs (empty submit {:.1} µs, host control {:.1} µs), RSS {} KiB, {} pipelines, {} bind groups, {} uniform buffers, {} pooled intermediates",
                now.as_secs_f64(),
                w.steps,
                w.median_step_us,
                w.median_empty_submit_us,
                w.median_host_us,
                w.rss_kib.map_or("n/a".to_owned(), |k| k.to_string()),
                w.pipelines,
                w.bind_groups,
                w.uniform_buffers,
                w.pooled_intermediates
            );
            windows.push(w);
            current.clear();
            window_start = now;
        }
    }
    // Full windows only; the trailing part of one is left out unless it is all there is.
    if windows.is_empty() {
        windows.push(window(window_start, &current, ctx.counts()));
    }
    let (first, last) = (windows[0].clone(), windows[windows.len() - 1].clone());
    let counts = |w: &Window| {
        (
            w.pipelines,
            w.bind_groups,
            w.uniform_buffers,
            w.pooled_intermediates,
        )
    };
    let counts_flat = counts(&first) == counts(&last);
    let change = |f: fn(&Window) -> f64| (f(&last) / f(&first) - 1.0) * 100.0;
    let checks = chain
        .check(ctx)?
        .into_iter()
        .map(|(stage, c)| (stage.to_owned(), c.max_abs, c.passed()))
        .collect();
    Ok(SoakReport {
        adapter: ctx.adapter_summary(),
        seconds: started.elapsed().as_secs_f64(),
        steps: step - warm_up_steps,
        window_s: window_len.as_secs_f64(),
        step_change_percent: change(|w| w.median_step_us),
        empty_submit_change_percent: change(|w| w.median_empty_submit_us),
        host_change_percent: change(|w| w.median_host_us),
        first,
        last,
        windows,
        counts_flat,
        checks,
    })
}

/// The lowest and highest window median of `report`, in microseconds.
pub fn median_range(report: &SoakReport) -> (f64, f64) {
    report
        .windows
        .iter()
        .map(|w| w.median_step_us)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
            (lo.min(m), hi.max(m))
        })
}

/// Prints the report's summary table.
pub fn print(report: &SoakReport) {
    println!(
        "soak: {} steps in {:.0} s on {}; windows of {:.1} s",
        report.steps, report.seconds, report.adapter, report.window_s
    );
    println!(
        "window   from (s)    steps  median µs   mean µs  empty submit µs  host µs   RSS KiB  pipelines  bind groups  uniforms  pooled"
    );
    for (name, w) in [("first", &report.first), ("last", &report.last)] {
        println!(
            "{name:<6} {:>10.1} {:>8} {:>10.1} {:>9.1} {:>16.1} {:>8.1} {:>9} {:>10} {:>12} {:>9} {:>7}",
            w.from_s,
            w.steps,
            w.median_step_us,
            w.mean_step_us,
            w.median_empty_submit_us,
            w.median_host_us,
            w.rss_kib.map_or("n/a".to_owned(), |k| k.to_string()),
            w.pipelines,
            w.bind_groups,
            w.uniform_buffers,
            w.pooled_intermediates
        );
    }
    let (lo, hi) = median_range(report);
    println!(
        "time per step {:+.2}% from the first window to the last (window medians {lo:.1} to {hi:.1} µs over {} windows); runtime counts {}",
        report.step_change_percent,
        report.windows.len(),
        if report.counts_flat {
            "flat"
        } else {
            "CHANGED"
        }
    );
    println!(
        "controls from the first window to the last: empty submit {:+.2}%, host arithmetic {:+.2}%",
        report.empty_submit_change_percent, report.host_change_percent
    );
    for (stage, err, ok) in &report.checks {
        println!(
            "  last step {stage}: max error {err:.2e} {}",
            if *ok { "ok" } else { "MISMATCH" }
        );
    }
}
