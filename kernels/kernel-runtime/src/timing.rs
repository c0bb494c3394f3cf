//! GPU timing of plans, whole and per pass, through timestamp queries at pass boundaries.

use std::time::Duration;

use crate::args::Arg;
use crate::caps::FEATURE_TIMESTAMP_QUERY;
use crate::error::RuntimeError;
use crate::plan::Plan;
use crate::record::{Recorder, Timestamps};

/// Repetitions recorded into one command buffer at most; fewer for plans of many passes, so
/// the query set (two queries per pass and repetition) stays within wgpu's
/// `QUERY_SET_MAX_QUERIES`.
const REPEATS_PER_BATCH: usize = 512;
const MAX_QUERIES_PER_SET: usize = 4096;

/// GPU times of a plan, per repetition.
#[derive(Debug, Clone, Default)]
pub struct PlanTimes {
    /// From the beginning of the first pass to the end of the last.
    pub total: Vec<Duration>,
    /// Each pass that ran (passes with no workgroups are skipped), by pass id: from its
    /// beginning to its end.
    pub passes: Vec<(&'static str, Vec<Duration>)>,
}

/// Times plans by recording them with timestamp writes.
pub(crate) struct Timer<'a>(pub(crate) Recorder<'a>);

impl Timer<'_> {
    /// GPU time of `plan` per repetition (see [`crate::Context::time_plan`]).
    pub(crate) async fn time_plan(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<Vec<Duration>, RuntimeError> {
        Ok(self.time_totals(plan, args, repeats).await?.1)
    }

    /// GPU time of `plan` and of each of its passes (see [`crate::Context::time_plan_passes`]).
    pub(crate) async fn time_plan_passes(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<PlanTimes, RuntimeError> {
        let (active, total) = self.time_totals(plan, args, repeats).await?;
        let passes = match active.as_slice() {
            [] => Vec::new(),
            [only] => vec![(*only, total.clone())],
            _ => {
                let mut passes: Vec<_> = active
                    .iter()
                    .map(|&id| (id, Vec::with_capacity(repeats)))
                    .collect();
                for repeat in self.time_repeats(plan, args, active.len(), repeats).await? {
                    for (pass, time) in passes.iter_mut().zip(repeat) {
                        pass.1.push(time);
                    }
                }
                passes
            }
        };
        Ok(PlanTimes { total, passes })
    }

    /// The ids of the plan's active passes and its total time per repetition, after one
    /// untimed warm-up run (zero durations when nothing is active).
    async fn time_totals(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<(Vec<&'static str>, Vec<Duration>), RuntimeError> {
        if !self.0.gpu.caps.timestamp_query {
            return Err(RuntimeError::MissingFeature(FEATURE_TIMESTAMP_QUERY));
        }
        let active: Vec<&'static str> = plan
            .active_passes(self.0.gpu.max_workgroups_per_dimension())?
            .iter()
            .map(|(pass, _)| pass.id)
            .collect();
        if active.is_empty() {
            return Ok((active, vec![Duration::ZERO; repeats]));
        }
        self.0.run(plan, args)?;
        let total = self
            .time_repeats(plan, args, 1, repeats)
            .await?
            .into_iter()
            .flatten()
            .collect();
        Ok((active, total))
    }

    /// `repeats` timed recordings of `plan`, each giving `spans` durations: the whole plan
    /// when `spans` is 1, each active pass otherwise.
    async fn time_repeats(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        spans: usize,
        repeats: usize,
    ) -> Result<Vec<Vec<Duration>>, RuntimeError> {
        let per_batch = (MAX_QUERIES_PER_SET / (2 * spans)).clamp(1, REPEATS_PER_BATCH);
        let mut out = Vec::with_capacity(repeats);
        let mut left = repeats;
        while left > 0 {
            let batch = left.min(per_batch);
            out.extend(self.time_batch(plan, args, spans, batch).await?);
            left -= batch;
        }
        Ok(out)
    }

    async fn time_batch(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        spans: usize,
        repeats: usize,
    ) -> Result<Vec<Vec<Duration>>, RuntimeError> {
        // `spans * repeats` is at most MAX_QUERIES_PER_SET / 2, so these cannot truncate.
        let per_repeat = (2 * spans) as u32;
        let queries = per_repeat * repeats as u32;
        let bytes = u64::from(queries) * u64::from(wgpu::QUERY_SIZE);
        let query_set = self.0.gpu.scoped("timestamp queries", || {
            self.0
                .gpu
                .device
                .create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("kernel-runtime timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: queries,
                })
        })?;
        let resolve = self.0.gpu.create_buffer(
            "timestamp resolve",
            bytes,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        )?;

        let label = plan.label();
        let mut encoder = self.0.gpu.encoder(&label);
        for r in 0..repeats as u32 {
            let first = r * per_repeat;
            let ts = if spans == 1 {
                Timestamps::Whole(&query_set, first)
            } else {
                Timestamps::PerPass(&query_set, first)
            };
            self.0.record(&mut encoder, plan, args, ts, false)?;
        }
        encoder.resolve_query_set(&query_set, 0..queries, &resolve, 0);
        self.0.gpu.submit(encoder, &label)?;

        let raw = self
            .0
            .caches
            .staging
            .read(self.0.gpu, &resolve, 0, bytes)
            .await?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
        let period_ns = f64::from(self.0.gpu.queue.get_timestamp_period());
        Ok(ticks
            .chunks_exact(per_repeat as usize)
            .map(|repeat| {
                repeat
                    .chunks_exact(2)
                    .map(|pair| ticks_to_duration(pair[0], pair[1], period_ns))
                    .collect()
            })
            .collect())
    }
}

/// The duration between two timestamps of `period_ns` nanoseconds per tick. A reversed pair
/// (some drivers reset or reorder counters) counts as zero rather than wrapping.
pub(crate) fn ticks_to_duration(begin: u64, end: u64, period_ns: f64) -> Duration {
    let ticks = end.saturating_sub(begin);
    Duration::from_nanos((ticks as f64 * period_ns).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_convert_with_the_period() {
        assert_eq!(ticks_to_duration(100, 1100, 1.0), Duration::from_micros(1));
        assert_eq!(ticks_to_duration(0, 3, 2.5), Duration::from_nanos(8));
        assert_eq!(ticks_to_duration(10, 5, 1.0), Duration::ZERO);
    }
}
