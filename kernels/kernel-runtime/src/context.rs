//! [`Context`], the runtime's one façade: it owns a device's core ([`Gpu`]) and the caches
//! kept for it ([`Caches`]), and each public method hands its work to the layer that does it
//! (`gpu.rs`, `staging.rs`, `pipeline.rs`, `disk_cache.rs`, `record.rs`, `timing.rs`).

use std::fmt;
#[cfg(not(target_arch = "wasm32"))]
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::adapter;
use crate::args::Arg;
use crate::caches::{Caches, ContextCounts};
use crate::caps::DeviceCaps;
use crate::devices::ContextOptions;
#[cfg(not(target_arch = "wasm32"))]
use crate::disk_cache::{DiskCache, PipelineCacheLoad};
use crate::error::RuntimeError;
use crate::gpu::{ErrorLog, Gpu};
use crate::plan::{Kernel, Plan};
use crate::record::{Recorder, Timestamps};
use crate::staging::Staging;
use crate::timing::{PlanTimes, Timer};
use crate::uniform_arena::UniformArena;

/// A device and queue with the state the runtime keeps for them: pipeline cache,
/// intermediate pool, uniform cache.
///
/// Natively `Context` is `Send + Sync` and may be used from many threads at once (planning,
/// recording, running, reading back, compiling, saving the pipeline cache);
/// ARCHITECTURE.md ("Threads and devices") says which lock guards what. In a browser
/// (wasm32) it lives on the thread that made it, as wgpu's objects do there, and nothing it
/// does blocks: submissions return at once and the async methods (`*_async`) wait.
pub struct Context {
    gpu: Gpu,
    caches: Caches,
    // The instance owns the backend; keep it alive as long as the device. `None` for a device
    // the application brought, which keeps its own.
    _instance: Option<wgpu::Instance>,
    _adapter: Option<wgpu::Adapter>,
}

// Constructors.
impl Context {
    /// Creates a context on the preferred adapter (see [`ContextOptions`]); blocks.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn new() -> Result<Self, RuntimeError> {
        Self::with_options(&ContextOptions::default())
    }

    /// Creates a context with explicit options; blocks. See [`Context::with_options_async`].
    #[cfg(not(target_arch = "wasm32"))]
    pub fn with_options(opts: &ContextOptions) -> Result<Self, RuntimeError> {
        pollster::block_on(Self::with_options_async(opts))
    }

    /// Creates a context on the preferred adapter without blocking: the way to create one in
    /// a browser, where waiting on the main thread is not allowed.
    pub async fn new_async() -> Result<Self, RuntimeError> {
        Self::with_options_async(&ContextOptions::default()).await
    }

    /// Creates a context with explicit options.
    ///
    /// The device gets the adapter's own limits and whichever of `shader-f16`, `subgroups`
    /// and `timestamp-query` the adapter has, minus [`ContextOptions::disable_features`].
    /// With [`ContextOptions::experimental_features`] on (or `KERNELS_EXPERIMENTAL_FEATURES`
    /// set to `1` or `true` when the option is `None`), it also gets
    /// `chromium-experimental-subgroup-matrix` (wgpu's experimental cooperative matrices)
    /// where the adapter has it, and [`DeviceCaps::subgroup_matrix_configs`] lists the
    /// configurations the adapter reports; wgpu's experimental features may have soundness
    /// holes, which opting in accepts. Off, a context never has the feature.
    ///
    /// Natively, contexts on the same adapter with the same features share one device (and
    /// so can use each other's tensors), opened by the first and kept for the process; a lost
    /// device is replaced by the next context created. Each context has caches of its own.
    /// [`ContextOptions::dedicated_device`] gives a context a device of its own.
    pub async fn with_options_async(opts: &ContextOptions) -> Result<Self, RuntimeError> {
        #[cfg(not(target_arch = "wasm32"))]
        let open = crate::devices::open(opts)?;
        #[cfg(target_arch = "wasm32")]
        let open = crate::devices::open(opts).await?;
        Ok(Self {
            gpu: Gpu::new(
                open.device,
                open.queue,
                open.info,
                &open.adapter.cooperative_matrix_properties(),
                open.errors,
            ),
            caches: Caches::default(),
            _instance: Some(open.instance),
            _adapter: Some(open.adapter),
        })
    }

    /// Wraps a device and queue the application created, e.g. a renderer's or another
    /// runtime's, so ops run on it and share buffers with the rest of the program.
    ///
    /// [`DeviceCaps`] come from the device's own features and limits (and the subgroup sizes
    /// of `adapter_info`, from `Adapter::get_info`): ops whose variants need a feature the
    /// device was created without are rejected with the usual typed error. Nothing is
    /// installed on the device: no uncaptured-error handler and no device-lost callback, which
    /// stay the application's; the runtime captures the errors of its own steps in error
    /// scopes only. A lost device shows up as the error of the next step.
    ///
    /// Without the adapter the runtime cannot know its subgroup-matrix configurations:
    /// [`DeviceCaps::subgroup_matrix_configs`] is empty even on a device created with
    /// cooperative matrices, so variants that require a configuration are skipped. Use
    /// [`Context::from_wgpu_with_adapter`] to have them.
    pub fn from_wgpu(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter_info: wgpu::AdapterInfo,
    ) -> Self {
        Self::from_parts(device, queue, adapter_info, &[])
    }

    /// [`Context::from_wgpu`] with the adapter `device` was requested from: the capabilities
    /// take the subgroup sizes from its description and, when the device has
    /// `wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX` (which the application enabled
    /// itself, through `wgpu::ExperimentalFeatures`), the cooperative-matrix configurations it
    /// reports ([`DeviceCaps::subgroup_matrix_configs`]). The adapter is read, not kept.
    pub fn from_wgpu_with_adapter(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter: &wgpu::Adapter,
    ) -> Self {
        let matrices = adapter.cooperative_matrix_properties();
        Self::from_parts(device, queue, adapter.get_info(), &matrices)
    }

    /// A context on an application's device, its errors captured in scopes only.
    fn from_parts(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter_info: wgpu::AdapterInfo,
        matrices: &[wgpu::CooperativeMatrixProperties],
    ) -> Self {
        let errors = Arc::new(Mutex::new(ErrorLog::default()));
        Self {
            gpu: Gpu::new(device, queue, adapter_info, matrices, errors),
            caches: Caches::default(),
            _instance: None,
            _adapter: None,
        }
    }

    /// The layers below, for tensors and generated code's helpers in this crate.
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub(crate) fn staging(&self) -> &Staging {
        &self.caches.staging
    }

    /// The uniform ranges of bound calls, which each call holds.
    pub(crate) fn uniforms(&self) -> &Arc<UniformArena> {
        &self.caches.uniforms
    }

    pub(crate) fn recorder(&self) -> Recorder<'_> {
        Recorder {
            gpu: &self.gpu,
            caches: &self.caches,
        }
    }
}

// The device.
impl Context {
    /// What the device offers: limits and optional features.
    pub fn caps(&self) -> &DeviceCaps {
        &self.gpu.caps
    }

    /// The adapter's description as wgpu reports it.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.gpu.info
    }

    /// One line naming the adapter, backend and device type, e.g.
    /// `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, cpu)`.
    pub fn adapter_summary(&self) -> String {
        adapter::summarize(&self.gpu.info)
    }

    /// The wgpu device, for callers that record their own work next to the plans.
    pub fn device(&self) -> &wgpu::Device {
        &self.gpu.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.gpu.queue
    }

    /// A new command encoder, to record several plans before one [`Context::submit`].
    pub fn create_encoder(&self) -> wgpu::CommandEncoder {
        self.gpu.encoder("kernel-runtime")
    }

    /// Finishes and submits `encoder`, waits for the GPU, and reports any error wgpu raised
    /// while validating the recorded commands (with wgpu's message, which names the pass).
    /// Bound calls' uniform updates not uploaded yet are uploaded first
    /// ([`Context::flush_uniforms`]).
    ///
    /// In a browser it returns at once: the browser orders later work after this one, and
    /// errors are reported by [`Context::finish_async`] or the next readback.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<(), RuntimeError> {
        self.flush_uniforms();
        self.gpu.submit(encoder, "submit")
    }

    /// Uploads the uniform bytes that [`crate::Bound::update`] changed since the last upload,
    /// one `queue.write_buffer` per 64 KiB chunk of bound calls' uniforms that has any; they
    /// take effect at the next submission. Recording a bound call and [`Context::submit`] do
    /// this already: call it before submitting through the queue directly after an `update`
    /// that no recording followed. Nothing to upload costs an atomic load.
    pub fn flush_uniforms(&self) {
        self.caches.uniforms.flush(&self.gpu.queue);
    }

    /// Records with `record` into a new encoder and submits it (see [`Context::submit`]): the
    /// `run` of every generated op.
    pub fn record_and_submit<R, E: From<RuntimeError>>(
        &self,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut encoder = self.create_encoder();
        let recorded = record(&mut encoder)?;
        self.submit(encoder)?;
        Ok(recorded)
    }

    /// Waits for the work submitted so far and reports the first error wgpu raised since the
    /// last check: in an error scope (in a browser these arrive late), outside any scope, or
    /// a lost device. Natively [`Context::submit`] already does this; in a browser, call it
    /// (or read a tensor) to learn whether what was recorded and submitted was valid.
    pub async fn finish_async(&self) -> Result<(), RuntimeError> {
        self.gpu.finish().await
    }

    /// Copies the first `bytes` bytes of `buffer` (which needs `COPY_SRC`) to the host, in
    /// chunks through the context's reused staging buffer; blocks until the GPU has finished
    /// all work submitted before.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_buffer(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>, RuntimeError> {
        pollster::block_on(self.read_buffer_async(buffer, bytes))
    }

    /// [`Context::read_buffer`] without blocking, for browsers: the copy is submitted at once
    /// and the future completes when the browser has mapped the staging buffer. It reports
    /// the errors of earlier steps that the browser had not answered yet.
    pub async fn read_buffer_async(
        &self,
        buffer: &wgpu::Buffer,
        bytes: u64,
    ) -> Result<Vec<u8>, RuntimeError> {
        self.caches.staging.read(&self.gpu, buffer, 0, bytes).await
    }
}

// Pipelines.
impl Context {
    /// Compiles the shader module of `kernel` ahead of time, for kernels whose pipelines
    /// depend on override values known only with the shapes.
    pub fn precompile_module(&self, kernel: &'static Kernel) -> Result<(), RuntimeError> {
        self.caches.pipelines.module(&self.gpu, kernel).map(drop)
    }

    /// Creates (and caches) the pipeline for `kernel` with these override values ahead of
    /// time, so the first run does not pay for shader compilation.
    pub fn precompile(
        &self,
        kernel: &'static Kernel,
        overrides: &[(&'static str, f64)],
    ) -> Result<(), RuntimeError> {
        let disk = || self.caches.driver_cache();
        let pipelines = &self.caches.pipelines;
        pipelines
            .pipeline(&self.gpu, &disk, kernel, overrides)
            .map(drop)
    }

    /// Creates (and caches) every pipeline these plans use, so their first calls do not pay
    /// for shader compilation; natively on several threads at once. Unlike an op's
    /// `precompile`, which cannot know shape-dependent override values, this creates exactly
    /// the pipelines of the planned shapes. Returns how many distinct pipelines the plans use.
    pub fn prepare(&self, plans: &[&Plan]) -> Result<usize, RuntimeError> {
        let disk = self.caches.driver_cache();
        self.caches
            .pipelines
            .prepare(&self.gpu, disk.as_ref(), plans)
    }

    /// Number of distinct pipelines created so far (for tests of cache behaviour).
    pub fn pipeline_cache_len(&self) -> usize {
        self.caches.pipelines.len()
    }

    /// Drops every cached pipeline and shader module; they are recreated on demand.
    pub fn clear_pipeline_cache(&self) {
        self.caches.clear_pipelines();
    }

    /// Uses wgpu's pipeline cache for every pipeline created from now on, loading it from
    /// `path` if a file is there, and [`Context::save_pipeline_cache`] writes it back. Call
    /// it before `precompile` or the first op, so their pipelines go into the cache.
    ///
    /// Needs the device feature `PIPELINE_CACHE` (native Vulkan; a context of our own
    /// requests it where the adapter has it), else [`RuntimeError::MissingFeature`]. A file
    /// that cannot be read is an error; one that is not a valid cache is
    /// [`PipelineCacheLoad::Rejected`] and the cache starts empty.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn use_pipeline_cache(
        &self,
        path: impl Into<PathBuf>,
    ) -> Result<PipelineCacheLoad, RuntimeError> {
        let (disk, load) = DiskCache::open(&self.gpu, path.into())?;
        self.caches.set_disk(disk);
        Ok(load)
    }

    /// Writes the pipeline cache to the path given to [`Context::use_pipeline_cache`]
    /// (through a temporary file and a rename, so a reader never sees half a file). Returns
    /// the bytes of cache data written, or `None` when no cache is in use or the backend
    /// has no data to give.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn save_pipeline_cache(&self) -> Result<Option<usize>, RuntimeError> {
        self.caches.disk().map_or(Ok(None), |disk| disk.save())
    }
}

// Recording and running plans.
impl Context {
    /// Records `plan` into `encoder` with `args` as its arguments (inputs in manifest order,
    /// then outputs), each a bound buffer range.
    ///
    /// A pass that binds the buffer of an argument it writes a second time is
    /// [`RuntimeError::Alias`], and a pass that binds an absent argument is
    /// [`RuntimeError::InvalidPlan`], both before anything is recorded.
    ///
    /// Pipelines come from the cache; intermediates from a pool (zeroed before use); uniform
    /// buffers are created or reused by content. Everything runs in one compute pass labelled
    /// `op/variant`, one dispatch per non-empty pass; passes with zero workgroups are skipped,
    /// and a plan with no work records nothing. Errors wgpu raises here come back labelled
    /// with the kernel or pass; errors in the recorded commands surface at
    /// [`Context::submit`].
    pub fn record_plan(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
    ) -> Result<(), RuntimeError> {
        let recorder = self.recorder();
        recorder
            .record(encoder, plan, args, Timestamps::None, false)
            .map(drop)
    }

    /// [`Context::record_plan`] for arguments the caller passes again and again (an
    /// inference loop's buffers, the provided outputs of `record_into`): the bind groups it
    /// creates are kept, so the next call with the same buffer ranges skips creating them.
    ///
    /// A kept bind group keeps its buffers alive until it is evicted (at most 256 are kept)
    /// or [`Context::trim_pools`] is called.
    pub fn record_plan_reusing(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &Plan,
        args: &[Arg<'_>],
    ) -> Result<(), RuntimeError> {
        let recorder = self.recorder();
        recorder
            .record(encoder, plan, args, Timestamps::None, true)
            .map(drop)
    }

    /// Records `plan` into a fresh encoder, submits it and waits for completion. Errors in the
    /// recorded commands are labelled `op/variant`.
    pub fn run_plan(&self, plan: &Plan, args: &[Arg<'_>]) -> Result<(), RuntimeError> {
        self.recorder().run(plan, args)
    }

    /// What the context holds now: for watching a long-running process for growth.
    pub fn counts(&self) -> ContextCounts {
        self.caches.counts(&self.gpu.tally)
    }

    /// Number of bind groups kept for reuse (see [`Context::record_plan_reusing`]).
    pub fn kept_bind_groups(&self) -> usize {
        self.caches.bind_groups.len()
    }

    /// Drops pooled intermediates, cached uniform buffers, kept bind groups (and with them
    /// the buffers they bind) and the staging buffers, releasing their memory.
    pub fn trim_pools(&self) {
        self.caches.trim();
    }
}

// Timing.
impl Context {
    /// GPU time of `plan` per repetition: from the beginning of its first pass to the end of
    /// its last pass, measured with timestamp queries. [`Context::time_plan_passes`] also
    /// gives the time of each pass.
    ///
    /// One untimed warm-up run comes first (pipeline creation, caches). The repetitions are
    /// recorded back to back into one command buffer per batch of up to 512, so host overhead
    /// between them does not count. A plan with no work returns zero durations.
    /// [`RuntimeError::MissingFeature`]`("timestamp-query")` when the device cannot time.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn time_plan(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<Vec<Duration>, RuntimeError> {
        pollster::block_on(self.time_plan_async(plan, args, repeats))
    }

    /// [`Context::time_plan`] without blocking, for browsers.
    pub async fn time_plan_async(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<Vec<Duration>, RuntimeError> {
        Timer(self.recorder()).time_plan(plan, args, repeats).await
    }

    /// [`Context::time_plan`] with the time of each pass as well. The totals come from the
    /// plan recorded as usual, in one compute pass; the passes of a plan of several are then
    /// timed in further repetitions that record each pass in a compute pass of its own (which
    /// adds a little time between passes, so those repetitions do not count in the totals).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn time_plan_passes(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<PlanTimes, RuntimeError> {
        pollster::block_on(self.time_plan_passes_async(plan, args, repeats))
    }

    /// [`Context::time_plan_passes`] without blocking, for browsers.
    pub async fn time_plan_passes_async(
        &self,
        plan: &Plan,
        args: &[Arg<'_>],
        repeats: usize,
    ) -> Result<PlanTimes, RuntimeError> {
        let timer = Timer(self.recorder());
        timer.time_plan_passes(plan, args, repeats).await
    }
}

// Test hooks.
impl Context {
    /// Plans dispatches as if the device allowed at most `max` workgroups per dimension, so
    /// the x/y split can be exercised on small inputs. `None` restores the device limit.
    #[doc(hidden)]
    pub fn set_dispatch_limit_for_testing(&mut self, max: Option<u32>) {
        self.gpu.set_dispatch_limit(max);
    }

    /// Moves at most `bytes` (a multiple of 4) per staging step, so chunking can be
    /// exercised on small tensors; `None` restores [`crate::STAGING_CHUNK`]. Drops the kept
    /// buffers.
    #[doc(hidden)]
    pub fn set_staging_chunk_for_testing(&mut self, bytes: Option<u64>) {
        self.caches.staging.set_chunk(bytes);
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let caps = &self.gpu.caps;
        let mut s = f.debug_struct("Context");
        s.field("adapter", &self.adapter_summary())
            .field("features", &caps.feature_names());
        if !caps.subgroup_matrix_configs.is_empty() {
            // `f16 → f32, 16×16×16`, one per configuration.
            let configs: Vec<String> = (caps.subgroup_matrix_configs.iter())
                .map(ToString::to_string)
                .collect();
            s.field("subgroup_matrix_configs", &configs);
        }
        s.field("pipelines", &self.pipeline_cache_len())
            .finish_non_exhaustive()
    }
}
