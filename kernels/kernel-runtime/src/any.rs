//! [`AnyTensor`]: a tensor whose element type is known only at run time, for tools that pick
//! ops and dtypes by name (`run-op`, the demo, the registry).

use crate::context::Context;
use crate::dtype::DType;
use crate::error::RuntimeError;
use crate::index::IndexTensor;
use crate::plan::OutputSpec;
use crate::tensor::Tensor;

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

    /// A zero-filled tensor of `dtype`.
    pub fn zeros(ctx: &Context, dtype: DType, shape: &[usize]) -> Result<Self, RuntimeError> {
        Ok(match dtype {
            DType::F32 => AnyTensor::F32(Tensor::zeros(ctx, shape)?),
            DType::F16 => AnyTensor::F16(Tensor::zeros(ctx, shape)?),
            DType::U32 | DType::I64 => {
                AnyTensor::Index(IndexTensor::from_tensor(Tensor::zeros(ctx, shape)?))
            }
        })
    }

    /// The zero-filled output `spec` of a plan of `op`, named in allocation errors.
    pub fn zeros_for(ctx: &Context, op: &str, spec: &OutputSpec) -> Result<Self, RuntimeError> {
        Ok(match spec.dtype {
            DType::F32 => AnyTensor::F32(Tensor::zeros_for(ctx, op, spec)?),
            DType::F16 => AnyTensor::F16(Tensor::zeros_for(ctx, op, spec)?),
            DType::U32 | DType::I64 => {
                AnyTensor::Index(IndexTensor::from_tensor(Tensor::zeros_for(ctx, op, spec)?))
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

    /// The buffer the tensor lives in.
    pub fn buffer(&self) -> &wgpu::Buffer {
        match self {
            AnyTensor::F32(t) => t.buffer(),
            AnyTensor::F16(t) => t.buffer(),
            AnyTensor::Index(t) => t.buffer(),
        }
    }

    /// The range of the buffer an op binds.
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        match self {
            AnyTensor::F32(t) => t.binding(),
            AnyTensor::F16(t) => t.binding(),
            AnyTensor::Index(t) => t.binding(),
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
