//! Checked integer arithmetic and shape helpers that generated manifest expressions call.
//!
//! Generated code lowers every manifest expression (`derive`, `when`, dispatch sizes, …) to plain
//! Rust that calls these functions, so they carry the language's semantics: integer `/` floors
//! and `%` takes the sign of the divisor (as in Python and minijinja), overflow is an error rather
//! than a wrap, and shape accessors check their axis.
//!
//! This file has no dependencies on purpose: the code generator compiles the very same file into
//! its expression interpreter (`#[path]` include), so the interpreter used by codegen tests and
//! the code that ships cannot disagree on a result or on an error message.

use std::fmt;

/// An expression evaluation failure: overflow, division by zero, an axis or index out of range,
/// or an undefined value. The message is meant for the end user and names the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// The human-readable message, e.g. `dim(): axis 2 is out of range for a rank-2 shape`.
    pub message: String,
}

impl EvalError {
    /// Creates an error with the given message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// The error for an integer operation whose result does not fit in an `i64`.
fn overflow(lhs: i64, op: &str, rhs: i64) -> EvalError {
    EvalError::new(format!("integer overflow: {lhs} {op} {rhs}"))
}

/// The error for `/` or `%` with a zero divisor.
fn zero_divisor(lhs: impl fmt::Display, op: &str, rhs: impl fmt::Display) -> EvalError {
    EvalError::new(format!("division by zero: {lhs} {op} {rhs}"))
}

/// Checked `a + b`.
pub fn add(a: i64, b: i64) -> Result<i64, EvalError> {
    a.checked_add(b).ok_or_else(|| overflow(a, "+", b))
}

/// Checked `a - b`.
pub fn sub(a: i64, b: i64) -> Result<i64, EvalError> {
    a.checked_sub(b).ok_or_else(|| overflow(a, "-", b))
}

/// Checked `a * b`.
pub fn mul(a: i64, b: i64) -> Result<i64, EvalError> {
    a.checked_mul(b).ok_or_else(|| overflow(a, "*", b))
}

/// Checked `-a` (fails only for `i64::MIN`).
pub fn neg(a: i64) -> Result<i64, EvalError> {
    a.checked_neg()
        .ok_or_else(|| EvalError::new(format!("integer overflow: -({a})")))
}

/// Integer `a / b` rounded toward negative infinity (Python `//`, the language's `/` on
/// integers). Fails on a zero divisor and on `i64::MIN / -1`.
pub fn div(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(zero_divisor(a, "/", b));
    }
    let q = a.checked_div(b).ok_or_else(|| overflow(a, "/", b))?;
    // Truncating division rounds toward zero; step down when the exact quotient is negative
    // and not whole. `q - 1` cannot overflow: a non-zero remainder means |q| < |a|.
    if a % b != 0 && ((a < 0) != (b < 0)) {
        Ok(q - 1)
    } else {
        Ok(q)
    }
}

/// Integer `a % b` with the sign of the divisor (Python `%`), so that
/// `div(a, b) * b + rem(a, b) == a`. Fails on a zero divisor.
pub fn rem(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(zero_divisor(a, "%", b));
    }
    // `checked_rem` is `None` only for `i64::MIN % -1`, whose remainder is 0.
    let r = a.checked_rem(b).unwrap_or(0);
    if r != 0 && ((r < 0) != (b < 0)) {
        Ok(r + b)
    } else {
        Ok(r)
    }
}

/// Ceiling division `⌈a / b⌉` (the `ceilDiv` builtin). Fails on a zero divisor.
pub fn ceil_div(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(EvalError::new(format!(
            "ceilDiv(): division by zero ({a} / 0)"
        )));
    }
    let q = a
        .checked_div(b)
        .ok_or_else(|| EvalError::new(format!("ceilDiv(): integer overflow ({a} / {b})")))?;
    // Truncation rounded toward zero; step up when the exact quotient is positive and not whole.
    if a % b != 0 && ((a < 0) == (b < 0)) {
        q.checked_add(1)
            .ok_or_else(|| EvalError::new(format!("ceilDiv(): integer overflow ({a} / {b})")))
    } else {
        Ok(q)
    }
}

/// Float `a / b`. A zero divisor is an error, as in minijinja, rather than an infinity.
pub fn div_float(a: f64, b: f64) -> Result<f64, EvalError> {
    if b == 0.0 {
        return Err(zero_divisor(fmt_float(a), "/", fmt_float(b)));
    }
    Ok(a / b)
}

/// Float `a % b` with the sign of the divisor (Python semantics). A zero divisor is an error.
pub fn rem_float(a: f64, b: f64) -> Result<f64, EvalError> {
    if b == 0.0 {
        return Err(zero_divisor(fmt_float(a), "%", fmt_float(b)));
    }
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        Ok(r + b)
    } else if r == 0.0 {
        Ok(0.0f64.copysign(b))
    } else {
        Ok(r)
    }
}

/// Formats a float the way the expression language prints it (always with a `.` or exponent).
fn fmt_float(v: f64) -> String {
    format!("{v:?}")
}

/// Converts an integer operand to float for mixed Int/Float arithmetic and comparison.
#[allow(clippy::cast_precision_loss)] // the language promotes like Python: rounding is intended
pub fn to_float(v: i64) -> f64 {
    v as f64
}

/// Checks that `axis` is a valid axis of a rank-`rank` shape; `inclusive` also accepts `rank`.
fn check_axis(name: &str, shape: &[i64], axis: i64, inclusive: bool) -> Result<usize, EvalError> {
    let rank = shape.len();
    let ok = usize::try_from(axis)
        .ok()
        .filter(|&a| a < rank || (inclusive && a == rank));
    ok.ok_or_else(|| {
        EvalError::new(format!(
            "{name}(): axis {axis} is out of range for a rank-{rank} shape"
        ))
    })
}

/// Checked product of `dims`, naming `name` in the overflow error.
fn product(name: &str, dims: &[i64]) -> Result<i64, EvalError> {
    dims.iter().try_fold(1i64, |acc, &d| {
        acc.checked_mul(d)
            .ok_or_else(|| EvalError::new(format!("{name}(): product of dimensions overflows i64")))
    })
}

/// `dim(shape, axis)`: the size of one axis; `axis` must be in `0..rank`.
pub fn dim(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = check_axis("dim", shape, axis, false)?;
    Ok(shape[axis])
}

/// `numel(shape)`: the element count (product of all dimensions; 1 for a scalar shape).
pub fn numel(shape: &[i64]) -> Result<i64, EvalError> {
    product("numel", shape)
}

/// `outer(shape, axis)`: the product of the dimensions before `axis`; `axis` must be in
/// `0..=rank`.
pub fn outer(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = check_axis("outer", shape, axis, true)?;
    product("outer", &shape[..axis])
}

/// `inner(shape, axis)`: the product of the dimensions after `axis`; `axis` must be in
/// `0..rank`.
pub fn inner(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = check_axis("inner", shape, axis, false)?;
    product("inner", &shape[axis + 1..])
}

/// `list[i]`: negative indices are rejected rather than counted from the end, because a
/// negative index in a manifest is almost always an arithmetic mistake.
pub fn index(list: &[i64], i: i64) -> Result<i64, EvalError> {
    if i < 0 {
        return Err(EvalError::new(format!(
            "negative index {i} is not supported"
        )));
    }
    usize::try_from(i)
        .ok()
        .and_then(|u| list.get(u).copied())
        .ok_or_else(|| {
            EvalError::new(format!(
                "index {i} is out of range for a list of length {}",
                list.len()
            ))
        })
}

/// `list | length`.
pub fn length(list: &[i64]) -> Result<i64, EvalError> {
    i64::try_from(list.len()).map_err(|_| EvalError::new("length(): list is too long"))
}

/// `sameShape(a, b)`: element-wise equality of two integer lists.
pub fn same_shape(a: &[i64], b: &[i64]) -> bool {
    a == b
}

/// `f16Ok(dtype)`: the dtype is not `f16`, or the device has the `shader-f16` feature.
pub fn f16_ok(dtype: &str, has_shader_f16: bool) -> bool {
    dtype != "f16" || has_shader_f16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_remainder_follow_python() {
        for (a, b, q, r) in [
            (7, 2, 3, 1),
            (-7, 2, -4, 1),
            (7, -2, -4, -1),
            (-7, -2, 3, -1),
        ] {
            assert_eq!(div(a, b), Ok(q), "{a} / {b}");
            assert_eq!(rem(a, b), Ok(r), "{a} % {b}");
        }
        assert_eq!(rem(i64::MIN, -1), Ok(0));
        assert!(div(i64::MIN, -1).is_err());
        assert!(div(1, 0).is_err());
    }

    #[test]
    fn ceil_division_rounds_up() {
        for (a, b, q) in [
            (7, 2, 4),
            (8, 2, 4),
            (-7, 2, -3),
            (7, -2, -3),
            (-7, -2, 4),
            (0, 5, 0),
        ] {
            assert_eq!(ceil_div(a, b), Ok(q), "ceilDiv({a}, {b})");
        }
        assert!(ceil_div(1, 0).is_err());
    }

    #[test]
    fn shape_helpers_check_axes() {
        let s = [2, 3, 4];
        assert_eq!(dim(&s, 1), Ok(3));
        assert_eq!(outer(&s, 3), Ok(24));
        assert_eq!(inner(&s, 0), Ok(12));
        assert_eq!(
            dim(&s, 3).map_err(|e| e.message().to_owned()),
            Err("dim(): axis 3 is out of range for a rank-3 shape".to_owned())
        );
        assert!(inner(&s, 3).is_err());
        assert!(outer(&s, -1).is_err());
        assert_eq!(numel(&[]), Ok(1));
    }
}
