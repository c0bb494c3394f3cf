//! The uniforms of bound calls ([`crate::Bound`]): ranges of a few large uniform buffers
//! (chunks) that a context keeps, each with a copy of its bytes on the host.
//!
//! A call's `update` writes the bytes that changed into the host copy and marks them; the
//! marked bytes reach the device with one `queue.write_buffer` per chunk (from the first to the
//! last marked byte) at the next [`UniformArena::flush`], which recording a bound call makes.
//! So a step that updates a hundred calls pays for one write, not a hundred: wgpu makes
//! staging memory for each write, which costs more than the bytes.
//!
//! A range given back (its call dropped, or rebuilt by an update) goes into a free list of its
//! size, and the next call that needs that size takes it: a process that binds calls again and
//! again keeps as many chunks as its most calls alive at once need. Chunks are never dropped
//! while the context lives.

use std::collections::HashMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::RuntimeError;
use crate::gpu::Gpu;
use crate::sync::lock;

/// Bytes of a chunk (a range larger than this gets a chunk of its own size).
pub(crate) const CHUNK_BYTES: u64 = 64 * 1024;

/// Smallest step between ranges: the WGSL uniform struct alignment, which sizes are padded to.
const MIN_STRIDE: u64 = 16;

/// The chunks of one context and the ranges given back.
#[derive(Default)]
pub(crate) struct UniformArena {
    state: Mutex<State>,
    /// Whether a chunk holds marked bytes: what recording checks before it takes the lock.
    dirty: AtomicBool,
}

#[derive(Default)]
struct State {
    chunks: Vec<Chunk>,
    /// Ranges given back, by stride: their chunk and offset.
    free: HashMap<u64, Vec<(usize, u64)>>,
}

struct Chunk {
    buffer: wgpu::Buffer,
    /// The buffer's bytes as the device will hold them after the next flush.
    host: Vec<u8>,
    /// Bytes handed out from the start; beyond them, the chunk is unused.
    used: u64,
    /// The bytes written since the last flush, from the first to the last.
    dirty: Option<(usize, usize)>,
}

/// One call's uniform range in a chunk of its context's arena, given back when dropped.
pub(crate) struct UniformSlot {
    arena: Arc<UniformArena>,
    buffer: wgpu::Buffer,
    chunk: usize,
    offset: u64,
    /// Bytes bound: the parameter bytes padded to 16.
    size: u64,
    /// Bytes reserved: `size` rounded up to the device's uniform offset alignment.
    stride: u64,
}

impl UniformArena {
    /// A range of `size` bytes (a multiple of 16) holding `bytes` (zero after them), taken
    /// from the free list of its stride, else from the last chunk's unused bytes, else from a
    /// new chunk. The bytes reach the device at the next flush.
    pub(crate) fn take(
        self: &Arc<Self>,
        gpu: &Gpu,
        bytes: &[u8],
        size: u64,
    ) -> Result<UniformSlot, RuntimeError> {
        debug_assert!(size.is_multiple_of(MIN_STRIDE) && bytes.len() as u64 <= size);
        let align = u64::from(gpu.caps.limits.min_uniform_buffer_offset_alignment);
        let stride = size.next_multiple_of(align.max(MIN_STRIDE));
        loop {
            {
                let mut state = lock(&self.state);
                if let Some((chunk, offset)) = state.place(stride) {
                    let buffer = state.chunks[chunk].buffer.clone();
                    let slot = UniformSlot {
                        arena: Arc::clone(self),
                        buffer,
                        chunk,
                        offset,
                        size,
                        stride,
                    };
                    self.write_locked(&mut state, &slot, bytes);
                    return Ok(slot);
                }
            }
            // No room: a new chunk, created with no lock held. Two threads that both find no
            // room both add one; the second is used by later calls.
            let chunk_size = CHUNK_BYTES.max(stride);
            let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
            let buffer = gpu.create_buffer("bound-call uniforms", chunk_size, usage)?;
            lock(&self.state).chunks.push(Chunk {
                buffer,
                host: vec![0; chunk_size as usize],
                used: 0,
                dirty: None,
            });
        }
    }

    /// Writes `bytes` into `slot`'s range of the host copy (zero after them) and marks it.
    fn write_locked(&self, state: &mut State, slot: &UniformSlot, bytes: &[u8]) {
        let chunk = &mut state.chunks[slot.chunk];
        let start = slot.offset as usize;
        let end = start + slot.size as usize;
        let range = &mut chunk.host[start..end];
        range[..bytes.len()].copy_from_slice(bytes);
        range[bytes.len()..].fill(0);
        chunk.dirty = Some(match chunk.dirty {
            Some((lo, hi)) => (lo.min(start), hi.max(end)),
            None => (start, end),
        });
        self.dirty.store(true, Ordering::Release);
    }

    /// Writes the bytes marked since the last flush to the device, one `queue.write_buffer`
    /// per chunk that has any; they take effect at the next submission. Costs an atomic load
    /// when nothing is marked.
    pub(crate) fn flush(&self, queue: &wgpu::Queue) {
        if !self.dirty.load(Ordering::Acquire) {
            return;
        }
        let mut state = lock(&self.state);
        self.dirty.store(false, Ordering::Relaxed);
        for chunk in &mut state.chunks {
            if let Some((lo, hi)) = chunk.dirty.take() {
                queue.write_buffer(&chunk.buffer, lo as u64, &chunk.host[lo..hi]);
            }
        }
    }

    /// Bytes of the chunks.
    pub(crate) fn bytes(&self) -> u64 {
        (lock(&self.state).chunks.iter())
            .map(|c| c.host.len() as u64)
            .sum()
    }
}

impl State {
    /// A free range of `stride` bytes: a given-back one, or the last chunk's next.
    fn place(&mut self, stride: u64) -> Option<(usize, u64)> {
        if let Some(found) = self.free.get_mut(&stride).and_then(Vec::pop) {
            return Some(found);
        }
        let index = self.chunks.len().checked_sub(1)?;
        let chunk = &mut self.chunks[index];
        // Every stride is a multiple of the alignment, so `used` stays aligned.
        if chunk.used + stride > chunk.host.len() as u64 {
            return None;
        }
        let offset = chunk.used;
        chunk.used += stride;
        Some((index, offset))
    }
}

impl UniformSlot {
    /// Writes `bytes` (no longer than the range) into the range's host copy, zero after them,
    /// to be uploaded at the next flush.
    pub(crate) fn write(&self, bytes: &[u8]) {
        let mut state = lock(&self.arena.state);
        self.arena.write_locked(&mut state, self, bytes);
    }

    /// The range as a bind group binds it.
    pub(crate) fn binding(&self) -> wgpu::BufferBinding<'_> {
        wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset,
            size: NonZeroU64::new(self.size),
        }
    }
}

impl Drop for UniformSlot {
    fn drop(&mut self) {
        let mut state = lock(&self.arena.state);
        let free = state.free.entry(self.stride).or_default();
        free.push((self.chunk, self.offset));
    }
}
