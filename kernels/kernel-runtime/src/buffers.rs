//! Buffer creation with size checks and captured errors, and readback.

use crate::context::Context;
use crate::error::RuntimeError;

impl Context {
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

    /// Creates a zero-initialised buffer (wgpu zeroes new buffers before their first use),
    /// reporting wgpu's errors instead of panicking.
    pub(crate) fn create_buffer_checked(
        &self,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        })
    }

    /// Creates a buffer of `size` bytes (a multiple of 4, at least `data.len()`) holding
    /// `data` followed by zeros, uploaded through bounded staging (`staging.rs`), never
    /// through a staging buffer of the whole size.
    pub(crate) fn create_initialized_buffer(
        &self,
        label: &str,
        data: &[u8],
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        debug_assert!(size >= data.len() as u64 && size.is_multiple_of(4));
        let buffer =
            self.create_buffer_checked(label, size, usage | wgpu::BufferUsages::COPY_DST)?;
        self.upload(&buffer, data)?;
        Ok(buffer)
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
        self.read_range_async(buffer, 0, bytes).await
    }

    /// Reads `bytes` bytes of `buffer` from `offset` on (a multiple of 4).
    pub(crate) async fn read_range_async(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        bytes: u64,
    ) -> Result<Vec<u8>, RuntimeError> {
        if bytes == 0 {
            return self.finish_async().await.map(|()| Vec::new());
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
        self.download(buffer, offset, bytes).await
    }
}
