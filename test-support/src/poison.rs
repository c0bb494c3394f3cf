//! Poison values: outputs are filled with them before a run and compared by bits, so an
//! element still holding one was not written, and two runs agree only when their bits do.

use kernel_runtime::Float;
use kernel_runtime::half::f16;

/// An element type with a poison value (a NaN no kernel computes).
pub trait Poison: Float {
    const POISON: Self;
    /// The value's bits, for comparisons that must tell NaNs apart.
    fn bits(self) -> u32;
}

impl Poison for f32 {
    const POISON: Self = f32::from_bits(0x7fc0_0bad);
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Poison for f16 {
    const POISON: Self = f16::from_bits(0x7e55);
    fn bits(self) -> u32 {
        u32::from(self.to_bits())
    }
}

/// The index of the first element of `values` that still holds the poison: one the call did
/// not write.
pub fn first_unwritten<T: Poison>(values: &[T]) -> Option<usize> {
    values.iter().position(|v| v.bits() == T::POISON.bits())
}

/// The index of the first element of `values` that no longer holds the poison: one the call
/// wrote.
pub fn first_written<T: Poison>(values: &[T]) -> Option<usize> {
    values.iter().position(|v| v.bits() != T::POISON.bits())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poison_values_are_nans_of_their_own() {
        assert!(f32::POISON.is_nan() && f16::POISON.is_nan());
        assert_ne!(f32::POISON.bits(), f32::NAN.bits());
        assert_ne!(f16::POISON.bits(), f16::NAN.bits());
    }

    #[test]
    fn written_and_unwritten_elements_are_told_apart_by_bits() {
        let values = [f32::POISON, 1.0, f32::NAN, f32::POISON];
        assert_eq!(first_unwritten(&values), Some(0));
        assert_eq!(first_written(&values), Some(1));
        assert_eq!(first_unwritten(&values[1..3]), None);
        assert_eq!(first_written(&[f16::POISON; 3]), None);
    }
}
