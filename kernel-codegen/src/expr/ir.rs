//! The typed IR the checker produces and the interpreter and lowering consume.

use std::collections::BTreeSet;

use super::ast::{BinOp, UnaryOp};
use super::builtins::{Builtin, SHADER_F16};
use super::{Span, Symbol, Type};

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
    /// Float → Int where an Int is required (V1 list items, [`super::to_int`]): the value must
    /// be a whole number.
    ToInt(Box<Ir>),
    /// Jinja truthiness of a non-Bool value, or of a symbol that may be undefined (which is
    /// then false), inserted by the V1 checker where a Bool is expected.
    Truthy(Box<Ir>),
    /// `-x` or `not x`.
    Unary(UnaryOp, Box<Ir>),
    /// A binary operation, including `and` / `or`. A comparison here reads both operands as
    /// values: an undefined one is an error.
    Binary(BinOp, Box<Ir>, Box<Ir>),
    /// A comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`) in which an operand that may be
    /// undefined is a value of its own, as in Jinja: undefined equals only undefined and is
    /// ordered against nothing. The V1 checker writes every comparison this way, the Hub
    /// checker only `==` and `!=`.
    LooseCompare(BinOp, Box<Ir>, Box<Ir>),
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
            IrKind::Length(x)
            | IrKind::ToFloat(x)
            | IrKind::ToInt(x)
            | IrKind::Truthy(x)
            | IrKind::Unary(_, x) => vec![x],
            IrKind::Index(a, b) | IrKind::Binary(_, a, b) | IrKind::LooseCompare(_, a, b) => {
                vec![a, b]
            }
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

    /// Every device feature the expression asks about, including `shader-f16` for `f16Ok` and
    /// `f16Allowed`.
    pub fn features(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.walk(&mut |ir| match &ir.kind {
            IrKind::Feature(name) => {
                out.insert(name.clone());
            }
            IrKind::Call(Builtin::F16Ok | Builtin::F16Allowed, _) => {
                out.insert(SHADER_F16.to_owned());
            }
            _ => {}
        });
        out
    }

    /// Whether reading this node may find it undefined, so that a truthiness test must ask
    /// first: a symbol other than a variant constant or `present.*` (always defined).
    pub fn may_be_undefined(&self) -> bool {
        matches!(&self.kind, IrKind::Sym(sym) if !matches!(sym, Symbol::Derived(_) | Symbol::Present(_)))
    }

    /// The symbol an operand of a [`IrKind::LooseCompare`] reads directly (perhaps promoted to
    /// Float), when it may be undefined. Such a comparison treats an undefined value as unequal
    /// to any value and equal to another undefined one, and as neither less nor greater than
    /// anything, as the V1 engine does, instead of failing (`sgExact32` reads
    /// `device.adapterInfo.subgroupMinSize == 32` on adapters that may not report it).
    pub fn undefined_operand(&self) -> Option<&Symbol> {
        match &self.kind {
            IrKind::ToFloat(x) => x.undefined_operand(),
            IrKind::Sym(sym) if self.may_be_undefined() => Some(sym),
            _ => None,
        }
    }

    /// Calls `f` on this node and every descendant, parents first.
    pub fn walk(&self, f: &mut dyn FnMut(&Ir)) {
        f(self);
        for child in self.children() {
            child.walk(f);
        }
    }

    /// This node with `f` applied to each direct operand.
    pub fn map_children(self, f: &mut dyn FnMut(Ir) -> Ir) -> Ir {
        let mut one = |x: Box<Ir>| Box::new(f(*x));
        let kind = match self.kind {
            IrKind::List(items) => {
                IrKind::List(items.into_iter().map(|i| *one(Box::new(i))).collect())
            }
            IrKind::Call(builtin, items) => IrKind::Call(
                builtin,
                items.into_iter().map(|i| *one(Box::new(i))).collect(),
            ),
            IrKind::Length(x) => IrKind::Length(one(x)),
            IrKind::Index(a, b) => IrKind::Index(one(a), one(b)),
            IrKind::ToFloat(x) => IrKind::ToFloat(one(x)),
            IrKind::ToInt(x) => IrKind::ToInt(one(x)),
            IrKind::Truthy(x) => IrKind::Truthy(one(x)),
            IrKind::Unary(op, x) => IrKind::Unary(op, one(x)),
            IrKind::Binary(op, a, b) => IrKind::Binary(op, one(a), one(b)),
            IrKind::LooseCompare(op, a, b) => IrKind::LooseCompare(op, one(a), one(b)),
            IrKind::Cond(c, t, o) => IrKind::Cond(one(c), one(t), one(o)),
            leaf => leaf,
        };
        Ir { kind, ..self }
    }

    /// This expression with each symbol `replace` returns a value for (a name, or the name
    /// tested with `is defined`) replaced by that value.
    pub fn replace_symbols(self, replace: &dyn Fn(&Symbol, Span) -> Option<Ir>) -> Ir {
        match &self.kind {
            IrKind::Sym(sym) => replace(sym, self.span).unwrap_or(self),
            // A value given in place of a name is defined.
            IrKind::IsDefined(sym, negated) if replace(sym, self.span).is_some() => Ir {
                kind: IrKind::Bool(!negated),
                ..self
            },
            _ => self.map_children(&mut |child| child.replace_symbols(replace)),
        }
    }

    /// This expression with every span set to `span`: a subexpression moved into another
    /// expression's text keeps pointing at the name it replaced.
    pub fn respanned(self, span: Span) -> Ir {
        let mut ir = self.map_children(&mut |child| child.respanned(span));
        ir.span = span;
        ir
    }
}
