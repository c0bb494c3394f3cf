//! What minijinja's expressions read: the namespaces of one random environment, laid out as
//! the dialect's template context, and the named values computed so far.
//!
//! The corpus's dialects see the op's `derive` entries and the current variant's constants by
//! bare name, a `derive` entry first (as the interpreter reads a name). The Hub's runtime
//! evaluates a manifest in its own order (HUB-DIALECT.md A.3): the manifest's derives, then
//! per variant its `when` (with the op's tunables), its tunables merged in, its derives, then
//! per pass the pass's derives; a later level shadows an earlier one, every visible derive is
//! also under `derive`, a pass's derives are gone at the next pass, `DISPATCH_FOLD_WIDTH` is
//! defined, and a derive's value comes back as the runtime hands it to JavaScript and in again
//! (a whole Float is an Int).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use kernel_codegen::expr::Value;
use kernel_codegen::expr::builtins::{FEATURES_HUB, FEATURES_V1};
use kernel_codegen::model::Op;
use minijinja::value::{Object, Value as Mj, ValueKind};
use minijinja::{Error as MjError, ErrorKind, State};

use super::env::RandomEnv;
use super::jinja::HELPERS;

/// `device.features`: an object with a `has(name)` method.
#[derive(Debug)]
pub struct Features(pub Vec<String>);

impl Object for Features {
    fn call_method(
        self: &Arc<Self>,
        _: &mut State<'_, '_>,
        method: &str,
        args: &[Mj],
    ) -> Result<Mj, MjError> {
        match (method, args) {
            ("has", [name]) => Ok(Mj::from(
                name.as_str().is_some_and(|n| self.0.iter().any(|f| f == n)),
            )),
            _ => Err(MjError::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// The Hub runtime's one named constant.
const DISPATCH_FOLD_WIDTH: i64 = 65535;

/// Where a named value is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// A `derive` entry of the op.
    Manifest,
    /// A constant (derive) of a variant.
    Variant,
    /// A derive of a pass (the Hub's).
    Pass,
}

/// The context of one environment: the namespaces, then the named values minijinja computed
/// (in order; one that failed stays undefined).
#[derive(Debug)]
pub struct Context {
    hub: bool,
    base: BTreeMap<&'static str, Mj>,
    scope: Mutex<Scope>,
}

/// What changes as the evaluation moves through the manifest.
#[derive(Debug, Default)]
struct Scope {
    tunables: Mj,
    manifest: BTreeMap<String, Mj>,
    variant: BTreeMap<String, Mj>,
    pass: BTreeMap<String, Mj>,
}

impl Object for Context {
    fn get_value(self: &Arc<Self>, key: &Mj) -> Option<Mj> {
        let key = key.as_str()?;
        let scope = self.scope.lock().unwrap_or_else(PoisonError::into_inner);
        match key {
            "tunables" => return Some(scope.tunables.clone()),
            "derive" if self.hub => {
                let mut all = scope.manifest.clone();
                all.extend(scope.variant.clone());
                all.extend(scope.pass.clone());
                return Some(Mj::from(all));
            }
            "DISPATCH_FOLD_WIDTH" if self.hub => return Some(Mj::from(DISPATCH_FOLD_WIDTH)),
            _ => {}
        }
        if let Some(v) = self.base.get(key) {
            return Some(v.clone());
        }
        // A named value does not hide a helper of the same name (RMSNorm's constant `dim`):
        // expressions call the helper.
        if HELPERS.contains(&key) {
            return None;
        }
        let levels = if self.hub {
            [&scope.pass, &scope.variant, &scope.manifest]
        } else {
            // GatedRelativePositionBias has both a `derive` and constants `headParallel`.
            [&scope.manifest, &scope.variant, &scope.pass]
        };
        levels.into_iter().find_map(|l| l.get(key)).cloned()
    }
}

impl Context {
    /// Adds a named value at `level`; the Hub's as its runtime converts it back from Jinja.
    pub fn define(&self, level: Level, name: &str, value: Mj) {
        let value = if self.hub { js_number(value) } else { value };
        let mut scope = self.scope.lock().unwrap_or_else(PoisonError::into_inner);
        let values = match level {
            Level::Manifest => &mut scope.manifest,
            Level::Variant => &mut scope.variant,
            Level::Pass => &mut scope.pass,
        };
        values.insert(name.to_owned(), value);
    }

    /// Starts a variant: the previous one's values are gone, and its `when` sees the op's
    /// tunables.
    pub fn enter_variant(&self, op: &Op) {
        let mut scope = self.scope.lock().unwrap_or_else(PoisonError::into_inner);
        scope.variant.clear();
        scope.pass.clear();
        scope.tunables = tunables(&op.tunables, &[]);
    }

    /// Merges a variant's tunables in, after its `when`, before its derives.
    pub fn merge_tunables(&self, op: &Op, own: &[(String, Value)]) {
        let mut scope = self.scope.lock().unwrap_or_else(PoisonError::into_inner);
        scope.tunables = tunables(&op.tunables, own);
    }

    /// Starts a pass: the previous pass's derives are not this one's.
    pub fn enter_pass(&self) {
        let mut scope = self.scope.lock().unwrap_or_else(PoisonError::into_inner);
        scope.pass.clear();
    }
}

/// The `tunables` object: the op's, with `own` (a variant's) over them.
fn tunables(op: &[(String, Value)], own: &[(String, Value)]) -> Mj {
    map(op
        .iter()
        .chain(own)
        .map(|(name, v)| (name.clone(), to_mj(v))))
}

/// A value as the Hub's runtime hands it back to JavaScript and in again: a whole Float is an
/// Int.
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

/// A minijinja map of `pairs` (a later pair of a key wins).
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

/// The template context of `env` for `op`, before any named value: `args` (and `attrs`) with
/// the given scalars, `shapes`, `ranks`, `tensorDtypes` and `present` under every name a
/// tensor goes by, `dtypes`, `tunables` (the op's) and `device` (the dialect's features, every
/// limit, the adapter's subgroup sizes as reported). `hub`: laid out as the Hub's runtime lays
/// it out (see the module docs).
pub fn context(op: &Op, env: &RandomEnv, hub: bool) -> Arc<Context> {
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
        .map(|(n, i)| (n.clone(), Mj::from(env.given[*i])))
        .chain(
            op.attributes
                .iter()
                .map(|a| (a.name.clone(), Mj::from(env.args.contains_key(&a.name)))),
        ));
    let dtypes = map(env
        .dtypes
        .iter()
        .map(|(k, d)| (k.clone(), Mj::from(d.wgsl_name()))));
    let limits = map(kernel_abi::device::LIMITS
        .iter()
        .chain(kernel_abi::device::SUBGROUP_SIZES)
        .filter_map(|(name, _)| {
            Some((
                *name,
                Mj::from(kernel_runtime::support::limit(env.caps.limit(name)?)),
            ))
        }));
    let features = if hub { FEATURES_HUB } else { FEATURES_V1 };
    let mut features: Vec<String> = (features.iter().copied())
        .filter(|f| env.has_feature(f))
        .map(str::to_owned)
        .collect();
    // The subgroup-matrix configurations a variant may require, as the runtime names them.
    if env.caps.subgroup_matrix {
        features.extend(
            env.caps
                .subgroup_matrix_configs
                .iter()
                .map(|c| c.feature_name()),
        );
    }
    let mut adapter = BTreeMap::new();
    if env.caps.subgroup_min_size != 0 {
        adapter.insert("subgroupMinSize", Mj::from(env.caps.subgroup_min_size));
    }
    if env.caps.subgroup_max_size != 0 {
        adapter.insert("subgroupMaxSize", Mj::from(env.caps.subgroup_max_size));
    }
    let device = map([
        ("limits", limits),
        ("features", Mj::from_object(Features(features))),
        ("adapterInfo", map(adapter)),
    ]);
    Arc::new(Context {
        hub,
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
        scope: Mutex::new(Scope {
            tunables: tunables(&op.tunables, &[]),
            ..Scope::default()
        }),
    })
}
