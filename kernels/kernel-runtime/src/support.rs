//! Helpers the generated op modules call: variant-selection failures, dtype and rank checks,
//! range-checked conversions of expression values into uniforms, overrides and dispatch
//! sizes, and output checks (attribute values by name live in `attrs.rs`, re-exported here).

use crate::dtype::DType;
use crate::error::{OpError, Rejection};
use crate::expr::EvalError;
use crate::plan::OutputSpec;
use crate::shaders::{Shader, ShaderTable};

pub use crate::attrs::{AttrValue, RawAttrs, check_allowed};
pub use crate::uniform::{to_i32, to_u32};

/// One operand of a failing condition: its source text and its value as the rejection
/// prints it (or why it could not be computed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Operand {
    pub text: &'static str,
    pub value: String,
}

/// The operand `text` with the value its compiled expression computed ([`shown`]), or why it
/// could not.
pub fn operand(text: &'static str, value: Result<String, EvalError>) -> Operand {
    Operand {
        text,
        value: value.unwrap_or_else(|error| format!("unknown ({error})")),
    }
}

/// A value as a rejection prints it: numbers and lists as written, strings quoted.
pub fn shown<T: std::fmt::Debug>(value: T) -> String {
    format!("{value:?}")
}

/// Why a `when` condition did not hold: the path of names leading to the first failing
/// conjunct, and the evaluation error if it could not be evaluated at all.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// `derive` names from the `when` condition down to the failing clause's source text.
    pub path: Vec<&'static str>,
    /// Why the clause could not be evaluated; `None` when it was simply false.
    pub error: Option<EvalError>,
    /// The values of the clause's operands (what it compares, what its calls take), so the
    /// rejection says why it failed.
    pub operands: Vec<Operand>,
}

impl Failure {
    /// Prefixes the path with the name of the `derive` entry the failure was found in.
    pub fn within(mut self, name: &'static str) -> Failure {
        self.path.insert(0, name);
        self
    }

    /// The rejection of `variant` this failure explains.
    pub fn into_rejection(self, variant: &'static str) -> Rejection {
        Rejection {
            variant,
            condition: self.path.join(" › "),
            error: self.error,
            values: self
                .operands
                .into_iter()
                .map(|o| (o.text.to_owned(), o.value))
                .collect(),
        }
    }
}

/// Compiles every shader of `table` the device can run: the whole pipeline when it takes no
/// overrides, the shader module otherwise (its pipelines depend on shapes). Returns how many
/// shaders were prepared.
///
/// Natively the shaders compile on several threads at once (up to the machine's parallelism),
/// all of the op's in one pool: with a cold driver cache, compilation is most of the cost, and
/// it is independent per shader, so the op waits for its slowest shader rather than for the
/// slowest of each pass in turn.
pub fn precompile(ctx: &crate::Context, table: &'static ShaderTable) -> Result<usize, OpError> {
    let wanted: Vec<&'static Shader> = table
        .shaders()
        .iter()
        .filter(|s| s.features.iter().all(|f| ctx.caps().has_feature(f)))
        .collect();
    crate::threads::on_threads(&wanted, |shader| {
        if shader.overrides.is_empty() {
            ctx.precompile(&shader.kernel, &[])
        } else {
            ctx.precompile_module(&shader.kernel)
        }
    })?;
    Ok(wanted.len())
}

/// `Ok` when type variable `var` is bound to one of the dtypes the manifest allows; `roles`
/// are the inputs it types: the error names the first as the input, and the others in its rule.
pub fn dtype_allowed(
    op: &'static str,
    roles: &[&str],
    var: &str,
    dtype: DType,
    allowed: &[DType],
) -> Result<(), OpError> {
    if allowed.contains(&dtype) {
        return Ok(());
    }
    let names: Vec<&str> = allowed.iter().map(|d| d.onnx_name()).collect();
    let (input, others) = roles.split_first().map_or(("", &[][..]), |(f, o)| (*f, o));
    let also = if others.is_empty() {
        String::new()
    } else {
        format!(" (also of {})", others.join(", "))
    };
    Err(OpError::Input {
        op,
        input: input.into(),
        rule: format!(
            "its type variable `{var}`{also} must be one of {}, got {dtype}",
            names.join(", ")
        ),
    })
}

/// The chosen variant's plan, or why it could not be computed.
pub fn planned<T>(
    op: &'static str,
    variant: &'static str,
    plan: Result<T, crate::PlanError>,
) -> Result<T, OpError> {
    plan.map_err(|error| match error {
        crate::PlanError::Eval(error) => OpError::Plan { op, variant, error },
        crate::PlanError::NotBuilt(not_built) => OpError::NotBuilt(not_built),
    })
}

/// `Ok` when input `role` has the rank the manifest declares.
pub fn rank_is(op: &'static str, role: &str, shape: &[usize], rank: usize) -> Result<(), OpError> {
    if shape.len() == rank {
        return Ok(());
    }
    Err(OpError::Input {
        op,
        input: role.into(),
        rule: format!("the manifest declares rank {rank}, got shape {shape:?}"),
    })
}

/// The value of a `derive` entry, computed on its first use in a call and kept in `cell`
/// (the op's `Env`) for the others.
pub fn memo<T: Clone>(
    cell: &std::cell::OnceCell<Result<T, EvalError>>,
    compute: impl FnOnce() -> Result<T, EvalError>,
) -> Result<T, EvalError> {
    cell.get_or_init(compute).clone()
}

/// How many distinct computed strings [`interned`] keeps before it refuses more.
const MAX_INTERNED: usize = 4096;

/// A string value a `derive` entry computes (`"vec4<" ~ dtypes.T ~ ">"`) as the `&'static str`
/// every string value is in generated code: kept once per distinct text for the life of the
/// process. Such entries build type names from dtypes, a handful of texts; past
/// 4096 distinct ones (an entry that prints a shape into a string, say) the value
/// is an error rather than unbounded growth.
pub fn interned(text: String) -> Result<&'static str, EvalError> {
    static TEXTS: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut texts = crate::sync::lock(&TEXTS);
    if let Some(kept) = texts.get(text.as_str()) {
        return Ok(kept);
    }
    if texts.len() >= MAX_INTERNED {
        return Err(EvalError::new(format!(
            "a string value takes more than {MAX_INTERNED} distinct texts in this process (`{text}`)"
        )));
    }
    let kept: &'static str = Box::leak(text.into_boxed_str());
    texts.insert(kept);
    Ok(kept)
}

/// The rank of a shape as an expression integer.
pub fn rank(shape: &[i64]) -> i64 {
    i64::try_from(shape.len()).unwrap_or(i64::MAX)
}

/// `Ok` when the condition `text` evaluated to true.
pub fn require(
    value: Result<bool, EvalError>,
    text: &'static str,
    operands: impl FnOnce() -> Vec<Operand>,
) -> Result<(), Failure> {
    let error = match value {
        Ok(true) => return Ok(()),
        Ok(false) => None,
        Err(error) => Some(error),
    };
    Err(Failure {
        path: vec![text],
        error,
        operands: operands(),
    })
}

/// The value of a compiled expression of a plan, its evaluation error (a division by zero,
/// say) prefixed with `what` it computes: the pass and the value's name.
pub fn value<T>(what: &str, value: impl FnOnce() -> Result<T, EvalError>) -> Result<T, EvalError> {
    value().map_err(|error| EvalError::new(format!("{what}: {error}")))
}

/// A non-negative count (threads, workgroups, elements).
pub fn to_u64(what: &str, value: i64) -> Result<u64, EvalError> {
    u64::try_from(value).map_err(|_| EvalError::new(format!("{what} = {value} is negative")))
}

/// A shape from an expression: every dimension non-negative.
pub fn to_shape(name: &str, dims: &[i64]) -> Result<Vec<usize>, EvalError> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| EvalError::new(format!("`{name}` has a negative dimension {d}")))
        })
        .collect()
}

/// The element count of an expression-computed shape.
pub fn element_count(name: &str, dims: &[i64]) -> Result<u64, EvalError> {
    dims.iter().try_fold(1u64, |acc, &d| {
        let d = u64::try_from(d)
            .map_err(|_| EvalError::new(format!("a dimension of `{name}` = {d} is negative")))?;
        acc.checked_mul(d)
            .ok_or_else(|| EvalError::new(format!("`{name}` has more than 2^64 elements")))
    })
}

/// Dimensions held in place up to this rank; a longer shape spills to the heap.
const INLINE_RANK: usize = 8;

/// A shape as expression integers, held in place up to rank 8 (the runtime's list axes), so
/// an op's expression environment is made without a heap allocation; a longer shape still
/// works, on the heap. Reads as a `&[i64]`.
#[derive(Clone)]
pub struct Dims(DimsRepr);

#[derive(Clone)]
enum DimsRepr {
    Inline(u8, [i64; INLINE_RANK]),
    Heap(Vec<i64>),
}

impl Default for Dims {
    fn default() -> Self {
        Dims(DimsRepr::Inline(0, [0; INLINE_RANK]))
    }
}

impl Dims {
    /// The dimensions `dims`.
    pub fn from_slice(dims: &[i64]) -> Self {
        if dims.len() <= INLINE_RANK {
            let mut inline = [0; INLINE_RANK];
            inline[..dims.len()].copy_from_slice(dims);
            Dims(DimsRepr::Inline(dims.len() as u8, inline))
        } else {
            Dims(DimsRepr::Heap(dims.to_vec()))
        }
    }

    /// The dimensions of a list an expression computed.
    pub fn from_vec(dims: Vec<i64>) -> Self {
        if dims.len() <= INLINE_RANK {
            Self::from_slice(&dims)
        } else {
            Dims(DimsRepr::Heap(dims))
        }
    }

    /// A shape of host `usize` dimensions as expression integers.
    pub fn of(shape: &[usize]) -> Self {
        let int = |d: usize| i64::try_from(d).unwrap_or(i64::MAX);
        if shape.len() <= INLINE_RANK {
            let mut inline = [0; INLINE_RANK];
            for (to, &from) in inline.iter_mut().zip(shape) {
                *to = int(from);
            }
            Dims(DimsRepr::Inline(shape.len() as u8, inline))
        } else {
            Dims(DimsRepr::Heap(shape.iter().map(|&d| int(d)).collect()))
        }
    }

    /// The dimensions as a slice.
    pub fn as_slice(&self) -> &[i64] {
        match &self.0 {
            DimsRepr::Inline(len, dims) => &dims[..usize::from(*len)],
            DimsRepr::Heap(dims) => dims,
        }
    }
}

impl std::ops::Deref for Dims {
    type Target = [i64];
    fn deref(&self) -> &[i64] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Dims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

impl PartialEq for Dims {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// Writes an op's outputs (role, element type, shape) into `specs`, reusing its entries and
/// their shapes' storage, so planning into a kept [`crate::Plan`] allocates nothing once the
/// shapes have been seen.
pub fn set_outputs(
    specs: &mut Vec<OutputSpec>,
    outputs: &[(&'static str, DType, &[i64])],
) -> Result<(), EvalError> {
    specs.truncate(outputs.len());
    for (i, &(role, dtype, dims)) in outputs.iter().enumerate() {
        if i == specs.len() {
            specs.push(OutputSpec {
                role,
                dtype,
                shape: Vec::with_capacity(dims.len()),
            });
        }
        let spec = &mut specs[i];
        spec.role = role;
        spec.dtype = dtype;
        spec.shape.clear();
        for &d in dims {
            let d = usize::try_from(d)
                .map_err(|_| EvalError::new(format!("`{role}` has a negative dimension {d}")))?;
            spec.shape.push(d);
        }
    }
    Ok(())
}

/// A shape of host `usize` dimensions as expression integers.
pub fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape
        .iter()
        .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
        .collect()
}

/// A device limit as an expression integer.
pub fn limit(value: impl Into<u64>) -> i64 {
    i64::try_from(value.into()).unwrap_or(i64::MAX)
}

/// Whether the adapter reported a subgroup size (`0` when it did not): the generated test
/// for `device.adapterInfo.subgroupMinSize is defined`.
pub fn reported(subgroup_size: u32) -> bool {
    subgroup_size != 0
}

/// A provided output must have exactly the shape the plan produces (the dtype is the
/// tensor's type, checked by the compiler).
pub fn check_output(op: &'static str, spec: &OutputSpec, shape: &[usize]) -> Result<(), OpError> {
    if spec.shape == shape {
        return Ok(());
    }
    Err(OpError::Output {
        op,
        output: spec.role.to_owned(),
        rule: format!(
            "the op produces shape {:?}, the provided tensor has shape {shape:?}",
            spec.shape
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_values_parse_like_the_command_line() {
        assert_eq!(AttrValue::parse("3"), AttrValue::Int(3));
        assert_eq!(AttrValue::parse("0.5"), AttrValue::Float(0.5));
        assert_eq!(
            AttrValue::parse("16,24,24"),
            AttrValue::Ints(vec![16, 24, 24])
        );
        assert_eq!(AttrValue::parse("[1]"), AttrValue::Ints(vec![1]));
        assert_eq!(AttrValue::parse("abc"), AttrValue::Str("abc".into()));
    }

    #[test]
    fn a_plan_value_that_fails_says_what_it_computes() {
        let err = value("pass `main`, `x`", || -> Result<i64, EvalError> {
            Err(EvalError::new("division by zero"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "pass `main`, `x`: division by zero");
        assert_eq!(value("pass `main`, `x`", || Ok(3)).unwrap(), 3);
    }

    #[test]
    fn failures_read_as_paths() {
        let operands = || vec![operand("x", Ok(shown(-2)))];
        let failure = require(Ok(false), "x > 0", operands)
            .unwrap_err()
            .within("inner")
            .within("outer");
        let rejection = failure.into_rejection("v");
        assert_eq!(rejection.condition, "outer › inner › x > 0");
        assert_eq!(rejection.values, [("x".to_owned(), "-2".to_owned())]);
        assert_eq!(
            rejection.to_string(),
            "  v: `outer › inner › x > 0` is false (x = -2)"
        );
        // Operands are computed only for a rejection.
        assert!(require(Ok(true), "x > 0", || unreachable!()).is_ok());
    }

    #[test]
    fn dims_hold_any_rank_and_read_as_slices() {
        let short = Dims::of(&[2, 3]);
        assert_eq!(short.as_slice(), [2, 3]);
        assert_eq!(short.len(), 2);
        let long: Vec<usize> = (1..=10).collect();
        let long = Dims::of(&long);
        assert_eq!(long.len(), 10);
        assert_eq!(long[9], 10);
        assert_eq!(Dims::from_vec(vec![4; 9]), Dims::from_slice(&[4; 9]));
        assert_eq!(Dims::default().as_slice(), [0i64; 0]);
        assert_eq!(format!("{short:?}"), "[2, 3]");
    }

    #[test]
    fn outputs_are_written_in_place() {
        let mut specs = Vec::new();
        set_outputs(&mut specs, &[("y", DType::F32, &[2, 3])]).unwrap();
        assert_eq!(specs[0].shape, [2, 3]);
        set_outputs(
            &mut specs,
            &[("y", DType::F16, &[4]), ("z", DType::F32, &[])],
        )
        .unwrap();
        assert_eq!(
            (specs.len(), specs[0].dtype, &specs[0].shape[..]),
            (2, DType::F16, &[4][..])
        );
        let error = set_outputs(&mut specs, &[("y", DType::F32, &[-1])]).unwrap_err();
        assert_eq!(error.to_string(), "`y` has a negative dimension -1");
    }
}
