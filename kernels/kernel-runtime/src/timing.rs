//! GPU timing of plans through timestamp queries at the boundaries of the plan's compute pass.

use std::time::Duration;

use crate::caps::FEATURE_TIMESTAMP_QUERY;
use crate::context::Context;
use crate::error::RuntimeError;
use crate::plan::Plan;

/// Repetitions recorded into one command buffer (two queries each); bounded so the query set
/// stays well below wgpu's `QUERY_SET_MAX_QUERIES`.
const REPEATS_PER_BATCH: usize = 512;

impl Context {
    /// GPU time of `plan` per repetition: from the beginning of its first pass to the end of
    /// its last pass, measured with timestamp queries.
    ///
    /// One untimed warm-up run comes first (pipeline creation, caches). The repetitions are
    /// recorded back to back into one command buffer per batch of 512, so host overhead
    /// between them does not count. A plan with no work returns zero durations.
    /// [`RuntimeError::MissingFeature`]`("timestamp-query")` when the device cannot time.
    pub fn time_plan(
        &self,
        plan: &Plan,
        args: &[&wgpu::Buffer],
        repeats: usize,
    ) -> Result<Vec<Duration>, RuntimeError> {
        if !self.caps.timestamp_query {
            return Err(RuntimeError::MissingFeature(FEATURE_TIMESTAMP_QUERY));
        }
        if plan.is_empty(self.max_workgroups_per_dimension()) {
            return Ok(vec![Duration::ZERO; repeats]);
        }
        self.run_plan(plan, args)?;
        let mut out = Vec::with_capacity(repeats);
        let mut left = repeats;
        while left > 0 {
            let batch = left.min(REPEATS_PER_BATCH);
            out.extend(self.time_batch(plan, args, batch)?);
            left -= batch;
        }
        Ok(out)
    }

    fn time_batch(
        &self,
        plan: &Plan,
        args: &[&wgpu::Buffer],
        repeats: usize,
    ) -> Result<Vec<Duration>, RuntimeError> {
        // `repeats` is at most REPEATS_PER_BATCH, so these conversions cannot truncate.
        let queries = (2 * repeats) as u32;
        let bytes = u64::from(queries) * u64::from(wgpu::QUERY_SIZE);
        let query_set = self.scoped("timestamp queries", || {
            self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel-runtime timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: queries,
            })
        })?;
        let resolve = self.create_buffer_checked(
            "timestamp resolve",
            bytes,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        )?;

        let label = plan.label();
        let mut encoder = self.create_labelled_encoder(&label);
        for r in 0..repeats as u32 {
            let ts = Some((&query_set, 2 * r, 2 * r + 1));
            self.record_with_timestamps(&mut encoder, plan, args, ts)?;
        }
        encoder.resolve_query_set(&query_set, 0..queries, &resolve, 0);
        self.submit_labelled(encoder, &label)?;

        let raw = self.read_buffer(&resolve, bytes)?;
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&raw);
        let period_ns = f64::from(self.queue.get_timestamp_period());
        Ok(ticks
            .chunks_exact(2)
            .map(|pair| ticks_to_duration(pair[0], pair[1], period_ns))
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
