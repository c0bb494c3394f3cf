//! Typed GPU tensors: a [`Tensor`] is a dense row-major range of a storage buffer, either a
//! buffer of its own or a view of a buffer the application made.

use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroU64;

use crate::context::Context;
use crate::dtype::{DType, Element, from_word_bytes, word_bytes};
use crate::error::RuntimeError;
use crate::gpu::{allocation_size, storage_size};
use crate::plan::OutputSpec;

/// Usage of every tensor buffer the runtime creates: bindable as storage, uploadable,
/// readable.
pub(crate) const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Elements of `shape`, or `None` on overflow.
pub(crate) fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Elements and bound bytes of a tensor of `shape` with `elem_bytes`-byte elements, checked
/// against the device's storage binding limit. The bound size is the data rounded up to 4
/// bytes (at least 4), so `arrayLength` in a shader is the element count.
pub(crate) fn sized(
    ctx: &Context,
    what: &str,
    shape: &[usize],
    elem_bytes: u64,
) -> Result<(usize, u64), RuntimeError> {
    let overflow = || RuntimeError::TooLarge {
        what: format!("{what} of shape {shape:?}"),
        bytes: u64::MAX,
        limit: ctx.gpu().storage_limit(),
    };
    let numel = checked_numel(shape).ok_or_else(overflow)?;
    let bytes = (numel as u64)
        .checked_mul(elem_bytes)
        .ok_or_else(overflow)?;
    let size = storage_size(bytes);
    ctx.gpu()
        .check_storage_size(&format!("{what} of shape {shape:?}"), size)?;
    Ok((numel, size))
}

/// Checks that `size` bytes at `offset` of `buffer` can be bound as a storage tensor:
/// `STORAGE` usage, the device's storage offset alignment, and the range inside the buffer.
pub(crate) fn check_view(
    ctx: &Context,
    what: &str,
    buffer: &wgpu::Buffer,
    offset: u64,
    size: u64,
) -> Result<(), RuntimeError> {
    let invalid = |reason: String| RuntimeError::BufferView {
        what: what.to_owned(),
        reason,
    };
    if !buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
        return Err(invalid(format!(
            "the buffer's usage {:?} lacks STORAGE",
            buffer.usage()
        )));
    }
    let align = u64::from(ctx.caps().limits.min_storage_buffer_offset_alignment);
    if !offset.is_multiple_of(align.max(1)) {
        return Err(invalid(format!(
            "offset {offset} is not a multiple of the device's storage offset alignment ({align})"
        )));
    }
    match offset.checked_add(size) {
        Some(end) if end <= buffer.size() => Ok(()),
        _ => Err(invalid(format!(
            "bytes {offset}..{} (the data rounded up to 4) do not fit in the {}-byte buffer",
            offset.saturating_add(size),
            buffer.size()
        ))),
    }
}

/// A dense row-major tensor of `T` in a GPU storage buffer.
///
/// Each element is stored as one [`Element::Word`] (`i8` and `u8` widened to 32 bits, every
/// other type as itself): sizes, bound ranges and views count [`DType::storage_bytes`] per
/// element, [`Tensor::from_slice`] widens and [`Tensor::to_vec`] narrows.
///
/// A tensor made by the runtime ([`Tensor::from_slice`], [`Tensor::zeros`]) owns a buffer
/// with `STORAGE | COPY_SRC | COPY_DST` usage, padded to a multiple of 4 bytes and to at
/// least 16; a zero-element tensor still gets a buffer so it can be bound. [`Tensor::from_buffer`]
/// views a range of a buffer the application made instead. Either way the tensor keeps the
/// buffer alive, and ops bind the tensor's range of it, widened only where the shader reads it
/// as an element larger than the range (a `vec4` of an empty or one-element tensor): into the
/// padding of a buffer of the runtime's, or, for a view, into the buffer after the view when it
/// has room (else the op refuses the call with [`RuntimeError::BindingTooSmall`]).
pub struct Tensor<T: Element> {
    buffer: wgpu::Buffer,
    offset: u64,
    size: u64,
    shape: Vec<usize>,
    numel: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> Tensor<T> {
    /// Uploads `data` (row-major, `numel(shape)` elements).
    pub fn from_slice(ctx: &Context, shape: &[usize], data: &[T]) -> Result<Self, RuntimeError> {
        let (numel, size) = sized(ctx, "tensor", shape, T::DTYPE.storage_bytes() as u64)?;
        if data.len() != numel {
            return Err(RuntimeError::ShapeMismatch {
                expected: numel,
                got: data.len(),
            });
        }
        let buffer = ctx.staging().create_initialized(
            ctx.gpu(),
            "tensor",
            &word_bytes(data),
            allocation_size(size),
            TENSOR_USAGE,
        )?;
        Ok(Self::wrap(buffer, 0, size, shape, numel))
    }

    /// A zero-filled tensor.
    pub fn zeros(ctx: &Context, shape: &[usize]) -> Result<Self, RuntimeError> {
        Self::zeros_labelled(ctx, "tensor", shape)
    }

    /// The zero-filled output `spec` of a plan of `op`: a buffer too large for the device,
    /// or one it has no memory for, is an error naming the output and the op.
    pub fn zeros_for(ctx: &Context, op: &str, spec: &OutputSpec) -> Result<Self, RuntimeError> {
        Self::zeros_labelled(ctx, &format!("output `{}` of {op}", spec.role), &spec.shape)
    }

    fn zeros_labelled(ctx: &Context, what: &str, shape: &[usize]) -> Result<Self, RuntimeError> {
        let (numel, size) = sized(ctx, what, shape, T::DTYPE.storage_bytes() as u64)?;
        let buffer = ctx
            .gpu()
            .create_buffer(what, allocation_size(size), TENSOR_USAGE)?;
        Ok(Self::wrap(buffer, 0, size, shape, numel))
    }

    /// A view of `shape` elements of `T` (each one [`Element::Word`], so 4 bytes for `i8` and
    /// `u8`) starting `offset` bytes into `buffer`, a buffer of
    /// the same device that the application created (a weight arena, a KV cache, the output
    /// of its own pass).
    ///
    /// The buffer needs `STORAGE` usage (and `COPY_SRC` to be read back); `offset` must be a
    /// multiple of the device's `min_storage_buffer_offset_alignment`; and the tensor's bytes,
    /// rounded up to 4, must lie inside the buffer and within the storage binding limit.
    /// Each failure is a [`RuntimeError::BufferView`] saying which.
    pub fn from_buffer(
        ctx: &Context,
        buffer: &wgpu::Buffer,
        offset: u64,
        shape: &[usize],
    ) -> Result<Self, RuntimeError> {
        let what = format!("a {} view of shape {shape:?} at offset {offset}", T::DTYPE);
        let (numel, size) = sized(ctx, &what, shape, T::DTYPE.storage_bytes() as u64)?;
        check_view(ctx, &what, buffer, offset, size)?;
        Ok(Self::wrap(buffer.clone(), offset, size, shape, numel))
    }

    fn wrap(buffer: wgpu::Buffer, offset: u64, size: u64, shape: &[usize], numel: usize) -> Self {
        Self {
            buffer,
            offset,
            size,
            shape: shape.to_vec(),
            numel,
            _elem: PhantomData,
        }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements (product of the shape; 1 for a scalar).
    pub fn numel(&self) -> usize {
        self.numel
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        T::DTYPE
    }

    /// The buffer the tensor lives in (shared with other views of it).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Where the tensor starts in [`Tensor::buffer`], in bytes.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The range of the buffer an op binds: the tensor's bytes rounded up to 4.
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset,
            size: NonZeroU64::new(self.size),
        }
    }

    /// Reads the tensor back (narrowing `i8` and `u8` words to their low 8 bits); waits for
    /// all submitted work.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<T>, RuntimeError> {
        pollster::block_on(self.read_async(ctx))
    }

    /// Reads the tensor back without blocking (the way to read in a browser); completes
    /// after all submitted work, and reports errors of earlier steps not yet reported.
    pub async fn read_async(&self, ctx: &Context) -> Result<Vec<T>, RuntimeError> {
        let bytes = self.numel as u64 * T::DTYPE.storage_bytes() as u64;
        let raw = ctx
            .staging()
            .read(ctx.gpu(), &self.buffer, self.offset, bytes)
            .await?;
        Ok(from_word_bytes(&raw))
    }
}

impl<T: Element> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numel_overflow_is_detected() {
        assert_eq!(checked_numel(&[]), Some(1));
        assert_eq!(checked_numel(&[2, 0, 3]), Some(0));
        assert_eq!(checked_numel(&[usize::MAX, 2]), None);
    }
}
