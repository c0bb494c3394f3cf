//! minijinja's own expression evaluator as the reference for every dialect: the helpers
//! registered as functions (they call the same runtime functions as the generated code, so
//! only the language around them is under test), evaluated in the context of a random
//! environment (`scope.rs`). `dim`, `outer` and `inner` take negative axes from the end or
//! refuse them, as the expression's IR says ([`environment`]'s `wrapped_axes`).
//!
//! Undefined values are lenient in the corpus's dialects, as they read an absent optional
//! argument: falsy in a test, unequal to any value, an error in arithmetic or a call. The
//! Hub's runtime errs on an ordering with an undefined operand too ("Cannot perform operation
//! on undefined values"), as minijinja's semi-strict mode does; that mode also refuses `==`
//! and `!=` with one, which the runtime answers, but every such comparison in the Hub's
//! manifests is guarded by `has(…)`. Known, documented differences from our evaluator are
//! tolerated by [`compare`]: `/` is true division (results an inexact integer division
//! reached are not compared), integers widen to i128 where ours overflow.

use std::sync::Arc;

use kernel_codegen::expr::runtime as rt;
use kernel_codegen::expr::{EvalError, Value};
use minijinja::value::{Rest, Value as Mj, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State, UndefinedBehavior};

use super::interp::Traced;
use super::scope::{Context, Features};

/// The helper functions [`environment`] registers.
pub const HELPERS: &[&str] = &[
    "broadcastShape",
    "broadcastable",
    "ceil",
    "ceilDiv",
    "cols",
    "dim",
    "dtypeBytes",
    "f16Allowed",
    "f16Ok",
    "floor",
    "has",
    "hasAxis",
    "inner",
    "matmulShape",
    "max",
    "min",
    "numel",
    "outer",
    "pick",
    "pow",
    "pow2ceil",
    "prefix",
    "rank",
    "rows",
    "sameShape",
];

fn mj_err(e: EvalError) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, e.message)
}

fn number(v: &Mj) -> Result<f64, MjError> {
    if v.kind() != ValueKind::Number {
        return Err(MjError::new(
            ErrorKind::InvalidOperation,
            format!("{v} is not a number"),
        ));
    }
    f64::try_from(v.clone())
}

/// `max` / `min` over minijinja numbers, returning the first extreme argument as Python does.
fn extreme(args: &[Mj], want_max: bool) -> Result<Mj, MjError> {
    let mut best: Option<(f64, Mj)> = None;
    for arg in args {
        let v = number(arg)?;
        if best
            .as_ref()
            .is_none_or(|(b, _)| if want_max { v > *b } else { v < *b })
        {
            best = Some((v, arg.clone()));
        }
    }
    best.map(|(_, v)| v)
        .ok_or_else(|| MjError::from(ErrorKind::MissingArgument))
}

/// `ceil`, `floor`, `pow2ceil`: an integer stays itself (or its power of two).
fn rounding(
    x: &Mj,
    float: fn(f64) -> Result<i64, EvalError>,
    int: fn(i64) -> Result<i64, EvalError>,
) -> Result<i64, MjError> {
    if x.is_integer() {
        let v = x
            .as_i64()
            .ok_or_else(|| MjError::new(ErrorKind::InvalidOperation, "integer out of range"))?;
        return int(v).map_err(mj_err);
    }
    float(number(x)?).map_err(mj_err)
}

fn shader_f16(state: &State<'_, '_>) -> Result<bool, MjError> {
    let device = state
        .lookup("device")
        .ok_or_else(|| MjError::new(ErrorKind::UndefinedError, "no `device` in the context"))?;
    let features = device.get_attr("features")?;
    let features = features.downcast_object_ref::<Features>().ok_or_else(|| {
        MjError::new(
            ErrorKind::InvalidOperation,
            "`device.features` is not Features",
        )
    })?;
    Ok(features.0.iter().any(|f| f == "shader-f16"))
}

/// A list argument as integers.
fn ints(v: &Mj) -> Result<Vec<i64>, MjError> {
    v.try_iter()?
        .map(|x| {
            x.as_i64()
                .ok_or_else(|| MjError::new(ErrorKind::InvalidOperation, "not an integer"))
        })
        .collect()
}

/// The minijinja environment: the helpers as functions; `dim`, `outer` and `inner` count a
/// negative axis from the end when `wrapped_axes`, and refuse it otherwise. `hub`: undefined
/// values as the Hub's runtime reads them (see the module docs), and its `ceilDiv`, which is
/// `Math.ceil(a / b)` of whatever numbers it is given; otherwise undefined is lenient and
/// `ceilDiv` takes integers.
pub fn environment<'s>(wrapped_axes: bool, hub: bool) -> Environment<'s> {
    let mut env = Environment::new();
    env.set_undefined_behavior(if hub {
        UndefinedBehavior::SemiStrict
    } else {
        UndefinedBehavior::Lenient
    });
    env.add_function("ceil", |x: Mj| rounding(&x, rt::ceil, Ok));
    env.add_function("floor", |x: Mj| rounding(&x, rt::floor, Ok));
    env.add_function("pow2ceil", |x: Mj| {
        rounding(&x, rt::pow2ceil_float, rt::pow2ceil)
    });
    env.add_function("pow", |a: Mj, b: Mj| -> Result<Mj, MjError> {
        if a.is_integer() && b.is_integer() {
            let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) else {
                return Err(MjError::new(
                    ErrorKind::InvalidOperation,
                    "integer out of range",
                ));
            };
            return rt::pow(a, b).map(Mj::from).map_err(mj_err);
        }
        Ok(Mj::from(rt::pow_float(number(&a)?, number(&b)?)))
    });
    env.add_function("max", |args: Rest<Mj>| extreme(&args, true));
    env.add_function("min", |args: Rest<Mj>| extreme(&args, false));
    if hub {
        env.add_function("ceilDiv", |a: Mj, b: Mj| -> Result<i64, MjError> {
            if let (true, true, Some(a), Some(b)) =
                (a.is_integer(), b.is_integer(), a.as_i64(), b.as_i64())
            {
                return rt::ceil_div(a, b).map_err(mj_err);
            }
            let quotient = rt::div_float(number(&a)?, number(&b)?).map_err(mj_err)?;
            rt::ceil(quotient).map_err(mj_err)
        });
    } else {
        env.add_function("ceilDiv", |a: i64, b: i64| {
            rt::ceil_div(a, b).map_err(mj_err)
        });
    }
    env.add_function("numel", |s: Vec<i64>| rt::numel(&s).map_err(mj_err));
    env.add_function("rank", |s: Vec<i64>| rt::rank(&s).map_err(mj_err));
    type Axis = fn(&[i64], i64) -> Result<i64, EvalError>;
    let (dim, outer, inner): (Axis, Axis, Axis) = if wrapped_axes {
        (rt::dim_wrapped, rt::outer_wrapped, rt::inner_wrapped)
    } else {
        (rt::dim, rt::outer, rt::inner)
    };
    env.add_function("dim", move |s: Vec<i64>, a: i64| dim(&s, a).map_err(mj_err));
    env.add_function("outer", move |s: Vec<i64>, a: i64| {
        outer(&s, a).map_err(mj_err)
    });
    env.add_function("inner", move |s: Vec<i64>, a: i64| {
        inner(&s, a).map_err(mj_err)
    });
    env.add_function("rows", |s: Vec<i64>, a: Option<i64>| {
        rt::rows(&s, a.unwrap_or(-1)).map_err(mj_err)
    });
    env.add_function("cols", |s: Vec<i64>, a: Option<i64>| {
        rt::cols(&s, a.unwrap_or(-1)).map_err(mj_err)
    });
    env.add_function("broadcastable", |a: Vec<i64>, b: Vec<i64>| {
        rt::broadcastable(&a, &b)
    });
    env.add_function("sameShape", |a: Vec<i64>, b: Vec<i64>| {
        rt::same_shape(&a, &b)
    });
    env.add_function("broadcastShape", |a: Mj, b: Mj| -> Result<Mj, MjError> {
        let shape = rt::broadcast_shape(&ints(&a)?, &ints(&b)?).map_err(mj_err)?;
        Ok(shape.into_iter().collect())
    });
    env.add_function("matmulShape", |a: Mj, b: Mj| -> Result<Mj, MjError> {
        let shape = rt::matmul_shape(&ints(&a)?, &ints(&b)?).map_err(mj_err)?;
        Ok(shape.into_iter().collect())
    });
    env.add_function("prefix", |s: Mj, n: i64| -> Result<Mj, MjError> {
        Ok(rt::prefix(&ints(&s)?, n).into_iter().collect())
    });
    env.add_function("hasAxis", |axes: Vec<i64>, axis: i64, rank: i64| {
        rt::has_axis(&axes, axis, rank).map_err(mj_err)
    });
    env.add_function("dtypeBytes", |d: String| {
        rt::dtype_bytes(&d).map_err(mj_err)
    });
    env.add_function("f16Ok", |state: &State<'_, '_>, d: String| {
        Ok::<_, MjError>(rt::f16_ok(&d, shader_f16(state)?))
    });
    env.add_function("f16Allowed", |state: &State<'_, '_>, d: String| {
        Ok::<_, MjError>(rt::f16_allowed(&d, shader_f16(state)?))
    });
    // `has(namespace, "name")`: the name is given (an absent value is left out of its map).
    env.add_function("has", |object: Mj, key: String| -> Result<bool, MjError> {
        Ok(object.get_attr(&key).is_ok_and(|v| !v.is_undefined()))
    });
    // `pick([[c1, v1], …], default)`: the value of the first true condition.
    env.add_function(
        "pick",
        |pairs: Vec<Mj>, default: Mj| -> Result<Mj, MjError> {
            for pair in pairs {
                if pair.get_item_by_index(0)?.is_true() {
                    return pair.get_item_by_index(1);
                }
            }
            Ok(default)
        },
    );
    env
}

/// Evaluates a compiled expression. The result may be undefined: `args.flag and x` is
/// `args.flag` when that is absent, as Jinja's `and` gives an operand. With `whole`, a number
/// must be a whole one and becomes an integer, as our model converts a value that a dispatch
/// size or an integer uniform field takes (`args.cols / 4`).
pub fn eval(
    expr: &minijinja::Expression<'_, '_>,
    ctx: &Arc<Context>,
    whole: bool,
) -> Result<Mj, MjError> {
    let value = expr.eval(Mj::from_dyn_object(ctx.clone()))?;
    if whole && value.kind() == ValueKind::Number && !value.is_integer() {
        return rt::to_int_exact(number(&value)?)
            .map(Mj::from)
            .map_err(mj_err);
    }
    Ok(value)
}

/// Whether our value and minijinja's agree. Integers compare exactly; a float result by value.
/// A Bool compares with the truth of minijinja's value: Jinja's `and` and `or` give one of
/// their operands (`0`, an undefined argument), and a `when` clause holds only when it is
/// true, so a falsy operand and `false` select alike. Anything else undefined is a failure
/// (a bare constant that failed).
pub fn same(ours: &Value, theirs: &Mj) -> bool {
    if let Value::Bool(v) = ours {
        return theirs.is_true() == *v;
    }
    if theirs.is_undefined() {
        return false;
    }
    let number = || match theirs.kind() {
        ValueKind::Number => f64::try_from(theirs.clone()).ok(),
        _ => None,
    };
    match ours {
        Value::Int(v) if theirs.is_integer() => theirs.as_i64() == Some(*v),
        Value::Int(v) => number() == Some(rt::to_float(*v)),
        Value::Float(v) => number().is_some_and(|t| t == *v || (t - v).abs() <= 1e-12 * v.abs()),
        Value::Bool(_) => false,
        Value::Str(v) | Value::Dtype(v) => theirs.as_str() == Some(v.as_str()),
        Value::List(v) => {
            theirs.kind() == ValueKind::Seq
                && theirs.try_iter().is_ok_and(|it| {
                    it.map(|x| x.as_i64()).collect::<Vec<_>>()
                        == v.iter().map(|x| Some(*x)).collect::<Vec<_>>()
                })
        }
    }
}

/// The outcome of comparing one of our results with minijinja's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Compared, and equal (values equal, or both failed).
    Agree,
    /// Compared, and different.
    Disagree,
    /// Not comparable: an inexact integer division, or a constant that was not comparable,
    /// took part in our result, or ours overflowed where minijinja's integers widen.
    Loose,
}

/// Compares one of our results with minijinja's.
pub fn compare(ours: &Traced, theirs: &Result<Mj, MjError>) -> Verdict {
    if ours.inexact {
        return Verdict::Loose;
    }
    match (&ours.value, theirs) {
        (Ok(o), Ok(t)) if same(o, t) => Verdict::Agree,
        (Err(_), Err(_)) => Verdict::Agree,
        (Err(_), Ok(t)) if t.is_undefined() => Verdict::Agree,
        (Err(e), Ok(_)) if e.message.contains("overflow") => Verdict::Loose,
        _ => Verdict::Disagree,
    }
}
