//! Typed GPU tensors: floating-point [`Tensor`]s, `int64` [`IndexTensor`]s stored as `u32`,
//! and [`AnyTensor`] for callers that only know the dtype at run time.

use std::fmt;
use std::marker::PhantomData;

use crate::context::Context;
use crate::dtype::{DType, Element};
use crate::error::RuntimeError;
use crate::record::storage_size;

/// Usage of every tensor buffer: bindable as storage, uploadable, readable.
const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// Elements of `shape`, or `None` on overflow.
fn checked_numel(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Elements and GPU bytes of a tensor of `shape` with `elem_bytes`-byte elements, checked
/// against the device's storage binding limit.
fn sized(
    ctx: &Context,
    what: &str,
    shape: &[usize],
    elem_bytes: u64,
) -> Result<(usize, u64), RuntimeError> {
    let overflow = || RuntimeError::TooLarge {
        what: format!("{what} of shape {shape:?}"),
        bytes: u64::MAX,
        limit: ctx.storage_limit(),
    };
    let numel = checked_numel(shape).ok_or_else(overflow)?;
    let bytes = (numel as u64)
        .checked_mul(elem_bytes)
        .ok_or_else(overflow)?;
    let size = storage_size(bytes);
    ctx.check_storage_size(&format!("{what} of shape {shape:?}"), size)?;
    Ok((numel, size))
}

/// A dense row-major tensor of `T` in a GPU storage buffer.
///
/// The buffer has `STORAGE | COPY_SRC | COPY_DST` usage and is padded to a multiple of 4
/// bytes; a zero-element tensor still gets a small buffer so it can be bound.
pub struct Tensor<T: Element> {
    buffer: wgpu::Buffer,
    shape: Vec<usize>,
    numel: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> Tensor<T> {
    /// Uploads `data` (row-major, `numel(shape)` elements).
    pub fn from_slice(ctx: &Context, shape: &[usize], data: &[T]) -> Result<Self, RuntimeError> {
        let (numel, size) = sized(ctx, "tensor", shape, T::DTYPE.size_bytes() as u64)?;
        if data.len() != numel {
            return Err(RuntimeError::ShapeMismatch {
                expected: numel,
                got: data.len(),
            });
        }
        let buffer = ctx.create_initialized_buffer(
            "tensor",
            bytemuck::cast_slice(data),
            size,
            TENSOR_USAGE,
        )?;
        Ok(Self::wrap(buffer, shape, numel))
    }

    /// A zero-filled tensor (outputs are allocated this way).
    pub fn zeros(ctx: &Context, shape: &[usize]) -> Result<Self, RuntimeError> {
        let (numel, size) = sized(ctx, "tensor", shape, T::DTYPE.size_bytes() as u64)?;
        let buffer = ctx.create_buffer_checked("tensor", size, TENSOR_USAGE)?;
        Ok(Self::wrap(buffer, shape, numel))
    }

    fn wrap(buffer: wgpu::Buffer, shape: &[usize], numel: usize) -> Self {
        Self {
            buffer,
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

    /// The storage buffer, to pass as a plan argument.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Reads the tensor back; waits for all submitted work.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<T>, RuntimeError> {
        pollster::block_on(self.read_async(ctx))
    }

    /// Reads the tensor back without blocking (the way to read in a browser); completes
    /// after all submitted work, and reports errors of earlier steps not yet reported.
    pub async fn read_async(&self, ctx: &Context) -> Result<Vec<T>, RuntimeError> {
        let bytes = self.numel as u64 * T::DTYPE.size_bytes() as u64;
        let raw = ctx.read_buffer_async(&self.buffer, bytes).await?;
        Ok(bytemuck::pod_collect_to_vec(&raw))
    }
}

impl<T: Element> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &T::DTYPE)
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

/// Narrows `int64` values to the `u32` the GPU stores indices as, failing on the first value
/// that is negative or at least 2^32 ("narrowing": "checked").
pub fn narrow_i64_to_u32(data: &[i64]) -> Result<Vec<u32>, RuntimeError> {
    data.iter()
        .enumerate()
        .map(|(index, &value)| {
            u32::try_from(value).map_err(|_| RuntimeError::Narrowing { index, value })
        })
        .collect()
}

/// A logical `int64` tensor stored on the GPU as `u32` after checked narrowing.
///
/// The narrowed host values are kept, so generated code can check index contracts (e.g.
/// position ids against a cache length) on the host without a readback.
pub struct IndexTensor {
    buffer: wgpu::Buffer,
    shape: Vec<usize>,
    values: Vec<u32>,
}

impl IndexTensor {
    /// Narrows and uploads `data`; [`RuntimeError::Narrowing`] names the first element that
    /// does not fit in `u32`.
    pub fn from_i64(ctx: &Context, shape: &[usize], data: &[i64]) -> Result<Self, RuntimeError> {
        let (numel, _) = sized(ctx, "index tensor", shape, 4)?;
        if data.len() != numel {
            return Err(RuntimeError::ShapeMismatch {
                expected: numel,
                got: data.len(),
            });
        }
        Self::from_u32(ctx, shape, narrow_i64_to_u32(data)?)
    }

    /// Uploads values that are already `u32`.
    pub fn from_u32(
        ctx: &Context,
        shape: &[usize],
        values: Vec<u32>,
    ) -> Result<Self, RuntimeError> {
        let (numel, size) = sized(ctx, "index tensor", shape, 4)?;
        if values.len() != numel {
            return Err(RuntimeError::ShapeMismatch {
                expected: numel,
                got: values.len(),
            });
        }
        let buffer = ctx.create_initialized_buffer(
            "index tensor",
            bytemuck::cast_slice(&values),
            size,
            TENSOR_USAGE,
        )?;
        Ok(Self {
            buffer,
            shape: shape.to_vec(),
            values,
        })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.values.len()
    }

    /// The narrowed values, as uploaded.
    pub fn values(&self) -> &[u32] {
        &self.values
    }

    /// The storage buffer (`u32` elements), to pass as a plan argument.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Reads the buffer back and widens to `i64`; waits for all submitted work.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<i64>, RuntimeError> {
        pollster::block_on(self.read_async(ctx))
    }

    /// [`IndexTensor::to_vec`] without blocking.
    pub async fn read_async(&self, ctx: &Context) -> Result<Vec<i64>, RuntimeError> {
        let raw = ctx
            .read_buffer_async(&self.buffer, self.values.len() as u64 * 4)
            .await?;
        let narrow: Vec<u32> = bytemuck::pod_collect_to_vec(&raw);
        Ok(narrow.into_iter().map(i64::from).collect())
    }
}

impl fmt::Debug for IndexTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexTensor")
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

/// A tensor whose element type is known only at run time (the dynamic `run-op` path).
#[derive(Debug)]
pub enum AnyTensor {
    /// `float32`.
    F32(Tensor<f32>),
    /// `float16`.
    F16(Tensor<half::f16>),
    /// `int64`, stored as `u32`.
    Index(IndexTensor),
}

impl AnyTensor {
    /// Uploads `f64` host data rounded to `dtype` (`int64` values must be integral and fit
    /// in `u32`, `uint32` is stored like an index).
    pub fn from_f64(
        ctx: &Context,
        dtype: DType,
        shape: &[usize],
        data: &[f64],
    ) -> Result<Self, RuntimeError> {
        Ok(match dtype {
            DType::F32 => {
                let v: Vec<f32> = data.iter().map(|&x| x as f32).collect();
                AnyTensor::F32(Tensor::from_slice(ctx, shape, &v)?)
            }
            DType::F16 => {
                let v: Vec<half::f16> = data.iter().map(|&x| half::f16::from_f64(x)).collect();
                AnyTensor::F16(Tensor::from_slice(ctx, shape, &v)?)
            }
            DType::U32 | DType::I64 => {
                // Saturating casts map non-integral or out-of-range values onto something the
                // checked narrowing rejects or that differs from the input, caught below.
                let mut ints = Vec::with_capacity(data.len());
                for (index, &x) in data.iter().enumerate() {
                    let value = x as i64;
                    if value as f64 != x {
                        return Err(RuntimeError::Narrowing { index, value });
                    }
                    ints.push(value);
                }
                AnyTensor::Index(IndexTensor::from_i64(ctx, shape, &ints)?)
            }
        })
    }

    /// A zero-filled tensor of `dtype` (for outputs described by an [`crate::OutputSpec`]).
    pub fn zeros(ctx: &Context, dtype: DType, shape: &[usize]) -> Result<Self, RuntimeError> {
        Ok(match dtype {
            DType::F32 => AnyTensor::F32(Tensor::zeros(ctx, shape)?),
            DType::F16 => AnyTensor::F16(Tensor::zeros(ctx, shape)?),
            DType::U32 | DType::I64 => {
                let (numel, _) = sized(ctx, "index tensor", shape, 4)?;
                AnyTensor::Index(IndexTensor::from_u32(ctx, shape, vec![0; numel])?)
            }
        })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            AnyTensor::F32(t) => t.shape(),
            AnyTensor::F16(t) => t.shape(),
            AnyTensor::Index(t) => t.shape(),
        }
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        match self {
            AnyTensor::F32(t) => t.numel(),
            AnyTensor::F16(t) => t.numel(),
            AnyTensor::Index(t) => t.numel(),
        }
    }

    /// The logical element type (`I64` for index tensors).
    pub fn dtype(&self) -> DType {
        match self {
            AnyTensor::F32(_) => DType::F32,
            AnyTensor::F16(_) => DType::F16,
            AnyTensor::Index(_) => DType::I64,
        }
    }

    /// The storage buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        match self {
            AnyTensor::F32(t) => t.buffer(),
            AnyTensor::F16(t) => t.buffer(),
            AnyTensor::Index(t) => t.buffer(),
        }
    }

    /// Reads back and widens every element to `f64`.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_f64_vec(&self, ctx: &Context) -> Result<Vec<f64>, RuntimeError> {
        pollster::block_on(self.read_f64_async(ctx))
    }

    /// [`AnyTensor::to_f64_vec`] without blocking.
    pub async fn read_f64_async(&self, ctx: &Context) -> Result<Vec<f64>, RuntimeError> {
        Ok(match self {
            AnyTensor::F32(t) => t
                .read_async(ctx)
                .await?
                .into_iter()
                .map(f64::from)
                .collect(),
            AnyTensor::F16(t) => {
                let values = t.read_async(ctx).await?;
                values.into_iter().map(half::f16::to_f64).collect()
            }
            AnyTensor::Index(t) => {
                let values = t.read_async(ctx).await?;
                values.into_iter().map(|v| v as f64).collect()
            }
        })
    }
}

impl From<Tensor<f32>> for AnyTensor {
    fn from(t: Tensor<f32>) -> Self {
        AnyTensor::F32(t)
    }
}

impl From<Tensor<half::f16>> for AnyTensor {
    fn from(t: Tensor<half::f16>) -> Self {
        AnyTensor::F16(t)
    }
}

impl From<IndexTensor> for AnyTensor {
    fn from(t: IndexTensor) -> Self {
        AnyTensor::Index(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_is_checked() {
        assert_eq!(
            narrow_i64_to_u32(&[0, 1, 4_294_967_295]).unwrap(),
            [0, 1, u32::MAX]
        );
        assert_eq!(
            narrow_i64_to_u32(&[3, -1, 5]),
            Err(RuntimeError::Narrowing {
                index: 1,
                value: -1
            })
        );
        assert_eq!(
            narrow_i64_to_u32(&[1 << 32]),
            Err(RuntimeError::Narrowing {
                index: 0,
                value: 1 << 32
            })
        );
        assert_eq!(narrow_i64_to_u32(&[]).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn numel_overflow_is_detected() {
        assert_eq!(checked_numel(&[]), Some(1));
        assert_eq!(checked_numel(&[2, 0, 3]), Some(0));
        assert_eq!(checked_numel(&[usize::MAX, 2]), None);
    }
}
