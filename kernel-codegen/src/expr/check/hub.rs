//! The Hub dialect's rules where its runtime's engine, `@huggingface/jinja`, departs from the
//! V1 reading the dialect otherwise shares: `and`/`or` return an operand, `%` takes the
//! dividend's sign, `~` writes numbers and Bools as JavaScript does, the `int`, `float`, `abs`
//! and `default` filters, and chained comparisons and list equality, which that engine
//! evaluates differently from Jinja, refused.

use super::builtins::Builtin;
use super::{Checker, ir};
use crate::expr::ast::{BinOp, Comparison, Expr, ExprKind};
use crate::expr::{Ir, IrKind, Span, Type};

impl Checker<'_> {
    /// `a % b` with JavaScript's sign, the dividend's, for operands already brought to `ty`.
    pub(super) fn hub_remainder(&self, span: Span, lhs: Ir, rhs: Ir, ty: Type) -> Ir {
        ir(IrKind::Call(Builtin::Remainder, vec![lhs, rhs]), ty, span)
    }

    /// `a or b` as `a if a else b` and `a and b` as `b if a else a`, for operands that are
    /// not both Bools (`args.n or 4` is a number): the engine returns an operand.
    pub(super) fn hub_operand_logic(&mut self, span: Span, op: BinOp, l: Ir, r: Ir) -> Option<Ir> {
        let what = format!("the operands of `{}`", op.symbol());
        if op == BinOp::Or {
            self.cond_ir(span, l.clone(), l, r, &what)
        } else {
            self.cond_ir(span, l.clone(), r, l, &what)
        }
    }

    /// Reports a chain of comparisons: the engine has none, and compares the first link's
    /// Bool with the next operand (an error for an ordering, loose equality otherwise).
    pub(super) fn hub_refuses_chain(&mut self, rest: &[Comparison]) -> bool {
        let [first, second, ..] = rest else {
            return false;
        };
        let (a, b) = (first.op.symbol(), second.op.symbol());
        self.error(
            second.op_span,
            format!(
                "the Hub runtime reads `a {a} b {b} c` as `(a {a} b) {b} c`, comparing a Bool \
                 with the next operand; write `a {a} b and b {b} c`"
            ),
        );
        true
    }

    /// Reports `==` or `!=` of two lists: JavaScript compares arrays by identity.
    pub(super) fn hub_refuses_list_equality(
        &mut self,
        op: BinOp,
        op_span: Span,
        lhs: &Ir,
        rhs: &Ir,
    ) -> bool {
        let refused =
            matches!(op, BinOp::Eq | BinOp::Ne) && lhs.ty == Type::List && rhs.ty == Type::List;
        if refused {
            self.error(
                op_span,
                format!(
                    "the Hub runtime compares lists with `{}` by identity, not by value; \
                     write `sameShape(a, b)`",
                    op.symbol()
                ),
            );
        }
        refused
    }

    /// `x | abs`: the magnitude of a number, of its type.
    pub(super) fn abs(&mut self, span: Span, value: Ir) -> Option<Ir> {
        if !value.ty.is_numeric() {
            self.error(
                value.span,
                format!("filter `abs` applies to a number, found {}", value.ty),
            );
            return None;
        }
        let ty = value.ty;
        Some(ir(IrKind::Call(Builtin::Abs, vec![value]), ty, span))
    }

    /// `x | int` and `x | float`, as @huggingface/jinja converts numbers and Bools: `int`
    /// floors a Float, and a Bool is 1 or 0.
    pub(super) fn conversion(&mut self, span: Span, value: Ir, name: &str) -> Option<Ir> {
        let to_float = name == "float";
        match value.ty {
            Type::Int | Type::Float if to_float => Some(super::promote(value)),
            Type::Int => Some(value),
            Type::Float => Some(ir(
                IrKind::Call(Builtin::Floor, vec![value]),
                Type::Int,
                span,
            )),
            Type::Bool => {
                let (one, zero) = if to_float {
                    (IrKind::Float(1.0), IrKind::Float(0.0))
                } else {
                    (IrKind::Int(1), IrKind::Int(0))
                };
                let ty = if to_float { Type::Float } else { Type::Int };
                let branches = format!("the results of `{name}`");
                self.cond_ir(
                    span,
                    value,
                    ir(one, ty, span),
                    ir(zero, ty, span),
                    &branches,
                )
            }
            other => {
                self.error(
                    value.span,
                    format!("filter `{name}` applies to a number or a Bool, found {other}"),
                );
                None
            }
        }
    }

    /// `x | default(d)`: `x` where it is defined, else `d` (@huggingface/jinja's default,
    /// without its second argument, which would also replace a falsy `x`). Only a name can
    /// be undefined; any other value is its own result.
    pub(super) fn default(
        &mut self,
        span: Span,
        value_expr: &Expr,
        value: Option<Ir>,
        name_span: Span,
        args: Vec<Option<Ir>>,
    ) -> Option<Ir> {
        if args.len() != 1 {
            self.error(
                name_span,
                format!(
                    "filter `default` takes one argument, the value where the operand is undefined (found {})",
                    args.len()
                ),
            );
            return None;
        }
        let fallback = args.into_iter().next().flatten();
        let (value, fallback) = (value?, fallback?);
        if !matches!(value_expr.kind, ExprKind::Name(_) | ExprKind::Member { .. }) {
            return Some(value);
        }
        let defined = self.test(span, value_expr, "defined", name_span, false, &[])?;
        self.cond_ir(span, defined, value, fallback, "a value and its `default`")
    }
}

/// A Float or Bool operand of `~` as the Str JavaScript writes for it (`4`, not `4.0`;
/// `true`); any other operand as it is.
pub(super) fn js_text(x: Ir) -> Ir {
    let span = x.span;
    match x.ty {
        Type::Float => ir(IrKind::Call(Builtin::NumberText, vec![x]), Type::Str, span),
        Type::Bool => {
            let text = |t: &str| Box::new(ir(IrKind::Str(t.to_owned()), Type::Str, span));
            ir(
                IrKind::Cond(Box::new(x), text("true"), text("false")),
                Type::Str,
                span,
            )
        }
        _ => x,
    }
}
