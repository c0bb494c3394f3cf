//! Which manifest dialect an expression is written in.
//!
//! The seed packages and `schemaVersion: 1` packages write slightly different Jinja. The
//! [`Dialect`] is given to [`parse_in`](super::parse_in) and returned by
//! [`Scope::dialect`](super::Scope::dialect); the IR the checker returns spells out every
//! difference (`Truthy`, `LooseCompare`, `ToInt`), so evaluation and lowering have none. [`Dialect::Seed`] is exactly the seed
//! language. [`Dialect::V1`] adds, as the engine those packages come from evaluates them:
//!
//! - names: `args.<name>` ([`Symbol::Arg`](crate::expr::Symbol::Arg)), `present.<arg>`, `tensorDtypes.<arg>`,
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
