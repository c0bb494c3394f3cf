//! Checked integer arithmetic and shape helpers that generated manifest expressions call.
//!
//! Generated code lowers every manifest expression (`derive`, `when`, dispatch sizes, …) to plain
//! Rust that calls these functions, so they carry the language's semantics: integer `/` floors
//! and `%` takes the sign of the divisor (as in Python and minijinja), overflow is an error rather
//! than a wrap, and shape accessors check their axis.
//!
//! The code generator's expression interpreter calls the very same functions (this crate is a
//! dependency of both), so the interpreter used by codegen and its tests and the code that
//! ships cannot disagree on a result or on an error message.
//!
//! The `schemaVersion: 1` package dialect adds helpers of its own (`ceil`, `pow2ceil`, `rows`,
//! truthiness, `~`, `in`, …); they are in the second half of the file, after the seed's.

use std::fmt;

/// An expression evaluation failure: overflow, division by zero, an axis or index out of range,
/// or an undefined value. The message is meant for the end user and names the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError {
    /// The human-readable message, e.g. `dim(): axis 2 is out of range for a tensor of rank 2`.
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
    floored(a, b, "/")
}

/// Integer `a // b` (the V1 dialect's floor division): [`div`], with `//` in its messages.
pub fn floor_div(a: i64, b: i64) -> Result<i64, EvalError> {
    floored(a, b, "//")
}

/// Floored integer division, naming the operator `op` in its errors.
fn floored(a: i64, b: i64, op: &str) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(zero_divisor(a, op, b));
    }
    let q = a.checked_div(b).ok_or_else(|| overflow(a, op, b))?;
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

/// Integer `a % b` with the sign of the dividend, as JavaScript's `%` (the Hub dialect's
/// remainder: `-7 % 3` is -1). Fails on a zero divisor.
pub fn remainder(a: i64, b: i64) -> Result<i64, EvalError> {
    if b == 0 {
        return Err(zero_divisor(a, "%", b));
    }
    // `checked_rem` is `None` only for `i64::MIN % -1`, whose remainder is 0.
    Ok(a.checked_rem(b).unwrap_or(0))
}

/// Float `a % b` with the sign of the dividend, as JavaScript's `%` (the Hub dialect's).
/// Fails on a zero divisor.
pub fn remainder_float(a: f64, b: f64) -> Result<f64, EvalError> {
    if b == 0.0 {
        return Err(zero_divisor(fmt_float(a), "%", fmt_float(b)));
    }
    Ok(a % b)
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
            "{name}(): axis {axis} is out of range for a tensor of rank {rank}"
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

/// `list[i]`: a negative index counts from the end (`shapes.x[-1]` is the last axis), as in
/// every Jinja evaluator (Python's list indexing, the JavaScript runtime's `Array.at`).
pub fn index(list: &[i64], i: i64) -> Result<i64, EvalError> {
    let len = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let at = if i < 0 { i.checked_add(len) } else { Some(i) };
    at.and_then(|at| usize::try_from(at).ok())
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

/// Whether `dtype` names 16-bit floats, by its WGSL (`f16`) or tensor (`float16`) name.
fn is_f16(dtype: &str) -> bool {
    dtype == "f16" || dtype == "float16"
}

/// `f16Ok(dtype)`: the dtype is not `f16` (nor `float16`), or the device has the `shader-f16`
/// feature.
pub fn f16_ok(dtype: &str, has_shader_f16: bool) -> bool {
    !is_f16(dtype) || has_shader_f16
}

// ---- The `schemaVersion: 1` dialect -------------------------------------------------------

/// The error for an optional value (an absent scalar argument or tensor) read by arithmetic or a
/// comparison: a truthiness test is the only use of an absent value that is not an error.
pub fn not_given(name: &str) -> EvalError {
    EvalError::new(format!("`{name}` is not given"))
}

/// The value of an optional symbol, or [`not_given`] naming it.
pub fn given<T>(value: Option<T>, name: &str) -> Result<T, EvalError> {
    value.ok_or_else(|| not_given(name))
}

/// `f16Allowed(dtype)`: the dtype is `f32`, or it is `f16` and the device has `shader-f16`
/// (any other dtype is not allowed, unlike [`f16_ok`]).
pub fn f16_allowed(dtype: &str, has_shader_f16: bool) -> bool {
    dtype == "f32" || dtype == "float32" || (is_f16(dtype) && has_shader_f16)
}

/// Resolves an axis that may count from the end (`-1` is the last axis); `inclusive` also
/// accepts `rank` (and `-rank - 1` does not exist: only `-rank..0` wraps).
fn wrap_axis(name: &str, shape: &[i64], axis: i64, inclusive: bool) -> Result<usize, EvalError> {
    let rank = i64::try_from(shape.len()).unwrap_or(i64::MAX);
    let wrapped = if axis < 0 {
        axis.saturating_add(rank)
    } else {
        axis
    };
    if wrapped < 0 {
        return Err(EvalError::new(format!(
            "{name}(): axis {axis} is out of range for a tensor of rank {rank}"
        )));
    }
    check_axis(name, shape, wrapped, inclusive).map_err(|_| {
        EvalError::new(format!(
            "{name}(): axis {axis} is out of range for a tensor of rank {rank}"
        ))
    })
}

/// `dim(shape, axis)` where a negative axis counts from the end.
pub fn dim_wrapped(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    Ok(shape[wrap_axis("dim", shape, axis, false)?])
}

/// `outer(shape, axis)` where a negative axis counts from the end.
pub fn outer_wrapped(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = wrap_axis("outer", shape, axis, true)?;
    product("outer", &shape[..axis])
}

/// `inner(shape, axis)` where a negative axis counts from the end.
pub fn inner_wrapped(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = wrap_axis("inner", shape, axis, false)?;
    product("inner", &shape[axis + 1..])
}

/// `rows(shape, axis)`: the product of every dimension except `axis` (by default the last), so
/// that a shape reads as `rows × cols`. A rank-0 shape has no axis to leave out: an error.
pub fn rows(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    let axis = wrap_axis("rows", shape, axis, false)?;
    let (before, after) = (&shape[..axis], &shape[axis + 1..]);
    mul(product("rows", before)?, product("rows", after)?)
        .map_err(|_| EvalError::new("rows(): product of dimensions overflows i64"))
}

/// `cols(shape, axis)`: the size of `axis` (by default the last); an error for rank 0.
pub fn cols(shape: &[i64], axis: i64) -> Result<i64, EvalError> {
    Ok(shape[wrap_axis("cols", shape, axis, false)?])
}

/// `rank(shape)`: the number of dimensions.
pub fn rank(shape: &[i64]) -> Result<i64, EvalError> {
    i64::try_from(shape.len()).map_err(|_| EvalError::new("rank(): shape is too long"))
}

/// `broadcastable(a, b)`: whether a tensor of shape `a` broadcasts to shape `b` (one way, as
/// the dialect's engine defines it): `a` has no more axes than `b`, and each of `a`'s
/// dimensions, aligned to `b`'s trailing axes, is 1 or equal to `b`'s.
pub fn broadcastable(a: &[i64], b: &[i64]) -> bool {
    a.len() <= b.len()
        && a.iter()
            .zip(&b[b.len() - a.len()..])
            .all(|(&x, &y)| x == 1 || x == y)
}

/// `broadcastShape(a, b)`: the shape of ONNX's multidirectional (NumPy) broadcasting of `a`
/// and `b`: axes aligned from the end, each pair equal or one of them 1 (a 0 against a 1 is
/// 0), the shorter shape padded with 1s in front.
pub fn broadcast_shape(a: &[i64], b: &[i64]) -> Result<Vec<i64>, EvalError> {
    let rank = a.len().max(b.len());
    let at = |s: &[i64], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |axis| s[axis]);
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => Err(EvalError::new(format!(
                "broadcastShape(): {a:?} and {b:?} do not broadcast (axis {i} of the result: {x} against {y})"
            ))),
        })
        .collect()
}

/// Axis `i` of `shape` aligned to the last of `width` axes: `shape` right-aligned in
/// `width` axes, the axes in front of it 1. How a shape known per call reaches a shader, one
/// pipeline override per axis, so that broadcasting is the same loop at every rank.
pub fn aligned_dim(shape: &[i64], i: i64, width: i64) -> Result<i64, EvalError> {
    let rank = i64::try_from(shape.len()).unwrap_or(i64::MAX);
    if rank > width {
        return Err(EvalError::new(format!(
            "a shape of rank {rank} reaches the shader, which holds at most {width} axes"
        )));
    }
    let axis = i - (width - rank);
    Ok(usize::try_from(axis).map_or(1, |axis| shape[axis]))
}

/// `matmulShape(a, b)`: the shape of ONNX `MatMul` (NumPy `matmul`): a 1-D `a` is a row
/// `[1, K]` and a 1-D `b` a column `[K, 1]`, whose added axis the result drops again; the
/// contracted sizes must agree and the batch axes broadcast.
pub fn matmul_shape(a: &[i64], b: &[i64]) -> Result<Vec<i64>, EvalError> {
    let (Some(&k_a), Some(_)) = (a.last(), b.last()) else {
        return Err(EvalError::new(format!(
            "matmulShape(): both operands need at least one axis, found {a:?} and {b:?}"
        )));
    };
    // The contracted axis of `b`: its first of two, or its only one.
    let k_b = b[b.len().saturating_sub(2)];
    if k_a != k_b {
        return Err(EvalError::new(format!(
            "matmulShape(): the contracted sizes of {a:?} and {b:?} differ ({k_a} and {k_b})"
        )));
    }
    let (a_batch, m) = match a.len() {
        1 => (&[][..], None),
        n => (&a[..n - 2], Some(a[n - 2])),
    };
    let (b_batch, n) = match b.len() {
        1 => (&[][..], None),
        len => (&b[..len - 2], Some(b[len - 1])),
    };
    let mut shape = broadcast_shape(a_batch, b_batch)
        .map_err(|e| EvalError::new(format!("matmulShape(): batch axes: {}", e.message())))?;
    shape.extend(m);
    shape.extend(n);
    Ok(shape)
}

/// `prefix(shape, n)`: the first `n` dimensions, as JavaScript's `slice(0, n)` takes them: all
/// of them when `n` passes the rank, and a negative `n` leaves out that many from the end.
pub fn prefix(shape: &[i64], n: i64) -> Vec<i64> {
    let magnitude = usize::try_from(n.unsigned_abs()).unwrap_or(usize::MAX);
    let end = if n < 0 {
        shape.len().saturating_sub(magnitude)
    } else {
        magnitude.min(shape.len())
    };
    shape[..end].to_vec()
}

/// `list | sum`: the sum of the items (0 for an empty list); overflow is an error.
pub fn list_sum(list: &[i64]) -> Result<i64, EvalError> {
    list.iter()
        .try_fold(0i64, |acc, v| acc.checked_add(*v))
        .ok_or_else(|| EvalError::new(format!("sum of {list:?} overflows")))
}

/// `list | min`: the smallest item; an empty list has none.
pub fn list_min(list: &[i64]) -> Result<i64, EvalError> {
    list.iter()
        .copied()
        .min()
        .ok_or_else(|| EvalError::new("min of an empty list"))
}

/// `list | max`: the largest item; an empty list has none.
pub fn list_max(list: &[i64]) -> Result<i64, EvalError> {
    list.iter()
        .copied()
        .max()
        .ok_or_else(|| EvalError::new("max of an empty list"))
}

/// `a + b` of two lists: `a`'s items, then `b`'s.
pub fn list_concat(a: &[i64], b: &[i64]) -> Vec<i64> {
    [a, b].concat()
}

/// `list[start:end]`, as Python and Jinja slice: a negative bound counts from the end, and
/// both are clamped to the list (so `i64::MAX` is its end); empty where `end <= start`.
pub fn slice(list: &[i64], start: i64, end: i64) -> Vec<i64> {
    let len = i64::try_from(list.len()).unwrap_or(i64::MAX);
    let at = |i: i64| {
        let i = if i < 0 { i.saturating_add(len) } else { i };
        usize::try_from(i.clamp(0, len)).unwrap_or(0)
    };
    let (start, end) = (at(start), at(end));
    list.get(start..end.max(start)).unwrap_or_default().to_vec()
}

/// `hasAxis(axes, axis, rank)`: whether the list `axes` names `axis`, both taken modulo `rank`
/// (so `-1` and `rank - 1` are the same axis). `rank` must be positive.
pub fn has_axis(axes: &[i64], axis: i64, rank: i64) -> Result<bool, EvalError> {
    if rank <= 0 {
        return Err(EvalError::new(format!(
            "hasAxis(): rank must be positive, found {rank}"
        )));
    }
    let want = rem(axis, rank)?;
    for &a in axes {
        if rem(a, rank)? == want {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Converts a float that must be a whole number in `i64`'s range (`name` says by what rule).
#[allow(clippy::cast_possible_truncation)] // range and integrality are checked first
fn whole(name: &str, v: f64) -> Result<i64, EvalError> {
    // 2^63 is exactly representable; every float in [-2^63, 2^63) converts exactly.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if v.is_finite() && (-LIMIT..LIMIT).contains(&v) {
        Ok(v as i64)
    } else {
        Err(EvalError::new(format!(
            "{name}: {} does not fit in an integer",
            fmt_float(v)
        )))
    }
}

/// `ceil(x)` of a Float: the smallest integer `>= x`.
pub fn ceil(v: f64) -> Result<i64, EvalError> {
    whole("ceil()", v.ceil())
}

/// `a / b` of two Ints: their Float quotient, as the language computes it (both converted,
/// then divided; a zero divisor is an error).
pub fn quotient(a: i64, b: i64) -> Result<f64, EvalError> {
    div_float(to_float(a), to_float(b))
}

/// `ceil(a / b)` of two Ints, in one call.
pub fn ceil_quotient(a: i64, b: i64) -> Result<i64, EvalError> {
    ceil(quotient(a, b)?)
}

/// `floor(a / b)` of two Ints, in one call.
pub fn floor_quotient(a: i64, b: i64) -> Result<i64, EvalError> {
    floor(quotient(a, b)?)
}

/// `floor(x)` of a Float: the largest integer `<= x`.
pub fn floor(v: f64) -> Result<i64, EvalError> {
    whole("floor()", v.floor())
}

/// A Float used where an integer is required (a list item, a shape, a dispatch size): it must
/// be a whole number, as the dialect's engine requires of integer uniforms (`8 / 2` is `4.0`).
pub fn to_int_exact(v: f64) -> Result<i64, EvalError> {
    if v.fract() != 0.0 && v.is_finite() {
        return Err(EvalError::new(format!(
            "{} is not a whole number",
            fmt_float(v)
        )));
    }
    whole("integer conversion", v)
}

/// `pow(a, b)` of two Ints: checked; a negative exponent is an error (the result would not be
/// an Int; write a Float base for a fractional result).
pub fn pow(a: i64, b: i64) -> Result<i64, EvalError> {
    let exp = u32::try_from(b).map_err(|_| {
        if b < 0 {
            EvalError::new(format!(
                "pow(): negative exponent {b} of an Int (write `{a}.0` for a Float result)"
            ))
        } else {
            EvalError::new(format!("integer overflow: pow({a}, {b})"))
        }
    })?;
    a.checked_pow(exp)
        .ok_or_else(|| EvalError::new(format!("integer overflow: pow({a}, {b})")))
}

/// `pow(a, b)` with a Float operand.
pub fn pow_float(a: f64, b: f64) -> f64 {
    a.powf(b)
}

/// `pow2ceil(x)` of an Int: the smallest power of two `>= x`; 1 for `x <= 1`.
pub fn pow2ceil(v: i64) -> Result<i64, EvalError> {
    if v <= 1 {
        return Ok(1);
    }
    u64::try_from(v)
        .ok()
        .and_then(u64::checked_next_power_of_two)
        .and_then(|p| i64::try_from(p).ok())
        .ok_or_else(|| EvalError::new(format!("pow2ceil(): {v} has no power of two in range")))
}

/// `pow2ceil(x)` of a Float: the smallest power of two `>= x` (powers of two are whole, so
/// this is `pow2ceil(ceil(x))`); 1 for `x <= 1`. NaN is an error.
pub fn pow2ceil_float(v: f64) -> Result<i64, EvalError> {
    if v.is_nan() {
        return Err(EvalError::new("pow2ceil(): NaN has no power of two"));
    }
    if v <= 1.0 {
        return Ok(1);
    }
    pow2ceil(whole("pow2ceil()", v.ceil())?)
}

/// Float `a // b`: the floored quotient, as Python computes it (from the floored remainder, so
/// that `a == b * (a // b) + a % b` holds as closely as floats allow). A zero divisor is an error.
pub fn floor_div_float(a: f64, b: f64) -> Result<f64, EvalError> {
    if b == 0.0 {
        return Err(zero_divisor(fmt_float(a), "//", fmt_float(b)));
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div == 0.0 {
        return Ok(0.0f64.copysign(a / b));
    }
    let floor = div.floor();
    Ok(if div - floor > 0.5 {
        floor + 1.0
    } else {
        floor
    })
}

/// Truthiness of an Int (Jinja): non-zero.
pub fn truthy_int(v: i64) -> bool {
    v != 0
}

/// A value Jinja tests for truth: numbers are true when non-zero (NaN too, as in Python),
/// strings and lists when non-empty.
pub trait Truthy {
    fn truthy(&self) -> bool;
}

macro_rules! truthy_numbers {
    ($($t:ty),*) => {$(
        impl Truthy for $t {
            fn truthy(&self) -> bool {
                *self != 0 as $t
            }
        }
    )*};
}
truthy_numbers!(u32, i32, i64, f32, f64);

impl Truthy for bool {
    fn truthy(&self) -> bool {
        *self
    }
}

impl Truthy for &str {
    fn truthy(&self) -> bool {
        !self.is_empty()
    }
}

impl Truthy for &[i64] {
    fn truthy(&self) -> bool {
        !self.is_empty()
    }
}

/// Truthiness of an optional value (the `schemaVersion: 1` dialect): an absent one is false.
pub fn truthy_given<T: Truthy>(value: Option<T>) -> bool {
    value.is_some_and(|v| v.truthy())
}

/// Truthiness of a Float (Jinja): non-zero (NaN is true, as in Python).
pub fn truthy_float(v: f64) -> bool {
    v != 0.0
}

/// Truthiness of a string (Jinja): non-empty.
pub fn truthy_str(v: &str) -> bool {
    !v.is_empty()
}

/// Truthiness of a list (Jinja): non-empty.
pub fn truthy_list(v: &[i64]) -> bool {
    !v.is_empty()
}

/// `a ~ b`: string concatenation.
pub fn concat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}

/// An Int operand of `~`, written in decimal.
pub fn int_to_str(v: i64) -> String {
    v.to_string()
}

/// `|v|` of an Int (the Hub dialect's `abs` filter). Fails for `i64::MIN`, whose magnitude
/// has no Int.
pub fn abs(v: i64) -> Result<i64, EvalError> {
    v.checked_abs()
        .ok_or_else(|| EvalError::new(format!("integer overflow: abs({v})")))
}

/// `|v|` of a Float (the Hub dialect's `abs` filter).
pub fn abs_float(v: f64) -> f64 {
    v.abs()
}

/// A number as JavaScript's `String(number)` writes it (the Hub runtime's `~`): a whole
/// number without a fraction (`4`, not `4.0`), the shortest digits that read back otherwise,
/// and an exponent below 1e-6 and from 1e21 on (`1e-7`, `1.5e+21`).
pub fn js_number_to_str(v: f64) -> String {
    if v.is_nan() {
        return "NaN".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    let magnitude = v.abs();
    if !(1e-6..1e21).contains(&magnitude) {
        let text = format!("{v:e}");
        return match text.split_once('e') {
            Some((digits, exp)) if !exp.starts_with('-') => format!("{digits}e+{exp}"),
            _ => text,
        };
    }
    // Rust's `Display` of an f64 is the shortest text that reads back, without an exponent.
    format!("{v}")
}

/// `value in list`.
pub fn contains(list: &[i64], value: i64) -> bool {
    list.contains(&value)
}

/// `needle in haystack` on strings: substring test (the empty string is in every string).
pub fn contains_str(haystack: &str, needle: &str) -> bool {
    haystack.contains(needle)
}

/// `dtypeBytes(dtype)`: bytes per element in a storage buffer, by WGSL or tensor name. 8-bit
/// integer tensors are stored widened to 32-bit words, as the dialect's engine binds them.
pub fn dtype_bytes(dtype: &str) -> Result<i64, EvalError> {
    match dtype {
        "f16" | "float16" => Ok(2),
        "f32" | "float32" | "u32" | "uint32" | "i32" | "int32" | "uint8" | "int8" | "int16" => {
            Ok(4)
        }
        _ => Err(EvalError::new(format!(
            "dtypeBytes(): unsupported dtype \"{dtype}\""
        ))),
    }
}

/// `onnxDtypeCode(dtype)`: the number ONNX's `TensorProto.DataType` gives a dtype, by its ONNX
/// name (`tensorDtypes.x`) or WGSL scalar (`dtypes.T`, which names the 32-bit types).
pub fn onnx_dtype_code(dtype: &str) -> Result<i64, EvalError> {
    Ok(match dtype {
        "float32" | "f32" => 1,
        "uint8" => 2,
        "int8" => 3,
        "uint16" => 4,
        "int16" => 5,
        "int32" | "i32" => 6,
        "int64" => 7,
        "string" => 8,
        "bool" => 9,
        "float16" | "f16" => 10,
        "float64" => 11,
        "uint32" | "u32" => 12,
        "uint64" => 13,
        "bfloat16" => 16,
        _ => {
            return Err(EvalError::new(format!(
                "onnxDtypeCode(): unknown dtype \"{dtype}\""
            )));
        }
    })
}

/// `log2ceil(x)`: the smallest `k >= 0` with `2^k >= x` (0 for `x <= 1`).
pub fn log2ceil(x: i64) -> Result<i64, EvalError> {
    pow2ceil(x).map(|p| i64::from(p.trailing_zeros()))
}

/// `isUniqueIntList(list)`: whether no value appears twice.
pub fn is_unique_int_list(list: &[i64]) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    list.iter().all(|v| seen.insert(*v))
}

/// `permuteShape(shape, perm)`: `shape[perm[i]]` for each `i`, a negative entry counting from
/// the end, as ONNX's Transpose permutes; `perm` must name each of the shape's axes once.
pub fn permute_shape(shape: &[i64], perm: &[i64]) -> Result<Vec<i64>, EvalError> {
    let rank = i64::try_from(shape.len()).unwrap_or(i64::MAX);
    let axes: Vec<i64> = perm
        .iter()
        .map(|&p| if p < 0 { p + rank } else { p })
        .collect();
    let valid = perm.len() == shape.len()
        && axes.iter().all(|a| (0..rank).contains(a))
        && is_unique_int_list(&axes);
    if !valid {
        return Err(EvalError::new(format!(
            "permuteShape(): {perm:?} is not a permutation of the {rank} axes of {shape:?}"
        )));
    }
    Ok(axes
        .iter()
        .filter_map(|&a| usize::try_from(a).ok().and_then(|a| shape.get(a).copied()))
        .collect())
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
    fn remainder_follows_javascript() {
        for (a, b, r) in [(7, 2, 1), (-7, 2, -1), (7, -2, 1), (-7, -2, -1), (6, 3, 0)] {
            assert_eq!(remainder(a, b), Ok(r), "{a} % {b}");
        }
        assert_eq!(remainder(i64::MIN, -1), Ok(0));
        assert!(remainder(1, 0).is_err());
        assert_eq!(remainder_float(-7.5, 2.0), Ok(-1.5));
        assert_eq!(remainder_float(7.5, -2.0), Ok(1.5));
        assert!(remainder_float(1.0, 0.0).is_err());
    }

    #[test]
    fn abs_of_ints_and_floats() {
        assert_eq!(abs(-3), Ok(3));
        assert_eq!(abs(3), Ok(3));
        assert!(abs(i64::MIN).is_err());
        assert_eq!(abs_float(-2.5), 2.5);
    }

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        for (v, text) in [
            (4.0, "4"),
            (-4.0, "-4"),
            (12.8, "12.8"),
            (0.1, "0.1"),
            (0.0, "0"),
            (1e-7, "1e-7"),
            (1.5e21, "1.5e+21"),
            (123456789012.0, "123456789012"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(js_number_to_str(v), text, "{v}");
        }
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
            Err("dim(): axis 3 is out of range for a tensor of rank 3".to_owned())
        );
        assert!(inner(&s, 3).is_err());
        assert!(outer(&s, -1).is_err());
        assert_eq!(numel(&[]), Ok(1));
    }

    #[test]
    fn dialect_v1_helpers() {
        let s = [2, 3, 4];
        assert_eq!(dim_wrapped(&s, -1), Ok(4));
        assert!(dim_wrapped(&s, -4).is_err());
        assert_eq!((rows(&s, -1), cols(&s, -1)), (Ok(6), Ok(4)));
        assert!(cols(&[], -1).is_err());
        assert!(broadcastable(&[1, 4], &s) && !broadcastable(&[3, 3], &s));
        assert_eq!(has_axis(&[0, -1], 2, 3), Ok(true));
        assert_eq!((ceil(2.5), floor(-2.5)), (Ok(3), Ok(-3)));
        assert!(ceil(f64::NAN).is_err() && to_int_exact(2.5).is_err());
        assert_eq!(
            (pow2ceil(5), pow2ceil(0), pow2ceil_float(4.5)),
            (Ok(8), Ok(1), Ok(8))
        );
        for (a, b, q) in [(7.0, 2.0, 3.0), (-7.0, 2.0, -4.0), (7.5, -2.0, -4.0)] {
            assert_eq!(floor_div_float(a, b), Ok(q), "{a} // {b}");
        }
        assert_eq!(pow(2, 10), Ok(1024));
        assert!(pow(2, -1).is_err() && pow(2, 64).is_err());
        assert!(f16_allowed("float16", true) && !f16_allowed("u32", true));
    }

    #[test]
    fn shape_helpers_follow_onnx() {
        assert_eq!(broadcast_shape(&[3, 1, 5], &[4, 1]), Ok(vec![3, 4, 5]));
        assert_eq!(broadcast_shape(&[], &[2, 3]), Ok(vec![2, 3]));
        assert_eq!(broadcast_shape(&[0, 3], &[1, 3]), Ok(vec![0, 3]));
        assert!(broadcast_shape(&[2, 3], &[3, 3]).is_err());
        assert_eq!(matmul_shape(&[2, 3], &[3, 4]), Ok(vec![2, 4]));
        assert_eq!(matmul_shape(&[3], &[3, 4]), Ok(vec![4]));
        assert_eq!(matmul_shape(&[2, 3], &[3]), Ok(vec![2]));
        assert_eq!(matmul_shape(&[3], &[3]), Ok(vec![]));
        assert_eq!(
            matmul_shape(&[5, 1, 2, 3], &[4, 3, 6]),
            Ok(vec![5, 4, 2, 6])
        );
        assert!(matmul_shape(&[2, 3], &[4, 5]).is_err());
        assert!(matmul_shape(&[], &[3]).is_err());
        assert_eq!(prefix(&[2, 3, 4], 2), vec![2, 3]);
        assert_eq!(prefix(&[2, 3, 4], 9), vec![2, 3, 4]);
        assert_eq!(prefix(&[5], -1), Vec::<i64>::new());
        assert_eq!(prefix(&[2, 3, 4], -1), vec![2, 3]);
        let aligned: Vec<i64> = (0..4)
            .map(|i| aligned_dim(&[5, 6], i, 4).unwrap_or(-1))
            .collect();
        assert_eq!(aligned, vec![1, 1, 5, 6]);
        assert!(aligned_dim(&[1, 2, 3], 0, 2).is_err());
    }
}
