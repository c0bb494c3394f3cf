//! The one table of builtin functions, filters, tests and namespaces, shared by the checker, the
//! interpreter and the lowering so that a builtin cannot be known to one and not the others.

use super::Type;

/// Namespace roots: `shapes.<role>`, `ranks.<role>`, `dtypes.<var>`, `attrs.<name>`,
/// `tunables.<NAME>`, `device.limits.<name>` / `device.features.has(..)`. Sorted.
pub const NAMESPACES: &[&str] = &["attrs", "device", "dtypes", "ranks", "shapes", "tunables"];

/// The device features `device.features.has("…")` may name (WebGPU spelling). Sorted.
pub const FEATURES: &[&str] = &["shader-f16", "subgroups", "timestamp-query"];

/// The feature `f16Ok(dtype)` depends on.
pub const SHADER_F16: &str = "shader-f16";

/// The values a Dtype takes (WGSL names); a string compared with a Dtype must be one. Sorted.
pub const DTYPES: &[&str] = &["f16", "f32", "i64", "u32"];

/// Filters (`x | name`). Sorted.
pub const FILTERS: &[&str] = &["length"];

/// Tests (`x is name`); `undefined` is `not defined`, as in Jinja. Sorted.
pub const TESTS: &[&str] = &["defined", "undefined"];

/// A builtin function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    /// `ceilDiv(a, b)`: ⌈a / b⌉.
    CeilDiv,
    /// `dim(shape, axis)`: one dimension.
    Dim,
    /// `f16Ok(dtype)`: dtype is not f16, or the device has shader-f16.
    F16Ok,
    /// `inner(shape, axis)`: product of the dimensions after `axis`.
    Inner,
    /// `max(a, b, …)`.
    Max,
    /// `min(a, b, …)`.
    Min,
    /// `numel(shape)`: product of all dimensions.
    Numel,
    /// `outer(shape, axis)`: product of the dimensions before `axis`.
    Outer,
    /// `sameShape(a, b)`: list equality.
    SameShape,
}

/// The parameters a builtin takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Params {
    /// Exactly these argument types.
    Fixed(&'static [Type]),
    /// At least this many numeric (Int or Float) arguments; the result is Float when any
    /// argument is Float, Int otherwise.
    Numeric(usize),
}

/// How a builtin is called from generated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lowering {
    /// `<runtime>::expr::<name>(args)`, followed by `?` when `fallible`.
    Runtime {
        /// The function name in `kernel_runtime::expr`.
        name: &'static str,
        /// Whether it returns a `Result`.
        fallible: bool,
    },
    /// Folded pairwise with `core::cmp::{max,min}` (Int) or `f64::{max,min}` (Float).
    Fold(&'static str),
    /// `<runtime>::expr::f16_ok(dtype, <shader-f16 feature>)`.
    F16Ok,
}

/// One row of the builtin table.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinSig {
    /// The builtin.
    pub builtin: Builtin,
    /// Its name in expressions.
    pub name: &'static str,
    /// What it accepts.
    pub params: Params,
    /// What it returns (for [`Params::Numeric`], the Int result; Float when promoted).
    pub result: Type,
    /// How generated code calls it.
    pub lowering: Lowering,
}

/// Every builtin, sorted by name (error messages list them in this order).
pub const BUILTINS: &[BuiltinSig] = &[
    BuiltinSig {
        builtin: Builtin::CeilDiv,
        name: "ceilDiv",
        params: Params::Fixed(&[Type::Int, Type::Int]),
        result: Type::Int,
        lowering: Lowering::Runtime {
            name: "ceil_div",
            fallible: true,
        },
    },
    BuiltinSig {
        builtin: Builtin::Dim,
        name: "dim",
        params: Params::Fixed(&[Type::List, Type::Int]),
        result: Type::Int,
        lowering: Lowering::Runtime {
            name: "dim",
            fallible: true,
        },
    },
    BuiltinSig {
        builtin: Builtin::F16Ok,
        name: "f16Ok",
        params: Params::Fixed(&[Type::Dtype]),
        result: Type::Bool,
        lowering: Lowering::F16Ok,
    },
    BuiltinSig {
        builtin: Builtin::Inner,
        name: "inner",
        params: Params::Fixed(&[Type::List, Type::Int]),
        result: Type::Int,
        lowering: Lowering::Runtime {
            name: "inner",
            fallible: true,
        },
    },
    BuiltinSig {
        builtin: Builtin::Max,
        name: "max",
        params: Params::Numeric(2),
        result: Type::Int,
        lowering: Lowering::Fold("max"),
    },
    BuiltinSig {
        builtin: Builtin::Min,
        name: "min",
        params: Params::Numeric(2),
        result: Type::Int,
        lowering: Lowering::Fold("min"),
    },
    BuiltinSig {
        builtin: Builtin::Numel,
        name: "numel",
        params: Params::Fixed(&[Type::List]),
        result: Type::Int,
        lowering: Lowering::Runtime {
            name: "numel",
            fallible: true,
        },
    },
    BuiltinSig {
        builtin: Builtin::Outer,
        name: "outer",
        params: Params::Fixed(&[Type::List, Type::Int]),
        result: Type::Int,
        lowering: Lowering::Runtime {
            name: "outer",
            fallible: true,
        },
    },
    BuiltinSig {
        builtin: Builtin::SameShape,
        name: "sameShape",
        params: Params::Fixed(&[Type::List, Type::List]),
        result: Type::Bool,
        lowering: Lowering::Runtime {
            name: "same_shape",
            fallible: false,
        },
    },
];

impl Builtin {
    /// The builtin called `name`, if any.
    pub fn lookup(name: &str) -> Option<Builtin> {
        BUILTINS.iter().find(|s| s.name == name).map(|s| s.builtin)
    }

    /// Its row in [`BUILTINS`].
    pub fn sig(self) -> &'static BuiltinSig {
        // Every variant has a row; the fallback only keeps this total without a panic path.
        BUILTINS
            .iter()
            .find(|s| s.builtin == self)
            .unwrap_or(&BUILTINS[0])
    }

    /// Its name in expressions.
    pub fn name(self) -> &'static str {
        self.sig().name
    }
}

/// The names of all builtins, comma-separated, for "unknown function" messages.
pub fn known_functions() -> String {
    BUILTINS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_sorted() {
        let all = [
            Builtin::CeilDiv,
            Builtin::Dim,
            Builtin::F16Ok,
            Builtin::Inner,
            Builtin::Max,
            Builtin::Min,
            Builtin::Numel,
            Builtin::Outer,
            Builtin::SameShape,
        ];
        assert_eq!(BUILTINS.len(), all.len());
        for b in all {
            assert_eq!(Builtin::lookup(b.name()), Some(b));
        }
        assert!(BUILTINS.windows(2).all(|w| w[0].name < w[1].name));
        for list in [NAMESPACES, FEATURES, DTYPES, FILTERS, TESTS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
