//! Repairs that steer a call towards a variant: a clause of its `when` that is false is made
//! true where it says how (a shape compared with a list, a dimension, a rank or an integer
//! argument compared with a value), so tight contracts such as
//! `sameShape(shapes.rel_pos, [1, attrs.num_heads, seqLen, seqLen])` hold after a few steps,
//! which random draws alone rarely reach. `check` steers the calls it draws for a variant no
//! call reached; the expressions' differential test steers its random environments with the
//! same repairs.

use std::collections::BTreeMap;

use super::inputs::Rng;
use crate::expr::ast::BinOp;
use crate::expr::builtins::Builtin;
use crate::expr::{self, Env, Ir, IrKind, Symbol, Type, Value};
use crate::model::{Op, Variant};

/// What an expression reads that a call can set.
enum Place {
    Shape(usize),
    Dim(usize, usize),
    Rank(usize),
    Arg(String),
}

/// One change to a call that makes a clause true. Tensors are numbered in `inputs ++
/// outputs` order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fix {
    /// Tensor `.0` gets this shape.
    Shape(usize, Vec<i64>),
    /// Dimension `.1` of tensor `.0` gets this size.
    Dim(usize, usize, i64),
    /// Tensor `.0` gets this rank.
    Rank(usize, usize),
    /// An integer argument gets this value.
    Arg(String, i64),
    /// A list argument of this many elements.
    ListLen(String, usize),
    /// One element of a list argument.
    ListItem(String, usize, i64),
}

impl Fix {
    /// Makes the change to a call's shapes (tensors in `inputs ++ outputs` order) and
    /// arguments; whether anything changed. A new rank's added dimensions, and a new list's
    /// items, are drawn from small sizes.
    pub fn apply(
        &self,
        shapes: &mut [Option<Vec<i64>>],
        args: &mut BTreeMap<String, Value>,
        rng: &mut Rng,
    ) -> bool {
        match self {
            Fix::Shape(i, dims) => match shapes.get_mut(*i) {
                Some(slot) => *slot = Some(dims.clone()),
                None => return false,
            },
            Fix::Dim(i, k, v) => match shapes.get_mut(*i).and_then(Option::as_mut) {
                Some(shape) if *k < shape.len() => shape[*k] = *v,
                _ => return false,
            },
            Fix::Rank(i, n) => {
                let Some(slot) = shapes.get_mut(*i) else {
                    return false;
                };
                let shape = slot.get_or_insert_with(Vec::new);
                shape.truncate(*n);
                while shape.len() < *n {
                    shape.push(rng.pick(&[1, 2, 4, 8, 16]));
                }
            }
            Fix::Arg(name, v) => {
                args.insert(name.clone(), Value::Int(*v));
            }
            Fix::ListItem(name, i, v) => match args.get_mut(name) {
                Some(Value::List(items)) if *i < items.len() => items[*i] = *v,
                _ => return false,
            },
            Fix::ListLen(name, n) => {
                let items = (0..*n).map(|_| rng.pick(&[0, 1, 2, 4, 8, 16])).collect();
                args.insert(name.clone(), Value::List(items));
            }
        }
        true
    }
}

/// The conjuncts of every clause of `variant`'s `when` ([`conjuncts`]), each with its source.
pub fn when_conjuncts<'i>(op: &'i Op, variant: &'i Variant) -> Vec<(&'i Ir, &'i str)> {
    let mut out = Vec::new();
    for clause in &variant.when {
        conjuncts(op, &clause.ir, &clause.source, &mut out);
    }
    out
}

/// `ir`'s conjuncts: its `and` operands, and those of the boolean `derive` entries it names.
fn flatten_and<'i>(op: &'i Op, ir: &'i Ir, out: &mut Vec<&'i Ir>) {
    let mut sourced = Vec::new();
    conjuncts(op, ir, "", &mut sourced);
    out.extend(sourced.into_iter().map(|(ir, _)| ir));
}

/// The same, each conjunct with the source text its span points into (`source` for `ir`'s
/// own, a `derive` entry's for those reached through its name).
pub fn conjuncts<'i>(op: &'i Op, ir: &'i Ir, source: &'i str, out: &mut Vec<(&'i Ir, &'i str)>) {
    match &ir.kind {
        IrKind::Binary(BinOp::And, l, r) => {
            conjuncts(op, l, source, out);
            conjuncts(op, r, source, out);
        }
        IrKind::Sym(Symbol::Derived(name)) => match op.derived(name) {
            Some(derived) if derived.expr.ir.ty == Type::Bool => {
                conjuncts(op, &derived.expr.ir, &derived.expr.source, out);
            }
            _ => out.push((ir, source)),
        },
        _ => out.push((ir, source)),
    }
}

/// The settable place `ir` reads directly, through `derive` entries and promotions.
fn place(op: &Op, ir: &Ir) -> Option<Place> {
    let settable = |role: &str| {
        let index = op.tensor_index(role)?;
        let tensor = op.tensors().nth(index)?;
        (!tensor.is_computed_output()).then_some(index)
    };
    match &ir.kind {
        IrKind::Sym(Symbol::Shape(role)) => settable(role).map(Place::Shape),
        IrKind::Sym(Symbol::Rank(role)) => settable(role).map(Place::Rank),
        IrKind::Sym(Symbol::Attr(name) | Symbol::Arg(name)) => op
            .attribute(name)
            .filter(|a| a.ty == Type::Int && a.one_of.is_none())
            .map(|_| Place::Arg(name.clone())),
        IrKind::Sym(Symbol::Derived(name)) => place(op, &op.derived(name)?.expr.ir),
        IrKind::Call(Builtin::Dim | Builtin::DimWrapped, args) => match args.as_slice() {
            [shape, axis] => match (&shape.kind, &axis.kind) {
                (IrKind::Sym(Symbol::Shape(role)), IrKind::Int(k)) if *k >= 0 => {
                    Some(Place::Dim(settable(role)?, usize::try_from(*k).ok()?))
                }
                _ => None,
            },
            _ => None,
        },
        IrKind::ToFloat(x) => place(op, x),
        _ => None,
    }
}

fn int(ir: &Ir, env: &dyn Env) -> Option<i64> {
    match expr::eval(ir, env) {
        Ok(Value::Int(k)) => Some(k),
        _ => None,
    }
}

/// The change that makes `target` equal `v`: a settable place, or one reached through an
/// addition, subtraction or multiplication whose other operand evaluates, an element of a
/// list argument, or a list argument's length.
fn solve(op: &Op, target: &Ir, v: i64, env: &dyn Env) -> Option<Fix> {
    if let Some(place) = place(op, target) {
        return match place {
            Place::Dim(i, k) if v >= 0 => Some(Fix::Dim(i, k, v)),
            Place::Rank(i) if (0..=8).contains(&v) => Some(Fix::Rank(i, usize::try_from(v).ok()?)),
            Place::Arg(name) => Some(Fix::Arg(name, v)),
            _ => None,
        };
    }
    let list_arg = |ir: &Ir| match &ir.kind {
        IrKind::Sym(Symbol::Attr(name) | Symbol::Arg(name))
            if op.attribute(name).is_some_and(|a| a.ty == Type::List) =>
        {
            Some(name.clone())
        }
        _ => None,
    };
    match &target.kind {
        IrKind::Binary(BinOp::Add, a, b) => match int(b, env) {
            Some(k) => solve(op, a, v.checked_sub(k)?, env),
            None => solve(op, b, v.checked_sub(int(a, env)?)?, env),
        },
        IrKind::Binary(BinOp::Sub, a, b) => solve(op, a, v.checked_add(int(b, env)?)?, env),
        IrKind::Binary(BinOp::Mul, a, b) => match int(b, env) {
            Some(k) if k != 0 && v % k == 0 => solve(op, a, v / k, env),
            Some(_) => None,
            None => {
                let k = int(a, env)?;
                (k != 0 && v % k == 0).then_some(())?;
                solve(op, b, v / k, env)
            }
        },
        IrKind::Length(list) if (0..=8).contains(&v) => {
            Some(Fix::ListLen(list_arg(list)?, usize::try_from(v).ok()?))
        }
        IrKind::Index(list, index) if v >= 0 => Some(Fix::ListItem(
            list_arg(list)?,
            usize::try_from(int(index, env)?).ok()?,
            v,
        )),
        IrKind::Sym(Symbol::Derived(name)) => solve(op, &op.derived(name)?.expr.ir, v, env),
        _ => None,
    }
}

/// The change that makes `clause` true, when it is an equality with a settable side; with
/// `thorough`, also an ordering (set to its bound) and a failing conjunct of a `derive`
/// entry (MatMul's `rank3ShapeOk or rank4ShapeOk`).
pub fn fix_of(op: &Op, clause: &Ir, env: &dyn Env, thorough: bool) -> Option<Fix> {
    // (target, the other side, what the target must be beside the other side's value)
    let sides = match &clause.kind {
        IrKind::Call(Builtin::SameShape, args) => match args.as_slice() {
            [a, b] => [(a, b, 0), (b, a, 0)],
            _ => return None,
        },
        // Either side of an `or` will do.
        IrKind::Binary(BinOp::Or, a, b) => {
            return fix_of(op, a, env, thorough).or_else(|| fix_of(op, b, env, thorough));
        }
        IrKind::Sym(Symbol::Derived(name)) if thorough => {
            let mut conjuncts = Vec::new();
            flatten_and(op, &op.derived(name)?.expr.ir, &mut conjuncts);
            return (conjuncts.into_iter())
                .filter(|c| !matches!(expr::eval(c, env), Ok(Value::Bool(true))))
                .find_map(|c| fix_of(op, c, env, thorough));
        }
        IrKind::Binary(BinOp::Eq, a, b) | IrKind::LooseCompare(BinOp::Eq, a, b) => {
            [(a.as_ref(), b.as_ref(), 0), (b.as_ref(), a.as_ref(), 0)]
        }
        IrKind::Binary(order, a, b) | IrKind::LooseCompare(order, a, b) if thorough => {
            let (a, b) = (a.as_ref(), b.as_ref());
            match order {
                BinOp::Ge | BinOp::Le => [(a, b, 0), (b, a, 0)],
                BinOp::Gt => [(a, b, 1), (b, a, -1)],
                BinOp::Lt => [(a, b, -1), (b, a, 1)],
                _ => return None,
            }
        }
        _ => return None,
    };
    for (target, other, offset) in sides {
        let fix = match expr::eval(other, env) {
            Ok(Value::List(dims)) if dims.iter().all(|d| *d >= 0) => match place(op, target) {
                Some(Place::Shape(i)) => Some(Fix::Shape(i, dims)),
                _ => None,
            },
            Ok(Value::Int(v)) => solve(op, target, v.checked_add(offset)?, env),
            _ => None,
        };
        if fix.is_some() {
            return fix;
        }
    }
    None
}
