//! Checking what only the `schemaVersion: 1` dialect has: truthiness where a Bool is expected,
//! `in` / `not in`, `~`, and the builtins whose arguments are not fixed types (`has`, `pick`,
//! `ceil`, `pow`, `rows`, …). The rules are those of the engine the V1 packages come from
//! (see the module docs of `expr`); the seed dialect never reaches this file except through
//! [`to_int`], which callers use themselves.

use super::Dialect;
use super::builtins::{Builtin, Params};
use super::{Checker, ir, unify_numeric};
use crate::expr::ast::{BinOp, Expr, ExprKind};
use crate::expr::{Ir, IrKind, Span, Symbol, Type};

/// How `has` must be called.
const HAS_USAGE: &str = "has() takes a namespace and a string literal, e.g. \
                         `has(device.adapterInfo, \"subgroupMinSize\")`; use `x in list` for \
                         membership";

/// How `pick` must be called.
const PICK_USAGE: &str =
    "pick() takes a list literal of [condition, value] pairs and a default value";

/// A Float where an Int is required becomes `ToInt`, which fails at evaluation unless the value
/// is a whole number (the V1 engine computes in doubles: `args.cols / 4` is a `u32` uniform
/// when `cols` is a multiple of 4). Other types are returned unchanged, for the caller's own
/// type check. Emitters call this for V1 dispatch sizes, shapes and integer uniform fields.
pub fn to_int(x: Ir) -> Ir {
    if x.ty == Type::Float {
        let span = x.span;
        ir(IrKind::ToInt(Box::new(x)), Type::Int, span)
    } else {
        x
    }
}

/// The namespace object a `has()` first argument names, as the constructor of its members'
/// symbols.
fn namespace_object(e: &Expr) -> Option<fn(String) -> Symbol> {
    match &e.kind {
        ExprKind::Name(root) => Some(match root.as_str() {
            "args" => Symbol::Arg,
            "attrs" => Symbol::Attr,
            "dtypes" => Symbol::Dtype,
            "present" => Symbol::Present,
            "ranks" => Symbol::Rank,
            "shapes" => Symbol::Shape,
            "tensorDtypes" => Symbol::TensorDtype,
            "tunables" => Symbol::Tunable,
            _ => return None,
        }),
        ExprKind::Member { base, name, .. } if matches!(&base.kind, ExprKind::Name(d) if d == "device") => {
            match name.as_str() {
                "adapterInfo" => Some(Symbol::AdapterInfo),
                "limits" => Some(Symbol::Limit),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Checker<'_> {
    /// A value where a Bool is expected: a Bool stays as it is (unless it is a symbol that may
    /// be undefined), anything else is tested for truthiness.
    pub(super) fn truthy(&mut self, x: Ir) -> Ir {
        if x.ty == Type::Bool && !x.may_be_undefined() {
            return x;
        }
        let span = x.span;
        ir(IrKind::Truthy(Box::new(x)), Type::Bool, span)
    }

    /// `x in y` / `x not in y`. In a list literal it is `x == item or …` (`x != item and …`),
    /// so the items may be of any type comparable with `x` (strings, dtypes); in a List
    /// value, an Int; in a Str, a substring.
    pub(super) fn membership(
        &mut self,
        span: Span,
        op: BinOp,
        op_span: Span,
        lhs: &Expr,
        rhs: &Expr,
    ) -> Option<Ir> {
        let negated = op == BinOp::NotIn;
        if let ExprKind::List(items) = &rhs.kind {
            let lhs = self.expr(lhs);
            let items: Vec<Option<Ir>> = items.iter().map(|i| self.expr(i)).collect();
            let lhs = lhs?;
            let (cmp, join) = if negated {
                (BinOp::Ne, BinOp::And)
            } else {
                (BinOp::Eq, BinOp::Or)
            };
            let mut result: Option<Ir> = None;
            for item in items {
                let item = item?;
                if !comparable(lhs.ty, item.ty) {
                    self.error(
                        item.span,
                        format!(
                            "operator `{}` cannot be applied to {} and a list of {}",
                            op.symbol(),
                            lhs.ty,
                            item.ty
                        ),
                    );
                    return None;
                }
                let test = self.typed_binary(span, cmp, op_span, lhs.clone(), item)?;
                result = Some(match result {
                    None => test,
                    Some(acc) => ir(
                        IrKind::Binary(join, Box::new(acc), Box::new(test)),
                        Type::Bool,
                        span,
                    ),
                });
            }
            // Nothing is in an empty list.
            return Some(result.unwrap_or_else(|| ir(IrKind::Bool(negated), Type::Bool, span)));
        }
        let (lhs, rhs) = (self.expr(lhs), self.expr(rhs));
        let (lhs, rhs) = (lhs?, rhs?);
        let ok = matches!(
            (lhs.ty, rhs.ty),
            (Type::Int, Type::List) | (Type::Str | Type::Dtype, Type::Str)
        );
        if !ok {
            self.error(
                op_span,
                format!(
                    "operator `{}` cannot be applied to {} and {} (an Int in a List, a Str in a Str)",
                    op.symbol(),
                    lhs.ty,
                    rhs.ty
                ),
            );
            return None;
        }
        let kind = IrKind::Binary(op, Box::new(lhs), Box::new(rhs));
        Some(ir(kind, Type::Bool, span))
    }

    /// `a ~ b`: Str, Dtype (its WGSL name) or Int (decimal) operands. Floats are refused in V1:
    /// the engine and Jinja print them differently (`2` and `2.0`). The Hub runtime writes
    /// each operand as JavaScript does, so there a Float and a Bool are text too.
    pub(super) fn concat(&mut self, span: Span, lhs: Ir, rhs: Ir) -> Option<Ir> {
        let (lhs, rhs) = if self.dialect == Dialect::Hub {
            (super::hub::js_text(lhs), super::hub::js_text(rhs))
        } else {
            (lhs, rhs)
        };
        let mut ok = true;
        for side in [&lhs, &rhs] {
            if !matches!(side.ty, Type::Str | Type::Dtype | Type::Int) {
                let hint = if side.ty == Type::Float {
                    " (round a Float with ceil() or floor() first)"
                } else {
                    ""
                };
                self.error(
                    side.span,
                    format!(
                        "operator `~` joins Str, Dtype or Int values, found {}{hint}",
                        side.ty
                    ),
                );
                ok = false;
            }
        }
        ok.then(|| {
            ir(
                IrKind::Binary(BinOp::Concat, Box::new(lhs), Box::new(rhs)),
                Type::Str,
                span,
            )
        })
    }

    /// `has(namespace, "name")`: whether `namespace.name` is given, an `is defined` test. The
    /// name is resolved, so a misspelled one is an error rather than always false.
    pub(super) fn has(&mut self, span: Span, args: &[Expr]) -> Option<Ir> {
        let [object, key] = args else {
            self.error(span, HAS_USAGE);
            return None;
        };
        let Some(member) = namespace_object(object) else {
            self.error(object.span, HAS_USAGE);
            return None;
        };
        let ExprKind::Str(name) = &key.kind else {
            self.error(key.span, HAS_USAGE);
            return None;
        };
        let sym = member(name.clone());
        self.symbol(sym.clone(), key.span)?;
        Some(ir(IrKind::IsDefined(sym, false), Type::Bool, span))
    }

    /// `pick([[c1, v1], [c2, v2], …], default)`: `v1 if c1 else (v2 if c2 else … default)`.
    pub(super) fn pick(&mut self, span: Span, args: &[Expr]) -> Option<Ir> {
        let [pairs, default] = args else {
            self.error(span, PICK_USAGE);
            return None;
        };
        let ExprKind::List(entries) = &pairs.kind else {
            self.error(pairs.span, PICK_USAGE);
            return None;
        };
        let mut checked = Vec::new();
        for entry in entries {
            match &entry.kind {
                ExprKind::List(pair) if pair.len() == 2 => {
                    let cond = self.expr(&pair[0]);
                    let value = self.expr(&pair[1]);
                    checked.push((cond, value));
                }
                _ => {
                    self.error(
                        entry.span,
                        "pick(): each entry must be a [condition, value] pair",
                    );
                    checked.push((None, None));
                }
            }
        }
        let mut result = self.expr(default);
        for (cond, value) in checked.into_iter().rev() {
            let (cond, value, otherwise) = (cond?, value?, result?);
            result = self.cond_ir(span, cond, value, otherwise, "the values of pick()");
        }
        result
    }

    /// The builtins whose parameters are not [`Params::Fixed`] or [`Params::Numeric`]; `args`
    /// are checked already. Errors are pushed; the caller drops the result if there were any.
    pub(super) fn v1_call(
        &mut self,
        span: Span,
        builtin: Builtin,
        params: Params,
        mut args: Vec<Ir>,
    ) -> Option<Ir> {
        let name = builtin.name();
        let arity = match params {
            Params::NumericPair => (2, 2),
            Params::ShapeAxis => (1, 2),
            _ => (1, 1),
        };
        if args.len() < arity.0 || args.len() > arity.1 {
            let takes = match arity {
                (1, 1) => "1 argument".to_owned(),
                (a, b) if a == b => format!("{a} arguments"),
                (a, b) => format!("{a} or {b} arguments"),
            };
            self.error(
                span,
                format!("{name}() takes {takes}, found {}", args.len()),
            );
            return None;
        }
        let result = match params {
            Params::NumericPair => {
                for (i, arg) in args.iter().enumerate() {
                    self.require(name, i, arg, arg.ty.is_numeric(), "Int or Float");
                }
                let b = args.pop()?;
                let a = args.pop()?;
                let (a, b, ty) = unify_numeric(a, b);
                return Some(ir(IrKind::Call(builtin, vec![a, b]), ty, span));
            }
            Params::Rounding => {
                let ok = args[0].ty.is_numeric();
                self.require(name, 0, &args[0], ok, "Int or Float");
                Type::Int
            }
            Params::DtypeLike => {
                let ok = matches!(args[0].ty, Type::Dtype | Type::Str);
                self.require(name, 0, &args[0], ok, "Dtype or Str");
                builtin.sig().result
            }
            Params::ShapeAxis => {
                let ok = args[0].ty == Type::List;
                self.require(name, 0, &args[0], ok, "List");
                if let Some(axis) = args.get(1) {
                    self.require(name, 1, axis, axis.ty == Type::Int, "Int");
                } else {
                    // The last axis by default, spelled out so every consumer sees two args.
                    args.push(ir(IrKind::Int(-1), Type::Int, span));
                }
                Type::Int
            }
            _ => {
                self.error(
                    span,
                    format!("internal error: {name}() has no argument rule"),
                );
                return None;
            }
        };
        Some(ir(IrKind::Call(builtin, args), result, span))
    }
}

impl Checker<'_> {
    /// Reports argument `i` of `name()` unless `ok`.
    fn require(&mut self, name: &str, i: usize, arg: &Ir, ok: bool, want: &str) {
        if !ok {
            self.error(
                arg.span,
                format!(
                    "{name}(): argument {} must be {want}, found {}",
                    i + 1,
                    arg.ty
                ),
            );
        }
    }
}

/// Whether `==` may compare values of types `a` and `b`.
fn comparable(a: Type, b: Type) -> bool {
    (a.is_numeric() && b.is_numeric())
        || a == b
        || matches!((a, b), (Type::Dtype, Type::Str) | (Type::Str, Type::Dtype))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_int_wraps_only_floats() {
        let float = ir(IrKind::Float(2.0), Type::Float, Span::default());
        assert_eq!(to_int(float).ty, Type::Int);
        let list = ir(IrKind::List(Vec::new()), Type::List, Span::default());
        assert_eq!(to_int(list).ty, Type::List);
        assert!(comparable(Type::Int, Type::Float) && !comparable(Type::Int, Type::Str));
    }
}
