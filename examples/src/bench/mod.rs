//! The benchmark harness behind `cargo xtask bench`: cases from `manifests/*.bench.json`,
//! the copy-kernel ceiling of the same run, per-case GPU times from timestamp queries, and
//! the host-side cost of calls; and the median the programs report times by.

use std::time::Duration;

pub mod copy;
pub mod host;
pub mod run;
pub mod spec;

/// The median of `times` (the upper one of an even count), or `None` when there are none.
pub fn median(times: &[Duration]) -> Option<Duration> {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

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
