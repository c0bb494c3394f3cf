//! Lowers typed IR to a Rust expression (`quote` tokens) for the generated crate.
//!
//! Contract: the tokens are evaluated inside a function returning
//! `Result<_, <runtime>::expr::EvalError>` (they use `?`). Their Rust type by IR type:
//! Int → `i64`, Float → `f64`, Bool → `bool`, Str and Dtype → `&str` (`&'static str` in the
//! seed dialect), and List → `Vec<i64>` (owned, because a computed list such as `[outer(…) * 2]`
//! cannot be returned by reference). Inside the expression, lists are passed to the runtime as
//! `&[i64]`. In V1 a Str built by `~` (or a conditional with such a branch) is a `String`
//! ([`is_owned_str`] tells which).
//!
//! The [`LowerScope`] supplies the tokens for names. Symbol tokens must be an expression that
//! binds at least as tightly as a unary operator (a path, field access, call, `x?`, `&x`, `*x`),
//! and evaluate to the Rust type of the symbol's IR type, except List symbols, which evaluate
//! to `&[i64]`. The V1 parts (truthiness, `~`, `in`, its builtins) are in `lower_v1.rs`.
//!
//! The emitter tracks Rust operator precedence and adds parentheses only where they are needed,
//! so the output compiles without `unused_parens` warnings. Integer arithmetic calls checked
//! runtime functions; `and` / `or` / `if` stay native so they short-circuit as in the language.

use proc_macro2::{Ident, Literal, Span as TokenSpan, TokenStream};
use quote::quote;

use super::ast::{BinOp, UnaryOp};
use super::builtins::{Builtin, Lowering, SHADER_F16};
use super::{Ir, IrKind, Symbol, Type};

/// Supplies the Rust tokens for names when lowering.
///
/// The V1 symbols lower like the others: `args.<name>` ([`Symbol::Arg`]) to the argument's
/// value (`i64`, `f64`, `bool` or `&str`), `present.<arg>` to a `bool`, `tensorDtypes.<arg>`
/// to a `&str` such as `"float32"`, `device.adapterInfo.<name>` to an `i64`. A symbol that may
/// be undefined (an optional argument or tensor, unreported adapter info) must still lower to
/// its plain type: an expression that fails with `<runtime>::expr::not_given("<symbol>")` when
/// it is absent (`<runtime>::expr::given(env.args.period, "args.period")?`), which is what the
/// interpreter reports for arithmetic on it. A truthiness test or an `==` / `!=` reads the
/// value only after [`LowerScope::is_defined`] is true (`defined && truthy(value)`,
/// `defined && value == 32`, short-circuit).
pub trait LowerScope {
    /// The value of `sym` (`&[i64]` for List symbols, see the module docs), e.g.
    /// `env.shapes.input` or `block_size(env)?`.
    fn symbol(&self, sym: &Symbol) -> TokenStream;
    /// A `bool` expression binding at least as tightly as a unary operator: whether `sym` is
    /// defined, e.g. `attrs.num_heads.is_some()`. Not called for derived symbols, which are
    /// always defined, nor (for truthiness) `present.*`. In V1 it is also asked for every
    /// other symbol tested for truthiness (`args.exact and …`) or compared with `==` / `!=`;
    /// return the literal `true` for one that is always defined (a required argument), and
    /// the test is left out.
    fn is_defined(&self, sym: &Symbol) -> TokenStream;
    /// The Jinja truthiness of `sym` in one expression where the scope can test an optional
    /// value's presence and truth together (`<runtime>::expr::truthy_given(env.attrs.exact)`);
    /// `None`, the default, lowers it as `defined && truthy(value)`.
    fn truthy_if_given(&self, _sym: &Symbol) -> Option<TokenStream> {
        None
    }
    /// A `bool` expression: whether the device has the feature `name`.
    fn feature(&self, name: &str) -> TokenStream;
    /// The path of the runtime crate, e.g. `::kernel_runtime`.
    fn runtime(&self) -> TokenStream;
}

/// Lowers `ir` to a Rust expression (see the module docs for the contract).
pub fn lower(ir: &Ir, scope: &dyn LowerScope) -> TokenStream {
    let runtime = scope.runtime();
    let lowerer = Lowerer {
        known_defined: std::cell::RefCell::default(),
        scope,
        rt: quote!(#runtime::expr),
    };
    if ir.ty == Type::List {
        lowerer.list_owned(ir)
    } else {
        lowerer.value(ir).tokens
    }
}

/// Like [`lower`], but the tokens are a `Result<T, <runtime>::expr::EvalError>` expression:
/// `Ok(…)`, or the runtime call itself when the whole expression is one fallible call. Emitters
/// that return the value from a function should use this: `Ok(f(…)?)` is flagged by clippy
/// (`needless_question_mark`).
pub fn lower_result(ir: &Ir, scope: &dyn LowerScope) -> TokenStream {
    let runtime = scope.runtime();
    let lowerer = Lowerer {
        known_defined: std::cell::RefCell::default(),
        scope,
        rt: quote!(#runtime::expr),
    };
    if ir.ty == Type::List {
        // A list builtin's own `Result` is the value, without `Ok(…?)` around it.
        if let IrKind::Call(builtin, args) = &ir.kind
            && let Some(call) = lowerer.call(*builtin, args, ir.ty).call
        {
            return call;
        }
        let owned = lowerer.list_owned(ir);
        return quote!(Ok(#owned));
    }
    let lowered = lowerer.value(ir);
    match lowered.call {
        Some(call) => call,
        None => {
            let tokens = lowered.tokens;
            quote!(Ok(#tokens))
        }
    }
}

/// A List expression that names a list or writes its items (`shapes.x`, `[a, b]`) as a
/// `&[i64]` (or `&[i64; N]`) borrow, which builds no `Vec`; `None` for one that computes a
/// list (a builtin, a conditional), which [`lower`] lowers owned.
pub fn lower_list_slice(ir: &Ir, scope: &dyn LowerScope) -> Option<TokenStream> {
    if !matches!(ir.kind, IrKind::Sym(_) | IrKind::List(_)) || ir.ty != Type::List {
        return None;
    }
    let runtime = scope.runtime();
    let lowerer = Lowerer {
        known_defined: std::cell::RefCell::default(),
        scope,
        rt: quote!(#runtime::expr),
    };
    Some(lowerer.list_slice(ir).tokens)
}

/// Rust precedence levels, loosest first (only those the emitter produces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Prec {
    /// `if … { } else { }`
    Cond,
    /// `||`
    Or,
    /// `&&`
    And,
    /// `== != < <= > >=` (non-associative)
    Compare,
    /// binary `+ -`
    Add,
    /// binary `* / %`
    Mul,
    /// prefix `- ! &`
    Unary,
    /// literals, paths, calls, `?`
    Atom,
}

/// Lowered tokens and how tightly they bind.
pub(super) struct Lowered {
    pub(super) tokens: TokenStream,
    pub(super) prec: Prec,
    /// For `f(…)?`, the call without the `?` (see [`lower_result`]).
    call: Option<TokenStream>,
}

impl Lowered {
    pub(super) fn new(tokens: TokenStream, prec: Prec) -> Self {
        Self {
            tokens,
            prec,
            call: None,
        }
    }

    /// A fallible runtime call, `call?`.
    pub(super) fn try_call(call: TokenStream) -> Self {
        Self {
            tokens: quote!(#call?),
            prec: Prec::Atom,
            call: Some(call),
        }
    }

    /// The tokens, parenthesized when they bind more loosely than `min` requires.
    pub(super) fn at(self, min: Prec) -> TokenStream {
        let tokens = self.tokens;
        if self.prec < min {
            quote!((#tokens))
        } else {
            tokens
        }
    }
}

pub(super) struct Lowerer<'a> {
    pub(super) scope: &'a dyn LowerScope,
    /// `<runtime>::expr`
    pub(super) rt: TokenStream,
    /// Symbols an enclosing `has(…) and …` has found defined, so that a comparison on the
    /// right need not test them again.
    pub(super) known_defined: std::cell::RefCell<Vec<Symbol>>,
}

pub(super) fn ident(name: &str) -> Ident {
    Ident::new(name, TokenSpan::call_site())
}

impl Lowerer<'_> {
    /// Lowers a non-List expression (a List one is lowered owned). Cases with several
    /// `quote!`s live in their own methods to keep this recursive function's frame small.
    pub(super) fn value(&self, ir: &Ir) -> Lowered {
        match &ir.kind {
            IrKind::Int(v) => int_literal(*v),
            IrKind::Float(v) => float_literal(*v),
            IrKind::Bool(v) => Lowered::new(quote!(#v), Prec::Atom),
            IrKind::Str(v) => {
                let lit = Literal::string(v);
                Lowered::new(quote!(#lit), Prec::Atom)
            }
            _ if ir.ty == Type::List => Lowered::new(self.list_owned(ir), Prec::Atom),
            IrKind::List(_) => Lowered::new(self.list_owned(ir), Prec::Atom),
            IrKind::Sym(sym) => Lowered::new(self.scope.symbol(sym), Prec::Unary),
            IrKind::Feature(name) => Lowered::new(self.scope.feature(name), Prec::Unary),
            IrKind::IsDefined(sym, negated) => self.is_defined(sym, *negated),
            IrKind::Call(builtin, args) => self.call(*builtin, args, ir.ty),
            IrKind::Length(list) => self.length(list),
            IrKind::Index(list, index) => self.index(list, index),
            IrKind::ToFloat(x) => self.to_float(x),
            IrKind::ToInt(x) => self.to_int(x),
            IrKind::Truthy(x) => self.truthy(x),
            IrKind::Unary(UnaryOp::Neg, x) => self.neg(x),
            IrKind::Unary(UnaryOp::Not, x) => self.not(x),
            IrKind::Binary(op, lhs, rhs) => self.binary(*op, lhs, rhs),
            IrKind::LooseCompare(op, lhs, rhs) => self.loose_compare(*op, lhs, rhs),
            IrKind::Cond(cond, then, otherwise) => self.cond(cond, then, otherwise),
        }
    }

    fn is_defined(&self, sym: &Symbol, negated: bool) -> Lowered {
        if let Symbol::Derived(_) = sym {
            // A `derive` entry always exists (the interpreter agrees).
            let value = !negated;
            return Lowered::new(quote!(#value), Prec::Atom);
        }
        let defined = self.scope.is_defined(sym);
        if negated {
            Lowered::new(quote!(!#defined), Prec::Unary)
        } else {
            Lowered::new(defined, Prec::Unary)
        }
    }

    fn length(&self, list: &Ir) -> Lowered {
        let rt = &self.rt;
        let list = self.list_slice(list).tokens;
        Lowered::try_call(quote!(#rt::length(#list)))
    }

    fn index(&self, list: &Ir, index: &Ir) -> Lowered {
        let rt = &self.rt;
        let list = self.list_slice(list).tokens;
        let index = self.value(index).tokens;
        Lowered::try_call(quote!(#rt::index(#list, #index)))
    }

    fn to_float(&self, x: &Ir) -> Lowered {
        if let IrKind::Int(v) = x.kind {
            // `2f64` rather than `to_float(2i64)`; the runtime converts with `as f64` too.
            return float_literal(super::runtime::to_float(v));
        }
        let rt = &self.rt;
        let x = self.value(x).tokens;
        Lowered::new(quote!(#rt::to_float(#x)), Prec::Atom)
    }

    fn neg(&self, x: &Ir) -> Lowered {
        let rt = &self.rt;
        match (&x.kind, x.ty) {
            // `-7` stays a literal rather than `neg(7i64)?`: it cannot overflow.
            (IrKind::Int(v), _) => int_literal(v.saturating_neg()),
            (_, Type::Int) => {
                let x = self.value(x).tokens;
                Lowered::try_call(quote!(#rt::neg(#x)))
            }
            _ => {
                let x = self.value(x).at(Prec::Unary);
                Lowered::new(quote!(-#x), Prec::Unary)
            }
        }
    }

    fn cond(&self, cond: &Ir, then: &Ir, otherwise: &Ir) -> Lowered {
        // A String branch makes the others Strings too (`~` in V1), down an `else if` chain.
        let owned = is_owned_str(then) || is_owned_str(otherwise);
        self.cond_as(cond, then, otherwise, owned)
    }

    fn cond_as(&self, cond: &Ir, then: &Ir, otherwise: &Ir, owned: bool) -> Lowered {
        let cond = self.value(cond).tokens;
        let then = self.branch(then, owned);
        // `else if` rather than `else { if … }` (clippy: collapsible_else_if).
        let otherwise = match &otherwise.kind {
            IrKind::Cond(c, t, o) => self.cond_as(c, t, o, owned).tokens,
            _ => {
                let o = self.branch(otherwise, owned);
                quote!({ #o })
            }
        };
        Lowered::new(quote!(if #cond { #then } else #otherwise), Prec::Cond)
    }

    /// A List expression as `&[i64]` (or `&[i64; N]`, which coerces), usable as an argument.
    pub(super) fn list_slice(&self, ir: &Ir) -> Lowered {
        match &ir.kind {
            IrKind::Sym(sym) => Lowered::new(self.scope.symbol(sym), Prec::Unary),
            IrKind::List(items) => {
                let items = items.iter().map(|i| self.value(i).tokens);
                Lowered::new(quote!(&[#(#items),*]), Prec::Unary)
            }
            // Branches that are plain symbols can be borrowed directly; anything that builds a
            // list makes both branches owned, since a borrow of a temporary cannot leave an
            // `if` block.
            IrKind::Cond(cond, then, otherwise) if borrowable(then) && borrowable(otherwise) => {
                let cond = self.value(cond).tokens;
                let then = self.list_slice(then).tokens;
                let otherwise = match otherwise.kind {
                    IrKind::Cond(..) => self.list_slice(otherwise).tokens,
                    _ => {
                        let o = self.list_slice(otherwise).tokens;
                        quote!({ #o })
                    }
                };
                Lowered::new(quote!(if #cond { #then } else #otherwise), Prec::Cond)
            }
            _ => {
                let owned = self.list_owned(ir);
                Lowered::new(quote!(&#owned), Prec::Unary)
            }
        }
    }

    /// A List expression as an owned `Vec<i64>`.
    fn list_owned(&self, ir: &Ir) -> TokenStream {
        match &ir.kind {
            // Not `vec![…]`: macro arguments are opaque to prettyplease, which then prints them
            // unformatted in the generated file.
            IrKind::List(items) => {
                let items = items.iter().map(|i| self.value(i).tokens);
                quote!(<[i64]>::to_vec(&[#(#items),*]))
            }
            IrKind::Cond(cond, then, otherwise) => {
                let cond = self.value(cond).tokens;
                let then = self.list_owned(then);
                let otherwise = match otherwise.kind {
                    IrKind::Cond(..) => self.list_owned(otherwise),
                    _ => {
                        let o = self.list_owned(otherwise);
                        quote!({ #o })
                    }
                };
                quote!(if #cond { #then } else #otherwise)
            }
            // The builtins that build lists return them owned.
            IrKind::Call(builtin, args) => self.call(*builtin, args, ir.ty).tokens,
            _ => {
                let slice = self.list_slice(ir).tokens;
                quote!(<[i64]>::to_vec(#slice))
            }
        }
    }

    /// The argument tokens of a runtime call: lists as slices, the rest as values.
    fn arg(&self, ir: &Ir) -> TokenStream {
        if ir.ty == Type::List {
            self.list_slice(ir).tokens
        } else {
            self.value(ir).tokens
        }
    }

    fn call(&self, builtin: Builtin, args: &[Ir], ty: Type) -> Lowered {
        let rt = &self.rt;
        let tokens = match builtin.sig().lowering {
            Lowering::ByType { int, float } => return self.by_type(args, int, float),
            Lowering::F16(name) => {
                let name = ident(name);
                let dtype = args.first().map(|a| self.str_arg(a)).unwrap_or_default();
                let has_f16 = self.scope.feature(SHADER_F16);
                quote!(#rt::#name(#dtype, #has_f16))
            }
            Lowering::Desugared => {
                // The checker rewrites these calls; reaching here is a codegen bug, which the
                // generated crate then reports when it is compiled.
                let msg = format!("internal error: {}() was not rewritten", builtin.name());
                quote!(::core::compile_error!(#msg))
            }
            Lowering::Runtime { name, fallible } => {
                let name = ident(name);
                let args = args.iter().map(|a| self.arg(a));
                let call = quote!(#rt::#name(#(#args),*));
                return if fallible {
                    Lowered::try_call(call)
                } else {
                    Lowered::new(call, Prec::Atom)
                };
            }
            Lowering::Fold(_) if ty == Type::Int && self.clamp(builtin, args).is_some() => {
                let (x, lo, hi) = self.clamp(builtin, args).unwrap_or_default();
                quote!(#x.clamp(#lo, #hi))
            }
            Lowering::Fold(name) => {
                let name = ident(name);
                let mut args = args.iter().map(|a| self.value(a).tokens);
                let first = args.next().unwrap_or_default();
                args.fold(first, |acc, next| {
                    if ty == Type::Float {
                        quote!(f64::#name(#acc, #next))
                    } else {
                        quote!(::core::cmp::#name(#acc, #next))
                    }
                })
            }
        };
        Lowered::new(tokens, Prec::Atom)
    }

    /// `max(lo, min(x, hi))` and `min(hi, max(x, lo))` over integers, either argument order,
    /// with literal bounds `lo <= hi`: `x.clamp(lo, hi)`, as clippy's `manual_clamp` asks (the
    /// same value, and it cannot panic with such bounds).
    fn clamp(&self, builtin: Builtin, args: &[Ir]) -> Option<(TokenStream, i64, i64)> {
        let literal = |ir: &Ir| match ir.kind {
            IrKind::Int(i) => Some(i),
            _ => None,
        };
        let inner_of = match builtin {
            Builtin::Max => Builtin::Min,
            Builtin::Min => Builtin::Max,
            _ => return None,
        };
        let [a, b] = args else { return None };
        let (bound, call) = match (literal(a), literal(b)) {
            (Some(bound), None) => (bound, b),
            (None, Some(bound)) => (bound, a),
            _ => return None,
        };
        let IrKind::Call(inner, inner_args) = &call.kind else {
            return None;
        };
        let [c, d] = inner_args.as_slice() else {
            return None;
        };
        if *inner != inner_of || c.ty != Type::Int || d.ty != Type::Int {
            return None;
        }
        let (other, x) = match (literal(c), literal(d)) {
            (Some(other), None) => (other, d),
            (None, Some(other)) => (other, c),
            _ => return None,
        };
        let (lo, hi) = if builtin == Builtin::Max {
            (bound, other)
        } else {
            (other, bound)
        };
        (lo <= hi).then(|| (self.value(x).at(Prec::Atom), lo, hi))
    }

    /// `not x`: a comparison of non-floats is inverted (`a >= b` rather than `!(a < b)`,
    /// which clippy's `nonminimal_bool` flags); floats keep `!` because of NaN.
    fn not(&self, x: &Ir) -> Lowered {
        match &x.kind {
            IrKind::Binary(op, lhs, rhs) if lhs.ty != Type::Float => {
                if let Some(inverse) = inverse(*op) {
                    return self.binary(inverse, lhs, rhs);
                }
            }
            IrKind::LooseCompare(op, lhs, rhs) if lhs.ty != Type::Float => {
                if let Some(inverse) = inverse(*op) {
                    return self.loose_compare(inverse, lhs, rhs);
                }
            }
            _ => {}
        }
        let x = self.value(x).at(Prec::Unary);
        Lowered::new(quote!(!#x), Prec::Unary)
    }

    fn binary(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        match op {
            BinOp::And | BinOp::Or => self.logical(op, lhs, rhs),
            BinOp::Concat => self.concat(lhs, rhs),
            BinOp::In | BinOp::NotIn => self.membership(op, lhs, rhs),
            _ if op.is_arithmetic() && lhs.ty == Type::Int => self.runtime_binary(op, lhs, rhs),
            BinOp::Div | BinOp::FloorDiv | BinOp::Rem => self.runtime_binary(op, lhs, rhs),
            BinOp::Pow => self.float_power(lhs, rhs),
            BinOp::Add | BinOp::Sub | BinOp::Mul => self.float_binary(op, lhs, rhs),
            _ if lhs.ty == Type::List => self.list_equality(op, lhs, rhs),
            _ => self.comparison(op, lhs, rhs),
        }
    }

    /// `&&` / `||`: associative, so same-level operands need no parentheses.
    fn logical(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let prec = if op == BinOp::And {
            Prec::And
        } else {
            Prec::Or
        };
        let l = self.value(lhs).at(prec);
        let mut defined = Vec::new();
        if op == BinOp::And {
            defined_conjuncts(lhs, &mut defined);
        }
        let known = self.known_defined.borrow().len();
        self.known_defined.borrow_mut().extend(defined);
        let r = self.value(rhs).at(prec);
        self.known_defined.borrow_mut().truncate(known);
        let tokens = if op == BinOp::And {
            quote!(#l && #r)
        } else {
            quote!(#l || #r)
        };
        Lowered::new(tokens, prec)
    }

    /// Checked Int arithmetic (`**` included), and Float `/` `%` (which fail on a zero divisor).
    fn runtime_binary(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let rt = &self.rt;
        // Int `/` Int, a Float: one call rather than two conversions around the division.
        if let (BinOp::Div, IrKind::ToFloat(a), IrKind::ToFloat(b)) = (op, &lhs.kind, &rhs.kind) {
            let (a, b) = (self.value(a).tokens, self.value(b).tokens);
            return Lowered::try_call(quote!(#rt::quotient(#a, #b)));
        }
        let name = ident(match (op, lhs.ty) {
            (BinOp::Add, _) => "add",
            (BinOp::Sub, _) => "sub",
            (BinOp::Mul, _) => "mul",
            (BinOp::Div, Type::Int) => "div",
            (BinOp::FloorDiv, Type::Int) => "floor_div",
            (BinOp::Pow, _) => "pow",
            (BinOp::Div, _) => "div_float",
            (BinOp::FloorDiv, _) => "floor_div_float",
            (_, Type::Int) => "rem",
            _ => "rem_float",
        });
        let (l, r) = (self.value(lhs).tokens, self.value(rhs).tokens);
        Lowered::try_call(quote!(#rt::#name(#l, #r)))
    }

    /// Float `**`: the runtime's `pow_float`, as the `pow()` builtin of Floats (infallible).
    fn float_power(&self, lhs: &Ir, rhs: &Ir) -> Lowered {
        let rt = &self.rt;
        let (l, r) = (self.value(lhs).tokens, self.value(rhs).tokens);
        Lowered::new(quote!(#rt::pow_float(#l, #r)), Prec::Atom)
    }

    /// Float `+ - *`: left-associative, so the right operand must bind tighter (float
    /// addition is not associative: `a + (b + c)` keeps its parentheses).
    fn float_binary(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let prec = if op == BinOp::Mul {
            Prec::Mul
        } else {
            Prec::Add
        };
        let l = self.value(lhs).at(prec);
        let r = self.value(rhs).at(next(prec));
        let tokens = match op {
            BinOp::Add => quote!(#l + #r),
            BinOp::Sub => quote!(#l - #r),
            _ => quote!(#l * #r),
        };
        Lowered::new(tokens, prec)
    }

    pub(super) fn list_equality(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let rt = &self.rt;
        let (l, r) = (self.list_slice(lhs).tokens, self.list_slice(rhs).tokens);
        let same = quote!(#rt::same_shape(#l, #r));
        if op == BinOp::Ne {
            Lowered::new(quote!(!#same), Prec::Unary)
        } else {
            Lowered::new(same, Prec::Atom)
        }
    }

    /// Comparisons are non-associative in Rust: both operands must bind tighter.
    pub(super) fn comparison(&self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Lowered {
        let l = self.value(lhs).at(Prec::Add);
        let r = self.value(rhs).at(Prec::Add);
        let tokens = match op {
            BinOp::Eq => quote!(#l == #r),
            BinOp::Ne => quote!(#l != #r),
            BinOp::Lt => quote!(#l < #r),
            BinOp::Le => quote!(#l <= #r),
            BinOp::Gt => quote!(#l > #r),
            _ => quote!(#l >= #r),
        };
        Lowered::new(tokens, Prec::Compare)
    }
}

/// The next tighter precedence level.
fn next(prec: Prec) -> Prec {
    match prec {
        Prec::Cond => Prec::Or,
        Prec::Or => Prec::And,
        Prec::And => Prec::Compare,
        Prec::Compare => Prec::Add,
        Prec::Add => Prec::Mul,
        Prec::Mul => Prec::Unary,
        Prec::Unary | Prec::Atom => Prec::Atom,
    }
}

/// The comparison that is true exactly when `op` is false (for totally ordered operands).
fn inverse(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq => BinOp::Ne,
        BinOp::Ne => BinOp::Eq,
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        _ => return None,
    })
}

/// Whether a List expression can be lowered as a borrow that outlives an `if` branch: a
/// shape or attribute, but not a derived list, whose value is computed (a temporary).
fn borrowable(ir: &Ir) -> bool {
    match &ir.kind {
        IrKind::Sym(sym) => !matches!(sym, Symbol::Derived(_)),
        IrKind::Cond(_, then, otherwise) => borrowable(then) && borrowable(otherwise),
        _ => false,
    }
}

/// An `i64` literal; negative values become `-N` (unary) since a token cannot carry the sign.
fn int_literal(v: i64) -> Lowered {
    if v == i64::MIN {
        Lowered::new(quote!(i64::MIN), Prec::Atom)
    } else if v < 0 {
        let lit = Literal::i64_suffixed(-v);
        Lowered::new(quote!(-#lit), Prec::Unary)
    } else {
        let lit = Literal::i64_suffixed(v);
        Lowered::new(quote!(#lit), Prec::Atom)
    }
}

/// An `f64` literal; non-finite values (never produced by the parser) use the named constants.
fn float_literal(v: f64) -> Lowered {
    if v.is_nan() {
        Lowered::new(quote!(f64::NAN), Prec::Atom)
    } else if v.is_infinite() {
        let c = if v > 0.0 {
            quote!(f64::INFINITY)
        } else {
            quote!(f64::NEG_INFINITY)
        };
        Lowered::new(c, Prec::Atom)
    } else if v.is_sign_negative() {
        let lit = Literal::f64_suffixed(-v);
        Lowered::new(quote!(-#lit), Prec::Unary)
    } else {
        let lit = Literal::f64_suffixed(v);
        Lowered::new(quote!(#lit), Prec::Atom)
    }
}

/// The symbols `has(…)` conjuncts of `ir` test for, when `ir` holds.
fn defined_conjuncts(ir: &Ir, out: &mut Vec<Symbol>) {
    match &ir.kind {
        IrKind::Binary(BinOp::And, l, r) => {
            defined_conjuncts(l, out);
            defined_conjuncts(r, out);
        }
        IrKind::IsDefined(sym, false) => out.push(sym.clone()),
        _ => {}
    }
}

/// Whether the lowered `ir` is a `String` rather than a `&str`: a Str built by `~`, or a
/// conditional with such a branch (whose other branches are then converted).
pub fn is_owned_str(ir: &Ir) -> bool {
    match &ir.kind {
        _ if ir.ty != Type::Str => false,
        IrKind::Binary(BinOp::Concat, ..) | IrKind::Call(Builtin::NumberText, _) => true,
        IrKind::Cond(_, then, otherwise) => is_owned_str(then) || is_owned_str(otherwise),
        _ => false,
    }
}
