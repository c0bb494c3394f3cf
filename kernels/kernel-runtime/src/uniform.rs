//! Packing uniform `Params` structs into the bytes a [`crate::PlannedPass`] carries.
//!
//! Manifest `Params` structs hold 4-byte scalars only, laid out at `4 * i` (codegen checks
//! that against naga's layouter), so generated code packs them with [`Words`], field by field;
//! the runtime pads the bytes to [`padded_len`] when it creates the uniform buffer.
//!
//! ```
//! let bytes = kernel_runtime::uniform::Words::with_fields(2).u32(3).f32(0.5).into_bytes();
//! assert_eq!(bytes.len(), 8);
//! assert_eq!(kernel_runtime::uniform::padded_len(bytes.len()), 16);
//! ```

use crate::expr::EvalError;

/// The little-endian bytes of a uniform struct of 4-byte scalar fields, in declaration order.
#[derive(Debug, Clone, Default)]
pub struct Words(Vec<u8>);

impl Words {
    /// An empty struct with room for `fields` fields.
    pub fn with_fields(fields: usize) -> Self {
        Self(Vec::with_capacity(4 * fields))
    }

    /// An empty struct written over `bytes`'s storage (its contents are dropped, its
    /// capacity kept).
    pub fn reusing(mut bytes: Vec<u8>) -> Self {
        bytes.clear();
        Self(bytes)
    }

    /// Appends a `u32` field.
    #[must_use]
    pub fn u32(mut self, value: u32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// Appends an `i32` field.
    #[must_use]
    pub fn i32(mut self, value: i32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// Appends the `u32` field `name`, an expression integer that must fit.
    pub fn checked_u32(self, name: &str, value: i64) -> Result<Self, EvalError> {
        Ok(self.u32(to_u32(name, value)?))
    }

    /// Appends the `i32` field `name`, an expression integer that must fit.
    pub fn checked_i32(self, name: &str, value: i64) -> Result<Self, EvalError> {
        Ok(self.i32(to_i32(name, value)?))
    }

    /// Appends an `f32` field.
    #[must_use]
    pub fn f32(mut self, value: f32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// The packed bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Alignment the runtime pads uniform buffers to: WGSL rounds the size of a struct in the
/// uniform address space up to 16 bytes.
pub const UNIFORM_ALIGNMENT: usize = 16;

/// The size of the uniform buffer the runtime creates for `len` parameter bytes.
pub fn padded_len(len: usize) -> usize {
    len.next_multiple_of(UNIFORM_ALIGNMENT)
        .max(UNIFORM_ALIGNMENT)
}

/// A uniform or override value that must fit a WGSL `u32`; `what` names it as the error
/// shows it (generated code says which inputs it comes from: "`rows` (from the shape of
/// `data`)").
pub fn to_u32(what: &str, value: i64) -> Result<u32, EvalError> {
    u32::try_from(value).map_err(|_| EvalError::new(format!("{what} = {value} does not fit a u32")))
}

/// A uniform value that must fit a WGSL `i32`; `what` as for [`to_u32`].
pub fn to_i32(what: &str, value: i64) -> Result<i32, EvalError> {
    i32::try_from(value)
        .map_err(|_| EvalError::new(format!("{what} = {value} does not fit an i32")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_little_endian_fields_in_order() {
        let bytes = Words::with_fields(3).u32(7).i32(-2).f32(1.5).into_bytes();
        assert_eq!(bytes.len(), 12);
        assert_eq!(&bytes[0..4], &7u32.to_le_bytes());
        assert_eq!(&bytes[4..8], &(-2i32).to_le_bytes());
        assert_eq!(&bytes[8..12], &1.5f32.to_le_bytes());
    }

    #[test]
    fn checked_fields_name_a_value_that_does_not_fit() {
        let bytes = Words::with_fields(2)
            .checked_u32("n", 5)
            .unwrap()
            .checked_i32("d", -1);
        assert_eq!(bytes.unwrap().into_bytes().len(), 8);
        let err = Words::default().checked_u32("`rows`", -3).unwrap_err();
        assert_eq!(err.to_string(), "`rows` = -3 does not fit a u32");
        assert!(Words::default().checked_i32("d", i64::MAX).is_err());
    }

    #[test]
    fn padding() {
        assert_eq!(padded_len(0), 16);
        assert_eq!(padded_len(12), 16);
        assert_eq!(padded_len(17), 32);
    }
}
