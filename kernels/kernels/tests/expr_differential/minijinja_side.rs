//! minijinja's own expression evaluator as the reference: one `Environment` with the builtins
//! registered as functions (they call the runtime's functions, so only the language around
//! them is under test), a context object per random environment, and the value comparison.
//!
//! Known, documented differences from our language, which the comparison tolerates:
//! minijinja's `/` is true division (the caller skips values an inexact division reached),
//! its integers widen to i128 instead of overflowing, and it counts negative list indices from
//! the end; [`ours_only`] lists those failures only we have. Strict undefined lets a list
//! literal hold an undefined name where we fail on reading it; [`eval`] counts such a list as
//! a failure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use codegen::expr::runtime as rt;
use codegen::expr::{EvalError, Value};
use minijinja::value::{Object, Rest, Value as Mj, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State, UndefinedBehavior};

use super::random_env::{RandomEnv, Traced};

/// `device.features`: an object with a `has(name)` method.
#[derive(Debug)]
pub struct Features(BTreeSet<&'static str>);

impl Object for Features {
    fn call_method(
        self: &Arc<Self>,
        _: &mut State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, MjError> {
        match (method, args) {
            ("has", [name]) => Ok(Mj::from(name.as_str().is_some_and(|n| self.0.contains(n)))),
            _ => Err(MjError::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// The template context of one environment. `derive` values are added as minijinja computes
/// them (in dependency order), so one context object serves every expression of an
/// environment instead of a map rebuilt per expression. A name that is not there is
/// undefined, which strict mode turns into an error on use.
#[derive(Debug)]
pub struct Context {
    base: BTreeMap<&'static str, Mj>,
    derived: Mutex<BTreeMap<String, Mj>>,
}

impl Object for Context {
    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let key = key.as_str()?;
        if let Some(v) = self.base.get(key) {
            return Some(v.clone());
        }
        let derived = self.derived.lock().unwrap_or_else(PoisonError::into_inner);
        derived.get(key).cloned()
    }
}

/// Adds a derive's minijinja value to the context value made by [`context`].
pub fn define(ctx: &Mj, name: &str, value: Mj) {
    if let Some(ctx) = ctx.downcast_object_ref::<Context>() {
        let mut derived = ctx.derived.lock().unwrap_or_else(PoisonError::into_inner);
        derived.insert(name.to_owned(), value);
    }
}

fn mj_err(e: EvalError) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, e.message)
}

/// `max` / `min` over minijinja numbers, returning the first extreme argument as Python does.
fn extreme(args: &[Mj], want_max: bool) -> Result<Mj, MjError> {
    let mut best: Option<(f64, Mj)> = None;
    for arg in args {
        let v = f64::try_from(arg.clone())?;
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

/// `f16Ok(dtype)` reads the device's features from the context, so that one `Environment`
/// serves every random device.
fn f16_ok(state: &State<'_, '_>, dtype: String) -> Result<bool, MjError> {
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
    Ok(rt::f16_ok(&dtype, features.0.contains("shader-f16")))
}

/// The minijinja environment: strict undefined, the builtins as functions.
pub fn environment<'s>() -> Environment<'s> {
    let mut env = Environment::new();
    // A `derive` minijinja failed on is left out of the context; strict mode makes reading it
    // an error, as reading a failed derive is for us. `is defined` still works.
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_function("dim", |s: Vec<i64>, a: i64| rt::dim(&s, a).map_err(mj_err));
    env.add_function("numel", |s: Vec<i64>| rt::numel(&s).map_err(mj_err));
    env.add_function("outer", |s: Vec<i64>, a: i64| {
        rt::outer(&s, a).map_err(mj_err)
    });
    env.add_function("inner", |s: Vec<i64>, a: i64| {
        rt::inner(&s, a).map_err(mj_err)
    });
    env.add_function("ceilDiv", |a: i64, b: i64| {
        rt::ceil_div(a, b).map_err(mj_err)
    });
    env.add_function("sameShape", |a: Vec<i64>, b: Vec<i64>| {
        rt::same_shape(&a, &b)
    });
    env.add_function("f16Ok", f16_ok);
    env.add_function("max", |args: Rest<Mj>| extreme(&args, true));
    env.add_function("min", |args: Rest<Mj>| extreme(&args, false));
    env
}

/// Our value as a minijinja value.
pub fn to_mj(value: &Value) -> Mj {
    match value {
        Value::Int(v) => Mj::from(*v),
        Value::Float(v) => Mj::from(*v),
        Value::Bool(v) => Mj::from(*v),
        Value::Str(v) | Value::Dtype(v) => Mj::from(v.as_str()),
        Value::List(v) => v.iter().copied().collect(),
    }
}

/// The context of `env` (without derives): `shapes`, `ranks`, `dtypes`, `attrs`, `tunables`
/// and `device` with the limits the manifest reads and the features object.
pub fn context(env: &RandomEnv, limit_names: &BTreeSet<String>) -> Mj {
    let shapes = Mj::from_pairs(
        env.shapes
            .iter()
            .map(|(k, v)| (k.as_str(), v.iter().copied().collect::<Mj>())),
    );
    let ranks = Mj::from_pairs(env.shapes.iter().map(|(k, v)| (k.as_str(), v.len())));
    let dtypes = Mj::from_pairs(env.dtypes.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let attrs = Mj::from_pairs(env.attrs.iter().map(|(k, v)| (k.as_str(), to_mj(v))));
    let tunables = Mj::from_pairs(env.tunables.iter().map(|(k, v)| (k.as_str(), *v)));
    let limits = Mj::from_pairs(
        limit_names
            .iter()
            .filter_map(|name| Some((name.as_str(), env.limit(name)?))),
    );
    let features = codegen::expr::builtins::FEATURES
        .iter()
        .copied()
        .filter(|f| env.caps.has_feature(f))
        .collect();
    let device = Mj::from_pairs([
        ("limits", limits),
        ("features", Mj::from_object(Features(features))),
    ]);
    Mj::from_object(Context {
        base: BTreeMap::from([
            ("shapes", shapes),
            ("ranks", ranks),
            ("dtypes", dtypes),
            ("attrs", attrs),
            ("tunables", tunables),
            ("device", device),
        ]),
        derived: Mutex::new(BTreeMap::new()),
    })
}

/// Whether `v` is undefined or a list holding an undefined item. Strict mode fails only where
/// an undefined value is used, and a list literal does not use its items: `[1, attrs.absent]`
/// is a list with an undefined in it, where for us reading `attrs.absent` already fails.
fn holds_undefined(v: &Mj) -> bool {
    v.is_undefined()
        || (v.kind() == ValueKind::Seq
            && v.try_iter()
                .is_ok_and(|mut items| items.any(|item| holds_undefined(&item))))
}

/// Evaluates a compiled expression. A bare failed derive evaluates to undefined even in
/// strict mode, and a list literal may hold an undefined name: both count as errors, as they
/// are for us.
pub fn eval(expr: &minijinja::Expression<'_, '_>, ctx: &Mj) -> Result<Mj, MjError> {
    expr.eval(ctx.clone()).and_then(|v| {
        if holds_undefined(&v) {
            Err(MjError::new(ErrorKind::UndefinedError, "undefined result"))
        } else {
            Ok(v)
        }
    })
}

/// Whether our value and minijinja's agree. Integers compare exactly; a float result (true
/// division of an exact quotient gives `6.0`) by value; a Bool must be a minijinja bool.
pub fn same(ours: &Value, theirs: &Mj) -> bool {
    let number = || match theirs.kind() {
        ValueKind::Number => f64::try_from(theirs.clone()).ok(),
        _ => None,
    };
    match ours {
        Value::Int(v) if theirs.is_integer() => theirs.as_i64() == Some(*v),
        Value::Int(v) => number() == Some(rt::to_float(*v)),
        Value::Float(v) => number().is_some_and(|t| t == *v || (t - v).abs() <= 1e-12 * v.abs()),
        Value::Bool(v) => theirs.kind() == ValueKind::Bool && theirs.is_true() == *v,
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

/// Failures only our evaluator has, by design: i64 overflow (minijinja widens to i128) and
/// negative indices (minijinja counts from the end).
pub fn ours_only(err: &EvalError) -> bool {
    ["integer overflow", "negative index"]
        .iter()
        .any(|m| err.message.contains(m))
}

/// The outcome of comparing one of our results with minijinja's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Compared exactly, and equal (values equal, or both failed).
    Agree,
    /// Compared exactly, and different.
    Disagree,
    /// Not comparable: an inexact integer division took part in our result.
    Loose,
    /// Not comparable: ours failed in a way minijinja does not (see [`ours_only`]).
    OursOnly,
}

/// Compares one of our results with minijinja's.
pub fn compare(ours: &Traced, theirs: &Result<Mj, MjError>) -> Verdict {
    if ours.inexact {
        return Verdict::Loose;
    }
    match (&ours.value, theirs) {
        (Ok(o), Ok(t)) if same(o, t) => Verdict::Agree,
        (Err(_), Err(_)) => Verdict::Agree,
        (Err(e), Ok(_)) if ours_only(e) => Verdict::OursOnly,
        _ => Verdict::Disagree,
    }
}
