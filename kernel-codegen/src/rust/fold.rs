//! Simplifies expressions for the typed API before lowering: every attribute has a value
//! there (a default or a required parameter), so `attrs.x is defined` is `true`, and the
//! boolean operators around it fold away. The interpreter keeps the full semantics.

use crate::expr::ast::{BinOp, UnaryOp};
use crate::expr::{Ir, IrKind, Symbol};

/// `ir` with `is defined` tests on attributes and derived names replaced by constants and
/// the resulting constant booleans folded.
pub fn fold(ir: &Ir) -> Ir {
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

fn constant(ir: &Ir) -> Option<bool> {
    match ir.kind {
        IrKind::Bool(b) => Some(b),
        _ => None,
    }
}
