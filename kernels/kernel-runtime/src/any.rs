//! [`AnyTensor`]: a tensor whose element type is known only at run time, for tools that pick
//! ops and dtypes by name (`run-op`, the demo, the registry).

use crate::context::Context;
use crate::dtype::{DType, Element};
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
    /// `uint32`.
    U32(Tensor<u32>),
    /// `int32`.
    I32(Tensor<i32>),
    /// `int8`, stored as one sign-extended `i32` word per element.
    I8(Tensor<i8>),
    /// `uint8`, stored as one zero-extended `u32` word per element.
    U8(Tensor<u8>),
    /// `int16`, stored as one sign-extended `i32` word per element.
    I16(Tensor<i16>),
}

/// Calls `$body` with `$t` bound to the typed tensor of whichever variant `$any` is.
macro_rules! each {
    ($any:expr, $t:ident => $body:expr) => {
        match $any {
            AnyTensor::F32($t) => $body,
            AnyTensor::F16($t) => $body,
            AnyTensor::Index($t) => $body,
            AnyTensor::U32($t) => $body,
            AnyTensor::I32($t) => $body,
            AnyTensor::I8($t) => $body,
            AnyTensor::U8($t) => $body,
            AnyTensor::I16($t) => $body,
        }
    };
}

/// `data` as values of the integer `dtype`: each must be integral and inside the dtype's
/// range (no rounding, wrapping or saturating, which would upload something other than what
/// was asked for); the first that is not is a [`RuntimeError::IntegerRange`].
fn exact_integers<T: Element>(data: &[f64]) -> Result<Vec<T>, RuntimeError> {
    let dtype = T::DTYPE;
    // Every integer dtype but int64 (which has its own narrowing) has a range that f64
    // represents exactly, so comparing with its ends is exact.
    let (min, max) = dtype.integer_range().unwrap_or((0, 0));
    data.iter()
        .enumerate()
        .map(|(index, &x)| {
            if x.fract() == 0.0 && x >= min as f64 && x <= max as f64 {
                Ok(T::from_f64(x))
            } else {
                Err(RuntimeError::IntegerRange {
                    dtype,
                    index,
                    value: x.to_string(),
                    min,
                    max,
                })
            }
        })
        .collect()
}

/// Reads a typed tensor back and widens each element to `f64` (exact for every dtype).
async fn read_f64<T: Element>(t: &Tensor<T>, ctx: &Context) -> Result<Vec<f64>, RuntimeError> {
    Ok(t.read_async(ctx)
        .await?
        .into_iter()
        .map(Element::to_f64)
        .collect())
}

impl AnyTensor {
    /// Uploads `f64` host data as `dtype`: floats rounded to it; integers exactly, each value
    /// integral and in the dtype's range ([`RuntimeError::IntegerRange`] names the first that
    /// is not; `int64` values must fit the `u32` they are stored as,
    /// [`RuntimeError::Narrowing`]).
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
            DType::I64 => {
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
            DType::U32 => AnyTensor::U32(Tensor::from_slice(
                ctx,
                shape,
                &exact_integers::<u32>(data)?,
            )?),
            DType::I32 => AnyTensor::I32(Tensor::from_slice(
                ctx,
                shape,
                &exact_integers::<i32>(data)?,
            )?),
            DType::I8 => AnyTensor::I8(Tensor::from_slice(
                ctx,
                shape,
                &exact_integers::<i8>(data)?,
            )?),
            DType::U8 => AnyTensor::U8(Tensor::from_slice(
                ctx,
                shape,
                &exact_integers::<u8>(data)?,
            )?),
            DType::I16 => AnyTensor::I16(Tensor::from_slice(
                ctx,
                shape,
                &exact_integers::<i16>(data)?,
            )?),
        })
    }

    /// A zero-filled tensor of `dtype`.
    pub fn zeros(ctx: &Context, dtype: DType, shape: &[usize]) -> Result<Self, RuntimeError> {
        Ok(match dtype {
            DType::F32 => AnyTensor::F32(Tensor::zeros(ctx, shape)?),
            DType::F16 => AnyTensor::F16(Tensor::zeros(ctx, shape)?),
            DType::I64 => AnyTensor::Index(IndexTensor::from_tensor(Tensor::zeros(ctx, shape)?)),
            DType::U32 => AnyTensor::U32(Tensor::zeros(ctx, shape)?),
            DType::I32 => AnyTensor::I32(Tensor::zeros(ctx, shape)?),
            DType::I8 => AnyTensor::I8(Tensor::zeros(ctx, shape)?),
            DType::U8 => AnyTensor::U8(Tensor::zeros(ctx, shape)?),
            DType::I16 => AnyTensor::I16(Tensor::zeros(ctx, shape)?),
        })
    }

    /// The zero-filled output `spec` of a plan of `op`, named in allocation errors.
    pub fn zeros_for(ctx: &Context, op: &str, spec: &OutputSpec) -> Result<Self, RuntimeError> {
        Ok(match spec.dtype {
            DType::F32 => AnyTensor::F32(Tensor::zeros_for(ctx, op, spec)?),
            DType::F16 => AnyTensor::F16(Tensor::zeros_for(ctx, op, spec)?),
            DType::I64 => {
                AnyTensor::Index(IndexTensor::from_tensor(Tensor::zeros_for(ctx, op, spec)?))
            }
            DType::U32 => AnyTensor::U32(Tensor::zeros_for(ctx, op, spec)?),
            DType::I32 => AnyTensor::I32(Tensor::zeros_for(ctx, op, spec)?),
            DType::I8 => AnyTensor::I8(Tensor::zeros_for(ctx, op, spec)?),
            DType::U8 => AnyTensor::U8(Tensor::zeros_for(ctx, op, spec)?),
            DType::I16 => AnyTensor::I16(Tensor::zeros_for(ctx, op, spec)?),
        })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, t => t.shape())
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        each!(self, t => t.numel())
    }

    /// The logical element type (`I64` for index tensors).
    pub fn dtype(&self) -> DType {
        match self {
            AnyTensor::Index(_) => DType::I64,
            AnyTensor::F32(t) => t.dtype(),
            AnyTensor::F16(t) => t.dtype(),
            AnyTensor::U32(t) => t.dtype(),
            AnyTensor::I32(t) => t.dtype(),
            AnyTensor::I8(t) => t.dtype(),
            AnyTensor::U8(t) => t.dtype(),
            AnyTensor::I16(t) => t.dtype(),
        }
    }

    /// The buffer the tensor lives in.
    pub fn buffer(&self) -> &wgpu::Buffer {
        each!(self, t => t.buffer())
    }

    /// The range of the buffer an op binds.
    pub fn binding(&self) -> wgpu::BufferBinding<'_> {
        each!(self, t => t.binding())
    }

    /// Reads back and widens every element to `f64` (exact for every dtype; 8-bit values are
    /// the low 8 bits of their words, see [`Element::from_word`]).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn to_f64_vec(&self, ctx: &Context) -> Result<Vec<f64>, RuntimeError> {
        pollster::block_on(self.read_f64_async(ctx))
    }

    /// [`AnyTensor::to_f64_vec`] without blocking.
    pub async fn read_f64_async(&self, ctx: &Context) -> Result<Vec<f64>, RuntimeError> {
        match self {
            AnyTensor::F32(t) => read_f64(t, ctx).await,
            AnyTensor::F16(t) => read_f64(t, ctx).await,
            AnyTensor::Index(t) => {
                let values = t.read_async(ctx).await?;
                Ok(values.into_iter().map(|v| v as f64).collect())
            }
            AnyTensor::U32(t) => read_f64(t, ctx).await,
            AnyTensor::I32(t) => read_f64(t, ctx).await,
            AnyTensor::I8(t) => read_f64(t, ctx).await,
            AnyTensor::U8(t) => read_f64(t, ctx).await,
            AnyTensor::I16(t) => read_f64(t, ctx).await,
        }
    }
}

/// `From<Tensor<T>>` for each element type with a variant of its own.
macro_rules! from_tensor {
    ($($elem:ty => $variant:ident),* $(,)?) => {
        $(
            impl From<Tensor<$elem>> for AnyTensor {
                fn from(t: Tensor<$elem>) -> Self {
                    AnyTensor::$variant(t)
                }
            }
        )*
    };
}

from_tensor!(
    f32 => F32,
    half::f16 => F16,
    u32 => U32,
    i32 => I32,
    i8 => I8,
    u8 => U8,
    i16 => I16,
);

impl From<IndexTensor> for AnyTensor {
    fn from(t: IndexTensor) -> Self {
        AnyTensor::Index(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_exact_or_rejected() {
        assert_eq!(
            exact_integers::<i8>(&[-128.0, 0.0, 127.0]).unwrap(),
            [-128, 0, 127]
        );
        assert_eq!(exact_integers::<u8>(&[0.0, 255.0]).unwrap(), [0, 255]);
        assert_eq!(
            exact_integers::<i32>(&[f64::from(i32::MIN), f64::from(i32::MAX)]).unwrap(),
            [i32::MIN, i32::MAX]
        );
        assert_eq!(
            exact_integers::<i8>(&[1.0, 128.0]),
            Err(RuntimeError::IntegerRange {
                dtype: DType::I8,
                index: 1,
                value: "128".to_owned(),
                min: -128,
                max: 127
            })
        );
        let err = exact_integers::<u8>(&[-1.0]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "uint8 element 0 = -1 is not an integer in 0..=255"
        );
        assert!(exact_integers::<u8>(&[0.5]).is_err());
        assert!(exact_integers::<i32>(&[f64::NAN]).is_err());
        assert!(exact_integers::<u32>(&[4_294_967_296.0]).is_err());
        assert!(exact_integers::<i32>(&[f64::INFINITY]).is_err());
    }
}
