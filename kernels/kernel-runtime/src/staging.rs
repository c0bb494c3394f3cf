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

use crate::error::RuntimeError;
use crate::gpu::Gpu;
use crate::sync::lock;

/// The most bytes one staging step moves.
pub const STAGING_CHUNK: u64 = 64 << 20;

/// Uploads of at most this many bytes go through `queue.write_buffer` (wgpu's own small
/// staging), which costs no wait; larger ones through the reused buffer.
const DIRECT_WRITE_MAX: u64 = 1 << 20;

/// A context's staging buffers, created on first use, and the transfers through them.
pub(crate) struct Staging {
    upload: Mutex<Option<wgpu::Buffer>>,
    download: Mutex<Option<wgpu::Buffer>>,
    /// Bytes per step: [`STAGING_CHUNK`], smaller in tests.
    chunk: u64,
}

impl Default for Staging {
    fn default() -> Self {
        Self {
            upload: Mutex::default(),
            download: Mutex::default(),
            chunk: STAGING_CHUNK,
        }
    }
}

impl Staging {
    /// Drops both buffers (they are recreated on demand).
    pub(crate) fn clear(&self) {
        lock(&self.upload).take();
        lock(&self.download).take();
    }

    /// Moves at most `bytes` (a multiple of 4) per step; `None` restores [`STAGING_CHUNK`].
    /// Drops the kept buffers.
    pub(crate) fn set_chunk(&mut self, bytes: Option<u64>) {
        self.clear();
        self.chunk = bytes.map_or(STAGING_CHUNK, |b| b.max(4).next_multiple_of(4));
    }

    /// Creates a buffer of `size` bytes (a multiple of 4, at least `data.len()`) holding
    /// `data` followed by zeros, uploaded a chunk at a time, never through a staging buffer
    /// of the whole size.
    pub(crate) fn create_initialized(
        &self,
        gpu: &Gpu,
        label: &str,
        data: &[u8],
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        debug_assert!(size >= data.len() as u64 && size.is_multiple_of(4));
        let buffer = gpu.create_buffer(label, size, usage | wgpu::BufferUsages::COPY_DST)?;
        self.upload(gpu, &buffer, data)?;
        Ok(buffer)
    }

    /// Writes `data` at the start of `dst` (which needs `COPY_DST` and at least
    /// `data.len()` rounded up to 4 bytes), a chunk at a time. Natively it returns once the
    /// data is in `dst`'s queue order: later submissions see it.
    pub(crate) fn upload(
        &self,
        gpu: &Gpu,
        dst: &wgpu::Buffer,
        data: &[u8],
    ) -> Result<(), RuntimeError> {
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
        if cfg!(target_arch = "wasm32") || padded <= DIRECT_WRITE_MAX.min(self.chunk) {
            return self.upload_direct(gpu, dst, data);
        }
        self.upload_staged(gpu, dst, data)
    }

    /// `queue.write_buffer` per chunk, each padded to a multiple of 4 bytes.
    fn upload_direct(
        &self,
        gpu: &Gpu,
        dst: &wgpu::Buffer,
        data: &[u8],
    ) -> Result<(), RuntimeError> {
        gpu.scoped("upload", || {
            let mut offset = 0;
            for chunk in data.chunks(self.chunk as usize) {
                if chunk.len() % 4 == 0 {
                    gpu.queue.write_buffer(dst, offset, chunk);
                } else {
                    let mut padded = chunk.to_vec();
                    padded.resize(chunk.len().next_multiple_of(4), 0);
                    gpu.queue.write_buffer(dst, offset, &padded);
                }
                offset += chunk.len() as u64;
            }
        })
    }

    /// Through the reused `MAP_WRITE` buffer: map, fill, unmap, copy, submit, per chunk.
    #[cfg(not(target_arch = "wasm32"))]
    fn upload_staged(
        &self,
        gpu: &Gpu,
        dst: &wgpu::Buffer,
        data: &[u8],
    ) -> Result<(), RuntimeError> {
        let staging = self.staging_buffer(
            gpu,
            true,
            (data.len() as u64).next_multiple_of(4).min(self.chunk),
        )?;
        let result = (|| {
            let mut offset = 0;
            for chunk in data.chunks(self.chunk as usize) {
                let padded = (chunk.len() as u64).next_multiple_of(4);
                pollster::block_on(map(gpu, &staging, wgpu::MapMode::Write, padded))?;
                {
                    let mut view = staging
                        .get_mapped_range_mut(..padded)
                        .map_err(|e| RuntimeError::Upload(e.to_string()))?;
                    view.slice(..chunk.len()).copy_from_slice(chunk);
                    view.slice(chunk.len()..).fill(0);
                }
                staging.unmap();
                let mut encoder = gpu.encoder("upload");
                encoder.copy_buffer_to_buffer(&staging, 0, dst, offset, padded);
                gpu.submit(encoder, "upload")?;
                offset += chunk.len() as u64;
            }
            Ok(())
        })();
        // A buffer left mapped by a failed step is not reused.
        if result.is_ok() {
            self.keep(true, staging);
        }
        result
    }

    #[cfg(target_arch = "wasm32")]
    fn upload_staged(
        &self,
        gpu: &Gpu,
        dst: &wgpu::Buffer,
        data: &[u8],
    ) -> Result<(), RuntimeError> {
        self.upload_direct(gpu, dst, data)
    }

    /// Reads `bytes` bytes of `buffer` from `offset` on (a multiple of 4) to the host, after
    /// all work submitted before; a buffer that cannot be read, or a range outside it, is a
    /// [`RuntimeError::Readback`].
    pub(crate) async fn read(
        &self,
        gpu: &Gpu,
        buffer: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<u8>, RuntimeError> {
        if bytes == 0 {
            return gpu.finish().await.map(|()| Vec::new());
        }
        if !buffer.usage().contains(wgpu::BufferUsages::COPY_SRC) {
            return Err(RuntimeError::Readback(format!(
                "the buffer's usage {:?} lacks COPY_SRC, so it cannot be read back",
                buffer.usage()
            )));
        }
        let end = offset.checked_add(bytes.next_multiple_of(4));
        if !offset.is_multiple_of(4) || end.is_none_or(|end| end > buffer.size()) {
            return Err(RuntimeError::Readback(format!(
                "asked for {bytes} bytes at offset {offset} of a {}-byte buffer",
                buffer.size()
            )));
        }
        self.download(gpu, buffer, offset, bytes).await
    }

    /// Copies `bytes` bytes of `src` from `start` on (a multiple of 4; `src` needs
    /// `COPY_SRC`) to the host through the reused `MAP_READ` buffer, a chunk at a time.
    async fn download(
        &self,
        gpu: &Gpu,
        src: &wgpu::Buffer,
        start: u64,
        bytes: u64,
    ) -> Result<Vec<u8>, RuntimeError> {
        let padded = bytes.next_multiple_of(4);
        let staging = self.staging_buffer(gpu, false, padded.min(self.chunk))?;
        let mut out = Vec::with_capacity(bytes as usize);
        let result = async {
            let mut offset = 0;
            while offset < padded {
                let step = (padded - offset).min(self.chunk);
                let mut encoder = gpu.encoder("readback");
                encoder.copy_buffer_to_buffer(src, start + offset, &staging, 0, step);
                gpu.submit(encoder, "readback")?;
                map(gpu, &staging, wgpu::MapMode::Read, step).await?;
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
            self.keep(false, staging);
        }
        result.map(|()| out)
    }

    /// The kept staging buffer of at least `size` bytes, or a new one (kept afterwards if
    /// larger). Taken out while in use, so concurrent transfers on other threads make their
    /// own rather than wait.
    fn staging_buffer(
        &self,
        gpu: &Gpu,
        upload: bool,
        size: u64,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        let slot = if upload { &self.upload } else { &self.download };
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
        gpu.create_buffer(label, size, usage)
    }

    /// Keeps `buffer` for the next transfer unless a larger one is kept already.
    fn keep(&self, upload: bool, buffer: wgpu::Buffer) {
        let slot = if upload { &self.upload } else { &self.download };
        let mut kept = lock(slot);
        if kept.as_ref().is_none_or(|k| k.size() < buffer.size()) {
            *kept = Some(buffer);
        }
    }
}

/// Maps the first `bytes` of `buffer`; natively by polling the device, in a browser when
/// the browser answers. Reports the errors of earlier steps first.
async fn map(
    gpu: &Gpu,
    buffer: &wgpu::Buffer,
    mode: wgpu::MapMode,
    bytes: u64,
) -> Result<(), RuntimeError> {
    let (tx, rx) = futures_channel::oneshot::channel();
    buffer.map_async(mode, ..bytes, move |r| {
        // The receiver only disappears if the future was dropped; nothing to do then.
        let _ = tx.send(r);
    });
    gpu.finish().await?;
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
