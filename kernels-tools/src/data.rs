//! Seeded test data and tolerant comparison for GPU-versus-reference checks.
//!
//! Conformance tests draw random inputs (never zeros, which hide sign and scale mistakes), round
//! them to the kernel's element type, compute the float64 reference on the *rounded* values, and
//! compare the GPU result with an absolute + relative tolerance (SEMANTICS.md §5).
//! Everything here is deterministic for a given seed so a failure can be replayed.

use std::fmt;
use std::time::Duration;

use kernel_runtime::{DType, Element};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A seeded generator of test data (rand's `StdRng`, so runs are reproducible).
#[derive(Debug, Clone)]
pub struct DataRng {
    rng: StdRng,
}

impl DataRng {
    /// A generator whose whole output is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// `n` values uniform in `[lo, hi)`.
    ///
    /// Exact zeros are redrawn, so a proper range (`lo < hi`) never yields a zero element
    /// and therefore never an all-zero tensor. A degenerate range (`lo >= hi`) gives `n`
    /// copies of `lo`.
    pub fn uniform(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        if lo >= hi {
            return vec![lo; n];
        }
        (0..n)
            .map(|_| {
                loop {
                    let v = self.rng.random_range(lo..hi);
                    if v != 0.0 {
                        break v;
                    }
                }
            })
            .collect()
    }

    /// `n` integers uniform in `[0, bound)` (all zeros when `bound <= 1`).
    pub fn indices(&mut self, n: usize, bound: i64) -> Vec<i64> {
        if bound <= 1 {
            return vec![0; n];
        }
        (0..n).map(|_| self.rng.random_range(0..bound)).collect()
    }
}

/// Rounds every value to `T` (round to nearest even), the data the kernel will see.
pub fn to_elem<T: Element>(data: &[f64]) -> Vec<T> {
    data.iter().map(|&v| T::from_f64(v)).collect()
}

/// Widens kernel elements back to `f64` (exact for `f32` and `f16`).
pub fn from_elem<T: Element>(data: &[T]) -> Vec<f64> {
    data.iter().map(|&v| v.to_f64()).collect()
}

/// `data` rounded to `T` and widened again: the reference's inputs for a `T` kernel.
pub fn round_to<T: Element>(data: &[f64]) -> Vec<f64> {
    data.iter().map(|&v| T::from_f64(v).to_f64()).collect()
}

/// The multi-index of flat row-major `index` in `shape`, for readable failure messages.
pub fn unravel(index: usize, shape: &[usize]) -> Vec<usize> {
    let mut rest = index;
    let mut coords = vec![0; shape.len()];
    for (axis, &dim) in shape.iter().enumerate().rev() {
        if dim > 0 {
            coords[axis] = rest % dim;
            rest /= dim;
        }
    }
    coords
}

/// An element passes when `|got - want| <= abs + rel * |want|`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute part.
    pub abs: f64,
    /// Relative part, scaled by `|want|`.
    pub rel: f64,
}

impl Tolerance {
    /// SEMANTICS.md §5, MRotaryEmbedding float32: 1e-5 absolute + 1e-5 relative.
    pub const MROPE_F32: Tolerance = Tolerance {
        abs: 1e-5,
        rel: 1e-5,
    };
    /// SEMANTICS.md §5, MRotaryEmbedding float16: 1e-2 absolute (ORT's own f16 tolerance).
    pub const MROPE_F16: Tolerance = Tolerance {
        abs: 1e-2,
        rel: 0.0,
    };

    /// The MRotaryEmbedding tolerance for a kernel element type.
    pub fn mrope(dtype: DType) -> Tolerance {
        match dtype {
            DType::F16 => Self::MROPE_F16,
            _ => Self::MROPE_F32,
        }
    }

    /// SEMANTICS.md §5, GatedRelativePositionBias float32: 1e-5 relative (plus a hair of absolute
    /// slack for exact zeros).
    pub const GATED_BIAS_F32: Tolerance = Tolerance {
        abs: 1e-7,
        rel: 1e-5,
    };
    /// SEMANTICS.md §5, GatedRelativePositionBias float16: 1e-2 relative plus 1e-3 absolute near 0.
    pub const GATED_BIAS_F16: Tolerance = Tolerance {
        abs: 1e-3,
        rel: 1e-2,
    };

    /// The GatedRelativePositionBias tolerance for a kernel element type.
    pub fn gated_bias(dtype: DType) -> Tolerance {
        match dtype {
            DType::F16 => Self::GATED_BIAS_F16,
            _ => Self::GATED_BIAS_F32,
        }
    }

    /// SEMANTICS.md §5, BiasSoftmax float32: 1e-6 absolute.
    pub const BIAS_SOFTMAX_F32: Tolerance = Tolerance {
        abs: 1e-6,
        rel: 0.0,
    };
    /// SEMANTICS.md §5, BiasSoftmax float16: 2e-3 absolute (outputs lie in [0, 1]).
    pub const BIAS_SOFTMAX_F16: Tolerance = Tolerance {
        abs: 2e-3,
        rel: 0.0,
    };

    /// The BiasSoftmax tolerance for a kernel element type.
    pub fn bias_softmax(dtype: DType) -> Tolerance {
        match dtype {
            DType::F16 => Self::BIAS_SOFTMAX_F16,
            _ => Self::BIAS_SOFTMAX_F32,
        }
    }

    /// MatMul with a dot of `depth` products: float32 1e-5 absolute and relative, growing as
    /// √depth past 64 (the sums' rounding in another order than the reference's), as the
    /// `hub` crate's tests allow; float16, whose output is rounded to 11 bits, 1e-3 relative
    /// and 1e-3 absolute growing likewise.
    pub fn matmul(dtype: DType, depth: usize) -> Tolerance {
        let growth = (depth as f64 / 64.0).sqrt().max(1.0);
        match dtype {
            DType::F16 => Tolerance {
                abs: 1e-3 * growth,
                rel: 1e-3,
            },
            _ => Tolerance {
                abs: 1e-5 * growth,
                rel: 1e-5 * growth,
            },
        }
    }

    /// The error budget at reference value `want`.
    pub fn budget(&self, want: f64) -> f64 {
        self.abs + self.rel * want.abs()
    }
}

/// The element that is furthest outside (or closest to) its tolerance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Worst {
    /// Flat index of the element.
    pub index: usize,
    /// The value under test.
    pub got: f64,
    /// The reference value.
    pub want: f64,
    /// `|got - want|` (infinite when exactly one of them is NaN).
    pub abs_err: f64,
}

/// The result of comparing a tensor against its reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Length of the tensor under test.
    pub got_len: usize,
    /// Length of the reference.
    pub want_len: usize,
    /// Largest `|got - want|`.
    pub max_abs: f64,
    /// Largest `|got - want| / |want|` over elements with `want != 0`.
    pub max_rel: f64,
    /// Elements outside the tolerance.
    pub failures: usize,
    /// The element with the largest error relative to its budget; `None` when empty.
    pub worst: Option<Worst>,
    /// The tolerance applied.
    pub tolerance: Tolerance,
}

impl Comparison {
    /// Whether lengths agree and every element is within tolerance.
    pub fn passed(&self) -> bool {
        self.got_len == self.want_len && self.failures == 0
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.got_len != self.want_len {
            write!(
                f,
                "length mismatch: got {} elements, want {}; ",
                self.got_len, self.want_len
            )?;
        }
        write!(
            f,
            "{} of {} elements outside {} abs + {} rel; max abs err {:.3e}, max rel err {:.3e}",
            self.failures,
            self.want_len.min(self.got_len),
            self.tolerance.abs,
            self.tolerance.rel,
            self.max_abs,
            self.max_rel
        )?;
        if let Some(w) = self.worst {
            write!(
                f,
                "; worst element [{}]: got {}, want {} (abs err {:.3e})",
                w.index, w.got, w.want, w.abs_err
            )?;
        }
        Ok(())
    }
}

/// Compares `got` with `want` element by element (over the shorter length; a length
/// difference alone fails). NaN matches only NaN.
pub fn compare(got: &[f64], want: &[f64], tolerance: Tolerance) -> Comparison {
    let mut cmp = Comparison {
        got_len: got.len(),
        want_len: want.len(),
        max_abs: 0.0,
        max_rel: 0.0,
        failures: 0,
        worst: None,
        tolerance,
    };
    // Rank elements by error / budget so the reported element is the most out of tolerance,
    // not merely the largest absolute difference on a large value.
    let mut worst_ratio = f64::NEG_INFINITY;
    for (index, (&g, &w)) in got.iter().zip(want).enumerate() {
        let abs_err = if g.is_nan() && w.is_nan() {
            0.0
        } else if g.is_nan() || w.is_nan() {
            f64::INFINITY
        } else if g == w {
            // Also covers equal infinities, whose difference is NaN.
            0.0
        } else {
            (g - w).abs()
        };
        let budget = tolerance.budget(if w.is_finite() { w } else { 0.0 });
        let ok = abs_err <= budget;
        if !ok {
            cmp.failures += 1;
        }
        cmp.max_abs = cmp.max_abs.max(abs_err);
        if w != 0.0 && w.is_finite() {
            cmp.max_rel = cmp.max_rel.max(abs_err / w.abs());
        }
        let ratio = if budget > 0.0 {
            abs_err / budget
        } else if ok {
            0.0
        } else {
            f64::INFINITY
        };
        if ratio > worst_ratio {
            worst_ratio = ratio;
            cmp.worst = Some(Worst {
                index,
                got: g,
                want: w,
                abs_err,
            });
        }
    }
    cmp
}

/// The median of `times` (the upper one of an even count), or `None` when there are none.
pub fn median(times: &[Duration]) -> Option<Duration> {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_seeded_in_range_and_never_zero() {
        let a = DataRng::new(7).uniform(1000, -1.0, 1.0);
        let b = DataRng::new(7).uniform(1000, -1.0, 1.0);
        assert_eq!(a, b);
        assert!(a.iter().all(|&v| (-1.0..1.0).contains(&v) && v != 0.0));
        assert_ne!(a, DataRng::new(8).uniform(1000, -1.0, 1.0));
        assert_eq!(DataRng::new(1).uniform(3, 2.0, 2.0), [2.0; 3]);
        let idx = DataRng::new(3).indices(500, 5);
        assert!(idx.iter().all(|&v| (0..5).contains(&v)));
    }

    #[test]
    fn rounding_goes_through_the_element_type() {
        assert_eq!(round_to::<half::f16>(&[0.1]), [0.0999755859375]);
        assert_eq!(round_to::<f32>(&[0.5]), [0.5]);
        let h: Vec<half::f16> = to_elem(&[1.5, -2.0]);
        assert_eq!(from_elem(&h), [1.5, -2.0]);
    }

    #[test]
    fn unravel_is_row_major() {
        assert_eq!(unravel(0, &[2, 3, 4]), [0, 0, 0]);
        assert_eq!(unravel(23, &[2, 3, 4]), [1, 2, 3]);
        assert_eq!(unravel(5, &[2, 3]), [1, 2]);
    }

    #[test]
    fn compare_reports_the_worst_element() {
        let tol = Tolerance { abs: 0.1, rel: 0.0 };
        let c = compare(&[1.0, 2.05, 3.5], &[1.0, 2.0, 3.0], tol);
        assert!(!c.passed());
        assert_eq!(c.failures, 1);
        let w = c.worst.expect("non-empty");
        assert_eq!((w.index, w.got, w.want), (2, 3.5, 3.0));
        assert!(c.to_string().contains("worst element [2]: got 3.5, want 3"));

        assert!(compare(&[1.0, 2.05], &[1.0, 2.0], tol).passed());
        assert!(!compare(&[1.0], &[1.0, 2.0], tol).passed());
        assert!(!compare(&[f64::NAN], &[1.0], tol).passed());
        assert!(compare(&[f64::NAN], &[f64::NAN], tol).passed());
        assert!(compare(&[], &[], tol).passed());
    }

    #[test]
    fn relative_part_scales_with_the_reference() {
        let c = compare(&[1000.009], &[1000.0], Tolerance::MROPE_F32);
        assert!(c.passed(), "{c}");
        let c = compare(&[1.00003], &[1.0], Tolerance::MROPE_F32);
        assert!(!c.passed(), "{c}");
    }
}
