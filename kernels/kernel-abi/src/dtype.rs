//! The logical element types the manifests name, with every spelling the generator reads and
//! the runtime prints: one enum for both, so a dtype means the same on either side.

use std::fmt;

/// A logical tensor element type, as the manifests name them.
///
/// Some logical types are stored on the GPU in a wider word, as the Hub's runtime stores them:
/// `I64` (index inputs) as `u32` after a checked narrowing, and the 8- and 16-bit integers
/// `I8`, `I16` / `U8` as one `i32` / `u32` word per element (WGSL has no narrower storage).
/// [`DType::size_bytes`] is the host size of the logical type, [`DType::storage_bytes`] the
/// GPU size of one element.
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
    /// 32-bit signed integer.
    I32,
    /// 8-bit signed integer, stored sign-extended in one `i32` word per element.
    I8,
    /// 8-bit unsigned integer, stored zero-extended in one `u32` word per element.
    U8,
    /// 16-bit signed integer, stored sign-extended in one `i32` word per element.
    I16,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 8] = [
        DType::F32,
        DType::F16,
        DType::U32,
        DType::I64,
        DType::I32,
        DType::I8,
        DType::U8,
        DType::I16,
    ];

    /// The float dtypes, what most type variables allow.
    pub const FLOATS: &[DType] = &[DType::F32, DType::F16];

    /// The WGSL scalar a shader sees for one element (`f32`, `f16`, `u32`, `i64`, `i32`, and
    /// `i32` / `u32` for the widened `int8` / `uint8`), which is also the value of
    /// `dtypes.<T>` in expressions, as in the Hub's runtime. Not unique: see
    /// [`DType::unique_name`].
    pub const fn wgsl_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::U32 | DType::U8 => "u32",
            DType::I64 => "i64",
            DType::I32 | DType::I8 | DType::I16 => "i32",
        }
    }

    /// A short spelling that names this dtype alone: the WGSL name where no other dtype
    /// shares it (`f32`, `u32`, `i32`…), else the ONNX name (`int8`, `uint8`). Shader names and
    /// shader-table keys use it, since `int8` and `int32` (one WGSL scalar) may need shaders of
    /// their own.
    pub const fn unique_name(self) -> &'static str {
        match self {
            DType::I8 | DType::U8 | DType::I16 => self.onnx_name(),
            _ => self.wgsl_name(),
        }
    }

    /// The ONNX type name the manifests use (`float32`, `float16`, `uint32`, `int64`,
    /// `int32`, `int8`, `uint8`), which is also the value of `tensorDtypes.<x>` in
    /// expressions.
    pub const fn onnx_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::I8 => "int8",
            DType::U8 => "uint8",
            DType::I16 => "int16",
        }
    }

    /// The variant's name (`F32`), as generated code spells the constant.
    pub const fn variant_name(self) -> &'static str {
        match self {
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::U32 => "U32",
            DType::I64 => "I64",
            DType::I32 => "I32",
            DType::I8 => "I8",
            DType::U8 => "U8",
            DType::I16 => "I16",
        }
    }

    /// Parses an ONNX type name as written in manifests; `None` for anything else.
    pub fn from_onnx_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.onnx_name() == name)
    }

    /// Parses any spelling a manifest may use: ONNX (`float32`, `int8`), WGSL (`f32`) or
    /// `float`. A WGSL spelling names the 32-bit type only (`i32` is `int32`, `u32` is
    /// `uint32`): the 8-bit types have no WGSL scalar of their own.
    pub fn parse(name: &str) -> Option<DType> {
        match name {
            "float" => Some(DType::F32),
            _ => DType::ALL
                .into_iter()
                .find(|d| d.onnx_name() == name || d.unique_name() == name),
        }
    }

    /// Bytes per element of the logical type on the host (4, 2, 4, 8, 4, 1, 1, 2).
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::U32 | DType::I32 => 4,
            DType::F16 | DType::I16 => 2,
            DType::I64 => 8,
            DType::I8 | DType::U8 => 1,
        }
    }

    /// Bytes per element on the GPU: 2 for `F16`, else 4 (`I64` is stored as `u32`, `I8`,
    /// `U8` and `I16` widened to one 32-bit word each).
    pub const fn storage_bytes(self) -> usize {
        match self {
            DType::F16 => 2,
            DType::F32
            | DType::U32
            | DType::I32
            | DType::I64
            | DType::I8
            | DType::U8
            | DType::I16 => 4,
        }
    }

    /// Whether this is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }

    /// Whether this is an integer type (every dtype that is not a float).
    pub const fn is_integer(self) -> bool {
        !self.is_float()
    }

    /// Whether this is a signed integer type.
    pub const fn is_signed_integer(self) -> bool {
        matches!(self, DType::I64 | DType::I32 | DType::I8 | DType::I16)
    }

    /// The range of an integer type's values (`None` for floats): what a value must lie in
    /// to be uploaded exactly.
    pub const fn integer_range(self) -> Option<(i64, i64)> {
        match self {
            DType::F32 | DType::F16 => None,
            DType::U32 => Some((0, u32::MAX as i64)),
            DType::I64 => Some((i64::MIN, i64::MAX)),
            DType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
            DType::I8 => Some((i8::MIN as i64, i8::MAX as i64)),
            DType::U8 => Some((0, u8::MAX as i64)),
            DType::I16 => Some((i16::MIN as i64, i16::MAX as i64)),
        }
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
            assert_eq!(DType::parse(d.unique_name()), Some(d));
            assert_eq!(DType::from_onnx_name(d.onnx_name()), Some(d));
            assert_eq!(format!("{d:?}"), d.variant_name());
        }
        assert_eq!(DType::parse("float"), Some(DType::F32));
        assert_eq!(DType::parse("bfloat16"), None);
    }

    #[test]
    fn wgsl_spellings_name_the_32_bit_types() {
        assert_eq!(DType::parse("i32"), Some(DType::I32));
        assert_eq!(DType::parse("u32"), Some(DType::U32));
        assert_eq!(DType::I8.wgsl_name(), "i32");
        assert_eq!(DType::U8.wgsl_name(), "u32");
        assert_eq!(DType::parse("i8"), None);
        assert_eq!(DType::parse("u8"), None);
        assert_eq!(DType::parse("int16"), Some(DType::I16));
        for d in DType::ALL {
            assert_eq!(
                DType::parse(d.wgsl_name()).map(DType::wgsl_name),
                Some(d.wgsl_name())
            );
        }
    }

    #[test]
    fn unique_names_are_unique() {
        let mut names: Vec<&str> = DType::ALL.map(DType::unique_name).to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DType::ALL.len());
    }

    #[test]
    fn sizes_and_ranges() {
        assert_eq!(DType::ALL.map(DType::size_bytes), [4, 2, 4, 8, 4, 1, 1, 2]);
        assert_eq!(
            DType::ALL.map(DType::storage_bytes),
            [4, 2, 4, 4, 4, 4, 4, 4]
        );
        assert_eq!(DType::I16.integer_range(), Some((-32768, 32767)));
        assert_eq!(DType::I16.wgsl_name(), "i32");
        assert_eq!(DType::I8.integer_range(), Some((-128, 127)));
        assert_eq!(DType::U8.integer_range(), Some((0, 255)));
        assert_eq!(DType::F16.integer_range(), None);
        assert!(DType::I8.is_signed_integer() && !DType::U8.is_signed_integer());
        assert!(DType::U32.is_integer() && !DType::F32.is_integer());
    }
}
