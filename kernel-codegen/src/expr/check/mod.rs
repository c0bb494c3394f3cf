//! Reading an expression in its dialect: lexing and parsing (`lexer.rs`, `parser.rs`), names
//! (`names.rs`), the builtin table (`builtins.rs`) and type checking, which turns an [`Expr`]
//! into a typed [`Ir`]: here, with what only the Jinja dialects have (truthiness, `in`, `~`,
//! their builtins) in `v1.rs`, the Hub's departures in `hub.rs` and lists in `lists.rs`.
//! This folder and the front end are the only code that names the [`Dialect`].
//!
//! The checker reports every error it can find in one pass. A subexpression that failed yields
//! no IR, and its parents then skip their own type checks, so one mistake produces one message
//! rather than a cascade.

pub mod builtins;
mod dialect;
mod hub;
mod lexer;
mod lists;
mod names;
mod parser;
mod v1;

pub use dialect::Dialect;
pub use names::DISPATCH_FOLD_WIDTH;
pub use parser::{parse, parse_in};
pub use v1::to_int;

use super::ast::{BinOp, Comparison, Expr, ExprKind, UnaryOp};
use super::{ExprError, Ir, IrKind, Span, Symbol, Type};
use builtins::{Builtin, Params, dtypes, known_functions_in};

/// Why a [`Scope`] has no type for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// The name does not exist here; the message says so and what does, such as
    /// ``unknown tensor role `foo` (known: input, cos_cache, …)``.
    Unknown(String),
    /// The name is a `derive` entry (or another value) that failed to check, whose own errors
    /// were reported: the expressions that read it fail without a message of their own.
    Failed,
}

impl From<String> for Unresolved {
    fn from(message: String) -> Self {
        Unresolved::Unknown(message)
    }
}

/// Resolves names to types: the op model implements it, tests use a fixed table.
pub trait Scope {
    /// The type of `sym`, or why it has none.
    fn resolve(&self, sym: &Symbol) -> Result<Type, Unresolved>;

    /// The dialect the expressions are written in; decides parsing-independent semantics
    /// (truthiness, `/`, negative axes, the V1 names and builtins), which the IR then spells
    /// out for evaluation and lowering.
    fn dialect(&self) -> Dialect {
        Dialect::Seed
    }

    /// For a Str symbol with a closed set of values (a `string` argument's `oneOf`), those
    /// values: comparing the symbol with a string literal outside them is then an error, as a
    /// misspelled value would otherwise make the comparison silently false.
    fn string_values(&self, sym: &Symbol) -> Option<Vec<String>> {
        let _ = sym;
        None
    }
}

/// Resolves and type-checks `expr`, returning every error found: none where it fails only
/// by reading names that failed to check ([`Unresolved::Failed`]), whose errors are reported
/// where they are defined.
pub fn check(expr: &Expr, scope: &dyn Scope) -> Result<Ir, Vec<ExprError>> {
    let mut checker = Checker {
        scope,
        dialect: scope.dialect(),
        errors: Vec::new(),
        read_failed: false,
    };
    let ir = checker.expr(expr);
    match ir {
        Some(ir) if checker.errors.is_empty() => Ok(ir),
        Some(_) => Err(checker.errors),
        None if checker.errors.is_empty() && !checker.read_failed => Err(vec![ExprError::new(
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
pub(super) fn promote(x: Ir) -> Ir {
    if x.ty == Type::Int {
        let span = x.span;
        ir(IrKind::ToFloat(Box::new(x)), Type::Float, span)
    } else {
        x
    }
}

/// Brings two numeric operands to a common type (Float if either is Float).
pub(super) fn unify_numeric(a: Ir, b: Ir) -> (Ir, Ir, Type) {
    if a.ty == Type::Float || b.ty == Type::Float {
        (promote(a), promote(b), Type::Float)
    } else {
        (a, b, Type::Int)
    }
}

/// The checker's state: the scope and the errors found so far.
pub(super) struct Checker<'a> {
    pub(super) scope: &'a dyn Scope,
    pub(super) dialect: Dialect,
    pub(super) errors: Vec<ExprError>,
    /// Whether the expression read a name the scope calls [`Unresolved::Failed`]: it then
    /// fails with only the errors of its own, if any.
    pub(super) read_failed: bool,
}

impl Checker<'_> {
    pub(super) fn error(&mut self, span: Span, message: impl Into<String>) {
        self.errors.push(ExprError::new(span, message));
    }

    /// Checks one node. This only dispatches: each kind has its own method so that this
    /// recursive function keeps a small stack frame (debug builds do not share frame slots
    /// between match arms, and deep `a and b and …` chains recurse through here).
    pub(super) fn expr(&mut self, e: &Expr) -> Option<Ir> {
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
            ExprKind::Slice { base, start, end } => {
                self.slice(span, base, start.as_deref(), end.as_deref())
            }
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
            ExprKind::Compare { first, rest } => self.chain(first, rest),
            ExprKind::Cond {
                cond,
                then,
                otherwise,
            } => self.cond(span, cond, then, otherwise),
        }
    }

    fn unary(&mut self, span: Span, op: UnaryOp, operand: &Expr) -> Option<Ir> {
        let mut operand = self.expr(operand)?;
        if op == UnaryOp::Not && self.dialect.is_jinja() {
            operand = self.truthy(operand);
        }
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
        self.cond_ir(
            span,
            cond,
            then,
            otherwise,
            "the branches of `… if … else …`",
        )
    }

    /// `then if cond else otherwise` from checked parts; `what` names the branches in the
    /// error for mismatched types (`pick()` reuses this).
    pub(super) fn cond_ir(
        &mut self,
        span: Span,
        cond: Ir,
        then: Ir,
        otherwise: Ir,
        what: &str,
    ) -> Option<Ir> {
        let cond = if self.dialect.is_jinja() {
            self.truthy(cond)
        } else {
            cond
        };
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
        } else if self.dialect.is_jinja()
            && matches!(
                (then.ty, otherwise.ty),
                (Type::Str, Type::Dtype) | (Type::Dtype, Type::Str)
            )
        {
            // To the engine a dtype is the string of its WGSL name (`"vec4<" ~ T ~ ">"` or
            // `T`); both lower to `&str`.
            (then, otherwise, Type::Str)
        } else {
            self.error(
                span,
                format!(
                    "{what} have different types: {} and {}",
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
        if let ExprKind::Name(fname) = &callee.kind {
            // `has` and `pick` take arguments that are not values on their own.
            match Builtin::lookup_in(fname, self.dialect) {
                Some(Builtin::Has) => return self.has(span, args),
                Some(Builtin::Pick) => return self.pick(span, args),
                _ => {}
            }
        }
        let args: Vec<Option<Ir>> = args.iter().map(|a| self.expr(a)).collect();
        let ExprKind::Name(fname) = &callee.kind else {
            self.error(
                callee.span,
                "only builtin functions and `device.features.has(…)` can be called",
            );
            return None;
        };
        let Some(builtin) = Builtin::lookup_in(fname, self.dialect) else {
            self.error(
                callee.span,
                format!(
                    "unknown function `{fname}` (known: {})",
                    known_functions_in(self.dialect)
                ),
            );
            return None;
        };
        // V1's engine counts a negative axis from the end.
        let builtin = if self.dialect.is_jinja() {
            builtin.wrapping_axes()
        } else {
            builtin
        };
        let args: Vec<Ir> = args.into_iter().collect::<Option<_>>()?;
        let errors_before = self.errors.len();
        let params = match builtin.sig().params {
            // V1's `f16Ok` also takes a tensor dtype string, as its engine does.
            Params::Fixed(_) if builtin == Builtin::F16Ok && self.dialect.is_jinja() => {
                Params::DtypeLike
            }
            params => params,
        };
        let result = match params {
            // The engines' `ceilDiv(a, b)` is `ceil(a / b)` of whatever numbers it is given.
            Params::Fixed(_)
                if builtin == Builtin::CeilDiv
                    && self.dialect.is_jinja()
                    && args.len() == 2
                    && args.iter().all(|a| a.ty.is_numeric())
                    && args.iter().any(|a| a.ty == Type::Float) =>
            {
                let mut args = args.into_iter().map(promote);
                let (a, b) = (args.next()?, args.next()?);
                let quotient = ir(
                    IrKind::Binary(BinOp::Div, Box::new(a), Box::new(b)),
                    Type::Float,
                    span,
                );
                ir(IrKind::Call(Builtin::Ceil, vec![quotient]), Type::Int, span)
            }
            Params::Fixed(types) => {
                let args: Vec<Ir> = if self.dialect.is_jinja() {
                    // The engines' numbers are doubles: a whole Float (a derive `n / 2`
                    // reused) is the Int argument it stands for; one that is not whole fails
                    // when evaluated, saying so.
                    (args.into_iter().enumerate())
                        .map(|(i, arg)| match types.get(i) {
                            Some(Type::Int) => to_int(arg),
                            _ => arg,
                        })
                        .collect()
                } else {
                    args
                };
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
            _ => self.v1_call(span, builtin, params, args)?,
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
        if matches!(op, BinOp::In | BinOp::NotIn) {
            return self.membership(span, op, op_span, lhs, rhs);
        }
        let lhs = self.expr(lhs);
        let rhs = self.expr(rhs);
        match op {
            BinOp::And | BinOp::Or => self.logical(span, op, lhs, rhs),
            BinOp::Concat => self.concat(span, lhs?, rhs?),
            // Jinja's `+` of two lists joins them (`prefix(shapes.x, 2) + [1]`).
            BinOp::Add
                if self.dialect.is_jinja()
                    && [&lhs, &rhs]
                        .iter()
                        .all(|side| side.as_ref().is_some_and(|s| s.ty == Type::List)) =>
            {
                Some(ir(
                    IrKind::Call(Builtin::ListConcat, vec![lhs?, rhs?]),
                    Type::List,
                    span,
                ))
            }
            _ => self.typed_binary(span, op, op_span, lhs?, rhs?),
        }
    }

    /// A comparison chain `a < b <= c`: the conjunction `a < b and b <= c` of its links, each
    /// checked as the single comparison it is (its errors point at its operator and its own
    /// operands). An operand between two operators is checked once per link, so what is wrong
    /// inside it is reported once, not once per link; the IR reads it twice, which is the same
    /// value as Jinja's single evaluation since expressions have no side effects.
    fn chain(&mut self, first: &Expr, rest: &[Comparison]) -> Option<Ir> {
        if self.dialect == Dialect::Hub && self.hub_refuses_chain(rest) {
            return None;
        }
        let errors_before = self.errors.len();
        let mut lhs = first;
        let mut links = Vec::with_capacity(rest.len());
        for Comparison { op, op_span, rhs } in rest {
            links.push(self.binary(lhs.span.to(rhs.span), *op, *op_span, lhs, rhs));
            lhs = rhs;
        }
        for error in self.errors.split_off(errors_before) {
            if !self.errors[errors_before..].contains(&error) {
                self.errors.push(error);
            }
        }
        let mut links = links.into_iter().collect::<Option<Vec<Ir>>>()?.into_iter();
        let first = links.next()?;
        Some(links.fold(first, |acc, link| {
            let span = acc.span.to(link.span);
            ir(
                IrKind::Binary(BinOp::And, Box::new(acc), Box::new(link)),
                Type::Bool,
                span,
            )
        }))
    }

    /// `and` / `or`: both sides must be Bool (in V1 any value, tested for truthiness). Each
    /// non-Bool side is reported, even when the other side failed to check.
    fn logical(&mut self, span: Span, op: BinOp, lhs: Option<Ir>, rhs: Option<Ir>) -> Option<Ir> {
        if self.dialect == Dialect::Hub
            && let (Some(l), Some(r)) = (&lhs, &rhs)
            && (l.ty != Type::Bool || r.ty != Type::Bool)
        {
            return self.hub_operand_logic(span, op, l.clone(), r.clone());
        }
        let (lhs, rhs) = if self.dialect.is_jinja() {
            (lhs.map(|l| self.truthy(l)), rhs.map(|r| self.truthy(r)))
        } else {
            (lhs, rhs)
        };
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
    pub(super) fn typed_binary(
        &mut self,
        span: Span,
        op: BinOp,
        op_span: Span,
        lhs: Ir,
        rhs: Ir,
    ) -> Option<Ir> {
        if lhs.ty.is_numeric() && rhs.ty.is_numeric() {
            let (lhs, rhs, ty) = if op == BinOp::Div && self.dialect.is_jinja() {
                // True division: `7 / 2` is 3.5, as in Jinja and the engine.
                (promote(lhs), promote(rhs), Type::Float)
            } else {
                unify_numeric(lhs, rhs)
            };
            let ty = if op.is_arithmetic() { ty } else { Type::Bool };
            if op == BinOp::Rem && self.dialect == Dialect::Hub {
                return Some(self.hub_remainder(span, lhs, rhs, ty));
            }
            return Some(ir(self.binary_kind(op, lhs, rhs), ty, span));
        }
        if self.dialect == Dialect::Hub && self.hub_refuses_list_equality(op, op_span, &lhs, &rhs) {
            return None;
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
        let known = dtypes(self.dialect);
        for (a, b) in [(&lhs, &rhs), (&rhs, &lhs)] {
            if let (Type::Dtype, IrKind::Str(s)) = (a.ty, &b.kind)
                && !known.contains(&s.as_str())
            {
                self.error(
                    b.span,
                    format!("\"{s}\" is not a dtype (known: {})", known.join(", ")),
                );
                return None;
            }
        }
        // So would a misspelled value of a `oneOf` string argument.
        for (a, b) in [(&lhs, &rhs), (&rhs, &lhs)] {
            if let (IrKind::Sym(sym), IrKind::Str(s)) = (&a.kind, &b.kind)
                && let Some(values) = self.scope.string_values(sym)
                && !values.contains(s)
            {
                self.error(
                    b.span,
                    format!(
                        "\"{s}\" is not a value of `{sym}` (one of: {})",
                        values.join(", ")
                    ),
                );
                return None;
            }
        }
        Some(ir(self.binary_kind(op, lhs, rhs), Type::Bool, span))
    }

    /// A checked binary operation; a comparison in V1 is a [`IrKind::LooseCompare`], where an
    /// undefined operand is a value rather than an error. The Hub runtime's Jinja
    /// (@huggingface/jinja) compares an undefined operand only with `==` and `!=` and throws
    /// "Cannot perform operation on undefined values" for `<`, `<=`, `>`, `>=`, so there an
    /// ordering is strict: an error, not a false that `not` or `or` could turn into a pass.
    fn binary_kind(&self, op: BinOp, lhs: Ir, rhs: Ir) -> IrKind {
        let ordering = !matches!(op, BinOp::Eq | BinOp::Ne);
        if op.is_comparison()
            && self.dialect.is_jinja()
            && !(ordering && self.dialect == Dialect::Hub)
        {
            IrKind::LooseCompare(op, Box::new(lhs), Box::new(rhs))
        } else {
            IrKind::Binary(op, Box::new(lhs), Box::new(rhs))
        }
    }
}

/// Whether `e` is exactly `device.features`.
pub(super) fn is_device_features(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Member { base, name, .. }
        if name == "features" && matches!(&base.kind, ExprKind::Name(d) if d == "device"))
}
