//! The runtime's core: one device and its queue, the error scopes that turn wgpu's errors
//! into [`RuntimeError`]s, and the waits. Everything above (staging, caches, recording, the
//! [`crate::Context`] façade) works through a [`Gpu`]; it knows nothing of them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::caps::DeviceCaps;
use crate::error::RuntimeError;
use crate::sync::lock;

/// Smallest range the runtime binds for a tensor (an empty tensor still needs one). Ranges
/// are otherwise exactly the tensor's bytes rounded up to 4, so `arrayLength` in a shader is
/// the element count (plus one padding element for an odd count of f16).
pub(crate) const MIN_BUFFER_BYTES: u64 = 4;

/// Smallest buffer the runtime creates: one element of the widest array a generated prelude
/// declares (`array<vec4<f32>>`; `vec3<f32>` has the same stride), so that a small or empty
/// tensor's range can be widened to what any shader reads it as.
pub(crate) const MIN_ALLOCATION_BYTES: u64 = 16;

/// Byte size of a storage range holding `bytes`: a multiple of 4 (copy and binding
/// alignment) and at least [`MIN_BUFFER_BYTES`].
pub(crate) fn storage_size(bytes: u64) -> u64 {
    bytes.next_multiple_of(4).max(MIN_BUFFER_BYTES)
}

/// Byte size of a buffer the runtime creates to hold `bytes`: [`storage_size`], and at least
/// [`MIN_ALLOCATION_BYTES`].
pub(crate) fn allocation_size(bytes: u64) -> u64 {
    storage_size(bytes).max(MIN_ALLOCATION_BYTES)
}

/// Errors wgpu raised outside any error scope on one device, and whether it was lost.
#[derive(Default)]
pub(crate) struct ErrorLog {
    pub(crate) uncaptured: Vec<RuntimeError>,
    pub(crate) lost: Option<String>,
}

/// The errors of one scoped step, once the browser has answered.
#[cfg(target_arch = "wasm32")]
type PendingCheck = std::pin::Pin<Box<dyn Future<Output = Option<RuntimeError>>>>;

/// How long a blocking wait polls before it sleeps: long enough for small ops to finish,
/// short enough that a long one costs little CPU.
#[cfg(not(target_arch = "wasm32"))]
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(500);

/// A device and queue with what the runtime knows of them.
pub(crate) struct Gpu {
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) caps: DeviceCaps,
    /// Shared with every context on the device (`devices.rs` installs the handlers that fill
    /// it); a log of its own for a device the application brought.
    errors: Arc<Mutex<ErrorLog>>,
    /// Error-scope results not delivered yet (browsers answer them asynchronously).
    #[cfg(target_arch = "wasm32")]
    pending: Mutex<Vec<PendingCheck>>,
    /// Test hook: pretend the device allows fewer workgroups per dimension.
    dispatch_limit: Option<u32>,
    /// What was created and recorded through this core (shared with the bound calls that
    /// record without the context).
    pub(crate) tally: Arc<Tally>,
}

/// Objects created and commands recorded since the context was made: a loop that creates
/// nothing after its first step shows flat counts ([`crate::ContextCounts`]).
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) buffers: AtomicU64,
    pub(crate) bind_groups: AtomicU64,
    pub(crate) pipelines: AtomicU64,
    pub(crate) compute_passes: AtomicU64,
    pub(crate) dispatches: AtomicU64,
}

impl Tally {
    /// Adds one to `counter`; a relaxed count, read only for reports.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn read(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

impl Gpu {
    /// The core of `device`, its capabilities read from the device, the adapter's `info` and
    /// the cooperative-matrix configurations the adapter reports (`matrices`).
    pub(crate) fn new(
        device: wgpu::Device,
        queue: wgpu::Queue,
        info: wgpu::AdapterInfo,
        matrices: &[wgpu::CooperativeMatrixProperties],
        errors: Arc<Mutex<ErrorLog>>,
    ) -> Self {
        let caps = DeviceCaps::from_device(&device, &info, matrices);
        Self {
            info,
            device,
            queue,
            caps,
            errors,
            #[cfg(target_arch = "wasm32")]
            pending: Mutex::new(Vec::new()),
            dispatch_limit: None,
            tally: Arc::default(),
        }
    }

    /// An encoder whose label shows up in wgpu's messages about the commands recorded in it.
    pub(crate) fn encoder(&self, label: &str) -> wgpu::CommandEncoder {
        self.device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) })
    }

    /// Finishes and submits `encoder` with its errors labelled `label`, then waits for the
    /// GPU (natively) and reports what went wrong.
    pub(crate) fn submit(
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
    /// ([`Gpu::finish`], a readback or a timing).
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
    /// a lost device.
    pub(crate) async fn finish(&self) -> Result<(), RuntimeError> {
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

    /// Creates a zero-initialised buffer (wgpu zeroes new buffers before their first use),
    /// reporting wgpu's errors instead of panicking.
    pub(crate) fn create_buffer(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        Tally::add(&self.tally.buffers, 1);
        self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        })
    }

    /// The largest storage buffer a shader can bind on this device, in bytes.
    pub(crate) fn storage_limit(&self) -> u64 {
        let l = &self.caps.limits;
        l.max_storage_buffer_binding_size.min(l.max_buffer_size)
    }

    /// [`RuntimeError::TooLarge`] when a storage buffer of `size` bytes cannot be bound.
    pub(crate) fn check_storage_size(&self, what: &str, size: u64) -> Result<(), RuntimeError> {
        let limit = self.storage_limit();
        if size > limit {
            return Err(RuntimeError::TooLarge {
                what: what.to_owned(),
                bytes: size,
                limit,
            });
        }
        Ok(())
    }

    /// The per-dimension workgroup limit dispatches are planned against.
    pub(crate) fn max_workgroups_per_dimension(&self) -> u32 {
        let device = self.caps.limits.max_compute_workgroups_per_dimension;
        self.dispatch_limit.map_or(device, |l| l.min(device))
    }

    /// Test hook: see `Context::set_dispatch_limit_for_testing`.
    pub(crate) fn set_dispatch_limit(&mut self, max: Option<u32>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_sizes_are_aligned_and_never_empty() {
        assert_eq!(storage_size(0), 4);
        assert_eq!(storage_size(2), 4);
        assert_eq!(storage_size(18), 20);
        assert_eq!(storage_size(1024), 1024);
        assert_eq!(allocation_size(0), 16);
        assert_eq!(allocation_size(18), 20);
    }

    #[test]
    fn wgpu_errors_keep_the_label_of_their_step() {
        let oom = convert(
            "output `Y` of Scale",
            wgpu::Error::OutOfMemory {
                source: Box::new(std::fmt::Error),
            },
        );
        assert!(
            matches!(&oom, RuntimeError::OutOfMemory { label } if label == "output `Y` of Scale"),
            "{oom:?}"
        );
        assert!(oom.to_string().contains("output `Y` of Scale"), "{oom}");
    }
}
