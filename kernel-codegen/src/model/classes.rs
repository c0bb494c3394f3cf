//! Template values settled by their classes rather than their values: a run-time value the
//! template only tests for truthiness, or compares with integer literals, and never prints
//! renders alike for every value of a class, so it becomes its class (a boolean, or one literal
//! per class) and one shader is built per class; each call picks the shader of its value's
//! class. `settle` decides which values these are; [`super::domains::pin`] then enumerates the
//! classes as any finite domain.
//!
//! A value with a finite domain of its own is pinned to it instead (`settle` asks first), so
//! its shaders see its real values: classing is for values known only per call.

use std::collections::BTreeSet;

use super::{Class, Op};
use crate::expr::ast::BinOp;
use crate::expr::{Ir, IrKind, Type};

/// Makes the template value `name` of variant `v` its own truthiness, for a value the template
/// only tests as a condition and never prints: a boolean, so one shader is built for each of
/// its two classes and each call picks one by the value's class.
pub fn by_truthiness(op: &mut Op, v: usize, name: &str) {
    for value in op.variants[v].values_named_mut(name) {
        let span = value.expr.ir.span;
        let tested = std::mem::replace(
            &mut value.expr.ir,
            Ir {
                kind: IrKind::Bool(false),
                ty: Type::Bool,
                span,
            },
        );
        value.expr.ir.kind = IrKind::Truthy(Box::new(tested));
        value.class = Class::Static;
        value.domain = None;
    }
}

/// Makes the template value `name` of variant `v` the representative of its class, for a value
/// the template only compares with the integer `thresholds` (and, with `truthiness`, tests for
/// truthiness) and never prints: the classes are the ranges below, at, between and above the
/// thresholds, so the value becomes a conditional over them with one literal per class, a
/// finite domain that [`pin`](super::domains::pin) then enumerates, and each call picks the shader of its class.
pub fn by_classes(op: &mut Op, v: usize, name: &str, thresholds: &BTreeSet<i64>, truthiness: bool) {
    let mut points: Vec<i64> = thresholds.iter().copied().collect();
    if truthiness && !points.contains(&0) {
        points.push(0);
        points.sort_unstable();
    }
    for value in op.variants[v].values_named_mut(name) {
        let x = value.expr.ir.clone();
        let (ty, span) = (x.ty, x.span);
        let node = |kind: IrKind, ty: Type| Ir { kind, ty, span };
        let literal = |n: f64| match ty {
            Type::Int => node(IrKind::Int(n as i64), Type::Int),
            _ => node(IrKind::Float(n), Type::Float),
        };
        // `if x <op> n then <n's class literal> else <rest>`.
        let class = |op: BinOp, n: f64, inside: f64, rest: Ir| {
            let test = node(
                IrKind::Binary(op, Box::new(x.clone()), Box::new(literal(n))),
                Type::Bool,
            );
            node(
                IrKind::Cond(Box::new(test), Box::new(literal(inside)), Box::new(rest)),
                ty,
            )
        };
        // From the top class down: above the last point, then at it, then between it and the
        // one before, …, then below the first.
        let last = points.last().copied().unwrap_or(0) as f64;
        let mut chain = literal(last + 1.0);
        for (i, &point) in points.iter().enumerate().rev() {
            let point = point as f64;
            if let Some(next) = points.get(i + 1).map(|&p| p as f64) {
                // Integers have a class strictly between two points only when a gap is there.
                let between = match ty {
                    Type::Int if next - point >= 2.0 => Some(point + 1.0),
                    Type::Int => None,
                    _ => Some((point + next) / 2.0),
                };
                if let Some(inside) = between {
                    chain = class(BinOp::Lt, next, inside, chain);
                }
            }
            chain = class(BinOp::Eq, point, point, chain);
            if i == 0 {
                chain = class(BinOp::Lt, point, point - 1.0, chain);
            }
        }
        value.expr.ir = chain;
    }
}
