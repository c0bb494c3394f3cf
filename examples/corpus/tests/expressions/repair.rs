//! Steering by repair: a clause of a variant's `when` that is false is made true where it says
//! how (a shape compared with a list, a dimension, a rank or an integer argument compared with
//! a value), so tight contracts such as the seed packages'
//! `sameShape(shapes.rel_pos, [1, attrs.num_heads, seqLen, seqLen])` hold after a few steps,
//! which random changes alone rarely reach. `RandomEnv::steer` keeps a repair only when no
//! more clauses fail than before. A thorough profile's repairs (the Hub's) also meet an
//! ordering at its bound (MatMul's `dim(shapes.a, ranks.a - 2) >= 64`).

use kernel_codegen::expr::ast::BinOp;
use kernel_codegen::expr::builtins::Builtin;
use kernel_codegen::expr::{Ir, IrKind, Symbol, Type, Value};
use kernel_codegen::model::{Op, Variant};

use super::env::{RandomEnv, Rng, flatten_and};
use super::interp::Interp;

/// What an expression reads that an environment can set.
enum Place {
    Shape(usize),
    Dim(usize, usize),
    Rank(usize),
    Arg(String),
}

/// One change that makes a clause true.
enum Fix {
    Shape(usize, Vec<i64>),
    Dim(usize, usize, i64),
    Rank(usize, usize),
    Arg(String, i64),
    /// A list argument of this many elements.
    ListLen(String, usize),
    /// One element of a list argument.
    ListItem(String, usize, i64),
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
        IrKind::Sym(Symbol::Derived(name)) => {
            let derived = op.derives.iter().find(|d| &d.name == name)?;
            place(op, &derived.expr.ir)
        }
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

/// The change that makes `target` equal `v`: a settable place, or one reached through an
/// addition, subtraction or multiplication whose other operand evaluates, an element of a
/// list argument, or a list argument's length.
fn solve(op: &Op, target: &Ir, v: i64, interp: &Interp<'_>) -> Option<Fix> {
    if let Some(place) = place(op, target) {
        return match place {
            Place::Dim(i, k) if v >= 0 => Some(Fix::Dim(i, k, v)),
            Place::Rank(i) if (0..=8).contains(&v) => Some(Fix::Rank(i, usize::try_from(v).ok()?)),
            Place::Arg(name) => Some(Fix::Arg(name, v)),
            _ => None,
        };
    }
    let int = |ir: &Ir| match interp.eval(ir).value {
        Ok(Value::Int(k)) => Some(k),
        _ => None,
    };
    let list_arg = |ir: &Ir| match &ir.kind {
        IrKind::Sym(Symbol::Attr(name) | Symbol::Arg(name))
            if op.attribute(name).is_some_and(|a| a.ty == Type::List) =>
        {
            Some(name.clone())
        }
        _ => None,
    };
    match &target.kind {
        IrKind::Binary(BinOp::Add, a, b) => match int(b) {
            Some(k) => solve(op, a, v.checked_sub(k)?, interp),
            None => solve(op, b, v.checked_sub(int(a)?)?, interp),
        },
        IrKind::Binary(BinOp::Sub, a, b) => solve(op, a, v.checked_add(int(b)?)?, interp),
        IrKind::Binary(BinOp::Mul, a, b) => match int(b) {
            Some(k) if k != 0 && v % k == 0 => solve(op, a, v / k, interp),
            Some(_) => None,
            None => {
                let k = int(a)?;
                (k != 0 && v % k == 0).then_some(())?;
                solve(op, b, v / k, interp)
            }
        },
        IrKind::Length(list) if (0..=8).contains(&v) => {
            Some(Fix::ListLen(list_arg(list)?, usize::try_from(v).ok()?))
        }
        IrKind::Index(list, index) if v >= 0 => Some(Fix::ListItem(
            list_arg(list)?,
            usize::try_from(int(index)?).ok()?,
            v,
        )),
        IrKind::Sym(Symbol::Derived(name)) => {
            let derived = op.derives.iter().find(|d| &d.name == name)?;
            solve(op, &derived.expr.ir, v, interp)
        }
        _ => None,
    }
}

/// The change that makes `clause` true, when it is an equality with a settable side; with
/// `thorough`, also an ordering (set to its bound) and a `derive` entry on a side of an `or`.
fn fix_of(op: &Op, clause: &Ir, interp: &Interp<'_>, thorough: bool) -> Option<Fix> {
    // (target, the other side, what the target must be beside the other side's value)
    let sides = match &clause.kind {
        IrKind::Call(Builtin::SameShape, args) => match args.as_slice() {
            [a, b] => [(a, b, 0), (b, a, 0)],
            _ => return None,
        },
        // Either side of an `or` will do.
        IrKind::Binary(BinOp::Or, a, b) => {
            return fix_of(op, a, interp, thorough).or_else(|| fix_of(op, b, interp, thorough));
        }
        // MatMul's `rank3ShapeOk or rank4ShapeOk`: one of the entry's conjuncts that fails.
        IrKind::Sym(Symbol::Derived(name)) if thorough => {
            let mut conjuncts = Vec::new();
            flatten_and(op, &op.derived(name)?.expr.ir, &mut conjuncts);
            return (conjuncts.into_iter())
                .filter(|c| !matches!(interp.eval(c).value, Ok(Value::Bool(true))))
                .find_map(|c| fix_of(op, c, interp, thorough));
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
        let fix = match interp.eval(other).value {
            Ok(Value::List(dims)) if dims.iter().all(|d| *d >= 0) => match place(op, target) {
                Some(Place::Shape(i)) => Some(Fix::Shape(i, dims)),
                _ => None,
            },
            Ok(Value::Int(v)) => solve(op, target, v.checked_add(offset)?, interp),
            _ => None,
        };
        if fix.is_some() {
            return fix;
        }
    }
    None
}

impl RandomEnv {
    /// Makes one failing clause of `conjuncts` (the variant's `when`, flattened) true where
    /// it says how; whether anything changed.
    pub fn repair(&mut self, op: &Op, variant: &Variant, conjuncts: &[&Ir], rng: &mut Rng) -> bool {
        self.compute_outputs(op);
        let fixes: Vec<Fix> = {
            let interp = Interp::new(op, self, Some(variant));
            conjuncts
                .iter()
                .filter(|c| !matches!(interp.eval(c).value, Ok(Value::Bool(true))))
                .filter_map(|c| fix_of(op, c, &interp, self.profile.thorough_repair))
                .collect()
        };
        if fixes.is_empty() {
            return false;
        }
        match &fixes[rng.below(fixes.len())] {
            Fix::Shape(i, dims) => self.shapes[*i] = Some(dims.clone()),
            Fix::Dim(i, k, v) => match self.shapes[*i].as_mut() {
                Some(shape) if *k < shape.len() => shape[*k] = *v,
                _ => return false,
            },
            Fix::Rank(i, n) => {
                let shape = self.shapes[*i].get_or_insert_with(Vec::new);
                shape.truncate(*n);
                while shape.len() < *n {
                    shape.push(rng.pick(&[1, 2, 4, 8, 16]));
                }
            }
            Fix::Arg(name, v) => {
                self.args.insert(name.clone(), Value::Int(*v));
            }
            Fix::ListItem(name, i, v) => match self.args.get_mut(name) {
                Some(Value::List(items)) if *i < items.len() => items[*i] = *v,
                _ => return false,
            },
            Fix::ListLen(name, n) => {
                let items = (0..*n).map(|_| rng.pick(&[0, 1, 2, 4, 8, 16])).collect();
                self.args.insert(name.clone(), Value::List(items));
            }
        }
        true
    }
}
