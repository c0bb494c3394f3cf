//! Enumerates the static combinations of a pass: every assignment of the finite-domain names
//! its shader text depends on, evaluated into the values the template sees.

use std::collections::{BTreeMap, BTreeSet};

use super::{AttrRepr, Class, DType, ElementType, Op, Pass, TemplateValue, Variant};
use crate::expr::ast::BinOp;
use crate::expr::{self, EvalError, Ir, IrKind, Symbol, Value};

/// A finite-domain name a shader can depend on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StaticVar {
    Dtype(String),
    Attr(String),
    Feature(String),
    /// A template value enumerated over values of its own: a boolean that depends on shapes
    /// or limits (both values are rendered), or a value [`super::domains::pin`] gave a domain.
    Value(String),
}

/// How an assignment holds the dtype of a type variable: by ONNX name. `dtypes.T` reads the
/// WGSL scalar, which `int8` shares with `int32` (and `uint8` with `uint32`), yet the two may
/// render different shaders (`tensorDtypes.y` tells them apart), so the assignment keeps the
/// logical dtype and [`StaticEnv`] answers each name with its spelling.
pub(super) fn dtype_value(dtype: DType) -> Value {
    Value::Str(dtype.onnx_name().to_owned())
}

/// The dtype an assignment holds for a type variable (`dtype_value`).
pub(super) fn assigned_dtype(value: &Value) -> Option<DType> {
    match value {
        Value::Str(name) => DType::from_onnx_name(name),
        _ => None,
    }
}

/// One pre-rendered shader's inputs: the assignment and the values it gives.
#[derive(Debug, Clone)]
pub struct Combination {
    /// Type variable → dtype, for element types of bindings.
    pub dtypes: BTreeMap<String, DType>,
    /// Features the shader may use (required by the variant, or assumed present).
    pub features: BTreeSet<String>,
    /// Static constants and template inputs, by name, in declaration order.
    pub values: Vec<(String, Value)>,
}

/// [`Combination::values`] as a map key.
pub type ValuesKey = Vec<(String, expr::ValueKey)>;

impl Combination {
    /// The static values as a map key: combinations with equal keys render one text where
    /// their dtypes agree too.
    pub fn values_key(values: &[(String, Value)]) -> ValuesKey {
        values
            .iter()
            .map(|(name, value)| (name.clone(), value.key()))
            .collect()
    }
}

/// A value as file names and messages spell it: booleans as 0 or 1, lists joined by `_`.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Str(s) | Value::Dtype(s) => s.clone(),
        Value::List(items) => items
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join("_"),
    }
}

impl Combination {
    /// `interleaved = 1, scalar = f32` for messages.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = (self.values.iter())
            .map(|(k, v)| format!("{k} = {}", value_text(v)))
            .collect();
        parts.extend(self.features.iter().map(|f| format!("feature {f}")));
        parts.join(", ")
    }

    /// The value of `name`: a pass's value shadows its variant's of the same name, which
    /// `values` lists first.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// The dtype a binding element type resolves to under this combination.
    pub fn element(&self, element: &ElementType) -> Option<(DType, u8)> {
        match element {
            ElementType::Fixed(dtype, lanes) => Some((*dtype, *lanes)),
            ElementType::Var(var) => self.dtypes.get(var).map(|d| (*d, 1)),
            ElementType::Constant(name) => match self.value(name) {
                Some(Value::Dtype(d) | Value::Str(d)) => super::parse_element(d),
                _ => None,
            },
        }
    }
}

/// The static values a pass's shader depends on: variant constants, then pass inputs.
pub fn static_values<'a>(
    variant: &'a Variant,
    pass: &'a Pass,
) -> impl Iterator<Item = &'a TemplateValue> {
    values_of_class(variant, pass, Class::Static)
}

/// Dynamic values of a pass: the pipeline overrides its shaders declare.
pub fn dynamic_values<'a>(
    variant: &'a Variant,
    pass: &'a Pass,
) -> impl Iterator<Item = &'a TemplateValue> {
    values_of_class(variant, pass, Class::Dynamic)
}

fn values_of_class<'a>(
    variant: &'a Variant,
    pass: &'a Pass,
    class: Class,
) -> impl Iterator<Item = &'a TemplateValue> {
    variant
        .constants
        .iter()
        .chain(&pass.inputs)
        .filter(move |v| v.class == class)
}

/// The values the branches of `ir` take under `env`, whatever its conditions: `None` where a
/// branch cannot be evaluated with static names alone.
fn branch_values(ir: &Ir, env: &StaticEnv<'_>) -> Option<Vec<Value>> {
    match &ir.kind {
        IrKind::Cond(_, then, otherwise) => {
            let mut values = branch_values(then, env)?;
            values.extend(branch_values(otherwise, env)?);
            Some(values)
        }
        _ => expr::eval(ir, env).ok().map(|v| vec![v]),
    }
}

/// A static template value that fails to evaluate for some combination.
#[derive(Debug, Clone)]
pub struct StaticValueError {
    /// The value's name and JSON path (in the manifest, or where hints added it).
    pub name: String,
    pub path: String,
    pub source: String,
    pub error: EvalError,
}

/// Every distinct combination of a pass, in a deterministic order.
pub fn enumerate_combinations(
    op: &Op,
    variant: &Variant,
    pass: &Pass,
) -> Result<Vec<Combination>, StaticValueError> {
    let mut vars = BTreeSet::new();
    for value in static_values(variant, pass) {
        let symbols = value.expr.ir.symbols();
        if value.domain.is_none() && is_bounded(op, &variant.bounds, &symbols) {
            collect_vars(op, &value.expr.ir, &mut vars);
        } else {
            vars.insert(StaticVar::Value(value.name.clone()));
        }
    }
    for binding in &pass.bindings {
        if let Some(ElementType::Var(var)) = &binding.element {
            vars.insert(StaticVar::Dtype(var.clone()));
        }
    }
    // The Hub runtime hands every template each type variable (`dtypes.T`), whether or not
    // the pass binds a tensor of it.
    if op.templates.derives_visible {
        vars.extend(
            op.type_vars
                .iter()
                .map(|t| StaticVar::Dtype(t.name.clone())),
        );
    }
    for feature in &variant.required_features {
        vars.remove(&StaticVar::Feature(feature.clone()));
    }
    let vars: Vec<StaticVar> = vars.into_iter().collect();
    let domains: Vec<Vec<Value>> = vars
        .iter()
        .map(|var| {
            value_domain(variant, pass, var).unwrap_or_else(|| domain(op, &variant.bounds, var))
        })
        .collect();

    let mut combinations: Vec<Combination> = Vec::new();
    let mut seen: BTreeMap<(ValuesKey, BTreeMap<String, DType>), usize> = BTreeMap::new();
    let total: usize = domains.iter().map(Vec::len).product();
    for index in 0..total {
        let assignment = assignment(&vars, &domains, index);
        let env = StaticEnv {
            op,
            assignment: &assignment,
            required: &variant.required_features,
        };
        // A value enumerated over its own set (a conditional between strings built from a
        // dtype) takes only the values its branches give under this assignment.
        let impossible = static_values(variant, pass).any(|value| {
            let assumed = assignment.get(&StaticVar::Value(value.name.clone()));
            let reachable = value
                .domain
                .as_ref()
                .and(branch_values(&value.expr.ir, &env));
            matches!((assumed, reachable), (Some(v), Some(set)) if !set.contains(v))
        });
        if impossible {
            continue;
        }
        let mut values = Vec::new();
        for value in static_values(variant, pass) {
            let evaluated = match assignment.get(&StaticVar::Value(value.name.clone())) {
                Some(assumed) => assumed.clone(),
                None => expr::eval(&value.expr.ir, &env).map_err(|error| StaticValueError {
                    name: value.name.clone(),
                    path: value.expr.path.clone(),
                    source: value.expr.source.clone(),
                    error,
                })?,
            };
            values.push((value.name.clone(), evaluated));
        }
        let dtypes: BTreeMap<String, DType> = assignment
            .iter()
            .filter_map(|(var, value)| match (var, value) {
                (StaticVar::Dtype(name), value) => assigned_dtype(value).map(|d| (name.clone(), d)),
                _ => None,
            })
            .collect();
        let mut features: BTreeSet<String> = variant.required_features.iter().cloned().collect();
        for (var, value) in &assignment {
            match (var, value) {
                (StaticVar::Feature(name), Value::Bool(true)) => {
                    features.insert(name.clone());
                }
                // A condition assumed true (it also reads run-time values) may be what lets
                // the shader use the features it tests, e.g. `device.features.has("subgroups")
                // and device.adapterInfo.subgroupMinSize >= 32`.
                (StaticVar::Value(name), Value::Bool(true)) => {
                    if let Some(v) = static_values(variant, pass).find(|v| &v.name == name) {
                        features.extend(v.expr.ir.features());
                    }
                }
                _ => {}
            }
        }
        // Assignments that differ only in features the values do not depend on render the
        // same shader: one combination, which needs only the features all of them have.
        let key = (Combination::values_key(&values), dtypes.clone());
        match seen.get(&key) {
            Some(&index) => {
                let existing: &mut Combination = &mut combinations[index];
                existing.features.retain(|f| features.contains(f));
            }
            None => {
                seen.insert(key, combinations.len());
                combinations.push(Combination {
                    dtypes,
                    features,
                    values,
                });
            }
        }
    }
    Ok(combinations)
}

/// The values a template value enumerated over its own values takes: its pinned domain, or
/// both booleans.
fn value_domain(variant: &Variant, pass: &Pass, var: &StaticVar) -> Option<Vec<Value>> {
    let StaticVar::Value(name) = var else {
        return None;
    };
    let value = static_values(variant, pass).find(|v| &v.name == name)?;
    // A boolean the variant's `when` settles has that one value.
    let both = || match implied_by_when(variant, &value.expr.ir) {
        Some(known) => vec![Value::Bool(known)],
        None => vec![Value::Bool(false), Value::Bool(true)],
    };
    Some(value.domain.clone().unwrap_or_else(both))
}

/// The values one enumerated name takes: a type variable's dtypes, an attribute's allowed
/// values (each narrowed to what `bounds`, a variant's `when`, allows), both booleans for a
/// feature.
pub(super) fn domain(op: &Op, bounds: &Bounds, var: &StaticVar) -> Vec<Value> {
    let bounded = |name: &str| {
        bounds
            .get(&StaticVar::Attr(name.to_owned()))
            .cloned()
            .unwrap_or_default()
    };
    match var {
        StaticVar::Dtype(name) => op
            .type_var(name)
            .map(|t| {
                t.allowed
                    .iter()
                    .map(|d| dtype_value(*d))
                    .filter(|d| bounds.get(var).is_none_or(|allowed| allowed.contains(d)))
                    .collect()
            })
            .unwrap_or_default(),
        StaticVar::Attr(name) => match op.attribute(name) {
            Some(a) => match (&a.allowed, a.repr) {
                (Some(values), _) => values.iter().map(|v| Value::Int(*v)).collect(),
                (None, AttrRepr::Bool) => vec![Value::Int(0), Value::Int(1)],
                (None, AttrRepr::Truth) => vec![Value::Bool(false), Value::Bool(true)],
                // A string's `oneOf`, narrowed by `when`; without one, what `when` allows.
                (None, AttrRepr::Str) => match &a.one_of {
                    Some(values) => values
                        .iter()
                        .map(|v| Value::Str(v.clone()))
                        .filter(|v| bounds.get(var).is_none_or(|allowed| allowed.contains(v)))
                        .collect(),
                    None => bounded(name),
                },
                _ => bounded(name),
            },
            None => bounded(name),
        },
        StaticVar::Feature(_) | StaticVar::Value(_) => {
            vec![Value::Bool(false), Value::Bool(true)]
        }
    }
}

pub(super) fn collect_vars(op: &Op, ir: &Ir, vars: &mut BTreeSet<StaticVar>) {
    for feature in ir.features() {
        vars.insert(StaticVar::Feature(feature));
    }
    for symbol in ir.symbols() {
        match symbol {
            Symbol::Dtype(name) => {
                vars.insert(StaticVar::Dtype(name));
            }
            Symbol::Attr(name) | Symbol::Arg(name) => {
                vars.insert(StaticVar::Attr(name));
            }
            // A tensor's dtype string follows its type variable.
            Symbol::TensorDtype(name) => {
                if let Some(super::DTypeRef::Var(var)) = op.tensor(&name).map(|t| &t.dtype) {
                    vars.insert(StaticVar::Dtype(var.clone()));
                }
            }
            Symbol::Derived(name) => {
                if let Some(derived) = op.derived(&name) {
                    collect_vars(op, &derived.expr.ir, vars);
                }
            }
            Symbol::Tunable(_)
            | Symbol::Shape(_)
            | Symbol::Rank(_)
            | Symbol::Limit(_)
            | Symbol::Present(_)
            | Symbol::AdapterInfo(_) => {}
        }
    }
}

/// Every distinct value `ir` takes over the domains of the names it reads (all finite under
/// `bounds`); `None` when none can be evaluated at build time.
pub(super) fn evaluate_over_roots(
    op: &Op,
    required: &[String],
    bounds: &Bounds,
    ir: &Ir,
) -> Option<Vec<Value>> {
    let mut vars = BTreeSet::new();
    collect_vars(op, ir, &mut vars);
    let vars: Vec<StaticVar> = vars.into_iter().collect();
    let domains: Vec<Vec<Value>> = vars.iter().map(|var| domain(op, bounds, var)).collect();
    let total: usize = domains.iter().map(Vec::len).product();
    let mut values = Vec::new();
    for index in 0..total {
        let assignment = assignment(&vars, &domains, index);
        let env = StaticEnv {
            op,
            assignment: &assignment,
            required,
        };
        // An assignment the expression rejects (a division by zero, say) is one the variant
        // never runs with.
        if let Ok(value) = expr::eval(ir, &env)
            && !values.contains(&value)
        {
            values.push(value);
        }
    }
    (!values.is_empty()).then_some(values)
}

/// The `index`th assignment of `vars` over their `domains` (mixed radix, first var fastest).
fn assignment(
    vars: &[StaticVar],
    domains: &[Vec<Value>],
    mut index: usize,
) -> BTreeMap<StaticVar, Value> {
    let mut assignment = BTreeMap::new();
    for (var, domain) in vars.iter().zip(domains) {
        assignment.insert(var.clone(), domain[index % domain.len()].clone());
        index /= domain.len();
    }
    assignment
}

/// Evaluates static expressions under one assignment.
struct StaticEnv<'a> {
    op: &'a Op,
    assignment: &'a BTreeMap<StaticVar, Value>,
    required: &'a [String],
}

impl expr::Env for StaticEnv<'_> {
    fn get(&self, symbol: &Symbol) -> Result<Option<Value>, EvalError> {
        Ok(match symbol {
            Symbol::Dtype(name) => self
                .assignment
                .get(&StaticVar::Dtype(name.clone()))
                .and_then(assigned_dtype)
                .map(|d| Value::Dtype(d.wgsl_name().to_owned())),
            Symbol::Attr(name) | Symbol::Arg(name) => {
                self.assignment.get(&StaticVar::Attr(name.clone())).cloned()
            }
            Symbol::TensorDtype(name) => {
                let tensor = self.op.tensor(name);
                let dtype = match tensor.map(|t| &t.dtype) {
                    Some(super::DTypeRef::Fixed(d)) => Some(*d),
                    Some(super::DTypeRef::Var(var)) => self
                        .assignment
                        .get(&StaticVar::Dtype(var.clone()))
                        .and_then(assigned_dtype),
                    None => None,
                };
                dtype.map(|d| Value::Str(d.onnx_name().to_owned()))
            }
            Symbol::Tunable(name) => self.op.tunable(name),
            Symbol::Derived(name) => match self.op.derived(name) {
                Some(derived) => Some(expr::eval(&derived.expr.ir, self)?),
                None => None,
            },
            Symbol::Shape(_)
            | Symbol::Rank(_)
            | Symbol::Limit(_)
            | Symbol::Present(_)
            | Symbol::AdapterInfo(_) => {
                return Err(EvalError {
                    message: format!("{symbol:?} is not known at build time"),
                });
            }
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.required.iter().any(|f| f == name)
            || matches!(
                self.assignment.get(&StaticVar::Feature(name.to_owned())),
                Some(Value::Bool(true))
            )
    }
}

/// Argument (`StaticVar::Attr`) or type variable (`StaticVar::Dtype`, its dtypes as
/// `dtype_value` writes them) → the values it may take.
pub type Bounds = BTreeMap<StaticVar, Vec<Value>>;

/// Static means every name involved has a finite domain known at build time.
pub fn is_static(op: &Op, symbols: &BTreeSet<Symbol>) -> bool {
    symbols.iter().all(|symbol| match symbol {
        Symbol::Dtype(_) | Symbol::Tunable(_) => true,
        Symbol::Attr(name) | Symbol::Arg(name) => op.attribute(name).is_some_and(|a| {
            a.allowed.is_some()
                || a.one_of.is_some()
                || matches!(a.repr, AttrRepr::Bool | AttrRepr::Truth)
        }),
        // Follows the tensor's dtype, which is enumerated.
        Symbol::TensorDtype(_) => true,
        Symbol::Derived(name) => op
            .derived(name)
            .is_some_and(|d| is_static(op, &d.expr.ir.symbols())),
        Symbol::Shape(_)
        | Symbol::Rank(_)
        | Symbol::Limit(_)
        | Symbol::Present(_)
        | Symbol::AdapterInfo(_) => false,
    })
}

/// Whether every name `symbols` reads has a finite domain: enumerated at build time already,
/// or in `bounds` (a variant's, from its `when`).
pub fn is_bounded(op: &Op, bounds: &Bounds, symbols: &BTreeSet<Symbol>) -> bool {
    symbols.iter().all(|symbol| match symbol {
        Symbol::Attr(name) | Symbol::Arg(name)
            if bounds.contains_key(&StaticVar::Attr(name.clone())) =>
        {
            true
        }
        Symbol::Derived(name) => op
            .derived(name)
            .is_some_and(|d| is_bounded(op, bounds, &d.expr.ir.symbols())),
        other => is_static(op, &BTreeSet::from([other.clone()])),
    })
}

/// What a variant's `when` says of the boolean `ir` where one of its top-level conjuncts is
/// `ir` (true) or `not ir` (false): `present.biasT` in `when` makes a constant of it true.
fn implied_by_when(variant: &Variant, ir: &Ir) -> Option<bool> {
    let plain = |x: &Ir| x.clone().respanned(expr::Span::default());
    let wanted = plain(ir);
    let mut conjuncts = Vec::new();
    for clause in &variant.when {
        flatten(&clause.ir, BinOp::And, &mut conjuncts);
    }
    conjuncts.into_iter().find_map(|conjunct| {
        let conjunct = plain(conjunct);
        if conjunct == wanted {
            return Some(true);
        }
        match &conjunct.kind {
            IrKind::Unary(expr::ast::UnaryOp::Not, x) if **x == wanted => Some(false),
            _ => None,
        }
    })
}

/// The operands of a chain of `op` (`a and b and c`).
pub(super) fn flatten<'a>(ir: &'a Ir, op: BinOp, out: &mut Vec<&'a Ir>) {
    match &ir.kind {
        IrKind::Binary(o, a, b) if *o == op => {
            flatten(a, op, out);
            flatten(b, op, out);
        }
        _ => out.push(ir),
    }
}
