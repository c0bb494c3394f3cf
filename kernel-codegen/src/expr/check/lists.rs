//! The checker's lists: list literals, indices, slices and the filters (`length`, and in the
//! Jinja dialects `first`, `last`, `sum`, `min` and `max`; the Hub's `int`, `float`, `abs`
//! and `default` are in `hub.rs`).

use super::builtins::{Builtin, filters};
use super::{Checker, ir};
use crate::expr::ast::Expr;
use crate::expr::{Ir, IrKind, Span, Type};

impl Checker<'_> {
    pub(super) fn list(&mut self, span: Span, items: &[Expr]) -> Option<Ir> {
        let items: Vec<Option<Ir>> = items.iter().map(|i| self.expr(i)).collect();
        let mut ok = Vec::new();
        for item in items {
            let mut item = item?;
            if self.dialect.is_jinja() {
                // The engine's numbers are doubles: `[args.n / 2]` is a shape if it is whole.
                item = super::to_int(item);
            }
            if item.ty != Type::Int {
                self.error(
                    item.span,
                    format!("list elements must be Int, found {}", item.ty),
                );
                return None;
            }
            ok.push(item);
        }
        Some(ir(IrKind::List(ok), Type::List, span))
    }

    pub(super) fn index(&mut self, span: Span, base: &Expr, index: &Expr) -> Option<Ir> {
        let (base, index) = (self.expr(base), self.expr(index));
        let (base, mut index) = (base?, index?);
        if self.dialect.is_jinja() {
            // A whole Float indexes as the Int it is (a derive `n / 2` reused), as in `list`.
            index = super::to_int(index);
        }
        if base.ty != Type::List {
            self.error(
                base.span,
                format!("only a List can be indexed, found {}", base.ty),
            );
            return None;
        }
        if index.ty != Type::Int {
            self.error(
                index.span,
                format!("a list index must be Int, found {}", index.ty),
            );
            return None;
        }
        Some(ir(
            IrKind::Index(Box::new(base), Box::new(index)),
            Type::Int,
            span,
        ))
    }

    /// `base[start:end]`, Python's and Jinja's slice: bounds count from the end when negative
    /// and are clamped to the list; an absent start is 0, an absent end the list's length.
    pub(super) fn slice(
        &mut self,
        span: Span,
        base: &Expr,
        start: Option<&Expr>,
        end: Option<&Expr>,
    ) -> Option<Ir> {
        let base = self.expr(base);
        let mut bound = |bound: Option<&Expr>, absent: i64| match bound {
            None => Some(ir(IrKind::Int(absent), Type::Int, span)),
            Some(e) => {
                let b = super::to_int(self.expr(e)?);
                if b.ty != Type::Int {
                    self.error(b.span, format!("a slice bound must be Int, found {}", b.ty));
                    return None;
                }
                Some(b)
            }
        };
        let (start, end) = (bound(start, 0), bound(end, i64::MAX));
        let (base, start, end) = (base?, start?, end?);
        if base.ty != Type::List {
            self.error(
                base.span,
                format!("only a List can be sliced, found {}", base.ty),
            );
            return None;
        }
        Some(ir(
            IrKind::Call(Builtin::Slice, vec![base, start, end]),
            Type::List,
            span,
        ))
    }

    pub(super) fn filter(
        &mut self,
        span: Span,
        value_expr: &Expr,
        name: &str,
        name_span: Span,
        args: &[Expr],
    ) -> Option<Ir> {
        let value = self.expr(value_expr);
        let args: Vec<Option<Ir>> = args.iter().map(|a| self.expr(a)).collect();
        let known = filters(self.dialect);
        if !known.contains(&name) {
            self.error(
                name_span,
                format!("unknown filter `{name}` (known: {})", known.join(", ")),
            );
            return None;
        }
        if name == "default" {
            return self.default(span, value_expr, value, name_span, args);
        }
        if !args.is_empty() {
            self.error(name_span, format!("filter `{name}` takes no arguments"));
            return None;
        }
        let value = value?;
        if matches!(name, "int" | "float") {
            return self.conversion(span, value, name);
        }
        if name == "abs" {
            return self.abs(span, value);
        }
        if value.ty != Type::List {
            self.error(
                value.span,
                format!("filter `{name}` applies to a List, found {}", value.ty),
            );
            return None;
        }
        // `first` and `last` are the list's items 0 and -1 (an error on an empty list, where
        // Jinja gives an undefined value no clause could use).
        let item = |at: i64| {
            let at = ir(IrKind::Int(at), Type::Int, name_span);
            ir(
                IrKind::Index(Box::new(value.clone()), Box::new(at)),
                Type::Int,
                span,
            )
        };
        let reduce =
            |builtin: Builtin| ir(IrKind::Call(builtin, vec![value.clone()]), Type::Int, span);
        Some(match name {
            "first" => item(0),
            "last" => item(-1),
            "sum" => reduce(Builtin::ListSum),
            "min" => reduce(Builtin::ListMin),
            "max" => reduce(Builtin::ListMax),
            _ => ir(IrKind::Length(Box::new(value)), Type::Int, span),
        })
    }
}
