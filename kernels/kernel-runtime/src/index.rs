//! `int64` index tensors, stored on the GPU as `u32` after checked narrowing, with their host
//! values when the host made them.

use std::fmt;

use crate::context::Context;
use crate::error::RuntimeError;
use crate::tensor::Tensor;

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

/// A logical `int64` tensor stored on the GPU as `u32`.
///
/// Uploaded from the host ([`IndexTensor::from_i64`], [`IndexTensor::from_u32`]), it keeps
/// the narrowed values, so generated code checks index contracts (e.g. position ids against
/// a cache length) on the host without a readback. Made on the GPU
/// ([`IndexTensor::from_buffer`], [`IndexTensor::from_tensor`]), it has no host values:
/// those checks are skipped and the shader's own guards apply (each op's documentation says
/// what they do with an out-of-range index).
pub struct IndexTensor {
    data: Tensor<u32>,
    values: Option<Vec<u32>>,
}

impl IndexTensor {
    /// Narrows and uploads `data`; [`RuntimeError::Narrowing`] names the first element that
    /// does not fit in `u32`.
    pub fn from_i64(ctx: &Context, shape: &[usize], data: &[i64]) -> Result<Self, RuntimeError> {
        let (numel, _) = crate::tensor::sized(ctx, "index tensor", shape, 4)?;
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
        let data = Tensor::from_slice(ctx, shape, &values)?;
        Ok(Self {
            data,
            values: Some(values),
        })
    }

    /// A view of `u32` indices in a buffer the application filled on the GPU; see
    /// [`Tensor::from_buffer`] for the checks. It has no host values.
    pub fn from_buffer(
        ctx: &Context,
        buffer: &wgpu::Buffer,
        offset: u64,
        shape: &[usize],
    ) -> Result<Self, RuntimeError> {
        Ok(Self::from_tensor(Tensor::from_buffer(
            ctx, buffer, offset, shape,
        )?))
    }

    /// `u32` indices an op wrote (e.g. an arg-max); it has no host values.
    pub fn from_tensor(data: Tensor<u32>) -> Self {
        Self { data, values: None }
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.data.numel()
    }

    /// The narrowed values as uploaded, or `None` when the indices were made on the GPU.
    pub fn values(&self) -> Option<&[u32]> {
        self.values.as_deref()
    }

    /// The `u32` tensor on the GPU.
    pub fn as_tensor(&self) -> &Tensor<u32> {
        &self.data
    }

    /// The buffer the indices live in.
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.data.buffer()
    }

    /// The range of the buffer an op binds.
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        self.data.binding()
    }

    /// Reads the buffer back and widens to `i64`; waits for all submitted work.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_vec(&self, ctx: &Context) -> Result<Vec<i64>, RuntimeError> {
        pollster::block_on(self.read_async(ctx))
    }

    /// [`IndexTensor::to_vec`] without blocking.
    pub async fn read_async(&self, ctx: &Context) -> Result<Vec<i64>, RuntimeError> {
        let narrow = self.data.read_async(ctx).await?;
        Ok(narrow.into_iter().map(i64::from).collect())
    }
}

impl fmt::Debug for IndexTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexTensor")
            .field("shape", &self.shape())
            .field("host_values", &self.values.is_some())
            .finish_non_exhaustive()
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
}
