//! What a context keeps for its device between calls: pipelines, pooled intermediates,
//! uniform buffers, bind groups, staging buffers and the pipeline-cache file. Each part owns
//! its lock; this file only groups them and answers for them together.

use std::sync::Arc;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::Mutex;

use crate::bind_cache::BindGroupCache;
#[cfg(not(target_arch = "wasm32"))]
use crate::disk_cache::DiskCache;
use crate::gpu::Tally;
use crate::pipeline::PipelineCache;
use crate::pools::{IntermediatePool, ParamsCache};
use crate::staging::Staging;
#[cfg(not(target_arch = "wasm32"))]
use crate::sync::lock;
use crate::uniform_arena::UniformArena;

/// What a context holds at one moment ([`crate::Context::counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextCounts {
    /// Compute pipelines created and kept.
    pub pipelines: usize,
    /// Bind groups kept for reuse by `record_into`/`run_into`.
    pub bind_groups: usize,
    /// Uniform buffers kept by content.
    pub uniform_buffers: usize,
    /// Bytes of the uniform buffers bound calls take their ranges from (it grows only while
    /// more bound calls are alive at once than before).
    pub bound_uniform_bytes: u64,
    /// Intermediate buffers kept for reuse, and their bytes.
    pub pooled_intermediates: usize,
    pub pooled_intermediate_bytes: u64,
    /// Buffers created on the device through the context since it was made: tensors,
    /// intermediates, uniform and staging buffers.
    pub buffers_created: u64,
    /// Bind groups created since the context was made (kept ones are not created again).
    pub bind_groups_created: u64,
    /// Compute pipelines created since the context was made.
    pub pipelines_created: u64,
    /// Compute passes and dispatches recorded since the context was made.
    pub compute_passes_recorded: u64,
    pub dispatches_recorded: u64,
}

/// A context's caches and pools.
#[derive(Default)]
pub(crate) struct Caches {
    pub(crate) pipelines: PipelineCache,
    pub(crate) intermediates: IntermediatePool,
    pub(crate) params: ParamsCache,
    pub(crate) bind_groups: BindGroupCache,
    pub(crate) staging: Staging,
    /// The uniform ranges of bound calls, which hold it.
    pub(crate) uniforms: Arc<UniformArena>,
    /// wgpu's pipeline cache and its file, once `Context::use_pipeline_cache` is called.
    #[cfg(not(target_arch = "wasm32"))]
    disk: Mutex<Option<DiskCache>>,
}

impl Caches {
    /// The handle of wgpu's pipeline cache that new pipelines go into, if one is in use.
    pub(crate) fn driver_cache(&self) -> Option<wgpu::PipelineCache> {
        #[cfg(not(target_arch = "wasm32"))]
        return lock(&self.disk).as_ref().map(|d| d.cache.clone());
        #[cfg(target_arch = "wasm32")]
        None
    }

    /// Uses `disk` for the pipelines created from now on.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn set_disk(&self, disk: DiskCache) {
        *lock(&self.disk) = Some(disk);
    }

    /// The pipeline cache in use and its file, cloned out so that saving it does not hold a
    /// lock that pipeline creation takes.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn disk(&self) -> Option<DiskCache> {
        lock(&self.disk).clone()
    }

    pub(crate) fn counts(&self, tally: &Tally) -> ContextCounts {
        let (pooled_intermediates, pooled_intermediate_bytes) = self.intermediates.held();
        ContextCounts {
            buffers_created: Tally::read(&tally.buffers),
            bind_groups_created: Tally::read(&tally.bind_groups),
            pipelines_created: Tally::read(&tally.pipelines),
            compute_passes_recorded: Tally::read(&tally.compute_passes),
            dispatches_recorded: Tally::read(&tally.dispatches),
            pipelines: self.pipelines.len(),
            bind_groups: self.bind_groups.len(),
            uniform_buffers: self.params.len(),
            bound_uniform_bytes: self.uniforms.bytes(),
            pooled_intermediates,
            pooled_intermediate_bytes,
        }
    }

    /// Drops every kept buffer: pooled intermediates, uniform buffers, bind groups (and the
    /// buffers they bind) and the staging buffers. Bound calls' uniforms stay (live calls use
    /// them).
    pub(crate) fn trim(&self) {
        self.intermediates.clear();
        self.bind_groups.clear();
        self.params.clear();
        self.staging.clear();
    }

    /// Drops every pipeline and shader module, and the bind groups, which name the old
    /// pipelines and would only keep them alive.
    pub(crate) fn clear_pipelines(&self) {
        self.pipelines.clear();
        self.bind_groups.clear();
    }
}
