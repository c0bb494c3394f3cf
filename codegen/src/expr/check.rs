//! Type checking: turns an [`Expr`] into a typed [`Ir`] (name resolution is in `names.rs`).
//!
//! The checker reports every error it can find in one pass. A subexpression that failed yields
//! no IR, and its parents then skip their own type checks, so one mistake produces one message
//! rather than a cascade.

use super::ast::{BinOp, Expr, ExprKind, UnaryOp};
use super::builtins::{Builtin, DTYPES, Params, known_functions};
use super::names::is_device_features;
use super::{ExprError, Ir, IrKind, Span, Symbol, Type};

/// Resolves names to types: the op model implements it, tests use a fixed table.
pub trait Scope {
    /// The type of `sym`, or a message saying why it does not exist, such as
    /// ``unknown tensor role `foo` (known: input, cos_cache, …)``.
    fn resolve(&self, sym: &Symbol) -> Result<Type, String>;
}

/// Resolves and type-checks `expr`, returning every error found.
pub fn check(expr: &Expr, scope: &dyn Scope) -> Result<Ir, Vec<ExprError>> {
    let mut checker = Checker {
        scope,
        errors: Vec::new(),
    };
    let ir = checker.expr(expr);
    match ir {
        Some(ir) if checker.errors.is_empty() => Ok(ir),
        Some(_) => Err(checker.errors),
        None if checker.errors.is_empty() => Err(vec![ExprError::new(
            expr.span,
            "internal error: expression failed to check without a message",
        )]),
        None => Err(checker.errors),
    }
}

/// Builds an IR node.
pub(super) fn ir(kind: IrKind, ty: Type, span: Span) -> Ir {
    Ir { kind, ty, span }
}

/// Wraps an Int in `ToFloat`; leaves anything else alone.
fn promote(x: Ir) -> Ir {
    if x.ty == Type::Int {
        let span = x.span;
        ir(IrKind::ToFloat(Box::new(x)), Type::Float, span)
    } else {
        x
    }
}

/// Brings two numeric operands to a common type (Float if either is Float).
fn unify_numeric(a: Ir, b: Ir) -> (Ir, Ir, Type) {
    if a.ty == Type::Float || b.ty == Type::Float {
        (promote(a), promote(b), Type::Float)
    } else {
        (a, b, Type::Int)
    }
}

/// The checker's state: the scope and the errors found so far.
pub(super) struct Checker<'a> {
    pub(super) scope: &'a dyn Scope,
    pub(super) errors: Vec<ExprError>,
}

impl Checker<'_> {
    pub(super) fn error(&mut self, span: Span, message: impl Into<String>) {
        self.errors.push(ExprError::new(span, message));
    }

    /// Checks one node. This only dispatches: each kind has its own method so that this
    /// recursive function keeps a small stack frame (debug builds do not share frame slots
    /// between match arms, and deep `a and b and …` chains recurse through here).
    fn expr(&mut self, e: &Expr) -> Option<Ir> {
        let span = e.span;
        match &e.kind {
            ExprKind::Int(v) => Some(ir(IrKind::Int(*v), Type::Int, span)),
            ExprKind::Float(v) => Some(ir(IrKind::Float(*v), Type::Float, span)),
            ExprKind::Bool(v) => Some(ir(IrKind::Bool(*v), Type::Bool, span)),
            ExprKind::Str(v) => Some(ir(IrKind::Str(v.clone()), Type::Str, span)),
            ExprKind::List(items) => self.list(span, items),
            ExprKind::Name(name) => self.name(span, name),
            ExprKind::Member { .. } => self.member(e),
            ExprKind::Index { base, index } => self.index(span, base, index),
            ExprKind::Call { callee, args } => self.call(span, callee, args),
            ExprKind::Filter {
                value,
                name,
                name_span,
                args,
            } => self.filter(span, value, name, *name_span, args),
            ExprKind::Test {
                value,
                name,
                name_span,
                negated,
                args,
            } => self.test(span, value, name, *name_span, *negated, args),
            ExprKind::Unary { op, operand } => self.unary(span, *op, operand),
            ExprKind::Binary {
                op,
                op_span,
                lhs,
                rhs,
            } => self.binary(span, *op, *op_span, lhs, rhs),
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => self.cond(span, cond, then, otherwise),
        }
    }

    fn list(&mut self, span: Span, items: &[Expr]) -> Option<Ir> {
        let items: Vec<Option<Ir>> = items.iter().map(|i| self.expr(i)).collect();
        let mut ok = Vec::new();
        for item in items {
            let item = item?;
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

    fn index(&mut self, span: Span, base: &Expr, index: &Expr) -> Option<Ir> {
        let (base, index) = (self.expr(base), self.expr(index));
        let (base, index) = (base?, index?);
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

    fn filter(
        &mut self,
        span: Span,
        value: &Expr,
        name: &str,
        name_span: Span,
        args: &[Expr],
    ) -> Option<Ir> {
        let value = self.expr(value);
        let args: Vec<Option<Ir>> = args.iter().map(|a| self.expr(a)).collect();
        if name != "length" {
            self.error(
                name_span,
                format!("unknown filter `{name}` (known: length)"),
            );
            return None;
        }
        if !args.is_empty() {
            self.error(name_span, "filter `length` takes no arguments");
            return None;
        }
        let value = value?;
        if value.ty != Type::List {
            self.error(
                value.span,
                format!("filter `length` applies to a List, found {}", value.ty),
            );
            return None;
        }
        Some(ir(IrKind::Length(Box::new(value)), Type::Int, span))
    }

    fn unary(&mut self, span: Span, op: UnaryOp, operand: &Expr) -> Option<Ir> {
        let operand = self.expr(operand)?;
        let ok = match op {
            UnaryOp::Neg => operand.ty.is_numeric(),
            UnaryOp::Not => operand.ty == Type::Bool,
        };
        if !ok {
            let msg = match op {
                UnaryOp::Neg => format!(
                    "unary `-` requires an Int or Float operand, found {}",
                    operand.ty
                ),
                UnaryOp::Not => format!("`not` requires a Bool operand, found {}", operand.ty),
            };
            self.error(operand.span, msg);
            return None;
        }
        let ty = operand.ty;
        Some(ir(IrKind::Unary(op, Box::new(operand)), ty, span))
    }

    fn cond(&mut self, span: Span, cond: &Expr, then: &Expr, otherwise: &Expr) -> Option<Ir> {
        let (cond, then, otherwise) = (self.expr(cond), self.expr(then), self.expr(otherwise));
        let (cond, then, otherwise) = (cond?, then?, otherwise?);
        if cond.ty != Type::Bool {
            self.error(
                cond.span,
                format!("a condition must be Bool, found {}", cond.ty),
            );
            return None;
        }
        let (then, otherwise, ty) = if then.ty == otherwise.ty {
            let ty = then.ty;
            (then, otherwise, ty)
        } else if then.ty.is_numeric() && otherwise.ty.is_numeric() {
            unify_numeric(then, otherwise)
        } else {
            self.error(
                span,
                format!(
                    "the branches of `… if … else …` have different types: {} and {}",
                    then.ty, otherwise.ty
                ),
            );
            return None;
        };
        let kind = IrKind::Cond(Box::new(cond), Box::new(then), Box::new(otherwise));
        Some(ir(kind, ty, span))
    }

    fn call(&mut self, span: Span, callee: &Expr, args: &[Expr]) -> Option<Ir> {
        if let ExprKind::Member { base, name, .. } = &callee.kind
            && is_device_features(base)
        {
            return self.feature(span, name, args);
        }
        let args: Vec<Option<Ir>> = args.iter().map(|a| self.expr(a)).collect();
        let ExprKind::Name(fname) = &callee.kind else {
            self.error(
                callee.span,
                "only builtin functions and `device.features.has(…)` can be called",
            );
            return None;
        };
        let Some(builtin) = Builtin::lookup(fname) else {
            self.error(
                callee.span,
                format!("unknown function `{fname}` (known: {})", known_functions()),
            );
            return None;
        };
        let args: Vec<Ir> = args.into_iter().collect::<Option<_>>()?;
        let errors_before = self.errors.len();
        let result = match builtin.sig().params {
            Params::Fixed(types) => {
                if args.len() != types.len() {
                    let plural = if types.len() == 1 { "" } else { "s" };
                    self.error(
                        span,
                        format!(
                            "{fname}() takes {} argument{plural}, found {}",
                            types.len(),
                            args.len()
                        ),
                    );
                    return None;
                }
                for (i, (arg, want)) in args.iter().zip(types).enumerate() {
                    if arg.ty != *want {
                        self.error(
                            arg.span,
                            format!(
                                "{fname}(): argument {} must be {want}, found {}",
                                i + 1,
                                arg.ty
                            ),
                        );
                    }
                }
                ir(IrKind::Call(builtin, args), builtin.sig().result, span)
            }
            Params::Numeric(min) => {
                if args.len() < min {
                    self.error(
                        span,
                        format!(
                            "{fname}() takes at least {min} arguments, found {}",
                            args.len()
                        ),
                    );
                    return None;
                }
                for (i, arg) in args.iter().enumerate() {
                    if !arg.ty.is_numeric() {
                        self.error(
                            arg.span,
                            format!(
                                "{fname}(): argument {} must be Int or Float, found {}",
                                i + 1,
                                arg.ty
                            ),
                        );
                    }
                }
                let float = args.iter().any(|a| a.ty == Type::Float);
                let (args, ty) = if float {
                    (args.into_iter().map(promote).collect(), Type::Float)
                } else {
                    (args, Type::Int)
                };
                ir(IrKind::Call(builtin, args), ty, span)
            }
        };
        (self.errors.len() == errors_before).then_some(result)
    }

    fn binary(
        &mut self,
        span: Span,
        op: BinOp,
        op_span: Span,
        lhs: &Expr,
        rhs: &Expr,
    ) -> Option<Ir> {
        let lhs = self.expr(lhs);
        let rhs = self.expr(rhs);
        if matches!(op, BinOp::And | BinOp::Or) {
            self.logical(span, op, lhs, rhs)
        } else {
            self.typed_binary(span, op, op_span, lhs?, rhs?)
        }
    }

    /// `and` / `or`: both sides must be Bool. Each non-Bool side is reported, even when the
    /// other side failed to check.
    fn logical(&mut self, span: Span, op: BinOp, lhs: Option<Ir>, rhs: Option<Ir>) -> Option<Ir> {
        for side in [&lhs, &rhs].into_iter().flatten() {
            if side.ty != Type::Bool {
                self.error(
                    side.span,
                    format!(
                        "`{}` requires Bool operands, found {}",
                        op.symbol(),
                        side.ty
                    ),
                );
            }
        }
        let (lhs, rhs) = (lhs?, rhs?);
        if lhs.ty != Type::Bool || rhs.ty != Type::Bool {
            return None;
        }
        Some(ir(
            IrKind::Binary(op, Box::new(lhs), Box::new(rhs)),
            Type::Bool,
            span,
        ))
    }

    /// Arithmetic and comparisons.
    fn typed_binary(
        &mut self,
        span: Span,
        op: BinOp,
        op_span: Span,
        lhs: Ir,
        rhs: Ir,
    ) -> Option<Ir> {
        if lhs.ty.is_numeric() && rhs.ty.is_numeric() {
            let (lhs, rhs, ty) = unify_numeric(lhs, rhs);
            let ty = if op.is_arithmetic() { ty } else { Type::Bool };
            return Some(ir(
                IrKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                ty,
                span,
            ));
        }
        let comparable = matches!(op, BinOp::Eq | BinOp::Ne)
            && (lhs.ty == rhs.ty
                || matches!(
                    (lhs.ty, rhs.ty),
                    (Type::Dtype, Type::Str) | (Type::Str, Type::Dtype)
                ));
        if !comparable {
            self.error(
                op_span,
                format!(
                    "operator `{}` cannot be applied to {} and {}",
                    op.symbol(),
                    lhs.ty,
                    rhs.ty
                ),
            );
            return None;
        }
        // A misspelled dtype (`dtypes.T == "float16"`) would silently always be false.
        for (a, b) in [(&lhs, &rhs), (&rhs, &lhs)] {
            if let (Type::Dtype, IrKind::Str(s)) = (a.ty, &b.kind)
                && !DTYPES.contains(&s.as_str())
            {
                self.error(
                    b.span,
                    format!("\"{s}\" is not a dtype (known: {})", DTYPES.join(", ")),
                );
                return None;
            }
        }
        Some(ir(
            IrKind::Binary(op, Box::new(lhs), Box::new(rhs)),
            Type::Bool,
            span,
        ))
    }
}
