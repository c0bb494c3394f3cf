//! The GPU context: instance, adapter, device and queue, plus the error capture that turns
//! wgpu's errors into [`RuntimeError`]s instead of panics.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::adapter;
use crate::bind_cache::BindGroupCache;
use crate::caps::DeviceCaps;
use crate::devices::ErrorLog;
use crate::error::RuntimeError;
use crate::pipeline::PipelineCache;
use crate::record::{IntermediatePool, ParamsCache};
use crate::staging::StagingBuffers;
use crate::sync::lock;

/// How to create a [`Context`].
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    /// A case-insensitive substring of the adapter name. When `None`, the environment variable
    /// `KERNELS_ADAPTER` is used if set; otherwise the most capable adapter is chosen.
    pub adapter: Option<String>,
    /// WebGPU feature names not to request even if the adapter has them (`"subgroups"`,
    /// `"shader-f16"`, `"timestamp-query"`), e.g. to exercise fallback variants.
    pub disable_features: Vec<&'static str>,
    /// A device of this context's own instead of the one the process shares for this adapter
    /// and feature set (see [`Context::new`]): for a context that may destroy its device.
    /// Dropping a device while other threads use the driver can deadlock some drivers
    /// (NVIDIA's Vulkan driver 580), so keep dedicated contexts for as long as the process.
    pub dedicated_device: bool,
}

/// What a context holds at one moment ([`Context::counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextCounts {
    /// Compute pipelines created and kept.
    pub pipelines: usize,
    /// Bind groups kept for reuse by `record_into`/`run_into`.
    pub bind_groups: usize,
    /// Uniform buffers kept by content.
    pub uniform_buffers: usize,
    /// Intermediate buffers kept for reuse, and their bytes.
    pub pooled_intermediates: usize,
    pub pooled_intermediate_bytes: u64,
}

/// A device and queue with the state the runtime keeps for them: pipeline cache,
/// intermediate pool, uniform cache.
///
/// Natively `Context` is `Send + Sync`; its caches are behind mutexes, so several threads can
/// record plans on one context. In a browser (wasm32) it lives on the thread that made it,
/// as wgpu's objects do there, and nothing it does blocks: submissions return at once and
/// the async methods (`*_async`) wait.
pub struct Context {
    // The instance owns the backend; keep it alive as long as the device. `None` for a device
    // the application brought, which keeps its own.
    _instance: Option<wgpu::Instance>,
    _adapter: Option<wgpu::Adapter>,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) caps: DeviceCaps,
    pub(crate) pipelines: PipelineCache,
    pub(crate) intermediates: Mutex<IntermediatePool>,
    pub(crate) params: Mutex<ParamsCache>,
    pub(crate) bind_groups: Mutex<BindGroupCache>,
    /// wgpu's pipeline cache and its file, once [`Context::use_pipeline_cache`] is called.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) disk_cache: Mutex<Option<crate::disk_cache::DiskCache>>,
    pub(crate) staging: StagingBuffers,
    pub(crate) errors: Arc<Mutex<ErrorLog>>,
    /// Error-scope results not delivered yet (browsers answer them asynchronously).
    #[cfg(target_arch = "wasm32")]
    pending: Mutex<Vec<PendingCheck>>,
    /// Test hook: pretend the device allows fewer workgroups per dimension.
    pub(crate) dispatch_limit: Option<u32>,
}

/// The errors of one scoped step, once the browser has answered.
#[cfg(target_arch = "wasm32")]
type PendingCheck = std::pin::Pin<Box<dyn Future<Output = Option<RuntimeError>>>>;

/// How long a blocking wait polls before it sleeps: long enough for small ops to finish,
/// short enough that a long one costs little CPU.
#[cfg(not(target_arch = "wasm32"))]
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(500);

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
        let mut ctx = Self::from_wgpu(open.device, open.queue, open.info);
        ctx.errors = open.errors;
        ctx._instance = Some(open.instance);
        ctx._adapter = Some(open.adapter);
        Ok(ctx)
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
    pub fn from_wgpu(
        device: wgpu::Device,
        queue: wgpu::Queue,
        adapter_info: wgpu::AdapterInfo,
    ) -> Self {
        let caps = DeviceCaps::from_device(&device, &adapter_info);
        Self {
            _instance: None,
            _adapter: None,
            info: adapter_info,
            device,
            queue,
            caps,
            pipelines: PipelineCache::default(),
            intermediates: Mutex::new(IntermediatePool::default()),
            params: Mutex::new(ParamsCache::default()),
            bind_groups: Mutex::default(),
            #[cfg(not(target_arch = "wasm32"))]
            disk_cache: Mutex::default(),
            staging: StagingBuffers::default(),
            errors: Arc::new(Mutex::new(ErrorLog::default())),
            #[cfg(target_arch = "wasm32")]
            pending: Mutex::new(Vec::new()),
            dispatch_limit: None,
        }
    }

    /// What the device offers: limits and optional features.
    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// The adapter's description as wgpu reports it.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// One line naming the adapter, backend and device type, e.g.
    /// `llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, cpu)`.
    pub fn adapter_summary(&self) -> String {
        adapter::summarize(&self.info)
    }

    /// The wgpu device, for callers that record their own work next to the plans.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The wgpu queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// A new command encoder, to record several plans before one [`Context::submit`].
    pub fn create_encoder(&self) -> wgpu::CommandEncoder {
        self.create_labelled_encoder("kernel-runtime")
    }

    /// An encoder whose label shows up in wgpu's messages about the commands recorded in it.
    pub(crate) fn create_labelled_encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Finishes and submits `encoder`, waits for the GPU, and reports any error wgpu raised
    /// while validating the recorded commands (with wgpu's message, which names the pass).
    ///
    /// In a browser it returns at once: the browser orders later work after this one, and
    /// errors are reported by [`Context::finish_async`] or the next readback.
    pub fn submit(&self, encoder: wgpu::CommandEncoder) -> Result<(), RuntimeError> {
        self.submit_labelled(encoder, "submit")
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

    /// [`Context::submit`] with errors labelled `label`.
    pub(crate) fn submit_labelled(
        &self,
        encoder: wgpu::CommandEncoder,
        label: &str,
    ) -> Result<(), RuntimeError> {
        let index = self.scoped(label, || {
            let commands = encoder.finish();
            self.queue.submit([commands])
        })?;
        self.wait(Some(index))
    }

    /// Waits until `index` (or all submitted work) has completed, then reports a lost device
    /// or errors raised outside error scopes since the last check.
    /// In a browser there is nothing to wait on here (the browser drives the GPU), so this
    /// only reports what is known already.
    pub(crate) fn wait(&self, index: Option<wgpu::SubmissionIndex>) -> Result<(), RuntimeError> {
        #[cfg(target_arch = "wasm32")]
        let polled = {
            let _ = index;
            self.device.poll(wgpu::PollType::Poll)
        };
        #[cfg(not(target_arch = "wasm32"))]
        let polled = self.wait_native(index);
        let mut log = lock(&self.errors);
        if let Some(msg) = &log.lost {
            return Err(RuntimeError::DeviceLost(msg.clone()));
        }
        polled.map_err(|e| RuntimeError::Poll(e.to_string()))?;
        if !log.uncaptured.is_empty() {
            let first = log.uncaptured.remove(0);
            log.uncaptured.clear();
            return Err(first);
        }
        Ok(())
    }

    /// Waits for `index` natively: polls for up to [`SPIN_WAIT`] first, then sleeps in the
    /// driver. A sleeping wait wakes up tens of microseconds after the GPU finishes (about
    /// 50 µs on NVIDIA's Vulkan driver), longer than a small op runs; polling sees it at once.
    #[cfg(not(target_arch = "wasm32"))]
    fn wait_native(
        &self,
        index: Option<wgpu::SubmissionIndex>,
    ) -> Result<wgpu::PollStatus, wgpu::PollError> {
        let started = std::time::Instant::now();
        while started.elapsed() < SPIN_WAIT {
            let status = self.device.poll(wgpu::PollType::Poll)?;
            if status.is_queue_empty() {
                return Ok(status);
            }
            std::hint::spin_loop();
        }
        self.device.poll(wgpu::PollType::Wait {
            submission_index: index,
            timeout: None,
        })
    }

    /// Runs `f` inside validation, out-of-memory and internal error scopes and returns the
    /// first captured error, labelled with `label`.
    ///
    /// Scopes are thread-local in wgpu, so this captures exactly the errors `f` causes on
    /// this thread, even when other threads use the same device. In a browser the scopes'
    /// results arrive later: they are kept and reported by the next awaited call
    /// ([`Context::finish_async`], a readback or a timing).
    pub(crate) fn scoped<R>(&self, label: &str, f: impl FnOnce() -> R) -> Result<R, RuntimeError> {
        // Nothing runs on a lost device: every step says so at once instead of failing
        // validation on the objects the loss invalidated.
        self.check_lost()?;
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let result = f();
        // Scopes pop in reverse order; each pop takes effect at once, the futures only
        // deliver the captured error.
        let validation = validation.pop();
        let internal = internal.pop();
        let oom = oom.pop();
        #[cfg(not(target_arch = "wasm32"))]
        {
            let errors = [
                pollster::block_on(validation),
                pollster::block_on(oom),
                pollster::block_on(internal),
            ];
            match errors.into_iter().flatten().next() {
                Some(e) => {
                    // The step may have failed because the device was lost meanwhile; a poll
                    // delivers the loss if so.
                    let _ = self.device.poll(wgpu::PollType::Poll);
                    self.check_lost()?;
                    Err(convert(label, e))
                }
                None => Ok(result),
            }
        }
        #[cfg(target_arch = "wasm32")]
        {
            let label = label.to_owned();
            lock(&self.pending).push(Box::pin(async move {
                let errors = [validation.await, oom.await, internal.await];
                errors
                    .into_iter()
                    .flatten()
                    .next()
                    .map(|e| convert(&label, e))
            }));
            Ok(result)
        }
    }

    /// `DeviceLost` once the device is known to be lost.
    pub(crate) fn check_lost(&self) -> Result<(), RuntimeError> {
        match &lock(&self.errors).lost {
            Some(message) => Err(RuntimeError::DeviceLost(message.clone())),
            None => Ok(()),
        }
    }

    /// Waits for the work submitted so far and reports the first error wgpu raised since the
    /// last check: in an error scope (in a browser these arrive late), outside any scope, or
    /// a lost device. Natively [`Context::submit`] already does this; in a browser, call it
    /// (or read a tensor) to learn whether what was recorded and submitted was valid.
    pub async fn finish_async(&self) -> Result<(), RuntimeError> {
        #[cfg(target_arch = "wasm32")]
        {
            let pending = std::mem::take(&mut *lock(&self.pending));
            let mut first = None;
            for check in pending {
                if let Some(error) = check.await {
                    first.get_or_insert(error);
                }
            }
            if let Some(error) = first {
                return Err(error);
            }
        }
        self.wait(None)
    }

    /// The per-dimension workgroup limit dispatches are planned against.
    pub(crate) fn max_workgroups_per_dimension(&self) -> u32 {
        let device = self.caps.limits.max_compute_workgroups_per_dimension;
        self.dispatch_limit.map_or(device, |l| l.min(device))
    }

    /// Test hook: plan dispatches as if the device allowed at most `max` workgroups per
    /// dimension, so the x/y split can be exercised on small inputs. `None` restores the
    /// device limit.
    #[doc(hidden)]
    pub fn set_dispatch_limit_for_testing(&mut self, max: Option<u32>) {
        self.dispatch_limit = max;
    }
}

/// Converts a wgpu error into a [`RuntimeError`] labelled with the step that raised it.
pub(crate) fn convert(label: &str, e: wgpu::Error) -> RuntimeError {
    match e {
        wgpu::Error::OutOfMemory { .. } => RuntimeError::OutOfMemory {
            label: label.to_owned(),
        },
        wgpu::Error::Validation { description, .. } => RuntimeError::Validation {
            label: label.to_owned(),
            message: description,
        },
        wgpu::Error::Internal { description, .. } => RuntimeError::Internal {
            label: label.to_owned(),
            message: description,
        },
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("adapter", &self.adapter_summary())
            .field("features", &self.caps.feature_names())
            .field("pipelines", &self.pipeline_cache_len())
            .finish_non_exhaustive()
    }
}
