//! Finite domains of run-time values. A value the shader text depends on (a template branch, a
//! loop bound, a function-scope array length) cannot be a pipeline override; it can still be
//! enumerated when it takes finitely many values: an argument a variant's `when` bounds
//! (`args.bits == 2 or args.bits == 4`, or `args.m > 0 and args.m <= 4`), an expression of
//! such arguments, a conditional whose branches have finite domains given what the condition
//! says (`2 if args.m > 2 else args.m`, with `args.m > 0` in `when`), a power of two with a
//! cap (`min(256, pow2ceil(args.dim / 4))`, whatever `args.dim`), or a set the package's hints
//! declare. [`pin`] decides which; the value is then static, one shader per value.

use std::collections::{BTreeMap, BTreeSet};

use super::statics::{self, Bounds, StaticVar, flatten, is_bounded};
use super::{Class, Expr, Op, TemplateValue, Variant};
use crate::expr::ast::BinOp;
use crate::expr::builtins::Builtin;
use crate::expr::{Ir, IrKind, Symbol, Type, Value};

/// The most shaders one pinned value may add to a pass (its values, or the product of its
/// roots' values).
pub const MAX_DOMAIN: usize = 64;

/// The most assignments of its names an expression is evaluated over to find its values
/// (`ceil(args.dim / 256)` with `args.dim <= 8192` takes 32 values over 8192 assignments).
const MAX_EVALUATIONS: usize = 1 << 16;

/// What a variant's `when` allows arguments and type variables, read from the clauses'
/// top-level conjuncts: `args.x == 2`, `(args.x == 2 or args.x == 4)`, `args.x in [2, 4]`,
/// `args.x > 0 and args.x <= 4`, `dtypes.T == "f32"`, `tensorDtypes.xT == "float16"`. A name
/// bounded twice gets the values both allow.
pub fn when_bounds(op: &Op, when: &[Expr]) -> Bounds {
    let mut bounds = Bounds::new();
    let mut conjuncts = Vec::new();
    for clause in when {
        conjuncts_through_derives(op, &clause.ir, &mut conjuncts);
    }
    for conjunct in conjuncts {
        let Some((name, values)) = alternatives(op, conjunct) else {
            continue;
        };
        match bounds.get_mut(&name) {
            Some(existing) => existing.retain(|v| values.contains(v)),
            None => {
                bounds.insert(name, values);
            }
        }
    }
    let mut ranges = Ranges::new();
    for clause in when {
        refine(op, &mut ranges, &clause.ir, true);
    }
    add_finite(&mut bounds, &ranges, MAX_DOMAIN);
    bounds
}

/// The operands of a chain of `and`, and of the boolean `derive` entries it names (a `when`
/// reads the op's entries only: `subgroupFloatTypeOk` bounds `dtypes.T` as if written out).
fn conjuncts_through_derives<'a>(op: &'a Op, ir: &'a Ir, out: &mut Vec<&'a Ir>) {
    let mut chain = Vec::new();
    flatten(ir, BinOp::And, &mut chain);
    for conjunct in chain {
        match &conjunct.kind {
            IrKind::Sym(Symbol::Derived(name)) => match op.derived(name) {
                Some(derived) if derived.expr.ir.ty == Type::Bool => {
                    conjuncts_through_derives(op, &derived.expr.ir, out);
                }
                _ => out.push(conjunct),
            },
            _ => out.push(conjunct),
        }
    }
}

/// Inclusive integer ranges of arguments; `None` is open.
type Ranges = BTreeMap<String, (Option<i64>, Option<i64>)>;

/// Narrows `ranges` by what `cond` being `truth` says about integer arguments compared with
/// literals (`args.m > 2`, `4 >= args.m`), through `and`, `or` (when false) and `not`.
fn refine(op: &Op, ranges: &mut Ranges, cond: &Ir, truth: bool) {
    match &cond.kind {
        IrKind::Binary(BinOp::And, a, b) if truth => {
            refine(op, ranges, a, true);
            refine(op, ranges, b, true);
        }
        IrKind::Binary(BinOp::Or, a, b) if !truth => {
            refine(op, ranges, a, false);
            refine(op, ranges, b, false);
        }
        IrKind::Unary(crate::expr::ast::UnaryOp::Not, x) => refine(op, ranges, x, !truth),
        IrKind::Binary(cmp, a, b) | IrKind::LooseCompare(cmp, a, b) => {
            let (name, k, cmp) = match (argument(a), integer(b), argument(b), integer(a)) {
                (Some(name), Some(k), _, _) => (name, k, *cmp),
                (_, _, Some(name), Some(k)) => (name, k, mirrored(*cmp)),
                _ => return,
            };
            let Some(attribute) = op.attribute(&name) else {
                return;
            };
            if attribute.ty != Type::Int {
                return;
            }
            let cmp = if truth { cmp } else { negated(cmp) };
            let floor = (attribute.int_width == super::IntWidth::U32).then_some(0);
            let range = ranges.entry(name).or_insert((floor, None));
            let (lo, hi) = match cmp {
                BinOp::Eq => (Some(k), Some(k)),
                BinOp::Gt => (k.checked_add(1), None),
                BinOp::Ge => (Some(k), None),
                BinOp::Lt => (None, k.checked_sub(1)),
                BinOp::Le => (None, Some(k)),
                _ => (None, None),
            };
            range.0 = range.0.max(lo);
            range.1 = match (range.1, hi) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        _ => {}
    }
}

/// `k < x` is `x > k`.
fn mirrored(cmp: BinOp) -> BinOp {
    match cmp {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

/// `not (x > k)` is `x <= k`; `!=` says too little to narrow.
fn negated(cmp: BinOp) -> BinOp {
    match cmp {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        _ => BinOp::Ne,
    }
}

fn integer(ir: &Ir) -> Option<i64> {
    match literal(ir)? {
        Value::Int(k) => Some(k),
        _ => None,
    }
}

/// Adds the arguments whose range is closed and holds at most `limit` values to `bounds`
/// (narrowing those there).
fn add_finite(bounds: &mut Bounds, ranges: &Ranges, limit: usize) {
    for (name, range) in ranges {
        let (Some(lo), Some(hi)) = *range else {
            continue;
        };
        let values: Vec<Value> = if hi < lo {
            Vec::new()
        } else if hi.saturating_sub(lo) < limit as i64 {
            (lo..=hi).map(Value::Int).collect()
        } else {
            continue;
        };
        match bounds.get_mut(&StaticVar::Attr(name.clone())) {
            Some(existing) => existing.retain(|v| values.contains(v)),
            None => {
                bounds.insert(StaticVar::Attr(name.clone()), values);
            }
        }
    }
}

/// The ranges a variant's `when` gives, for refining inside conditionals.
fn when_ranges(op: &Op, variant: &Variant) -> Ranges {
    let mut ranges = Ranges::new();
    for clause in &variant.when {
        refine(op, &mut ranges, &clause.ir, true);
    }
    ranges
}

/// The features a variant's `when` requires outright: `device.features.has("x")` as a clause
/// or a top-level conjunct of one.
pub fn required_features(when: &[Expr]) -> Vec<String> {
    let mut conjuncts = Vec::new();
    for clause in when {
        flatten(&clause.ir, BinOp::And, &mut conjuncts);
    }
    let mut features = Vec::new();
    for conjunct in conjuncts {
        if let IrKind::Feature(name) = &conjunct.kind
            && !features.contains(name)
        {
            features.push(name.clone());
        }
    }
    features
}

/// `x == K`, `x == K1 or x == K2 …` or `x in [K1, K2]` for an argument or a dtype: the name
/// and its values.
fn alternatives(op: &Op, ir: &Ir) -> Option<(StaticVar, Vec<Value>)> {
    if let IrKind::Binary(BinOp::In, item, list) = &ir.kind
        && let (Some(name), IrKind::List(items)) = (argument(item), &list.kind)
    {
        let values = items.iter().map(literal).collect::<Option<Vec<_>>>()?;
        return Some((StaticVar::Attr(name), values));
    }
    let mut operands = Vec::new();
    flatten(ir, BinOp::Or, &mut operands);
    let mut name = None;
    let mut values = Vec::new();
    for operand in operands {
        let (IrKind::Binary(BinOp::Eq, a, b) | IrKind::LooseCompare(BinOp::Eq, a, b)) =
            &operand.kind
        else {
            return None;
        };
        let (arg, alternatives) = match (compared(op, a), compared(op, b)) {
            (Some((var, spelling)), None) => (var.clone(), var_values(spelling, literal(b)?)?),
            (None, Some((var, spelling))) => (var.clone(), var_values(spelling, literal(a)?)?),
            _ => return None,
        };
        if name.get_or_insert_with(|| arg.clone()) != &arg {
            return None;
        }
        for value in alternatives {
            if !values.contains(&value) {
                values.push(value);
            }
        }
    }
    name.map(|name| (name, values))
}

/// How the values of a compared name are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spelling {
    /// An argument: as the literal.
    Literal,
    /// `dtypes.T`: a WGSL scalar, which several dtypes may share (`i32`: int32 and int8).
    Wgsl,
    /// `tensorDtypes.x`: an ONNX name, one dtype's.
    Onnx,
}

/// The argument or type variable an operand of a comparison reads, and how it spells values.
fn compared(op: &Op, ir: &Ir) -> Option<(StaticVar, Spelling)> {
    if let Some(name) = argument(ir) {
        return Some((StaticVar::Attr(name), Spelling::Literal));
    }
    match &ir.kind {
        IrKind::Sym(Symbol::Dtype(var)) => Some((StaticVar::Dtype(var.clone()), Spelling::Wgsl)),
        IrKind::Sym(Symbol::TensorDtype(name)) => match op.tensor(name).map(|t| &t.dtype) {
            Some(super::DTypeRef::Var(var)) => {
                Some((StaticVar::Dtype(var.clone()), Spelling::Onnx))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The values a literal compared with a name stands for, as the name's values are held
/// (dtypes as `statics::dtype_value` writes them: every dtype the spelling names). `None`
/// for a literal that names no dtype, which bounds nothing.
fn var_values(spelling: Spelling, literal: Value) -> Option<Vec<Value>> {
    let spelled = |name: &str, d: super::DType| match spelling {
        Spelling::Wgsl => d.wgsl_name() == name,
        _ => d.onnx_name() == name,
    };
    match (spelling, literal) {
        (Spelling::Literal, literal) => Some(vec![literal]),
        (_, Value::Str(name)) => {
            let dtypes: Vec<Value> = super::DType::ALL
                .into_iter()
                .filter(|d| spelled(&name, *d))
                .map(statics::dtype_value)
                .collect();
            (!dtypes.is_empty()).then_some(dtypes)
        }
        _ => None,
    }
}

/// The argument an operand reads, through the checker's conversions.
fn argument(ir: &Ir) -> Option<String> {
    match &ir.kind {
        IrKind::Sym(Symbol::Arg(name) | Symbol::Attr(name)) => Some(name.clone()),
        IrKind::ToFloat(x) | IrKind::ToInt(x) => argument(x),
        _ => None,
    }
}

fn literal(ir: &Ir) -> Option<Value> {
    match &ir.kind {
        IrKind::Int(i) => Some(Value::Int(*i)),
        // `args.x == 2` may compare as floats; the argument itself is whole.
        IrKind::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(Value::Int(*f as i64)),
        IrKind::Float(f) => Some(Value::Float(*f)),
        IrKind::Bool(b) => Some(Value::Bool(*b)),
        IrKind::Str(s) => Some(Value::Str(s.clone())),
        IrKind::ToFloat(x) | IrKind::ToInt(x) => literal(x),
        // An expression of literals alone (`2 ** 3`) is the literal it computes.
        _ if ir.symbols().is_empty() => {
            let value = crate::expr::eval(ir, &NoNames).ok()?;
            let kind = match value {
                Value::Int(i) => IrKind::Int(i),
                Value::Float(f) => IrKind::Float(f),
                _ => return None,
            };
            literal(&Ir { kind, ..ir.clone() })
        }
        _ => None,
    }
}

/// The names of an expression of literals: none.
struct NoNames;

impl crate::expr::Env for NoNames {
    fn get(&self, _: &Symbol) -> Result<Option<Value>, crate::expr::EvalError> {
        Ok(None)
    }

    fn has_feature(&self, _: &str) -> bool {
        false
    }
}

/// How a pinned value is enumerated.
#[derive(Debug, Clone, PartialEq)]
pub enum Pin {
    /// Through the finite-domain names it reads, like any static value.
    Roots,
    /// Over these values of its own (a conditional's branches, or a declared set); the
    /// generated code computes the value per call and picks the shader rendered for it.
    Values(Vec<Value>),
}

/// Why a value cannot be enumerated: the names it reads that have no finite domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Unbounded {
    pub names: Vec<String>,
    /// Set when the domain exists but is larger than [`MAX_DOMAIN`].
    pub too_many: Option<usize>,
}

/// How `value` of `variant` can be enumerated; `declared` is the set the hints give.
pub fn pin(
    op: &Op,
    variant: &Variant,
    value: &TemplateValue,
    declared: Option<&[Value]>,
) -> Result<Pin, Unbounded> {
    if let Some(values) = declared {
        return Ok(Pin::Values(values.to_vec()));
    }
    let ir = &value.expr.ir;
    if is_bounded(op, &variant.bounds, &ir.symbols()) {
        let count = root_count(op, &variant.bounds, ir);
        return if count <= MAX_DOMAIN {
            Ok(Pin::Roots)
        } else {
            Err(Unbounded {
                names: Vec::new(),
                too_many: Some(count),
            })
        };
    }
    match value_set(op, variant, &when_ranges(op, variant), ir, MAX_EVALUATIONS) {
        Some(values) if values.len() <= MAX_DOMAIN => Ok(Pin::Values(values)),
        Some(values) => Err(Unbounded {
            names: Vec::new(),
            too_many: Some(values.len()),
        }),
        None => Err(Unbounded {
            names: unbounded_names(op, variant, ir),
            too_many: None,
        }),
    }
}

/// One value `ir` takes when `variant` runs, where a small domain is known: the first of
/// `value_set`'s. Called per shader, so it evaluates little.
pub fn sample(op: &Op, variant: &Variant, ir: &Ir) -> Option<Value> {
    value_set(op, variant, &when_ranges(op, variant), ir, MAX_DOMAIN)?
        .into_iter()
        .next()
}

/// The largest value a suggested specialisation set lists ([`suggested_set`]).
const LARGEST_SUGGESTED: i64 = 4096;

/// A starting specialisation set for `value`, which has no finite domain: those of 0 and the
/// powers of two up to 4096 that are at least `least`, for the integer arg `arg` (where the
/// value then is a whole number of at least `least` and the variant's `when` does not exclude
/// it) or for the value itself. Empty when no candidate qualifies. Printed by the value's
/// error as a hints entry for the author to edit.
pub fn suggested_set(
    op: &Op,
    variant: &Variant,
    value: &TemplateValue,
    arg: Option<&str>,
    least: i64,
) -> Vec<i64> {
    let powers = (0..13)
        .map(|k| 1i64 << k)
        .take_while(|&p| p <= LARGEST_SUGGESTED);
    let candidates = std::iter::once(0).chain(powers).filter(|&c| c >= least);
    let Some(arg) = arg else {
        return candidates.collect();
    };
    let ranges = when_ranges(op, variant);
    let (lo, hi) = ranges.get(arg).copied().unwrap_or((None, None));
    candidates
        .filter(|&p| lo.is_none_or(|lo| p >= lo) && hi.is_none_or(|hi| p <= hi))
        .filter(|&p| {
            let mut fixed = ranges.clone();
            fixed.insert(arg.to_owned(), (Some(p), Some(p)));
            let whole = |v: &Value| match v {
                Value::Int(i) => *i >= least,
                Value::Float(f) => f.fract() == 0.0 && *f >= least as f64,
                _ => false,
            };
            value_set(op, variant, &fixed, &value.expr.ir, MAX_EVALUATIONS)
                .is_some_and(|values| !values.is_empty() && values.iter().all(whole))
        })
        .collect()
}

/// Makes the template value `name` of variant `v` static under `pin`.
pub fn apply(op: &mut Op, v: usize, name: &str, pin: Pin) {
    for value in op.variants[v].values_named_mut(name) {
        value.class = Class::Static;
        value.domain = match &pin {
            Pin::Roots => None,
            Pin::Values(values) => Some(values.clone()),
        };
    }
}

/// How many combinations the roots of `ir` make.
fn root_count(op: &Op, bounds: &Bounds, ir: &Ir) -> usize {
    let mut vars = BTreeSet::new();
    statics::collect_vars(op, ir, &mut vars);
    vars.iter()
        .map(|var| statics::domain(op, bounds, var).len().max(1))
        .fold(1usize, usize::saturating_mul)
}

/// The values `ir` can take, when finitely many, where `ranges` hold: every value over its
/// roots' domains, the union of a conditional's branches, each under what its condition
/// says, or the values of the `derive` entry it names.
fn value_set(
    op: &Op,
    variant: &Variant,
    ranges: &Ranges,
    ir: &Ir,
    evaluations: usize,
) -> Option<Vec<Value>> {
    value_set_through(op, variant, ranges, ir, evaluations, &mut Vec::new())
}

/// [`value_set`], with the `derive` entries being followed (`following`), so that a cycle
/// among them ends the search instead of recursing forever.
fn value_set_through(
    op: &Op,
    variant: &Variant,
    ranges: &Ranges,
    ir: &Ir,
    evaluations: usize,
    following: &mut Vec<String>,
) -> Option<Vec<Value>> {
    let mut bounds = variant.bounds.clone();
    add_finite(&mut bounds, ranges, evaluations);
    if is_bounded(op, &bounds, &ir.symbols()) {
        if root_count(op, &bounds, ir) > evaluations {
            return None;
        }
        return statics::evaluate_over_roots(op, &variant.required_features, &bounds, ir);
    }
    match &ir.kind {
        IrKind::Cond(cond, then, otherwise) => {
            let mut when_true = ranges.clone();
            refine(op, &mut when_true, cond, true);
            let mut when_false = ranges.clone();
            refine(op, &mut when_false, cond, false);
            let mut values =
                value_set_through(op, variant, &when_true, then, evaluations, following)?;
            let others =
                value_set_through(op, variant, &when_false, otherwise, evaluations, following)?;
            for value in others {
                if !values.contains(&value) {
                    values.push(value);
                }
            }
            Some(values)
        }
        IrKind::Call(Builtin::Min, args) => capped_power_of_two(args),
        // A name for a `derive` entry (a Hub variant's derive that reads the manifest's, which
        // the model inlines as this name): the entry's own values, where they are finite. The
        // entry reads the same arguments, under the same `when`, so `ranges` still hold.
        IrKind::Sym(Symbol::Derived(name)) => {
            if following.contains(name) {
                return None;
            }
            let derived = op.derived(name)?;
            following.push(name.clone());
            let values = value_set_through(
                op,
                variant,
                ranges,
                &derived.expr.ir,
                evaluations,
                following,
            );
            following.pop();
            values
        }
        _ => None,
    }
}

/// The values of `min(cap, pow2ceil(x))` (either order) whatever `x`: `pow2ceil` is a power of
/// two, at least 1, so the result is one no larger than `cap`, or `cap` itself.
fn capped_power_of_two(args: &[Ir]) -> Option<Vec<Value>> {
    let [a, b] = args else { return None };
    let (cap, rounded) = match (integer(a), integer(b)) {
        (Some(cap), None) => (cap, b),
        (None, Some(cap)) => (cap, a),
        _ => return None,
    };
    if !matches!(rounded.kind, IrKind::Call(Builtin::Pow2Ceil, _)) {
        return None;
    }
    let mut values: Vec<Value> = (0..63)
        .map(|k| 1i64 << k)
        .take_while(|&p| p <= cap)
        .map(Value::Int)
        .collect();
    if !values.contains(&Value::Int(cap)) {
        values.push(Value::Int(cap));
    }
    Some(values)
}

/// What `ir` reads, through `derive` entries to the values they read.
fn derived_roots(op: &Op, ir: &Ir) -> Vec<Symbol> {
    let mut roots = Vec::new();
    let mut pending: Vec<Symbol> = ir.symbols().into_iter().collect();
    let mut seen = BTreeSet::new();
    while let Some(symbol) = pending.pop() {
        if !seen.insert(symbol.clone()) {
            continue;
        }
        if let Symbol::Derived(name) = &symbol
            && let Some(derived) = op.derived(name)
        {
            pending.extend(derived.expr.ir.symbols());
        } else {
            roots.push(symbol);
        }
    }
    roots.sort();
    roots
}

/// The names `ir` reads that have no finite domain, as a manifest writes them: through a
/// `derive` entry to what it reads where that is args and attributes only (which a `when`
/// bound or a hints set can bound); a `derive` entry that reads a shape keeps its own name.
fn unbounded_names(op: &Op, variant: &Variant, ir: &Ir) -> Vec<String> {
    let mut names = Vec::new();
    let ranges = when_ranges(op, variant);
    let mut name_unbounded = |symbol: &Symbol| {
        if is_bounded(op, &variant.bounds, &BTreeSet::from([symbol.clone()])) {
            return;
        }
        let name = match symbol {
            Symbol::Arg(name) => format!("args.{name}"),
            Symbol::Attr(name) => format!("attrs.{name}"),
            Symbol::Shape(name) => format!("shapes.{name}"),
            Symbol::Rank(name) => format!("ranks.{name}"),
            Symbol::Limit(name) => format!("device.limits.{name}"),
            Symbol::AdapterInfo(name) => format!("device.adapterInfo.{name}"),
            Symbol::Present(name) => format!("present.{name}"),
            Symbol::Derived(name) => name.clone(),
            other => format!("{other:?}"),
        };
        if !names.contains(&name) {
            names.push(name);
        }
    };
    for symbol in ir.symbols() {
        if let Symbol::Derived(name) = &symbol
            && let Some(derived) = op.derived(name)
        {
            // A bounded `derive` entry, or one with finitely many values, is not what lacks
            // a domain.
            if is_bounded(op, &variant.bounds, &BTreeSet::from([symbol.clone()]))
                || value_set(op, variant, &ranges, &derived.expr.ir, MAX_EVALUATIONS).is_some()
            {
                continue;
            }
            let roots = derived_roots(op, &derived.expr.ir);
            if roots
                .iter()
                .all(|r| matches!(r, Symbol::Arg(_) | Symbol::Attr(_)))
            {
                roots.iter().for_each(&mut name_unbounded);
                continue;
            }
        }
        name_unbounded(&symbol);
    }
    names
}

#[cfg(test)]
mod tests;
