//! The logical element types the manifests name, with every spelling the generator reads and
//! the runtime prints: one enum for both, so a dtype means the same on either side.

use std::fmt;

/// A logical tensor element type, as the manifests name them.
///
/// `I64` is the logical type of index inputs; on the GPU such tensors are stored as `u32`
/// after a checked narrowing, so [`DType::size_bytes`] reports the host storage size of the
/// logical type, not of its GPU representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16; shaders need the `shader-f16` feature.
    F16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit signed integer (logical index type, narrowed to `u32` on upload).
    I64,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 4] = [DType::F32, DType::F16, DType::U32, DType::I64];

    /// The float dtypes, what most type variables allow.
    pub const FLOATS: &[DType] = &[DType::F32, DType::F16];

    /// The WGSL scalar type name (`f32`, `f16`, `u32`, `i64`), which is also the value of
    /// `dtypes.<T>` in expressions.
    pub const fn wgsl_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::U32 => "u32",
            DType::I64 => "i64",
        }
    }

    /// The ONNX type name the manifests use (`float32`, `float16`, `uint32`, `int64`), which
    /// is also the value of `tensorDtypes.<x>` in expressions.
    pub const fn onnx_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::U32 => "uint32",
            DType::I64 => "int64",
        }
    }

    /// The variant's name (`F32`), as generated code spells the constant.
    pub const fn variant_name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::U32 => "U32",
            DType::I64 => "I64",
        }
    }

    /// Parses an ONNX type name as written in manifests; `None` for anything else.
    pub fn from_onnx_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.onnx_name() == name)
    }

    /// Parses any spelling a manifest may use: ONNX (`float32`), WGSL (`f32`) or `float`.
    pub fn parse(name: &str) -> Option<DType> {
        match name {
            "float" => Some(DType::F32),
            _ => DType::ALL
                .into_iter()
                .find(|d| d.onnx_name() == name || d.wgsl_name() == name),
        }
    }

    /// Bytes per element of the logical type (4, 2, 4, 8).
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 => 4,
            DType::F16 => 2,
            DType::I64 => 8,
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.onnx_name())
    }
}

#[cfg(test)]
mod tests {
    use super::DType;

    #[test]
    fn every_spelling_parses_to_its_dtype() {
        for d in DType::ALL {
            assert_eq!(DType::parse(d.onnx_name()), Some(d));
            assert_eq!(DType::parse(d.wgsl_name()), Some(d));
            assert_eq!(DType::from_onnx_name(d.onnx_name()), Some(d));
            assert_eq!(format!("{d:?}"), d.variant_name());
        }
        assert_eq!(DType::parse("float"), Some(DType::F32));
        assert_eq!(DType::parse("bfloat16"), None);
    }
}
