//! What a package declares, as the front end reads it from either dialect: the input of
//! the model's builder (`front/lower/`) and of implementation hints. Each dialect's module
//! ([`super::seed`], [`super::v1`]) reads its JSON into these types. The leaf entries
//! (attribute constraints, kernel args, bindings, intermediates, pass sources) are spelled in
//! the seed dialect's JSON exactly as declared here, so they are read from it directly.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

/// One op package manifest (`<domain>.<name>.manifest.json`).
#[derive(Debug)]
pub struct Manifest {
    /// The dialect the manifest was written in, which decides how its expressions read.
    pub dialect: super::Dialect,
    /// Scalar arguments (the `schemaVersion: 1` dialect's `args` of scalar kinds), by name.
    pub scalars: IndexMap<String, ScalarDecl>,
    pub domain: String,
    pub name: String,
    pub since_version: u32,
    pub description: String,
    pub inputs: Vec<TensorDecl>,
    pub outputs: Vec<TensorDecl>,
    /// Attribute defaults: an attribute listed here is optional.
    pub attributes: IndexMap<String, Value>,
    pub attribute_constraints: IndexMap<String, AttributeConstraint>,
    pub attribute_descriptions: IndexMap<String, String>,
    pub type_constraints: IndexMap<String, Vec<String>>,
    pub args: IndexMap<String, ArgDecl>,
    pub tunables: IndexMap<String, Value>,
    pub derive: IndexMap<String, String>,
    pub binding_sets: IndexMap<String, Vec<BindingDecl>>,
    pub variants: Vec<VariantDecl>,
    /// Where this declaration's JSON paths are written in the manifest file, where the two
    /// differ (a dialect the front end rewrote): declaration path → the file's path, each a
    /// prefix of the paths under it (see [`crate::diag::Diagnostics::rewrite_paths`]).
    pub source_paths: Vec<(String, String)>,
}

/// An input or output tensor of the op.
#[derive(Debug)]
pub struct TensorDecl {
    pub role: String,
    /// A type variable of `typeConstraints` or a concrete dtype name.
    pub dtype: String,
    /// A literal rank (inputs) or an expression (outputs).
    pub rank: Option<Value>,
    /// Output shape expression.
    pub shape: Option<String>,
    pub description: String,
    /// Whether the tensor may be left out (`optional: true` in the `schemaVersion: 1`
    /// dialect).
    pub optional: bool,
    /// The ONNX name of the port where the manifest gives one (the Hub dialect's `onnx`).
    pub onnx: Option<String>,
}

/// A scalar argument (`schemaVersion: 1`): `args.<name>` in expressions.
#[derive(Debug, Clone)]
pub struct ScalarDecl {
    /// `u32`, `i32`, `f32`, `bool` or `string`.
    pub kind: String,
    pub required: bool,
    /// The allowed values of a `string` scalar.
    pub one_of: Option<Vec<String>>,
    pub description: String,
}

/// Declared restrictions on an attribute.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttributeConstraint {
    #[serde(default)]
    pub values: Option<Vec<Value>>,
    #[serde(default)]
    pub required: bool,
}

/// A kernel argument: a named view of an op tensor as the shader binds it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArgDecl {
    pub kind: String,
    pub semantic: String,
    pub role: String,
    /// Storage dtype when it differs from the logical dtype (e.g. int64 bound as `uint32`).
    #[serde(default)]
    pub dtype: Option<String>,
    #[serde(default)]
    pub narrowing: Option<String>,
}

/// One `@group(0) @binding(i)` entry; its index is its position in the list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BindingDecl {
    pub name: String,
    #[serde(default)]
    pub arg: Option<String>,
    pub semantic: String,
    pub buffer: BufferDecl,
    #[serde(default)]
    pub element_type: Option<String>,
    #[serde(default, rename = "struct")]
    pub struct_: Option<StructDecl>,
    /// Names a static boolean of the pass (a constant or source input): where it is true, the
    /// shader sees the buffer as `array<vec4<T>>`, four elements per word. An extension of the
    /// seed format; the manifest must make the predicate imply a length that is a multiple of 4.
    #[serde(default)]
    pub vec4_when: Option<String>,
}

/// WebGPU buffer binding type.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferDecl {
    #[serde(rename = "type")]
    pub ty: String,
}

/// A uniform struct whose fields are computed from expressions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructDecl {
    pub name: String,
    pub fields: Vec<FieldDecl>,
}

/// One uniform struct field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldDecl {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub value: String,
}

/// A kernel variant, selected by `priority` and `when`.
#[derive(Debug)]
pub struct VariantDecl {
    pub id: String,
    /// What the variant does and when it is chosen (an extension of the seed format; optional).
    pub description: String,
    pub priority: i64,
    pub when: Vec<String>,
    /// Clauses of which one true demotes the variant below every eligible undemoted one (the
    /// Hub dialect's `demoteWhen`).
    pub demote_when: Vec<String>,
    /// Variants, ranked higher, that make this one ineligible where they are eligible (the
    /// Hub dialect's `supersededBy`).
    pub superseded_by: Vec<String>,
    /// Overrides of the op's tunables for this variant's expressions and templates.
    pub tunables: IndexMap<String, i64>,
    pub constants: IndexMap<String, Value>,
    pub intermediates: Vec<IntermediateDecl>,
    pub passes: Vec<PassDecl>,
    /// Template value → the values to build shaders for, declared by implementation hints
    /// (`front/hints.rs`); no dialect's manifest has it.
    pub specialise: IndexMap<String, Vec<crate::expr::Value>>,
}

/// A scratch buffer owned by a variant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntermediateDecl {
    pub id: String,
    pub dtype: String,
    pub shape: String,
}

/// One compute pass.
#[derive(Debug)]
pub struct PassDecl {
    pub id: String,
    pub name: String,
    pub source: SourceDecl,
    pub bindings: BindingsRef,
    pub dispatch: IndexMap<String, Value>,
    /// The manifest's own dispatch values that hints replaced: still checked, so that the
    /// package is valid without its hints too.
    pub replaced_dispatch: IndexMap<String, Value>,
}

/// The template of a pass and its inputs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceDecl {
    pub shader: String,
    #[serde(default)]
    pub inputs: IndexMap<String, Value>,
}

/// Either the name of a binding set or an inline binding list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum BindingsRef {
    Set(String),
    Inline(Vec<BindingDecl>),
}
