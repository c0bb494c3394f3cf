//! The benchmark harness behind `cargo xtask bench`: cases from `benchmarks/cases/*.bench.json`,
//! the copy-kernel ceiling of the same run, what launching workgroups costs, per-case GPU times
//! from timestamp queries, and the host-side cost of calls; and the median the programs report
//! times by.

use std::time::Duration;

pub mod churn;
pub mod compile;
pub mod copy;
pub mod host;
pub mod launch;
pub mod run;
pub mod soak;
pub mod spec;

/// GPU time a kernel runs, back to back, before it is timed. The H200 drops its SM clock
/// (to 345 MHz) within a second of idling, on a device that has run work before, and only
/// raises it again after about a second of sustained work: a kernel timed in a short burst
/// after host work (uploads, reference checks, the previous case) runs 2.6× slower than the
/// same kernel in a steady loop (BENCHMARKS.md, "One device for everything"). Applications
/// that run kernels back to back get the full clock, so the harness measures there.
pub const WARM_UP: Duration = Duration::from_secs(1);

/// Runs one sustained batch of about `budget` of GPU time before timing: `timed(n)` runs
/// and times `n` back-to-back repetitions. A first batch of 20 sizes the second.
pub fn warm_up(
    budget: Duration,
    mut timed: impl FnMut(usize) -> anyhow::Result<Vec<Duration>>,
) -> anyhow::Result<()> {
    if budget.is_zero() {
        return Ok(());
    }
    let Some(each) = median(&timed(20)?) else {
        return Ok(());
    };
    let repetitions = (budget.as_secs_f64() / each.as_secs_f64().max(1e-7)) as usize;
    timed(repetitions.clamp(20, 50_000))?;
    Ok(())
}

pub use crate::data::median;

/// `median` in microseconds, 0 when there are no times.
pub fn median_us(times: &[Duration]) -> f64 {
    median(times).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_takes_the_middle_of_sorted_times() {
        let us = |v: &[u64]| {
            v.iter()
                .map(|&t| Duration::from_micros(t))
                .collect::<Vec<_>>()
        };
        assert_eq!(median(&us(&[30, 10, 20])), Some(Duration::from_micros(20)));
        assert_eq!(
            median(&us(&[40, 10, 30, 20])),
            Some(Duration::from_micros(30))
        );
        assert_eq!(median(&[]), None);
        assert!((median_us(&us(&[5, 7, 6])) - 6.0).abs() < 1e-9);
        assert_eq!(median_us(&[]), 0.0);
    }
}
