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
//! Everything that reads a dialect (lexing, parsing, names, builtins, type rules) is under
//! `check`; the IR it produces is the same for every dialect, so evaluation and lowering
//! never ask which one an expression was written in.

pub mod ast;
pub mod check;
mod interp;
mod ir;
mod lower;
mod lower_v1;

// The arithmetic generated code calls, shared with the runtime through `kernel-abi`, so that
// the interpreter and the generated code have one implementation (and one set of error
// messages).
pub use kernel_abi::expr as runtime;

use std::fmt;

pub use check::builtins;
pub use check::{DISPATCH_FOLD_WIDTH, Scope, Unresolved, check, parse, parse_in, to_int};
pub use interp::{Env, EvalTrace, Value, ValueKey, eval, eval_traced};
pub use ir::{Ir, IrKind};
pub use lower::is_owned_str;
pub use lower::{LowerScope, lower, lower_list_slice, lower_result};
pub use runtime::EvalError;

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
