//! Uploads and readbacks through bounded, reused staging: no transfer ever asks wgpu for a
//! staging buffer the size of a tensor.
//!
//! A whole large tensor pushed through one `queue.write_buffer` or a `mapped_at_creation`
//! buffer makes wgpu allocate a host-visible staging buffer of the tensor's size for each
//! call, so host-visible memory grows with the largest tensor and is allocated and freed per
//! upload. Here data moves in chunks of at most [`STAGING_CHUNK`] bytes through one
//! `MAP_WRITE` and one `MAP_READ` buffer per context, created on first use and kept. (Such
//! churn was suspected of slowing the H200 down on one device; it was the GPU's clock
//! instead: BENCHMARKS.md, "One device for everything".) In a browser, where mapping is asynchronous and
//! uploads cannot wait, uploads are `write_buffer` calls of at most one chunk each.

use std::sync::Mutex;

use crate::context::Context;
use crate::error::RuntimeError;
use crate::sync::lock;

/// The most bytes one staging step moves.
pub const STAGING_CHUNK: u64 = 64 << 20;

/// Uploads of at most this many bytes go through `queue.write_buffer` (wgpu's own small
/// staging), which costs no wait; larger ones through the reused buffer.
const DIRECT_WRITE_MAX: u64 = 1 << 20;

/// The context's staging buffers, created on first use.
pub(crate) struct StagingBuffers {
    upload: Mutex<Option<wgpu::Buffer>>,
    download: Mutex<Option<wgpu::Buffer>>,
    /// Bytes per step: [`STAGING_CHUNK`], smaller in tests.
    chunk: u64,
}

impl Default for StagingBuffers {
    fn default() -> Self {
        Self {
            upload: Mutex::default(),
            download: Mutex::default(),
            chunk: STAGING_CHUNK,
        }
    }
}

impl StagingBuffers {
    /// Drops both buffers (they are recreated on demand).
    pub(crate) fn clear(&self) {
        lock(&self.upload).take();
        lock(&self.download).take();
    }
}

impl Context {
    /// Writes `data` at the start of `dst` (which needs `COPY_DST` and at least
    /// `data.len()` rounded up to 4 bytes), a chunk at a time. Natively it returns once the
    /// data is in `dst`'s queue order: later submissions see it.
    pub(crate) fn upload(&self, dst: &wgpu::Buffer, data: &[u8]) -> Result<(), RuntimeError> {
        if data.is_empty() {
            return Ok(());
        }
        let padded = (data.len() as u64).next_multiple_of(4);
        if padded > dst.size() {
            return Err(RuntimeError::Upload(format!(
                "{} bytes do not fit a {}-byte buffer",
                data.len(),
                dst.size()
            )));
        }
        if cfg!(target_arch = "wasm32") || padded <= DIRECT_WRITE_MAX.min(self.staging.chunk) {
            return self.upload_direct(dst, data);
        }
        self.upload_staged(dst, data)
    }

    /// `queue.write_buffer` per chunk, each padded to a multiple of 4 bytes.
    fn upload_direct(&self, dst: &wgpu::Buffer, data: &[u8]) -> Result<(), RuntimeError> {
        self.scoped("upload", || {
            let mut offset = 0;
            for chunk in data.chunks(self.staging.chunk as usize) {
                if chunk.len() % 4 == 0 {
                    self.queue.write_buffer(dst, offset, chunk);
                } else {
                    let mut padded = chunk.to_vec();
                    padded.resize(chunk.len().next_multiple_of(4), 0);
                    self.queue.write_buffer(dst, offset, &padded);
                }
                offset += chunk.len() as u64;
            }
        })
    }

    /// Through the reused `MAP_WRITE` buffer: map, fill, unmap, copy, submit, per chunk.
    #[cfg(not(target_arch = "wasm32"))]
    fn upload_staged(&self, dst: &wgpu::Buffer, data: &[u8]) -> Result<(), RuntimeError> {
        let staging = self.staging_buffer(
            true,
            (data.len() as u64)
                .next_multiple_of(4)
                .min(self.staging.chunk),
        )?;
        let result = (|| {
            let mut offset = 0;
            for chunk in data.chunks(self.staging.chunk as usize) {
                let padded = (chunk.len() as u64).next_multiple_of(4);
                pollster::block_on(self.map(&staging, wgpu::MapMode::Write, padded))?;
                {
                    let mut view = staging
                        .get_mapped_range_mut(..padded)
                        .map_err(|e| RuntimeError::Upload(e.to_string()))?;
                    view.slice(..chunk.len()).copy_from_slice(chunk);
                    view.slice(chunk.len()..).fill(0);
                }
                staging.unmap();
                let mut encoder = self.create_labelled_encoder("upload");
                encoder.copy_buffer_to_buffer(&staging, 0, dst, offset, padded);
                self.submit_labelled(encoder, "upload")?;
                offset += chunk.len() as u64;
            }
            Ok(())
        })();
        // A buffer left mapped by a failed step is not reused.
        if result.is_ok() {
            self.return_staging(true, staging);
        }
        result
    }

    #[cfg(target_arch = "wasm32")]
    fn upload_staged(&self, dst: &wgpu::Buffer, data: &[u8]) -> Result<(), RuntimeError> {
        self.upload_direct(dst, data)
    }

    /// Copies `bytes` bytes of `src` from `start` on (a multiple of 4; `src` needs
    /// `COPY_SRC`) to the host through the reused `MAP_READ` buffer, a chunk at a time.
    pub(crate) async fn download(
        &self,
        src: &wgpu::Buffer,
        start: u64,
        bytes: u64,
    ) -> Result<Vec<u8>, RuntimeError> {
        let padded = bytes.next_multiple_of(4);
        let staging = self.staging_buffer(false, padded.min(self.staging.chunk))?;
        let mut out = Vec::with_capacity(bytes as usize);
        let result = async {
            let mut offset = 0;
            while offset < padded {
                let step = (padded - offset).min(self.staging.chunk);
                let mut encoder = self.create_labelled_encoder("readback");
                encoder.copy_buffer_to_buffer(src, start + offset, &staging, 0, step);
                self.submit_labelled(encoder, "readback")?;
                self.map(&staging, wgpu::MapMode::Read, step).await?;
                {
                    let view = staging
                        .get_mapped_range(..step)
                        .map_err(|e| RuntimeError::Readback(e.to_string()))?;
                    let keep = (bytes - offset).min(step) as usize;
                    out.extend_from_slice(&view[..keep]);
                }
                staging.unmap();
                offset += step;
            }
            Ok(())
        }
        .await;
        if result.is_ok() {
            self.return_staging(false, staging);
        }
        result.map(|()| out)
    }

    /// Maps the first `bytes` of `buffer`; natively by polling the device, in a browser when
    /// the browser answers. Reports the errors of earlier steps first.
    async fn map(
        &self,
        buffer: &wgpu::Buffer,
        mode: wgpu::MapMode,
        bytes: u64,
    ) -> Result<(), RuntimeError> {
        let (tx, rx) = futures_channel::oneshot::channel();
        buffer.map_async(mode, ..bytes, move |r| {
            // The receiver only disappears if the future was dropped; nothing to do then.
            let _ = tx.send(r);
        });
        self.finish_async().await?;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(RuntimeError::Readback(format!(
                "mapping the staging buffer: {e}"
            ))),
            Err(_) => Err(RuntimeError::Readback(
                "the map callback of the staging buffer was dropped without running".to_owned(),
            )),
        }
    }

    /// The kept staging buffer of at least `size` bytes, or a new one (kept afterwards if
    /// larger). Taken out while in use, so concurrent transfers on other threads make their
    /// own rather than wait.
    fn staging_buffer(&self, upload: bool, size: u64) -> Result<wgpu::Buffer, RuntimeError> {
        let slot = if upload {
            &self.staging.upload
        } else {
            &self.staging.download
        };
        if let Some(buffer) = lock(slot).take_if(|b| b.size() >= size) {
            return Ok(buffer);
        }
        let (label, usage) = if upload {
            (
                "upload staging",
                wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
            )
        } else {
            (
                "readback staging",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            )
        };
        self.create_buffer_checked(label, size, usage)
    }

    /// Test hook: move at most `bytes` (a multiple of 4) per staging step, so chunking can be
    /// exercised on small tensors; `None` restores [`STAGING_CHUNK`]. Drops the kept buffers.
    #[doc(hidden)]
    pub fn set_staging_chunk_for_testing(&mut self, bytes: Option<u64>) {
        self.staging.clear();
        self.staging.chunk = bytes.map_or(STAGING_CHUNK, |b| b.max(4).next_multiple_of(4));
    }

    fn return_staging(&self, upload: bool, buffer: wgpu::Buffer) {
        let slot = if upload {
            &self.staging.upload
        } else {
            &self.staging.download
        };
        let mut kept = lock(slot);
        if kept.as_ref().is_none_or(|k| k.size() < buffer.size()) {
            *kept = Some(buffer);
        }
    }
}
