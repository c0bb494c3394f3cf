//! minijinja's own expression evaluator as the reference for the Hub dialect, laid out as the
//! Hub's runtime evaluates a manifest string: the Jinja expression `{{ expr }}` in a scope of
//! namespaces (`shapes`, `ranks`, `tensorDtypes`, `present`, `dtypes`, `args`/`attrs`,
//! `tunables`, `device`), the derives computed so far by bare name and under `derive`, and
//! `DISPATCH_FOLD_WIDTH`. The helpers are registered as functions calling the same runtime
//! functions as the generated code, so only the language around them is under test.
//!
//! What the scope holds follows the runtime's order (HUB-DIALECT.md A.3): the manifest's
//! derives in the manifest's order, then per variant its `when` (with the op's tunables), its
//! tunables merged in, its derives, then per pass the pass's derives; a later level shadows an
//! earlier one, and a pass's derives are gone at the next pass. A derive's value is stored as
//! the runtime hands it back to JavaScript: a whole Float becomes an Int when reused.
//!
//! An undefined value (an adapter's subgroup size it does not report) reads as the runtime's
//! Jinja reads it: falsy, and an error in arithmetic and in an ordering (`<`, `<=`, `>`, `>=`:
//! "Cannot perform operation on undefined values"), which minijinja's semi-strict mode does
//! too. That mode also refuses `==` and `!=` with one, which the runtime answers (false, true);
//! every such comparison in the three manifests is guarded by `has(…)`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use kernel_codegen::expr::runtime as rt;
use kernel_codegen::expr::{EvalError, Value};
use kernel_codegen::model::Op;
use minijinja::value::{Object, Rest, Value as Mj, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State, UndefinedBehavior};

use super::env::{RandomEnv, Traced};

/// `device.features`: an object with a `has(name)` method.
#[derive(Debug)]
struct Features(Vec<&'static str>);

impl Object for Features {
    fn call_method(
        self: &Arc<Self>,
        _: &mut State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, MjError> {
        match (method, args) {
            ("has", [name]) => Ok(Mj::from(name.as_str().is_some_and(|n| self.0.contains(&n)))),
            _ => Err(MjError::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// The runtime's one named constant.
const DISPATCH_FOLD_WIDTH: i64 = 65535;

/// The scope of one environment: the namespaces, then the derives visible where the
/// expression stands (the pass's over the variant's over the manifest's).
#[derive(Debug)]
pub struct Context {
    base: BTreeMap<&'static str, Mj>,
    state: Mutex<Scope>,
}

/// What changes as the evaluation moves through the manifest.
#[derive(Debug, Default)]
struct Scope {
    tunables: Mj,
    manifest: BTreeMap<String, Mj>,
    variant: BTreeMap<String, Mj>,
    pass: BTreeMap<String, Mj>,
}

impl Scope {
    fn derived(&self, key: &str) -> Option<Mj> {
        (self.pass.get(key))
            .or_else(|| self.variant.get(key))
            .or_else(|| self.manifest.get(key))
            .cloned()
    }

    /// The `derive` object: every visible derive, later levels winning.
    fn derive_object(&self) -> Mj {
        let mut all = self.manifest.clone();
        all.extend(self.variant.clone());
        all.extend(self.pass.clone());
        Mj::from(all)
    }
}

impl Object for Context {
    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let key = key.as_str()?;
        let scope = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        match key {
            "tunables" => return Some(scope.tunables.clone()),
            "derive" => return Some(scope.derive_object()),
            "DISPATCH_FOLD_WIDTH" => return Some(Mj::from(DISPATCH_FOLD_WIDTH)),
            _ => {}
        }
        if let Some(v) = self.base.get(key) {
            return Some(v.clone());
        }
        // A derive does not hide a helper of the same name: expressions call the helper.
        if HELPERS.contains(&key) {
            return None;
        }
        scope.derived(key)
    }
}

/// The helper functions [`environment`] registers.
const HELPERS: &[&str] = &[
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

/// Where a derive is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Manifest,
    Variant,
    Pass,
}

impl Context {
    /// Adds a derive's value at `level`, as the runtime converts it back from Jinja.
    pub fn define(&self, level: Level, name: &str, value: Mj) {
        let value = js_number(value);
        let mut scope = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let map = match level {
            Level::Manifest => &mut scope.manifest,
            Level::Variant => &mut scope.variant,
            Level::Pass => &mut scope.pass,
        };
        map.insert(name.to_owned(), value);
    }

    /// Starts a variant: its `when` sees the manifest's derives and the op's tunables.
    pub fn enter_variant(&self, op: &Op) {
        let mut scope = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        scope.variant.clear();
        scope.pass.clear();
        scope.tunables = tunables(&op.tunables, &[]);
    }

    /// Merges a variant's tunables in, after its `when`, before its derives.
    pub fn merge_tunables(&self, op: &Op, own: &[(String, Value)]) {
        let mut scope = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        scope.tunables = tunables(&op.tunables, own);
    }

    /// Starts a pass: the previous pass's derives are not this one's.
    pub fn enter_pass(&self) {
        let mut scope = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        scope.pass.clear();
    }
}

/// The `tunables` object: the op's, with `own` (a variant's) over them.
fn tunables(op: &[(String, Value)], own: &[(String, Value)]) -> Mj {
    let mut all: BTreeMap<String, Mj> = BTreeMap::new();
    for (name, value) in op.iter().chain(own) {
        all.insert(name.clone(), to_mj(value));
    }
    Mj::from(all)
}

/// A value as the runtime hands it back to JavaScript and in again: a whole Float is an Int.
fn js_number(value: Mj) -> Mj {
    if value.kind() == ValueKind::Number
        && !value.is_integer()
        && let Ok(f) = f64::try_from(value.clone())
        && f.fract() == 0.0
        && f.abs() < 9.0e15
    {
        return Mj::from(f as i64);
    }
    value
}

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

/// `max` / `min` over minijinja numbers, giving the first extreme argument as Python does.
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
    Ok(features.0.contains(&"shader-f16"))
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

/// The minijinja environment: semi-strict undefined (see the module docs) and the Hub's
/// helpers; `dim`, `outer` and `inner` count a negative axis from the end.
pub fn environment<'s>() -> Environment<'s> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::SemiStrict);
    env.add_function("ceil", |x: Mj| rounding(&x, rt::ceil, Ok));
    env.add_function("floor", |x: Mj| rounding(&x, rt::floor, Ok));
    env.add_function("pow2ceil", |x: Mj| {
        rounding(&x, rt::pow2ceil_float, rt::pow2ceil)
    });
    env.add_function("pow", |a: Mj, b: Mj| -> Result<Mj, MjError> {
        if let (Some(a), Some(b)) = (a.as_i64().filter(|_| a.is_integer()), b.as_i64()) {
            return rt::pow(a, b).map(Mj::from).map_err(mj_err);
        }
        Ok(Mj::from(rt::pow_float(number(&a)?, number(&b)?)))
    });
    env.add_function("max", |args: Rest<Mj>| extreme(&args, true));
    env.add_function("min", |args: Rest<Mj>| extreme(&args, false));
    // The runtime's `ceilDiv(a, b)` is `Math.ceil(a / b)` of whatever numbers it is given.
    env.add_function("ceilDiv", |a: Mj, b: Mj| -> Result<i64, MjError> {
        if let (true, true, Some(a), Some(b)) =
            (a.is_integer(), b.is_integer(), a.as_i64(), b.as_i64())
        {
            return rt::ceil_div(a, b).map_err(mj_err);
        }
        let quotient = rt::div_float(number(&a)?, number(&b)?).map_err(mj_err)?;
        rt::ceil(quotient).map_err(mj_err)
    });
    env.add_function("numel", |s: Vec<i64>| rt::numel(&s).map_err(mj_err));
    env.add_function("rank", |s: Vec<i64>| rt::rank(&s).map_err(mj_err));
    env.add_function("dim", |s: Vec<i64>, a: i64| {
        rt::dim_wrapped(&s, a).map_err(mj_err)
    });
    env.add_function("outer", |s: Vec<i64>, a: i64| {
        rt::outer_wrapped(&s, a).map_err(mj_err)
    });
    env.add_function("inner", |s: Vec<i64>, a: i64| {
        rt::inner_wrapped(&s, a).map_err(mj_err)
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

/// A minijinja map of `pairs`.
fn map<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Mj)>) -> Mj {
    Mj::from(
        pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v))
            .collect::<BTreeMap<String, Mj>>(),
    )
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

/// The scope of `env` for `op`, before any derive: `args` and `attrs` (every attribute, a
/// defaulted one given), `shapes`, `ranks`, `tensorDtypes` and `present` by bind key,
/// `dtypes` (WGSL scalars), `tunables` (the op's) and `device` (features, every limit, the
/// adapter's subgroup sizes as reported).
pub fn context(op: &Op, env: &RandomEnv) -> Arc<Context> {
    let args = map(env.args.iter().map(|(k, v)| (k.clone(), to_mj(v))));
    let names: Vec<(String, usize)> = op
        .tensors()
        .enumerate()
        .map(|(i, t)| (t.role.clone(), i))
        .chain(op.aliases.iter().cloned())
        .collect();
    let shape = |i: usize| env.shapes.get(i).cloned().flatten().unwrap_or_default();
    let shapes = map(names
        .iter()
        .map(|(n, i)| (n.clone(), shape(*i).into_iter().collect::<Mj>())));
    let ranks = map(names
        .iter()
        .map(|(n, i)| (n.clone(), Mj::from(shape(*i).len()))));
    let tensor_dtypes = map(names
        .iter()
        .filter_map(|(n, i)| Some((n.clone(), Mj::from(env.tensor_dtype(op, *i)?.onnx_name())))));
    let present = map(names
        .iter()
        .map(|(n, _)| (n.clone(), Mj::from(true)))
        .chain(
            op.attributes
                .iter()
                .map(|a| (a.name.clone(), Mj::from(env.args.contains_key(&a.name)))),
        ));
    let dtypes = map(env
        .dtypes
        .iter()
        .map(|(k, d)| (k.clone(), Mj::from(d.wgsl_name()))));
    let limits = map(kernel_codegen::webgpu::LIMITS
        .iter()
        .chain(kernel_codegen::webgpu::SUBGROUP_SIZES)
        .map(|(name, _)| (*name, Mj::from(env.caps.limit(name)))));
    let mut adapter = BTreeMap::new();
    for name in ["subgroupMinSize", "subgroupMaxSize"] {
        let size = env.caps.limit(name);
        if size != 0 {
            adapter.insert(name, Mj::from(size));
        }
    }
    let device = map([
        ("limits", limits),
        (
            "features",
            Mj::from_object(Features(env.caps.features.iter().copied().collect())),
        ),
        ("adapterInfo", map(adapter)),
    ]);
    Arc::new(Context {
        base: BTreeMap::from([
            ("args", args.clone()),
            ("attrs", args),
            ("shapes", shapes),
            ("ranks", ranks),
            ("tensorDtypes", tensor_dtypes),
            ("present", present),
            ("dtypes", dtypes),
            ("device", device),
        ]),
        state: Mutex::new(Scope {
            tunables: tunables(&op.tunables, &[]),
            ..Scope::default()
        }),
    })
}

/// Evaluates a compiled expression. With `whole`, a number must be a whole one and becomes an
/// integer, as the model converts a value that a dispatch size or an integer field takes.
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

/// Whether our value and minijinja's agree. Integers compare exactly, a Float by value. A Bool
/// compares with the truth of minijinja's value: Jinja's `and` and `or` give one of their
/// operands, and a clause holds only when it is true, so a falsy operand and `false` select
/// alike. Anything else undefined is a failure.
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
    /// Equal values, or both failed.
    Agree,
    Disagree,
    /// Not comparable: a derive that was not comparable took part in our result, or ours
    /// overflowed where minijinja's integers widen.
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
