//! Packages of the `schemaVersion: 1` dialect and of the Hub's written for the tests (none is
//! copied from a package collection), each using constructs of its dialect as the engine's
//! loader or the Hub's runtime reads them, generated at build time by `build.rs`;
//! `tests/constructs.rs` runs them against float64 references.
//!
//! - `com.example.ScaleRows`: a uniform binding named by an `arg` that is no arg of the package
//!   (the loader builds the uniform from its `struct`), uniform fields by arg name and by value
//!   expression, `constants.<name>` in a later constant, a uniform field and the dispatch, and
//!   an optional `u32` arg the template only tests for truthiness (one shader per class), and
//!   an arg it only compares with a literal and tests for membership in a list (one shader
//!   per class the tests tell apart).
//! - `com.example.RowMeans`: template values computed with `/` (doubles in the engine), one
//!   printed where WGSL needs an integer (a workgroup array length, an `i32` loop bound: an
//!   integer override checked to be whole at run time) and one where a float will do, and
//!   `args.cols` read by the template itself (the loader's `args` object).
//! - `com.example.Accumulate`: an `inout` arg, an optional `weights` tensor (`present` in
//!   `when` and a pass input), a `oneOf` string read by the template as `args.mode`, tunables
//!   (one a float), `bindingSets`, an intermediate between two passes, `"$ELEM"` element
//!   types, a binding by semantic alone, `default: true`, a chained comparison and `**`.
//! - `com.example.AddRowNorms`: a tensor written in place (`Hidden`, an `inout` arg) beside an
//!   output with a shape expression, so the op allocates that output and its `run` takes the
//!   in-place tensor as `InPlace`, and a type variable of one dtype.
//! - `com.example.RowSums`: a function-scope array sized by an arg, which no build-time
//!   analysis can bound: it builds with `hints/com.example.RowSums.hints.json`, the file its
//!   error prints (`kernels-codegen --write-suggested-hints`), unedited.
//! - `com.example.AddInts`: a type variable of integer dtypes (`int32`, `uint32`, `int8`,
//!   `uint8`), the 8-bit ones stored one 32-bit word per element; the template reads
//!   `tensorDtypes.cT` to wrap 8-bit sums, so `int8` and `int32` (one WGSL scalar) get shaders
//!   of their own.
//! - `com.example.PartialCorner`: a template that calls a helper it defines only for one
//!   value of a constant, so one corner of its combinations does not validate: the generator
//!   builds the others and leaves that one out with a warning, and a call selecting it gets
//!   `OpError::NotBuilt` with the template error, as the loader would fail only that call.
//! - `com.example.HubOperands` (the Hub's dialect): derive entries computed with the Hub
//!   runtime's Jinja, whose `or` returns an operand (`tunables.WORKGROUP_SIZE or 64`, printed as
//!   the workgroup size; `attrs.gain or 1.5`, a Float uniform), whose `%` takes the dividend's
//!   sign, whose `int` filter floors, and `default` for an adapter property the device may not
//!   report.
//! - `com.example.HalfWords` (the Hub's dialect): a float16 tensor bound as `vec4<u32>` and
//!   `u32` words beside its `f16` bindings, unpacked and packed with `unpack2x16float` /
//!   `pack2x16float`, in a variant for counts that are multiples of 8.

/// The generated op modules and their registry `OPS`.
pub mod kernels {
    include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs"));
}

pub use kernel_runtime as runtime;
