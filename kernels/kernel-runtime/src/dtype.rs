//! Element types: the logical dtypes of the manifests and the Rust types that carry them.

use std::fmt;

/// A logical tensor element type, as the manifests name them: `kernel-abi`'s, the same type
/// the generator uses. `I64` tensors are stored as `u32` on the GPU (see
/// [`crate::IndexTensor`]), `I8` and `U8` as one 32-bit word per element ([`Element::Word`]).
pub use kernel_abi::DType;

/// A Rust type that can be the element of a [`crate::Tensor`].
///
/// A shader sees each element as one [`Element::Word`]: the type itself, except for the 8-bit
/// integers, which WGSL cannot store; `i8` is stored sign-extended in an `i32` and `u8`
/// zero-extended in a `u32`, as the Hub's runtime stores `int8` and `uint8`. Tensors widen on
/// upload and narrow on readback, so host code only ever sees the 8-bit values.
///
/// The `f64` conversions exist for references and tolerant comparisons in tests and in the
/// dynamic `run-op` path; kernels never go through them.
pub trait Element: bytemuck::Pod + Send + Sync + fmt::Debug + 'static {
    /// The logical dtype this Rust type represents.
    const DTYPE: DType;
    /// What the GPU stores one element as ([`DType::storage_bytes`] bytes). For a type
    /// stored as itself this is `Self`, and the conversions below are the identity.
    type Word: bytemuck::Pod + Send + Sync + fmt::Debug + 'static;
    /// The word uploaded for this element (`i8` sign-extended, `u8` zero-extended).
    fn to_word(self) -> Self::Word;
    /// The element a word read back holds. The 8-bit types keep the word's low 8 bits (two's
    /// complement for `i8`), which is exact for every word a kernel wrapped to 8 bits, as
    /// kernels writing 8-bit tensors must.
    fn from_word(word: Self::Word) -> Self;
    /// Widens to `f64` (exact for every element type).
    fn to_f64(self) -> f64;
    /// Rounds an `f64` to this type: floats to nearest even; integers to the nearest integer
    /// (ties to even), then as each type's doc says.
    fn from_f64(v: f64) -> Self;
}

/// The element types a manifest type variable `T ∈ {float32, float16}` can take.
pub trait Float: Element {}

/// The integer element types (`int32`, `uint32`, `int8`, `uint8`): what a manifest type
/// variable that allows only integers can take (each call is still checked against the
/// dtypes the variable allows).
pub trait Integer: Element {}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    type Word = f32;
    fn to_word(self) -> f32 {
        self
    }
    fn from_word(word: f32) -> Self {
        word
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
    type Word = half::f16;
    fn to_word(self) -> half::f16 {
        self
    }
    fn from_word(word: half::f16) -> Self {
        word
    }
    fn to_f64(self) -> f64 {
        half::f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        half::f16::from_f64(v)
    }
}

impl Element for u32 {
    const DTYPE: DType = DType::U32;
    type Word = u32;
    fn to_word(self) -> u32 {
        self
    }
    fn from_word(word: u32) -> Self {
        word
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Saturates: negative values become 0, values past `u32::MAX` become `u32::MAX`.
    fn from_f64(v: f64) -> Self {
        v as u32
    }
}

impl Element for i32 {
    const DTYPE: DType = DType::I32;
    type Word = i32;
    fn to_word(self) -> i32 {
        self
    }
    fn from_word(word: i32) -> Self {
        word
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Rounds (ties to even) and saturates at `i32::MIN` / `i32::MAX`; NaN becomes 0.
    fn from_f64(v: f64) -> Self {
        v.round_ties_even() as i32
    }
}

impl Element for i8 {
    const DTYPE: DType = DType::I8;
    type Word = i32;
    fn to_word(self) -> i32 {
        i32::from(self)
    }
    fn from_word(word: i32) -> Self {
        // The low 8 bits, read as two's complement: what `(v << 24) >> 24` in a shader keeps.
        word as i8
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Rounds (ties to even), then wraps modulo 256 into `-128..=127`, as converting an
    /// integer to `int8` does in C (so 128 becomes -128 and 255 becomes -1); NaN becomes 0.
    fn from_f64(v: f64) -> Self {
        // `as i64` saturates far outside the range of any tensor value; `as i8` then wraps.
        (v.round_ties_even() as i64) as i8
    }
}

impl Element for i16 {
    const DTYPE: DType = DType::I16;
    type Word = i32;
    fn to_word(self) -> i32 {
        i32::from(self)
    }
    fn from_word(word: i32) -> Self {
        // The low 16 bits, read as two's complement: what `(v << 16) >> 16` in a shader keeps.
        word as i16
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Rounds (ties to even), then wraps modulo 65536 into `-32768..=32767`, as converting
    /// an integer to `int16` does in C; NaN becomes 0.
    fn from_f64(v: f64) -> Self {
        (v.round_ties_even() as i64) as i16
    }
}

impl Element for u8 {
    const DTYPE: DType = DType::U8;
    type Word = u32;
    fn to_word(self) -> u32 {
        u32::from(self)
    }
    fn from_word(word: u32) -> Self {
        // The low 8 bits: what `v & 0xFFu` in a shader keeps.
        word as u8
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    /// Rounds (ties to even), then wraps modulo 256 into `0..=255` (so 256 becomes 0 and -1
    /// becomes 255); NaN becomes 0.
    fn from_f64(v: f64) -> Self {
        (v.round_ties_even() as i64) as u8
    }
}

impl Float for f32 {}
impl Float for half::f16 {}

impl Integer for u32 {}
impl Integer for i32 {}
impl Integer for i8 {}
impl Integer for u8 {}
impl Integer for i16 {}

/// The bytes uploaded for `data`: its own bytes for a type stored as itself (no copy), else
/// each element widened to its [`Element::Word`].
pub(crate) fn word_bytes<T: Element>(data: &[T]) -> std::borrow::Cow<'_, [u8]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<T::Word>() {
        std::borrow::Cow::Borrowed(bytemuck::cast_slice(data))
    } else {
        let words: Vec<T::Word> = data.iter().map(|&v| v.to_word()).collect();
        std::borrow::Cow::Owned(bytemuck::cast_slice(&words).to_vec())
    }
}

/// The elements of `bytes` read back from a tensor's storage: [`Element::Word`]s, each
/// narrowed to `T` where `T` is stored wider.
pub(crate) fn from_word_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<T::Word>() {
        bytemuck::pod_collect_to_vec(bytes)
    } else {
        bytemuck::pod_collect_to_vec::<u8, T::Word>(bytes)
            .into_iter()
            .map(T::from_word)
            .collect()
    }
}

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
            [4, 2, 4, 8, 4, 1, 1, 2],
            "host sizes"
        );
        assert_eq!(
            DType::ALL.map(DType::wgsl_name),
            ["f32", "f16", "u32", "i64", "i32", "i32", "u32", "i32"]
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

    /// Each element's word is as wide as its dtype's GPU storage.
    #[test]
    fn words_are_storage_sized() {
        fn check<T: Element>() {
            assert_eq!(
                size_of::<T::Word>(),
                T::DTYPE.storage_bytes(),
                "{}",
                T::DTYPE
            );
            assert_eq!(size_of::<T>(), T::DTYPE.size_bytes(), "{}", T::DTYPE);
        }
        check::<f32>();
        check::<half::f16>();
        check::<u32>();
        check::<i32>();
        check::<i8>();
        check::<u8>();
        check::<i16>();
    }

    #[test]
    fn sixteen_bit_integers_widen_and_narrow() {
        assert_eq!((-32768i16).to_word(), -32768i32);
        assert_eq!(i16::from_word(0x1_8000), -32768, "the low 16 bits");
        assert_eq!(
            word_bytes(&[-1i16, 2]).as_ref(),
            [255, 255, 255, 255, 2, 0, 0, 0]
        );
        assert_eq!(
            from_word_bytes::<i16>(&[255, 255, 255, 255, 2, 0, 0, 0]),
            [-1, 2]
        );
        assert_eq!(i16::from_f64(32768.0), -32768, "wraps as C converts");
        assert_eq!(i16::from_f64(-2.5), -2, "ties to even");
    }

    #[test]
    fn eight_bit_integers_widen_and_narrow() {
        assert_eq!((-128i8).to_word(), -128i32);
        assert_eq!(127i8.to_word(), 127);
        assert_eq!(255u8.to_word(), 255u32);
        assert_eq!(i8::from_word(-1), -1);
        assert_eq!(
            i8::from_word(0x180),
            -128,
            "the low 8 bits, two's complement"
        );
        assert_eq!(u8::from_word(0x1FF), 255);
        assert_eq!(
            word_bytes(&[-1i8, 2]).as_ref(),
            [255, 255, 255, 255, 2, 0, 0, 0]
        );
        assert_eq!(
            from_word_bytes::<i8>(&[255, 255, 255, 255, 2, 0, 0, 0]),
            [-1, 2]
        );
        assert_eq!(from_word_bytes::<u8>(&[255, 1, 0, 0]), [255]);
        assert!(matches!(
            word_bytes(&[1.0f32]),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn integer_rounding_and_wrapping() {
        assert_eq!(i8::from_f64(127.0), 127);
        assert_eq!(i8::from_f64(128.0), -128);
        assert_eq!(i8::from_f64(-129.0), 127);
        assert_eq!(i8::from_f64(2.5), 2, "ties to even");
        assert_eq!(u8::from_f64(256.0), 0);
        assert_eq!(u8::from_f64(-1.0), 255);
        assert_eq!(u8::from_f64(f64::NAN), 0);
        assert_eq!(i32::from_f64(1e12), i32::MAX);
        assert_eq!(i32::from_f64(-3.5), -4);
        assert_eq!(<i8 as Element>::DTYPE, DType::I8);
        assert_eq!((-128i8).to_f64(), -128.0);
    }
}
