//! Element types: the logical dtypes of the manifests and the Rust types that carry them.

use std::fmt;

/// A logical tensor element type, as the manifests name them: `kernel-abi`'s, the same type
/// the generator uses. `I64` tensors are stored as `u32` on the GPU (see
/// [`crate::IndexTensor`]).
pub use kernel_abi::DType;

/// A Rust type that can be the element of a [`crate::Tensor`].
///
/// The `f64` conversions exist for references and tolerant comparisons in tests and in the
/// dynamic `run-op` path; kernels never go through them.
pub trait Element: bytemuck::Pod + Send + Sync + fmt::Debug + 'static {
    /// The logical dtype this Rust type represents.
    const DTYPE: DType;
    /// Widens to `f64` (exact for `f32` and `f16`).
    fn to_f64(self) -> f64;
    /// Rounds an `f64` to this type (round to nearest even).
    fn from_f64(v: f64) -> Self;
}

/// The element types a manifest type variable `T ∈ {float32, float16}` can take.
pub trait Float: Element {}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        half::f16::from_f64(v)
    }
}

impl Element for u32 {
    const DTYPE: DType = DType::U32;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Saturates: negative values become 0, values past `u32::MAX` become `u32::MAX`.
    fn from_f64(v: f64) -> Self {
        v as u32
    }
}

impl Float for f32 {}
impl Float for half::f16 {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_onnx_name(d.onnx_name()), Some(d));
            assert_eq!(d.to_string(), d.onnx_name());
        }
        assert_eq!(DType::from_onnx_name("bfloat16"), None);
    }

    #[test]
    fn sizes_and_wgsl_names() {
        assert_eq!(
            DType::ALL.map(DType::size_bytes),
            [4, 2, 4, 8],
            "storage sizes"
        );
        assert_eq!(
            DType::ALL.map(DType::wgsl_name),
            ["f32", "f16", "u32", "i64"]
        );
        assert!(DType::F16.is_float() && !DType::I64.is_float());
    }

    #[test]
    fn element_conversions() {
        assert_eq!(<f32 as Element>::DTYPE, DType::F32);
        assert_eq!(<half::f16 as Element>::DTYPE, DType::F16);
        assert_eq!(half::f16::from_f64(0.1).to_f64(), 0.0999755859375);
        assert_eq!(f32::from_f64(1.5).to_f64(), 1.5);
    }
}
