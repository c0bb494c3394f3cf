//! The manifest expression language: parse, type-check, interpret and lower to Rust.
//!
//! Manifests write `derive` entries, variant `when` lists, constants, template inputs, dispatch
//! sizes, struct field values and intermediate shapes in a subset of Jinja's expression syntax
//! (DIALECT.md, "Operators" and "Helpers", lists it). The pipeline is:
//!
//! ```text
//! source ─parse─▶ ast::Expr ─check(Scope)─▶ Ir ─eval(Env)──▶ Value      (codegen, tests)
//!                                              └─lower(LowerScope)─▶ TokenStream (generated code)
//! ```
//!
//! Parse errors stop at the first problem; `check` collects every error it finds. Both carry a
//! byte [`Span`] so callers can point at the column. Evaluation errors ([`EvalError`]) are the
//! runtime's own type: the interpreter calls the very functions the generated code calls.
//!
//! # Dialects
//!
//! The seed packages and `schemaVersion: 1` packages write slightly different Jinja. The
//! [`Dialect`] is given to [`parse_in`] and returned by the `dialect()` methods of [`Scope`],
//! [`Env`] and [`LowerScope`] (all three must agree). [`Dialect::Seed`] is exactly the seed
//! language. [`Dialect::V1`] adds, as the engine those packages come from evaluates them:
//!
//! - names: `args.<name>` ([`Symbol::Arg`]), `present.<arg>`, `tensorDtypes.<arg>`,
//!   `device.adapterInfo.<name>`, and `has(<namespace>, "<name>")` (is it given);
//! - operators: `/` is true division (Int / Int is a Float), `//` floors, `~` concatenates
//!   (Str, Dtype or Int operands), `x in y` / `x not in y` (in a list literal, by `==`
//!   with each item; in a List, an Int; in a Str, a substring);
//! - truthiness: where a Bool is expected (`if` and `… if c else …` conditions, `not`, `and`,
//!   `or`, `pick` conditions) any value is accepted and tested as Jinja does: 0, 0.0, `""` and
//!   `[]` are false, and so is an optional value that is not given. `and`, `or` and `not`
//!   always give a Bool (Jinja's `and`/`or` return an operand; every corpus use is a
//!   condition, where the two agree), so their operands are coerced, never returned;
//! - undefined values (an optional argument or tensor not given, adapter info not reported):
//!   false when tested for truthiness, `has(…)` / `is defined` false, and in `==` / `!=`
//!   unequal to every value but another undefined one (the engine's loose equality, which
//!   unguarded corpus constants such as `device.adapterInfo.subgroupMinSize == 32` rely on).
//!   Any other use (arithmetic, `<`, a builtin's argument) fails with "`args.x` is not given",
//!   never a silent 0;
//! - helpers: `ceil`, `floor`, `pow`, `pow2ceil`, `rank`, `rows`, `cols`, `broadcastable`,
//!   `hasAxis`, `has`, `dtypeBytes`, `pick`, `f16Allowed` (see `builtins.rs`), `f16Ok` of a
//!   tensor dtype string, and negative axes of `dim`, `outer`, `inner`, `rows` and `cols` count
//!   from the end (an axis still out of range is an error);
//! - a Float list item (a shape written with `/`), list index or Int argument of a helper
//!   must be a whole number, and becomes an Int (the engines' numbers are doubles);
//! - lists: slices `s[a:b]` (either bound optional; bounds count from the end when negative
//!   and are clamped), `a + b` of two lists, and the filters `first`, `last`, `sum`, `min`
//!   and `max`.
//!
//! In every dialect a negative list index counts from the end, as Jinja's does.
//!
//! [`Dialect::Hub`] reads as V1 does, and adds the Hub runtime's `derive.<name>` (the bare
//! name's value), `DISPATCH_FOLD_WIDTH` (65535) and its runtime's helpers for shapes and
//! dtypes (`broadcastShape`, `matmulShape`, `prefix`, `permuteShape`, `isUniqueIntList`,
//! `log2ceil`, `onnxDtypeCode`); it has no `constants` namespace, nor V1's `cols`, `rank` and
//! `f16Allowed`. Its runtime's Jinja compares an undefined value only with `==` and `!=`, so
//! an ordering (`<`, `<=`, `>`, `>=`) with an undefined operand is an error there, where V1
//! orders it against nothing. Where that engine departs from V1 otherwise (`and`/`or`
//! returning an operand, JavaScript's `%` and `~`, the `int`, `float`, `abs` and `default`
//! filters, no chained comparisons or list equality), `hub.rs` has the rules.

pub mod ast;
pub mod builtins;
mod check;
mod hub;
mod interp;
mod ir;
mod lexer;
mod lists;
mod lower;
mod lower_v1;
mod names;
mod parser;
mod v1;

// The arithmetic generated code calls, shared with the runtime through `kernel-abi`, so that
// the interpreter and the generated code have one implementation (and one set of error
// messages).
pub use kernel_abi::expr as runtime;

use std::fmt;

pub use check::{Scope, check};
pub use interp::{Env, EvalTrace, Value, eval, eval_traced};
pub use ir::{Ir, IrKind};
pub use lower::is_owned_str;
pub use lower::{LowerScope, lower, lower_list_slice, lower_result};
pub use names::DISPATCH_FOLD_WIDTH;
pub use parser::{parse, parse_in};
pub use runtime::EvalError;
pub use v1::to_int;

/// Which manifest dialect an expression is written in (see the module docs). Ordered by
/// what each adds: a builtin of one dialect exists in every later one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Dialect {
    /// The seed packages' language (`packages/`).
    #[default]
    Seed,
    /// The `schemaVersion: 1` packages' language.
    V1,
    /// The Hub's manifestSpec 2.1 language: V1's rules, plus `derive.<name>`,
    /// `DISPATCH_FOLD_WIDTH` and the list helpers `broadcastShape`, `matmulShape`, `prefix`;
    /// without V1's `constants.<name>`.
    Hub,
}

impl Dialect {
    /// Whether expressions read as the JavaScript engines evaluate Jinja (true division,
    /// truthiness, undefined values, wrapped axes): every dialect but the seed's.
    pub fn is_jinja(self) -> bool {
        self != Dialect::Seed
    }
}

/// A byte range into the expression source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first byte.
    pub start: usize,
    /// Offset one past the last byte.
    pub end: usize,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A parse or check error, located in the expression source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExprError {
    /// Where in the source the problem is.
    pub span: Span,
    /// What is wrong, e.g. ``unknown function `foo` (known: ceilDiv, dim, …)``.
    pub message: String,
}

impl ExprError {
    /// An error at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Self {
            span,
            message: message.into(),
        }
    }

    /// The 1-based column (in characters, not bytes) where the error starts in `src`.
    pub fn column(&self, src: &str) -> usize {
        // Clamp rather than panic if the caller passes a different string than was parsed.
        let mut end = self.span.start.min(src.len());
        while !src.is_char_boundary(end) {
            end -= 1;
        }
        src[..end].chars().count() + 1
    }
}

/// The static type of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Type {
    /// A 64-bit signed integer.
    Int,
    /// A 64-bit float.
    Float,
    /// A boolean.
    Bool,
    /// A string: a literal or a string attribute, and in V1 a string argument, a tensor dtype
    /// (`"float32"`) or a `~` result.
    Str,
    /// An element type, valued by its WGSL name (`f32`, `f16`, `u32`, `i64`).
    Dtype,
    /// A list of integers: a tensor shape or an integer-list attribute.
    List,
}

impl Type {
    /// Whether the type takes part in arithmetic (`Int` or `Float`).
    pub fn is_numeric(self) -> bool {
        matches!(self, Type::Int | Type::Float)
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Type::Int => "Int",
            Type::Float => "Float",
            Type::Bool => "Bool",
            Type::Str => "Str",
            Type::Dtype => "Dtype",
            Type::List => "List",
        })
    }
}

/// A name an expression reads, after resolution. The scope gives each its type and the
/// environment its value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Symbol {
    /// `shapes.<role>`: a tensor's shape (List).
    Shape(String),
    /// `ranks.<role>`: a tensor's rank (Int).
    Rank(String),
    /// `dtypes.<typevar>`: the element type bound to a type variable (Dtype).
    Dtype(String),
    /// `attrs.<name>`: an attribute (its declared type).
    Attr(String),
    /// `tunables.<NAME>`: a tunable constant (Int).
    Tunable(String),
    /// `device.limits.<webgpuLimitName>`: a device limit (Int).
    Limit(String),
    /// A bare identifier: one of the op's `derive` entries (in V1: a variant constant).
    Derived(String),
    /// `args.<name>`: a scalar argument (V1): Int for `u32`/`i32`, Float for `f32`, Bool for
    /// `bool`, Str for `string`. May be undefined when the argument is optional.
    Arg(String),
    /// `present.<arg>`: whether an optional tensor or scalar argument was given (Bool, V1).
    Present(String),
    /// `tensorDtypes.<arg>`: a tensor's element type by tensor name, e.g. `"float32"` (Str, V1).
    TensorDtype(String),
    /// `device.adapterInfo.<name>`, e.g. `subgroupMinSize` (Int, V1); undefined when the
    /// adapter does not report it.
    AdapterInfo(String),
}

impl fmt::Display for Symbol {
    /// Writes the symbol as it is spelled in the source, e.g. `shapes.input`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Symbol::Shape(n) => write!(f, "shapes.{n}"),
            Symbol::Rank(n) => write!(f, "ranks.{n}"),
            Symbol::Dtype(n) => write!(f, "dtypes.{n}"),
            Symbol::Attr(n) => write!(f, "attrs.{n}"),
            Symbol::Tunable(n) => write!(f, "tunables.{n}"),
            Symbol::Limit(n) => write!(f, "device.limits.{n}"),
            Symbol::Derived(n) => f.write_str(n),
            Symbol::Arg(n) => write!(f, "args.{n}"),
            Symbol::Present(n) => write!(f, "present.{n}"),
            Symbol::TensorDtype(n) => write!(f, "tensorDtypes.{n}"),
            Symbol::AdapterInfo(n) => write!(f, "device.adapterInfo.{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_counts_characters() {
        let err = ExprError::new(Span::new(4, 5), "x");
        assert_eq!(err.column("éé + x"), 3);
        assert_eq!(err.column(""), 1);
    }
}
