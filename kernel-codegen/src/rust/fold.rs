//! Simplifies expressions for the typed API before lowering. Every attribute has a value
//! there (a default or a required parameter), so `attrs.x is defined` is `true`; a 0/1 flag is
//! a `bool`, so a test that holds for both of its values (`attrs.f == 0 or attrs.f == 1`, a
//! manifest's range check) is `true`. The boolean operators around them fold away. The
//! interpreter keeps the full semantics.

use crate::expr::ast::{BinOp, UnaryOp};
use crate::expr::{Ir, IrKind, Symbol};
use crate::model::{AttrRepr, Op};

/// `ir` with `is defined` tests on attributes and derived names, and tests of one of `op`'s
/// flags that do not depend on its value, replaced by constants, and the resulting constant
/// booleans folded.
pub fn fold(ir: &Ir, op: &Op) -> Ir {
    let folded = fold_defined(ir, op);
    match flag_truth(&folded, op) {
        Some((_, [when_0, when_1])) if when_0 == when_1 => Ir {
            kind: IrKind::Bool(when_0),
            ..folded
        },
        _ => folded,
    }
}

fn fold_defined(ir: &Ir, op: &Op) -> Ir {
    let fold = |ir: &Ir| fold(ir, op);
    let kind = match &ir.kind {
        IrKind::IsDefined(Symbol::Attr(_) | Symbol::Derived(_), negated) => IrKind::Bool(!negated),
        IrKind::Binary(op @ (BinOp::And | BinOp::Or), lhs, rhs) => {
            let (lhs, rhs) = (fold(lhs), fold(rhs));
            let absorbing = *op == BinOp::Or;
            match (constant(&lhs), constant(&rhs)) {
                (Some(b), _) if b == absorbing => IrKind::Bool(absorbing),
                (Some(_), _) => return rhs,
                (_, Some(b)) if b != absorbing => return lhs,
                _ => IrKind::Binary(*op, Box::new(lhs), Box::new(rhs)),
            }
        }
        IrKind::Unary(UnaryOp::Not, operand) => {
            let operand = fold(operand);
            match constant(&operand) {
                Some(b) => IrKind::Bool(!b),
                None => IrKind::Unary(UnaryOp::Not, Box::new(operand)),
            }
        }
        IrKind::Cond(condition, then, otherwise) => {
            let condition = fold(condition);
            match constant(&condition) {
                Some(true) => return fold(then),
                Some(false) => return fold(otherwise),
                None => IrKind::Cond(
                    Box::new(condition),
                    Box::new(fold(then)),
                    Box::new(fold(otherwise)),
                ),
            }
        }
        IrKind::Binary(op, lhs, rhs) => {
            IrKind::Binary(*op, Box::new(fold(lhs)), Box::new(fold(rhs)))
        }
        IrKind::LooseCompare(op, lhs, rhs) => {
            IrKind::LooseCompare(*op, Box::new(fold(lhs)), Box::new(fold(rhs)))
        }
        IrKind::Unary(op, operand) => IrKind::Unary(*op, Box::new(fold(operand))),
        IrKind::Call(builtin, args) => IrKind::Call(*builtin, args.iter().map(fold).collect()),
        IrKind::List(items) => IrKind::List(items.iter().map(fold).collect()),
        IrKind::Length(inner) => IrKind::Length(Box::new(fold(inner))),
        IrKind::ToFloat(inner) => IrKind::ToFloat(Box::new(fold(inner))),
        IrKind::Index(list, index) => IrKind::Index(Box::new(fold(list)), Box::new(fold(index))),
        other => other.clone(),
    };
    Ir {
        kind,
        ty: ir.ty,
        span: ir.span,
    }
}

/// The value of a boolean test of one 0/1 flag attribute of `op` (comparisons, loose or not,
/// with integer literals, and `not`, `and`, `or` of such tests of the same flag) for each of the flag's
/// values: the flag's name and `[value when 0, value when 1]`.
fn flag_truth<'a>(ir: &'a Ir, op: &Op) -> Option<(&'a str, [bool; 2])> {
    match &ir.kind {
        // A flag is always given, so the Jinja dialects' loose comparison is the plain one.
        IrKind::Binary(cmp, lhs, rhs) | IrKind::LooseCompare(cmp, lhs, rhs)
            if compare(*cmp, 0, 0).is_some() =>
        {
            match (&lhs.kind, &rhs.kind) {
                (IrKind::Sym(Symbol::Attr(name)), IrKind::Int(k)) if is_flag(op, name) => {
                    Some((name, [compare(*cmp, 0, *k)?, compare(*cmp, 1, *k)?]))
                }
                (IrKind::Int(k), IrKind::Sym(Symbol::Attr(name))) if is_flag(op, name) => {
                    Some((name, [compare(*cmp, *k, 0)?, compare(*cmp, *k, 1)?]))
                }
                _ => None,
            }
        }
        IrKind::Binary(logic @ (BinOp::And | BinOp::Or), lhs, rhs) => {
            let ((a, l), (b, r)) = (flag_truth(lhs, op)?, flag_truth(rhs, op)?);
            let both = |f: fn(bool, bool) -> bool| [f(l[0], r[0]), f(l[1], r[1])];
            (a == b).then(|| {
                (
                    a,
                    if *logic == BinOp::And {
                        both(|x, y| x && y)
                    } else {
                        both(|x, y| x || y)
                    },
                )
            })
        }
        IrKind::Unary(UnaryOp::Not, operand) => {
            let (name, [when_0, when_1]) = flag_truth(operand, op)?;
            Some((name, [!when_0, !when_1]))
        }
        _ => None,
    }
}

fn is_flag(op: &Op, name: &str) -> bool {
    op.attribute(name)
        .is_some_and(|a| a.repr == AttrRepr::Bool && !a.is_optional())
}

/// `lhs cmp rhs` for the comparison operators; `None` for any other.
fn compare(cmp: BinOp, lhs: i64, rhs: i64) -> Option<bool> {
    Some(match cmp {
        BinOp::Eq => lhs == rhs,
        BinOp::Ne => lhs != rhs,
        BinOp::Lt => lhs < rhs,
        BinOp::Le => lhs <= rhs,
        BinOp::Gt => lhs > rhs,
        BinOp::Ge => lhs >= rhs,
        _ => return None,
    })
}

fn constant(ir: &Ir) -> Option<bool> {
    match ir.kind {
        IrKind::Bool(b) => Some(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::fold;
    use crate::expr::IrKind;
    use crate::model::{AttrRepr, Op};
    use serde_json::json;

    /// A copy op with one attribute, `f`, which every expression compares with 0: a flag.
    fn op() -> Op {
        crate::copy_op::copy_op(
            json!({
                "attributes": { "f": { "default": 0 } },
                "derive": {
                    "always": "attrs.f == 0 or attrs.f != 0",
                    "never": "not (attrs.f == 0 or 0 != attrs.f)",
                    "depends": "attrs.f != 0 and numel(shapes.a) > 0"
                }
            }),
            json!({ "when": ["always", "not never", "depends or numel(shapes.a) == 0"] }),
        )
    }

    fn folded(op: &Op, derive: &str) -> IrKind {
        let derived = op.derived(derive).expect("the derive entry");
        fold(&derived.expr.ir, op).kind
    }

    #[test]
    fn tests_of_a_flag_that_hold_for_both_values_fold_to_constants() {
        let op = op();
        assert_eq!(op.attribute("f").map(|a| a.repr), Some(AttrRepr::Bool));
        assert_eq!(folded(&op, "always"), IrKind::Bool(true));
        assert_eq!(folded(&op, "never"), IrKind::Bool(false));
        assert!(
            matches!(folded(&op, "depends"), IrKind::Binary(..)),
            "{:?}",
            folded(&op, "depends")
        );
    }
}
