//! Differential test: the interpreter against minijinja's own expression evaluator
//! (`Environment::compile_expression`, builtins registered as functions) on random
//! environments, for every expression of the seed manifests.
//!
//! minijinja's `/` is true division, so a result that went through an inexact integer division
//! (recorded by `eval_traced`, and inherited through `derive` references) is not compared.
//! Where our evaluation fails, minijinja must fail too, except for failures minijinja does not
//! have (i64 overflow: it widens to i128; negative indices: it counts from the end).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use codegen::expr::runtime as rt;
use codegen::expr::{self, Env, EvalError, EvalTrace, Ir, Symbol, Value};
use minijinja::value::{Object, Rest, Value as Mj};
use minijinja::{Environment, Error as MjError, ErrorKind, State, UndefinedBehavior};
use serde_json::Value as Json;

use super::seeds::{ManifestScope, SEEDS, expressions, load};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: i64) -> i64 {
        i64::try_from(self.next() % n.max(1).unsigned_abs()).unwrap_or(0)
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[usize::try_from(self.below(i64::try_from(xs.len()).unwrap_or(1))).unwrap_or(0)]
    }

    fn chance(&mut self, percent: i64) -> bool {
        self.below(100) < percent
    }
}

/// One random environment for one manifest.
#[derive(Default)]
struct RandomEnv {
    shapes: BTreeMap<String, Vec<i64>>,
    attrs: BTreeMap<String, Value>,
    dtypes: BTreeMap<String, String>,
    tunables: BTreeMap<String, i64>,
    limits: BTreeMap<String, i64>,
    features: BTreeSet<String>,
    derived: BTreeMap<String, Result<Value, EvalError>>,
}

impl Env for RandomEnv {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        Ok(match sym {
            Symbol::Shape(r) => self.shapes.get(r).cloned().map(Value::List),
            Symbol::Rank(r) => self
                .shapes
                .get(r)
                .map(|s| Value::Int(i64::try_from(s.len()).unwrap_or(0))),
            Symbol::Dtype(v) => self.dtypes.get(v).cloned().map(Value::Dtype),
            Symbol::Attr(a) => self.attrs.get(a).cloned(),
            Symbol::Tunable(t) => self.tunables.get(t).copied().map(Value::Int),
            Symbol::Limit(l) => self.limits.get(l).copied().map(Value::Int),
            Symbol::Derived(d) => match self.derived.get(d) {
                Some(result) => Some(result.clone()?),
                None => None,
            },
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.features.contains(name)
    }
}

fn dims(rng: &mut Rng, rank: i64) -> Vec<i64> {
    (0..rank)
        .map(|_| {
            if rng.chance(5) {
                0
            } else {
                rng.pick(&[1, 2, 3, 4, 5, 8, 16])
            }
        })
        .collect()
}

/// Random BiasSoftmax-shaped inputs: mostly valid bias layouts, sometimes not.
fn bias_softmax(rng: &mut Rng, env: &mut RandomEnv) {
    let rank = rng.pick(&[0, 1, 2, 3, 3, 4]);
    let data = dims(rng, rank);
    let axis = rng.below(2 * rank + 2) - rank - 1;
    let axis_norm = usize::try_from(if axis < 0 { axis + rank } else { axis })
        .unwrap_or(0)
        .min(data.len());
    let bias = if rng.chance(70) {
        let batch: i64 = data[..axis_norm].iter().product();
        let groups = (1..=batch.max(1))
            .filter(|g| batch % g == 0)
            .collect::<Vec<_>>();
        let mut bias = vec![rng.pick(&groups)];
        bias.extend_from_slice(&data[axis_norm..]);
        bias
    } else {
        let r = rng.below(4);
        dims(rng, r)
    };
    let output = if rng.chance(90) {
        data.clone()
    } else {
        dims(rng, rank)
    };
    env.shapes = BTreeMap::from([
        ("data".into(), data),
        ("bias".into(), bias),
        ("output".into(), output),
    ]);
    env.attrs.insert("axis".into(), Value::Int(axis));
    env.attrs
        .insert("is_inner_broadcast".into(), Value::Int(rng.below(2)));
}

/// Random MRotaryEmbedding-shaped inputs: mostly consistent, sometimes not.
fn mrotary(rng: &mut Rng, env: &mut RandomEnv) {
    let (b, s, n) = (
        rng.pick(&[1, 2, 3]),
        rng.pick(&[1, 2, 4]),
        rng.pick(&[1, 2, 4]),
    );
    let hs = rng.pick(&[2, 4, 5, 6, 8]);
    let rank = rng.pick(&[3, 3, 4, 4, 2]);
    let input = match rank {
        3 => vec![b, s, n * hs],
        4 => vec![b, n, s, hs],
        _ => vec![b, s],
    };
    let rot = if rng.chance(60) {
        0
    } else {
        rng.pick(&[2, 4, 6, 3])
    };
    let half = if rng.chance(80) {
        (if rot == 0 { hs } else { rot }) / 2
    } else {
        rng.pick(&[1, 2, 3])
    };
    let cos = vec![rng.pick(&[4, 16]), half];
    let sin = if rng.chance(90) {
        cos.clone()
    } else {
        vec![4, half + 1]
    };
    let positions = if rng.chance(90) {
        vec![3, b, s]
    } else {
        vec![3, b, s + 1]
    };
    let section = if rng.chance(70) {
        let t = rng.below(half + 1);
        let h = rng.below(half - t + 1);
        vec![t, h, half - t - h]
    } else {
        let len = rng.pick(&[2, 3]);
        (0..len).map(|_| rng.below(4) - 1).collect()
    };
    let output = if rng.chance(90) {
        input.clone()
    } else {
        vec![b, s, 1]
    };
    env.shapes = BTreeMap::from([
        ("input".into(), input),
        ("position_ids".into(), positions),
        ("cos_cache".into(), cos),
        ("sin_cache".into(), sin),
        ("output".into(), output),
    ]);
    if rng.chance(90) {
        let heads = if rng.chance(70) { n } else { rng.pick(&[0, 3]) };
        env.attrs.insert("num_heads".into(), Value::Int(heads));
    }
    env.attrs
        .insert("rotary_embedding_dim".into(), Value::Int(rot));
    env.attrs
        .insert("mrope_section".into(), Value::List(section));
    for flag in ["interleaved", "mrope_layout"] {
        env.attrs
            .insert(flag.into(), Value::Int(rng.pick(&[0, 1, 1, 2])));
    }
    env.attrs.insert("is_packed_batching".into(), Value::Int(0));
    env.attrs.insert("scale".into(), Value::Int(1));
}

fn random_env(rng: &mut Rng, seed: &str, manifest: &Json) -> RandomEnv {
    let mut env = RandomEnv::default();
    if seed.contains("BiasSoftmax") {
        bias_softmax(rng, &mut env);
    } else {
        mrotary(rng, &mut env);
    }
    for (name, value) in manifest["tunables"].as_object().into_iter().flatten() {
        env.tunables
            .insert(name.clone(), value.as_i64().unwrap_or(1));
    }
    for var in manifest["typeConstraints"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        let dtype = if var == "M" {
            "i64"
        } else {
            rng.pick(&["f32", "f16"])
        };
        env.dtypes.insert(var.clone(), dtype.into());
    }
    env.limits.insert(
        "maxComputeWorkgroupsPerDimension".into(),
        rng.pick(&[65535, 4]),
    );
    for feature in ["shader-f16", "subgroups", "timestamp-query"] {
        if rng.chance(50) {
            env.features.insert(feature.into());
        }
    }
    env
}

/// `device.features` for minijinja: an object with a `has` method.
#[derive(Debug)]
struct Features(BTreeSet<String>);

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

fn mj_err(e: EvalError) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, e.message)
}

/// `max` / `min` over minijinja numbers, keeping the first extreme value like Python.
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

fn mj_environment(has_f16: bool) -> Environment<'static> {
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
    env.add_function("f16Ok", move |d: String| rt::f16_ok(&d, has_f16));
    env.add_function("max", |args: Rest<Mj>| extreme(&args, true));
    env.add_function("min", |args: Rest<Mj>| extreme(&args, false));
    env
}

fn to_mj(value: &Value) -> Mj {
    match value {
        Value::Int(v) => Mj::from(*v),
        Value::Float(v) => Mj::from(*v),
        Value::Bool(v) => Mj::from(*v),
        Value::Str(v) | Value::Dtype(v) => Mj::from(v.as_str()),
        Value::List(v) => v.iter().copied().collect(),
    }
}

fn context(env: &RandomEnv, derived: &BTreeMap<String, Mj>) -> Mj {
    let map = |m: BTreeMap<&str, Mj>| Mj::from_pairs(m);
    let mut ctx: BTreeMap<&str, Mj> = BTreeMap::from([
        (
            "shapes",
            map(env
                .shapes
                .iter()
                .map(|(k, v)| (k.as_str(), to_mj(&Value::List(v.clone()))))
                .collect()),
        ),
        (
            "ranks",
            map(env
                .shapes
                .iter()
                .map(|(k, v)| (k.as_str(), Mj::from(v.len())))
                .collect()),
        ),
        (
            "dtypes",
            map(env
                .dtypes
                .iter()
                .map(|(k, v)| (k.as_str(), Mj::from(v.as_str())))
                .collect()),
        ),
        (
            "attrs",
            map(env
                .attrs
                .iter()
                .map(|(k, v)| (k.as_str(), to_mj(v)))
                .collect()),
        ),
        (
            "tunables",
            map(env
                .tunables
                .iter()
                .map(|(k, v)| (k.as_str(), Mj::from(*v)))
                .collect()),
        ),
    ]);
    let limits = map(env
        .limits
        .iter()
        .map(|(k, v)| (k.as_str(), Mj::from(*v)))
        .collect());
    let features = Mj::from_object(Features(env.features.clone()));
    ctx.insert(
        "device",
        map(BTreeMap::from([("limits", limits), ("features", features)])),
    );
    for (k, v) in derived {
        ctx.insert(k.as_str(), v.clone());
    }
    map(ctx)
}

/// Whether our value and minijinja's agree (numbers compare by value: `6 == 6.0`).
fn same(ours: &Value, theirs: &Mj) -> bool {
    let number = || f64::try_from(theirs.clone()).ok();
    match ours {
        Value::Int(v) => number() == Some(rt::to_float(*v)),
        Value::Float(v) => number().is_some_and(|t| (t - v).abs() <= 1e-12 * v.abs().max(1.0)),
        Value::Bool(v) => {
            theirs.kind() == minijinja::value::ValueKind::Bool && theirs.is_true() == *v
        }
        Value::Str(v) | Value::Dtype(v) => theirs.as_str() == Some(v.as_str()),
        Value::List(v) => theirs.try_iter().is_ok_and(|it| {
            it.map(|x| i64::try_from(x).ok()).collect::<Vec<_>>()
                == v.iter().map(|x| Some(*x)).collect::<Vec<_>>()
        }),
    }
}

/// Failures only our evaluator has, by design.
fn ours_only(err: &EvalError) -> bool {
    ["integer overflow", "negative index", "is not defined"]
        .iter()
        .any(|m| err.message.contains(m))
}

#[test]
fn interpreter_agrees_with_minijinja_on_seed_expressions() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut compared, mut skipped) = (0usize, 0usize);
    let mut failures = Vec::new();
    for seed in SEEDS {
        let manifest = load(seed);
        let scope = ManifestScope::new(&manifest);
        let derive_src: BTreeMap<&str, &str> = manifest["derive"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
            .collect();
        let mut cases: Vec<(String, String, Ir, Option<String>)> = scope
            .derive_order
            .iter()
            .map(|(name, ir)| {
                (
                    format!("derive.{name}"),
                    derive_src[name.as_str()].to_owned(),
                    ir.clone(),
                    Some(name.clone()),
                )
            })
            .collect();
        for (path, src) in expressions(&manifest) {
            let ast = expr::parse(&src).unwrap_or_else(|e| panic!("{path}: {}", e.message));
            let ir = expr::check(&ast, &scope).unwrap_or_else(|e| panic!("{path}: {e:?}"));
            cases.push((path, src, ir, None));
        }
        for _ in 0..300 {
            let mut env = random_env(&mut rng, seed, &manifest);
            let mj = mj_environment(env.features.contains("shader-f16"));
            let mut mj_derived = BTreeMap::new();
            let mut tainted = BTreeSet::new();
            for (path, src, ir, derive_name) in &cases {
                let mut trace = EvalTrace::default();
                let ours = expr::eval_traced(ir, &env, &mut trace);
                let theirs = mj
                    .compile_expression(src)
                    .and_then(|e| e.eval(context(&env, &mj_derived)))
                    // A bare failed derive evaluates to undefined even in strict mode.
                    .and_then(|v| {
                        if v.is_undefined() {
                            Err(MjError::from(ErrorKind::UndefinedError))
                        } else {
                            Ok(v)
                        }
                    });
                let inexact = trace.inexact_division
                    || ir
                        .symbols()
                        .iter()
                        .any(|s| matches!(s, Symbol::Derived(d) if tainted.contains(d)));
                if let Some(name) = derive_name {
                    if inexact {
                        tainted.insert(name.clone());
                    }
                    if let Ok(value) = &theirs {
                        mj_derived.insert(name.clone(), value.clone());
                    }
                    env.derived.insert(name.clone(), ours.clone());
                }
                let ok = match (&ours, &theirs) {
                    _ if inexact => {
                        skipped += 1;
                        continue;
                    }
                    (Ok(o), Ok(t)) => same(o, t),
                    (Err(e), _) if ours_only(e) => {
                        skipped += 1;
                        continue;
                    }
                    (Err(_), Err(_)) => true,
                    _ => false,
                };
                compared += 1;
                if !ok && failures.len() < 20 {
                    failures.push(format!("{seed}: {path}: `{src}`\n  ours: {ours:?}\n  minijinja: {theirs:?}\n  shapes: {:?}\n  attrs: {:?}", env.shapes, env.attrs));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        compared > 10 * skipped,
        "too few comparisons: {compared} compared, {skipped} skipped"
    );
}
