//! Name resolution and type checking: turns an [`Expr`] into a typed [`Ir`].
//!
//! The checker reports every error it can find in one pass. A subexpression that failed yields
//! no IR, and its parents then skip their own type checks, so one mistake produces one message
//! rather than a cascade.

use std::collections::BTreeSet;

use super::ast::{BinOp, Expr, ExprKind, UnaryOp};
use super::builtins::{Builtin, DTYPES, FEATURES, NAMESPACES, Params, SHADER_F16, known_functions};
use super::{ExprError, Span, Symbol, Type};

/// Resolves names to types: the op model implements it, tests use a fixed table.
pub trait Scope {
    /// The type of `sym`, or a message saying why it does not exist, such as
    /// ``unknown tensor role `foo` (known: input, cos_cache, …)``.
    fn resolve(&self, sym: &Symbol) -> Result<Type, String>;
}

/// A typed, resolved expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Ir {
    /// The operation.
    pub kind: IrKind,
    /// Its static type.
    pub ty: Type,
    /// The source range it came from.
    pub span: Span,
}

/// The operations of the typed IR. Operands of a `Binary` have been made the same type
/// (an Int operand meeting a Float is wrapped in `ToFloat`), except `Dtype` against `Str`.
#[derive(Debug, Clone, PartialEq)]
pub enum IrKind {
    /// An Int literal.
    Int(i64),
    /// A Float literal.
    Float(f64),
    /// A Bool literal.
    Bool(bool),
    /// A Str literal.
    Str(String),
    /// A list literal (every item is Int).
    List(Vec<Ir>),
    /// A resolved name.
    Sym(Symbol),
    /// `device.features.has("<name>")`.
    Feature(String),
    /// `sym is defined` (`negated`: `is not defined` / `is undefined`).
    IsDefined(Symbol, bool),
    /// A builtin call.
    Call(Builtin, Vec<Ir>),
    /// `list | length`.
    Length(Box<Ir>),
    /// `list[index]`.
    Index(Box<Ir>, Box<Ir>),
    /// Int → Float promotion, inserted by the checker.
    ToFloat(Box<Ir>),
    /// `-x` or `not x`.
    Unary(UnaryOp, Box<Ir>),
    /// A binary operation, including `and` / `or`.
    Binary(BinOp, Box<Ir>, Box<Ir>),
    /// `then if cond else otherwise`, stored as (cond, then, otherwise).
    Cond(Box<Ir>, Box<Ir>, Box<Ir>),
}

impl Ir {
    /// The direct operands.
    pub fn children(&self) -> Vec<&Ir> {
        match &self.kind {
            IrKind::Int(_)
            | IrKind::Float(_)
            | IrKind::Bool(_)
            | IrKind::Str(_)
            | IrKind::Sym(_)
            | IrKind::Feature(_)
            | IrKind::IsDefined(..) => Vec::new(),
            IrKind::List(items) | IrKind::Call(_, items) => items.iter().collect(),
            IrKind::Length(x) | IrKind::ToFloat(x) | IrKind::Unary(_, x) => vec![x],
            IrKind::Index(a, b) | IrKind::Binary(_, a, b) => vec![a, b],
            IrKind::Cond(c, t, o) => vec![c, t, o],
        }
    }

    /// Every symbol the expression reads, including those only tested with `is defined`.
    /// Derived symbols are listed, not expanded.
    pub fn symbols(&self) -> BTreeSet<Symbol> {
        let mut out = BTreeSet::new();
        self.walk(&mut |ir| match &ir.kind {
            IrKind::Sym(s) | IrKind::IsDefined(s, _) => {
                out.insert(s.clone());
            }
            _ => {}
        });
        out
    }

    /// Every device feature the expression asks about, including `shader-f16` for `f16Ok`.
    pub fn features(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.walk(&mut |ir| match &ir.kind {
            IrKind::Feature(name) => {
                out.insert(name.clone());
            }
            IrKind::Call(Builtin::F16Ok, _) => {
                out.insert(SHADER_F16.to_owned());
            }
            _ => {}
        });
        out
    }

    /// Calls `f` on this node and every descendant, parents first.
    pub fn walk(&self, f: &mut dyn FnMut(&Ir)) {
        f(self);
        for child in self.children() {
            child.walk(f);
        }
    }
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

/// How each namespace root continues, for "must be followed by" messages.
fn namespace_hint(root: &str) -> &'static str {
    match root {
        "shapes" => "shapes.<role>",
        "ranks" => "ranks.<role>",
        "dtypes" => "dtypes.<typevar>",
        "attrs" => "attrs.<name>",
        "tunables" => "tunables.<NAME>",
        _ => "device.limits.<limitName> or device.features.has(\"<feature>\")",
    }
}

fn ir(kind: IrKind, ty: Type, span: Span) -> Ir {
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

struct Checker<'a> {
    scope: &'a dyn Scope,
    errors: Vec<ExprError>,
}

impl Checker<'_> {
    fn error(&mut self, span: Span, message: impl Into<String>) {
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

    /// A bare identifier: a `derive` reference (namespace roots alone are errors).
    fn name(&mut self, span: Span, name: &str) -> Option<Ir> {
        if NAMESPACES.contains(&name) {
            self.error(
                span,
                format!(
                    "`{name}` must be followed by a member: {}",
                    namespace_hint(name)
                ),
            );
            return None;
        }
        let sym = Symbol::Derived(name.to_owned());
        if Builtin::lookup(name).is_some() && self.scope.resolve(&sym).is_err() {
            self.error(
                span,
                format!("`{name}` is a function: call it as `{name}(…)`"),
            );
            return None;
        }
        self.symbol(sym, span)
    }

    fn member(&mut self, e: &Expr) -> Option<Ir> {
        match self.path(e) {
            Ok(sym) => self.symbol(sym, e.span),
            Err(err) => {
                self.errors.push(err);
                None
            }
        }
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

    /// Asks the scope for the type of `sym`.
    fn symbol(&mut self, sym: Symbol, span: Span) -> Option<Ir> {
        match self.scope.resolve(&sym) {
            Ok(ty) => Some(ir(IrKind::Sym(sym), ty, span)),
            Err(message) => {
                self.error(span, message);
                None
            }
        }
    }

    /// Resolves a member chain such as `shapes.input` or `device.limits.maxBufferSize`.
    fn path(&self, e: &Expr) -> Result<Symbol, ExprError> {
        let ExprKind::Member {
            base,
            name,
            name_span,
        } = &e.kind
        else {
            return Err(ExprError::new(e.span, "expected a name"));
        };
        let name = name.clone();
        match &base.kind {
            ExprKind::Name(root) => match root.as_str() {
                "shapes" => Ok(Symbol::Shape(name)),
                "ranks" => Ok(Symbol::Rank(name)),
                "dtypes" => Ok(Symbol::Dtype(name)),
                "attrs" => Ok(Symbol::Attr(name)),
                "tunables" => Ok(Symbol::Tunable(name)),
                "device" => Err(ExprError::new(
                    e.span,
                    match name.as_str() {
                        "limits" => "`device.limits` must be followed by a limit name, e.g. \
                                     `device.limits.maxComputeWorkgroupsPerDimension`"
                            .to_owned(),
                        "features" => FEATURES_USAGE.to_owned(),
                        _ => format!(
                            "unknown member `device.{name}` (known: device.features, device.limits)"
                        ),
                    },
                )),
                _ => Err(ExprError::new(
                    base.span,
                    format!(
                        "unknown namespace `{root}` (known: {})",
                        NAMESPACES.join(", ")
                    ),
                )),
            },
            ExprKind::Member {
                base: inner,
                name: middle,
                ..
            } if matches!(&inner.kind, ExprKind::Name(d) if d == "device") => match middle.as_str()
            {
                "limits" => Ok(Symbol::Limit(name)),
                "features" => Err(ExprError::new(e.span, FEATURES_USAGE)),
                _ => Err(ExprError::new(
                    base.span,
                    format!(
                        "unknown member `device.{middle}` (known: device.features, device.limits)"
                    ),
                )),
            },
            _ => Err(ExprError::new(
                *name_span,
                format!(
                    "member `.{name}` cannot be used here: only the namespaces {} have members",
                    NAMESPACES.join(", ")
                ),
            )),
        }
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

    /// `device.features.<method>(args)`: only `has("<known feature>")`.
    fn feature(&mut self, span: Span, method: &str, args: &[Expr]) -> Option<Ir> {
        if method != "has" {
            self.error(
                span,
                format!("unknown method `device.features.{method}` (known: has)"),
            );
            return None;
        }
        let [arg] = args else {
            self.error(span, FEATURES_USAGE);
            return None;
        };
        let ExprKind::Str(feature) = &arg.kind else {
            self.error(arg.span, FEATURES_USAGE);
            return None;
        };
        if !FEATURES.contains(&feature.as_str()) {
            self.error(
                arg.span,
                format!(
                    "unknown device feature `{feature}` (known: {})",
                    FEATURES.join(", ")
                ),
            );
            return None;
        }
        Some(ir(IrKind::Feature(feature.clone()), Type::Bool, span))
    }

    fn test(
        &mut self,
        span: Span,
        value: &Expr,
        name: &str,
        name_span: Span,
        negated: bool,
        args: &[Expr],
    ) -> Option<Ir> {
        let negated = match name {
            "defined" => negated,
            "undefined" => !negated,
            _ => {
                self.error(
                    name_span,
                    format!("unknown test `{name}` (known: defined, undefined)"),
                );
                return None;
            }
        };
        if !args.is_empty() {
            self.error(name_span, format!("test `{name}` takes no arguments"));
            return None;
        }
        let sym = match &value.kind {
            ExprKind::Name(n) if !NAMESPACES.contains(&n.as_str()) => Symbol::Derived(n.clone()),
            ExprKind::Member { .. } => match self.path(value) {
                Ok(sym) => sym,
                Err(err) => {
                    self.errors.push(err);
                    return None;
                }
            },
            _ => {
                self.error(
                    value.span,
                    format!("`is {name}` applies to a name such as `attrs.<name>`"),
                );
                return None;
            }
        };
        // Resolve anyway: testing a misspelled attribute should fail, not silently be false.
        self.symbol(sym.clone(), value.span)?;
        Some(ir(IrKind::IsDefined(sym, negated), Type::Bool, span))
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

/// How `device.features` must be used.
const FEATURES_USAGE: &str = "`device.features` can only be used as `device.features.has(\"<feature>\")` with a string literal";

/// Whether `e` is exactly `device.features`.
fn is_device_features(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Member { base, name, .. }
        if name == "features" && matches!(&base.kind, ExprKind::Name(d) if d == "device"))
}
