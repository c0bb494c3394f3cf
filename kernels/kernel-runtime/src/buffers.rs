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
    /// `data` followed by zeros.
    ///
    /// Unlike `wgpu::util::DeviceExt::create_buffer_init`, an allocation failure is an error,
    /// not a panic: the buffer is created mapped inside an error scope and only written if
    /// the mapping exists.
    pub(crate) fn create_initialized_buffer(
        &self,
        label: &str,
        data: &[u8],
        size: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        debug_assert!(size >= data.len() as u64 && size.is_multiple_of(4));
        let buffer = self.scoped(label, || {
            self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: true,
            })
        })?;
        {
            let mut view =
                buffer
                    .get_mapped_range_mut(..)
                    .map_err(|e| RuntimeError::Validation {
                        label: label.to_owned(),
                        message: format!("mapping the new buffer failed: {e}"),
                    })?;
            view.slice(..data.len()).copy_from_slice(data);
        }
        buffer.unmap();
        Ok(buffer)
    }

    /// Copies the first `bytes` bytes of `buffer` (which needs `COPY_SRC`) to the host;
    /// blocks until the GPU has finished all work submitted before.
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
        if bytes == 0 {
            return self.finish_async().await.map(|()| Vec::new());
        }
        let padded = bytes.next_multiple_of(4);
        if padded > buffer.size() {
            return Err(RuntimeError::Readback(format!(
                "asked for {bytes} bytes of a {}-byte buffer",
                buffer.size()
            )));
        }
        if padded > self.caps.limits.max_buffer_size {
            return Err(RuntimeError::TooLarge {
                what: "readback staging buffer".to_owned(),
                bytes: padded,
                limit: self.caps.limits.max_buffer_size,
            });
        }
        let staging = self.create_buffer_checked(
            "readback",
            padded,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        )?;
        let mut encoder = self.create_encoder();
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, padded);
        self.submit(encoder)?;

        let (tx, rx) = futures_channel::oneshot::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            // The receiver only disappears if the future was dropped; nothing to do then.
            let _ = tx.send(r);
        });
        // Natively this polls until the map callback has run; in a browser it reports the
        // errors of the steps before, and the browser runs the callback.
        self.finish_async().await?;
        match rx.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(RuntimeError::Readback(e.to_string())),
            Err(_) => {
                return Err(RuntimeError::Readback(
                    "the map callback was dropped without running".to_owned(),
                ));
            }
        }
        let data = {
            let view = staging
                .get_mapped_range(..)
                .map_err(|e| RuntimeError::Readback(e.to_string()))?;
            view[..bytes as usize].to_vec()
        };
        staging.unmap();
        Ok(data)
    }
}
