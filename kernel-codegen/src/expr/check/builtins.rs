//! The one table of builtin functions, filters, tests and namespaces, shared by the checker, the
//! interpreter and the lowering so that a builtin cannot be known to one and not the others.

use super::Dialect;
use crate::expr::Type;

/// Namespace roots of the seed dialect: `shapes.<role>`, `ranks.<role>`, `dtypes.<var>`,
/// `attrs.<name>`, `tunables.<NAME>`, `device.limits.<name>` / `device.features.has(..)`. Sorted.
pub const NAMESPACES: &[&str] = &["attrs", "device", "dtypes", "ranks", "shapes", "tunables"];

/// Namespace roots of the V1 dialect: the seed's plus `args.<name>`, `constants.<name>` (the
/// variant's constant, as its bare name reads it), `present.<arg>` and `tensorDtypes.<arg>`
/// (and `device.adapterInfo.<name>` under `device`). Sorted.
pub const NAMESPACES_V1: &[&str] = &[
    "args",
    "attrs",
    "constants",
    "device",
    "dtypes",
    "present",
    "ranks",
    "shapes",
    "tensorDtypes",
    "tunables",
];

/// Namespace roots of the Hub dialect: V1's with `derive.<name>` in place of
/// `constants.<name>`. Sorted.
pub const NAMESPACES_HUB: &[&str] = &[
    "args",
    "attrs",
    "derive",
    "device",
    "dtypes",
    "present",
    "ranks",
    "shapes",
    "tensorDtypes",
    "tunables",
];

/// The namespace roots of `dialect`.
pub fn namespaces(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Seed => NAMESPACES,
        Dialect::V1 => NAMESPACES_V1,
        Dialect::Hub => NAMESPACES_HUB,
    }
}

/// The device features `device.features.has("…")` may name (WebGPU spelling): the runtime's
/// (`kernel-abi`'s list). Sorted.
pub const FEATURES: &[&str] = &kernel_abi::device::FEATURES;

/// The features V1 packages may ask about: the seed's plus Chromium's subgroup matrices. Sorted.
pub const FEATURES_V1: &[&str] = &[
    "chromium-experimental-subgroup-matrix",
    "shader-f16",
    "subgroups",
    "timestamp-query",
];

/// The features Hub packages may ask about: V1's plus `subgroup-size-control`. Sorted.
pub const FEATURES_HUB: &[&str] = &[
    "chromium-experimental-subgroup-matrix",
    "shader-f16",
    "subgroup-size-control",
    "subgroups",
    "timestamp-query",
];

/// Features packages may test for that no wgpu device offers (wgpu has no subgroup size
/// control): a variant that requires one is never a candidate here, so its shaders are not
/// built. Chromium's subgroup matrices are not among them: they are lowered to wgpu's
/// cooperative matrices (`wgsl/subgroup_matrix.rs`).
pub const UNAVAILABLE_FEATURES: &[&str] = &["subgroup-size-control"];

/// The device features of `dialect`.
pub fn features(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Seed => FEATURES,
        Dialect::V1 => FEATURES_V1,
        Dialect::Hub => FEATURES_HUB,
    }
}

/// The feature `f16Ok(dtype)` depends on.
pub const SHADER_F16: &str = "shader-f16";

/// The values a Dtype takes (WGSL names); a string compared with a Dtype must be one. Sorted.
pub const DTYPES: &[&str] = &["f16", "f32", "i64", "u32"];

/// The WGSL scalars a V1 type variable binds (`dtypes.X`), as the engine maps tensor types.
pub const DTYPES_V1: &[&str] = &["f16", "f32", "i32", "u32"];

/// The Dtype values of `dialect`.
pub fn dtypes(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Seed => DTYPES,
        Dialect::V1 | Dialect::Hub => DTYPES_V1,
    }
}

/// Filters (`x | name`). Sorted.
pub const FILTERS: &[&str] = &["length"];

/// The Jinja dialects' filters (the V1 loader's and the Hub runtime's engines). Sorted.
pub const FILTERS_JINJA: &[&str] = &["first", "last", "length", "max", "min", "sum"];

/// The Hub runtime's filters: the list filters, the numeric ones of @huggingface/jinja
/// (`abs`, and `int`, which floors, and `float`) and `default`. Sorted.
pub const FILTERS_HUB: &[&str] = &[
    "abs", "default", "first", "float", "int", "last", "length", "max", "min", "sum",
];

/// The filters of `dialect`.
pub fn filters(dialect: Dialect) -> &'static [&'static str] {
    match dialect {
        Dialect::Seed => FILTERS,
        Dialect::V1 => FILTERS_JINJA,
        Dialect::Hub => FILTERS_HUB,
    }
}

/// Tests (`x is name`); `undefined` is `not defined`, as in Jinja. Sorted.
pub const TESTS: &[&str] = &["defined", "undefined"];

/// A builtin function. Those marked (V1) exist only in the V1 dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    /// `alignedDim(list, i, width)`: axis `i` of the list right-aligned in `width` axes (1 in
    /// front of it). Written by the model, never by a manifest (how a list known per call
    /// reaches a shader, an override per axis), so it has no name to look up.
    AlignedDim,
    /// `list[start:end]` (Jinja dialects): the checker's form of a slice, never called by
    /// name; an absent bound is 0 or `i64::MAX`.
    Slice,
    /// `a + b` of two lists (Jinja dialects): the checker's form of their concatenation.
    ListConcat,
    /// `list | sum` (Jinja dialects): the checker's form of the filter; 0 for an empty list.
    ListSum,
    /// `list | min` (Jinja dialects); an error for an empty list.
    ListMin,
    /// `list | max` (Jinja dialects); an error for an empty list.
    ListMax,
    /// `a % b` with the sign of the dividend (the Hub dialect's `%`, JavaScript's).
    Remainder,
    /// A Float as JavaScript writes it, for the Hub dialect's `~`.
    NumberText,
    /// `|x|`, the Hub dialect's `abs` filter.
    Abs,
    /// `broadcastShape(a, b)` (Hub): the shape ONNX's multidirectional broadcasting gives
    /// `a` and `b`; an error where they do not broadcast.
    BroadcastShape,
    /// `broadcastable(a, b)` (V1): shape `a` broadcasts to shape `b` (trailing axes, one way).
    Broadcastable,
    /// `ceil(x)` (V1): the smallest Int `>= x`.
    Ceil,
    /// `ceilDiv(a, b)`: ⌈a / b⌉.
    CeilDiv,
    /// `cols(shape[, axis])` (V1): the size of `axis`, by default the last.
    Cols,
    /// `dim(shape, axis)`: one dimension; a negative axis is an error.
    Dim,
    /// `dim` where a negative axis counts from the end (V1's `dim`, chosen by the checker).
    DimWrapped,
    /// `dtypeBytes(dtype)` (V1): bytes per stored element of a Dtype or tensor dtype string.
    DtypeBytes,
    /// `f16Allowed(dtype)` (V1): the dtype is f32, or f16 on a device with shader-f16.
    F16Allowed,
    /// `f16Ok(dtype)`: dtype is not f16, or the device has shader-f16 (in V1 it also takes a
    /// tensor dtype string such as `"float16"`).
    F16Ok,
    /// `floor(x)` (V1): the largest Int `<= x`.
    Floor,
    /// `has(namespace, "name")` (V1): whether `namespace.name` is given, e.g.
    /// `has(device.adapterInfo, "subgroupMinSize")`. Checked into an `is defined` test.
    Has,
    /// `hasAxis(axes, axis, rank)` (V1): the list `axes` names `axis`, modulo `rank`.
    HasAxis,
    /// `inner(shape, axis)`: product of the dimensions after `axis`.
    Inner,
    /// `inner` where a negative axis counts from the end (V1's `inner`).
    InnerWrapped,
    /// `isUniqueIntList(list)` (Hub): no value appears twice.
    IsUniqueIntList,
    /// `log2ceil(x)` (Hub): the smallest k >= 0 with 2^k >= x (0 for x <= 1).
    Log2Ceil,
    /// `matmulShape(a, b)` (Hub): the shape of ONNX `MatMul` (NumPy `matmul`) of `a` and
    /// `b`: a 1-D operand promoted and its axis removed again, batch axes broadcast.
    MatmulShape,
    /// `max(a, b, …)`.
    Max,
    /// `min(a, b, …)`.
    Min,
    /// `numel(shape)`: product of all dimensions.
    Numel,
    /// `onnxDtypeCode(dtype)` (Hub): ONNX's `TensorProto.DataType` number of a dtype.
    OnnxDtypeCode,
    /// `outer(shape, axis)`: product of the dimensions before `axis`.
    Outer,
    /// `outer` where a negative axis counts from the end (V1's `outer`).
    OuterWrapped,
    /// `permuteShape(shape, perm)` (Hub): `shape[perm[i]]` for each i, negative entries
    /// counting from the end; `perm` must name every axis once.
    PermuteShape,
    /// `pick([[cond, value], …], default)` (V1): the value of the first pair whose condition
    /// is truthy, else `default`. Checked into nested `… if … else …`.
    Pick,
    /// `prefix(shape, n)` (Hub): the first `n` dimensions.
    Prefix,
    /// `pow(a, b)` (V1): `a` to the power `b` (Int when both are Int).
    Pow,
    /// `pow2ceil(x)` (V1): the smallest power of two `>= x`; 1 for `x <= 1`.
    Pow2Ceil,
    /// `rank(shape)` (V1): the number of dimensions.
    Rank,
    /// `rows(shape[, axis])` (V1): the product of every dimension except `axis` (by default
    /// the last).
    Rows,
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
    /// Exactly two numeric arguments, promoted together; Float when either is Float.
    NumericPair,
    /// One numeric argument; the result is Int.
    Rounding,
    /// One Dtype or Str (a tensor dtype such as `"float16"`) argument.
    DtypeLike,
    /// A List and an optional Int axis, which defaults to `-1` (the last axis).
    ShapeAxis,
    /// Checked by rules of its own and rewritten into other IR (`has`, `pick`).
    Special,
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
    /// A runtime call chosen by the (promoted) argument type: `int` for Int arguments (`None`:
    /// the argument itself, as `ceil` of an Int), `float` for Float ones; each a function name
    /// and whether it is fallible.
    ByType {
        /// For Int arguments.
        int: Option<(&'static str, bool)>,
        /// For Float arguments.
        float: (&'static str, bool),
    },
    /// Folded pairwise with `core::cmp::{max,min}` (Int) or `f64::{max,min}` (Float).
    Fold(&'static str),
    /// `<runtime>::expr::<name>(dtype, <shader-f16 feature>)`.
    F16(&'static str),
    /// Never lowered: the checker rewrites the call into other IR.
    Desugared,
}

/// The V1 loader's helpers the Hub runtime does not have (its expressions fail on an unknown
/// name, so a Hub manifest must not use them).
const NOT_IN_HUB: &[Builtin] = &[Builtin::Cols, Builtin::F16Allowed, Builtin::Rank];

impl BuiltinSig {
    /// Whether expressions of `dialect` may call it.
    fn is_in(&self, dialect: Dialect) -> bool {
        self.since <= dialect && !(dialect == Dialect::Hub && NOT_IN_HUB.contains(&self.builtin))
    }
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
    /// The first dialect that has it (every later one has it too; error messages list only
    /// the dialect's own).
    pub since: Dialect,
}

/// A fallible runtime function.
const fn rt(name: &'static str) -> Lowering {
    Lowering::Runtime {
        name,
        fallible: true,
    }
}

/// A table row.
const fn row(
    builtin: Builtin,
    name: &'static str,
    params: Params,
    result: Type,
    lowering: Lowering,
    since: Dialect,
) -> BuiltinSig {
    BuiltinSig {
        builtin,
        name,
        params,
        result,
        lowering,
        since,
    }
}

/// Shorthands for the table.
const LIST: Type = Type::List;
const INT: Type = Type::Int;
const BOOL: Type = Type::Bool;
const FLOAT: Type = Type::Float;
const STR: Type = Type::Str;
const SEED: Dialect = Dialect::Seed;
const V1: Dialect = Dialect::V1;
const HUB: Dialect = Dialect::Hub;

/// Every builtin, sorted by name (error messages list them in this order).
pub const BUILTINS: &[BuiltinSig] = &[
    row(
        Builtin::Broadcastable,
        "broadcastable",
        Params::Fixed(&[LIST, LIST]),
        BOOL,
        Lowering::Runtime {
            name: "broadcastable",
            fallible: false,
        },
        V1,
    ),
    row(
        Builtin::BroadcastShape,
        "broadcastShape",
        Params::Fixed(&[LIST, LIST]),
        LIST,
        rt("broadcast_shape"),
        HUB,
    ),
    row(
        Builtin::Ceil,
        "ceil",
        Params::Rounding,
        INT,
        Lowering::ByType {
            int: None,
            float: ("ceil", true),
        },
        V1,
    ),
    row(
        Builtin::CeilDiv,
        "ceilDiv",
        Params::Fixed(&[INT, INT]),
        INT,
        rt("ceil_div"),
        SEED,
    ),
    row(
        Builtin::Cols,
        "cols",
        Params::ShapeAxis,
        INT,
        rt("cols"),
        V1,
    ),
    row(
        Builtin::Dim,
        "dim",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("dim"),
        SEED,
    ),
    row(
        Builtin::DtypeBytes,
        "dtypeBytes",
        Params::DtypeLike,
        INT,
        rt("dtype_bytes"),
        V1,
    ),
    row(
        Builtin::F16Allowed,
        "f16Allowed",
        Params::DtypeLike,
        BOOL,
        Lowering::F16("f16_allowed"),
        V1,
    ),
    row(
        Builtin::F16Ok,
        "f16Ok",
        Params::Fixed(&[Type::Dtype]),
        BOOL,
        Lowering::F16("f16_ok"),
        SEED,
    ),
    row(
        Builtin::Floor,
        "floor",
        Params::Rounding,
        INT,
        Lowering::ByType {
            int: None,
            float: ("floor", true),
        },
        V1,
    ),
    row(
        Builtin::Has,
        "has",
        Params::Special,
        BOOL,
        Lowering::Desugared,
        V1,
    ),
    row(
        Builtin::HasAxis,
        "hasAxis",
        Params::Fixed(&[LIST, INT, INT]),
        BOOL,
        rt("has_axis"),
        V1,
    ),
    row(
        Builtin::Inner,
        "inner",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("inner"),
        SEED,
    ),
    row(
        Builtin::IsUniqueIntList,
        "isUniqueIntList",
        Params::Fixed(&[LIST]),
        BOOL,
        Lowering::Runtime {
            name: "is_unique_int_list",
            fallible: false,
        },
        HUB,
    ),
    row(
        Builtin::Log2Ceil,
        "log2ceil",
        Params::Fixed(&[INT]),
        INT,
        rt("log2ceil"),
        HUB,
    ),
    row(
        Builtin::MatmulShape,
        "matmulShape",
        Params::Fixed(&[LIST, LIST]),
        LIST,
        rt("matmul_shape"),
        HUB,
    ),
    row(
        Builtin::Max,
        "max",
        Params::Numeric(2),
        INT,
        Lowering::Fold("max"),
        SEED,
    ),
    row(
        Builtin::Min,
        "min",
        Params::Numeric(2),
        INT,
        Lowering::Fold("min"),
        SEED,
    ),
    row(
        Builtin::Numel,
        "numel",
        Params::Fixed(&[LIST]),
        INT,
        rt("numel"),
        SEED,
    ),
    row(
        Builtin::OnnxDtypeCode,
        "onnxDtypeCode",
        Params::DtypeLike,
        INT,
        rt("onnx_dtype_code"),
        HUB,
    ),
    row(
        Builtin::Outer,
        "outer",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("outer"),
        SEED,
    ),
    row(
        Builtin::PermuteShape,
        "permuteShape",
        Params::Fixed(&[LIST, LIST]),
        LIST,
        rt("permute_shape"),
        HUB,
    ),
    row(
        Builtin::Pick,
        "pick",
        Params::Special,
        INT,
        Lowering::Desugared,
        V1,
    ),
    row(
        Builtin::Pow,
        "pow",
        Params::NumericPair,
        INT,
        Lowering::ByType {
            int: Some(("pow", true)),
            float: ("pow_float", false),
        },
        V1,
    ),
    row(
        Builtin::Pow2Ceil,
        "pow2ceil",
        Params::Rounding,
        INT,
        Lowering::ByType {
            int: Some(("pow2ceil", true)),
            float: ("pow2ceil_float", true),
        },
        V1,
    ),
    row(
        Builtin::Prefix,
        "prefix",
        Params::Fixed(&[LIST, INT]),
        LIST,
        Lowering::Runtime {
            name: "prefix",
            fallible: false,
        },
        HUB,
    ),
    row(
        Builtin::Rank,
        "rank",
        Params::Fixed(&[LIST]),
        INT,
        rt("rank"),
        V1,
    ),
    row(
        Builtin::Rows,
        "rows",
        Params::ShapeAxis,
        INT,
        rt("rows"),
        V1,
    ),
    row(
        Builtin::SameShape,
        "sameShape",
        Params::Fixed(&[LIST, LIST]),
        BOOL,
        Lowering::Runtime {
            name: "same_shape",
            fallible: false,
        },
        SEED,
    ),
];

/// The builtins only the model writes.
const MODEL_ONLY: &[BuiltinSig] = &[
    row(
        Builtin::AlignedDim,
        "alignedDim",
        Params::Fixed(&[LIST, INT, INT]),
        INT,
        rt("aligned_dim"),
        HUB,
    ),
    row(
        Builtin::ListConcat,
        "listConcat",
        Params::Fixed(&[LIST, LIST]),
        LIST,
        Lowering::Runtime {
            name: "list_concat",
            fallible: false,
        },
        V1,
    ),
    row(
        Builtin::ListSum,
        "listSum",
        Params::Fixed(&[LIST]),
        INT,
        rt("list_sum"),
        V1,
    ),
    row(
        Builtin::ListMin,
        "listMin",
        Params::Fixed(&[LIST]),
        INT,
        rt("list_min"),
        V1,
    ),
    row(
        Builtin::ListMax,
        "listMax",
        Params::Fixed(&[LIST]),
        INT,
        rt("list_max"),
        V1,
    ),
    row(
        Builtin::Abs,
        "abs",
        Params::Numeric(1),
        INT,
        Lowering::ByType {
            int: Some(("abs", true)),
            float: ("abs_float", false),
        },
        HUB,
    ),
    row(
        Builtin::NumberText,
        "numberText",
        Params::Fixed(&[FLOAT]),
        STR,
        Lowering::Runtime {
            name: "js_number_to_str",
            fallible: false,
        },
        HUB,
    ),
    row(
        Builtin::Remainder,
        "remainder",
        Params::NumericPair,
        INT,
        Lowering::ByType {
            int: Some(("remainder", true)),
            float: ("remainder_float", true),
        },
        HUB,
    ),
    row(
        Builtin::Slice,
        "slice",
        Params::Fixed(&[LIST, INT, INT]),
        LIST,
        Lowering::Runtime {
            name: "slice",
            fallible: false,
        },
        V1,
    ),
];

/// The builtins a V1 expression's `dim`, `outer` and `inner` become: their names are the
/// same, so they are not found by name.
const WRAPPED_AXES: &[BuiltinSig] = &[
    row(
        Builtin::DimWrapped,
        "dim",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("dim_wrapped"),
        V1,
    ),
    row(
        Builtin::InnerWrapped,
        "inner",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("inner_wrapped"),
        V1,
    ),
    row(
        Builtin::OuterWrapped,
        "outer",
        Params::Fixed(&[LIST, INT]),
        INT,
        rt("outer_wrapped"),
        V1,
    ),
];

impl Builtin {
    /// The builtin called `name` in the seed dialect, if any.
    pub fn lookup(name: &str) -> Option<Builtin> {
        Builtin::lookup_in(name, Dialect::Seed)
    }

    /// The builtin called `name` in `dialect`, if any.
    pub fn lookup_in(name: &str, dialect: Dialect) -> Option<Builtin> {
        BUILTINS
            .iter()
            .find(|s| s.name == name && s.is_in(dialect))
            .map(|s| s.builtin)
    }

    /// Its row in [`BUILTINS`] (or among the wrapped-axis builtins).
    pub fn sig(self) -> &'static BuiltinSig {
        // Every variant has a row; the fallback only keeps this total without a panic path.
        BUILTINS
            .iter()
            .chain(WRAPPED_AXES)
            .chain(MODEL_ONLY)
            .find(|s| s.builtin == self)
            .unwrap_or(&BUILTINS[0])
    }

    /// The builtin whose negative axes count from the end, for one that takes an axis; the
    /// builtin itself otherwise.
    pub fn wrapping_axes(self) -> Builtin {
        match self {
            Builtin::Dim => Builtin::DimWrapped,
            Builtin::Inner => Builtin::InnerWrapped,
            Builtin::Outer => Builtin::OuterWrapped,
            other => other,
        }
    }

    /// Its name in expressions.
    pub fn name(self) -> &'static str {
        self.sig().name
    }
}

/// The names of the seed dialect's builtins, comma-separated, for "unknown function" messages.
pub fn known_functions() -> String {
    known_functions_in(Dialect::Seed)
}

/// The names of `dialect`'s builtins, comma-separated.
pub fn known_functions_in(dialect: Dialect) -> String {
    BUILTINS
        .iter()
        .filter(|s| s.is_in(dialect))
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
            Builtin::BroadcastShape,
            Builtin::Broadcastable,
            Builtin::Ceil,
            Builtin::CeilDiv,
            Builtin::Cols,
            Builtin::Dim,
            Builtin::DtypeBytes,
            Builtin::F16Allowed,
            Builtin::F16Ok,
            Builtin::Floor,
            Builtin::Has,
            Builtin::HasAxis,
            Builtin::Inner,
            Builtin::IsUniqueIntList,
            Builtin::Log2Ceil,
            Builtin::MatmulShape,
            Builtin::Max,
            Builtin::Min,
            Builtin::Numel,
            Builtin::OnnxDtypeCode,
            Builtin::Outer,
            Builtin::PermuteShape,
            Builtin::Pick,
            Builtin::Pow,
            Builtin::Pow2Ceil,
            Builtin::Prefix,
            Builtin::Rank,
            Builtin::Rows,
            Builtin::SameShape,
        ];
        assert_eq!(BUILTINS.len(), all.len());
        for wrapped in WRAPPED_AXES {
            assert_eq!(wrapped.name, wrapped.builtin.name());
            assert_eq!(
                Builtin::lookup(wrapped.name).map(Builtin::wrapping_axes),
                Some(wrapped.builtin)
            );
        }
        for b in all {
            let in_hub = !NOT_IN_HUB.contains(&b);
            assert_eq!(
                Builtin::lookup_in(b.name(), Dialect::Hub),
                in_hub.then_some(b)
            );
            for dialect in [Dialect::Seed, Dialect::V1] {
                let found = Builtin::lookup_in(b.name(), dialect);
                assert_eq!(found, (b.sig().since <= dialect).then_some(b));
            }
        }
        assert_eq!(
            known_functions(),
            "ceilDiv, dim, f16Ok, inner, max, min, numel, outer, sameShape"
        );
        // Case-insensitively, as a reader scans the list.
        assert!(
            BUILTINS
                .windows(2)
                .all(|w| w[0].name.to_lowercase() < w[1].name.to_lowercase())
        );
        for list in [
            NAMESPACES,
            NAMESPACES_V1,
            NAMESPACES_HUB,
            FEATURES,
            FEATURES_V1,
            FEATURES_HUB,
            DTYPES,
            DTYPES_V1,
            FILTERS,
            FILTERS_JINJA,
            FILTERS_HUB,
            TESTS,
        ] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
