//! The Hugging Face Hub's current package dialect (manifestSpec 2.1, as the Hub's JavaScript
//! runtime reads it), mirrored strictly: every key that runtime accepts and nothing else, an
//! unknown key an error at its JSON path.
//!
//! A manifest of this dialect has no `schemaVersion`; its `inputs` and `outputs` are maps
//! keyed by bind key. Values the dialect computes (derives, `when` clauses, dispatch axes,
//! uniform fields, shapes) are Jinja expression strings kept as written; `derive` maps keep
//! their file order, which is their evaluation order.
//!
//! The spellings of the spec 2.0 draft that the runtime refuses are refused here too, at
//! their JSON path, in the runtime's words (`hub/draft.rs`): `attributeDescriptions`,
//! `constants`, `bindingSets`, bare attribute and tunable values, `args` of kind `tensor`,
//! binding `semantic`, pass `source` and `constants`, and dispatch `gridStride`.
//!
//! `desugar.rs` reads a manifest into the declaration the model is built from.
//! `metadata.rs` checks the `metadata.json` a package laid out as a Hub repository ships.

mod de;
mod desugar;
mod draft;
pub mod metadata;
mod paths;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::DeviceName;

/// A `derive` map: name → value, in file order (each entry sees the ones before it).
pub type Derive = IndexMap<String, DeriveValue>;

/// One op package manifest (`manifest.json`) of the Hub dialect.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// The JSON schema the file names, if any.
    #[serde(default, rename = "$schema")]
    pub schema: Option<String>,
    /// `ai.onnx` when absent, as in the runtime.
    #[serde(default = "onnx_domain")]
    pub domain: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    /// Accepted by the runtime; its shape is not described, so it is kept as written.
    #[serde(default)]
    pub conformance: Option<Value>,
    pub since_version: u32,
    /// Bind key → input, in ONNX positional order.
    pub inputs: IndexMap<String, InputPort>,
    /// Bind key → output, in ONNX positional order.
    pub outputs: IndexMap<String, OutputPort>,
    /// Name → argument (`args.<name>` in expressions). Tensors are ports, never args.
    #[serde(default)]
    pub args: IndexMap<String, Arg>,
    /// Name → attribute (`attrs.<name>` in expressions).
    #[serde(default)]
    pub attributes: IndexMap<String, Attribute>,
    /// Accepted by the runtime, which does not describe their shape; read as `schemaVersion: 1`
    /// writes them (`{values, required}`).
    #[serde(default)]
    pub attribute_constraints: IndexMap<String, Value>,
    /// Type variable → the ONNX dtype names it may take.
    #[serde(default)]
    pub type_constraints: IndexMap<String, Vec<String>>,
    #[serde(default)]
    pub tunables: IndexMap<String, Tunable>,
    /// Evaluated per call before every variant's, in order.
    #[serde(default)]
    pub derive: Derive,
    /// Clauses every variant needs (each must be exactly `true`).
    #[serde(default)]
    pub when: Vec<String>,
    /// What every variant needs of the device.
    #[serde(default)]
    pub requires: Option<Requires>,
    /// Handle → binding, named by the passes' `bindings` lists.
    #[serde(default)]
    pub bindings: IndexMap<String, Binding>,
    pub variants: Vec<Variant>,
    /// Accepted by the runtime; its shape is not described, so it is kept as written.
    #[serde(default)]
    pub onnx: Option<Value>,
}

fn onnx_domain() -> String {
    "ai.onnx".to_owned()
}

/// An input of the op.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InputPort {
    /// The ONNX name of the input (`"A"`, `"input"`).
    #[serde(default)]
    pub onnx: Option<String>,
    /// A type variable of `typeConstraints` or a concrete ONNX dtype name.
    pub dtype: String,
    /// A literal rank (or an expression).
    #[serde(default)]
    pub rank: Option<IntOrExpr>,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub description: Option<String>,
    /// The dtype the tensor is stored as when it differs (int64 as int32 or uint32).
    #[serde(default)]
    pub storage: Option<String>,
    /// How an int64 stored narrower is converted; required there.
    #[serde(default)]
    pub narrowing: Option<Narrowing>,
    /// `packed` (uint8 only).
    #[serde(default)]
    pub layout: Option<String>,
}

/// An output of the op: an input's fields and its shape.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OutputPort {
    #[serde(default)]
    pub onnx: Option<String>,
    pub dtype: String,
    /// An expression (`"max(ranks.a, ranks.b)"`) or a literal rank.
    #[serde(default)]
    pub rank: Option<IntOrExpr>,
    /// One expression giving the shape as a list (`"broadcastShape(shapes.a, shapes.b)"`).
    #[serde(default)]
    pub shape: Option<String>,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub storage: Option<String>,
    #[serde(default)]
    pub narrowing: Option<Narrowing>,
    #[serde(default)]
    pub layout: Option<String>,
}

/// How int64 values stored in 32 bits are converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Narrowing {
    /// A value that does not fit is an error.
    Checked,
    /// A value that does not fit is clamped.
    Saturating,
}

/// A non-negative integer or an expression string: ranks, dispatch counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IntOrExpr {
    Int(u64),
    Expr(String),
}

/// An argument (`args.<name>`). The runtime accepts `args` but the dialect's packages do not
/// use them, so an entry is kept as the object written; one of kind `tensor` is refused.
#[derive(Debug, Clone, Default)]
pub struct Arg(pub IndexMap<String, Value>);

/// An attribute: `{default, description?}`.
#[derive(Debug, Clone)]
pub struct Attribute {
    pub default: Value,
    pub description: Option<String>,
}

/// A tunable: `{default, description?}`, an integer fixed at build time.
#[derive(Debug, Clone)]
pub struct Tunable {
    pub default: i64,
    pub description: Option<String>,
}

/// A `derive` value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum DeriveValue {
    /// Every string is an expression (a string value is written quoted: `"\"add\""`).
    Expr(String),
    Bool(bool),
    Int(i64),
    Float(f64),
    /// A list, one expression per element.
    List(Vec<String>),
}

/// What a variant (or the whole op) needs of the device.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Requires {
    /// WebGPU feature names (`subgroups`, `shader-f16`, …).
    #[serde(default)]
    pub features: Vec<DeviceName>,
    /// Subgroup-matrix configurations the adapter must report.
    #[serde(default)]
    pub subgroup_matrix_configs: Vec<SubgroupMatrixConfig>,
    /// Limit name → the least value. The runtime checks limits under `requires`; this
    /// spelling (after `device.limits`) is inferred, unseen in a package.
    #[serde(default)]
    pub limits: IndexMap<DeviceName, u64>,
    /// The least subgroup size; spelling inferred (after `device.adapterInfo`), unseen.
    #[serde(default)]
    pub subgroup_min_size: Option<u32>,
    /// The greatest subgroup size; spelling inferred (after `device.adapterInfo`), unseen.
    #[serde(default)]
    pub subgroup_max_size: Option<u32>,
}

/// One subgroup-matrix configuration (`{componentType: "f16", M: 8, N: 8, K: 8}`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubgroupMatrixConfig {
    pub component_type: String,
    #[serde(default)]
    pub result_component_type: Option<String>,
    #[serde(rename = "M")]
    pub m: u32,
    #[serde(rename = "N")]
    pub n: u32,
    #[serde(rename = "K")]
    pub k: u32,
}

impl SubgroupMatrixConfig {
    /// The feature a device must have to offer this configuration (the result type defaults to
    /// the component type). A component type the runtime cannot name gives a name the
    /// expression checker rejects, pointing at the clause.
    pub fn feature_name(&self) -> String {
        use kernel_abi::device::{MatrixScalar, SubgroupMatrixConfig as Config};
        let result = self
            .result_component_type
            .as_ref()
            .unwrap_or(&self.component_type);
        let config = MatrixScalar::from_wgsl(&self.component_type)
            .zip(MatrixScalar::from_wgsl(result))
            .map(|(component, result)| Config {
                component,
                result,
                m: self.m,
                n: self.n,
                k: self.k,
            });
        match config {
            Some(config) => config.feature_name(),
            None => format!(
                "subgroup-matrix-{}-{result}-{}x{}x{}",
                self.component_type, self.m, self.n, self.k
            ),
        }
    }
}

/// A binding, as a top-level handle or inline in a pass's list. Its target is `arg` (a
/// port's bind key), else `scratch` (an intermediate id), else `name`, else the handle;
/// its WGSL variable is `name`, else `arg`, else the handle.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Binding {
    #[serde(default)]
    pub arg: Option<String>,
    #[serde(default)]
    pub scratch: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The access; by default read-only for inputs, read-write for outputs and scratch.
    #[serde(default)]
    pub buffer: Option<Buffer>,
    /// A WGSL type or `$name` (a derive or a type variable); by default the port's dtype.
    #[serde(default)]
    pub element_type: Option<String>,
    /// The uniform's fields, in order (the struct is `Params`).
    #[serde(default, rename = "struct")]
    pub struct_: Option<Vec<Field>>,
}

/// A storage binding's access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum Buffer {
    Storage,
    ReadOnlyStorage,
}

/// One uniform field.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// An expression.
    pub value: String,
}

/// A uniform field's WGSL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub enum FieldType {
    U32,
    I32,
    F32,
}

/// An entry of a pass's `bindings` list: binding `i` of `@group(0)` at position `i`.
#[derive(Debug, Clone)]
pub enum BindingRef {
    /// A key of the top-level `bindings`.
    Handle(String),
    Inline(Binding),
}

/// A variant: candidates are tried by `priority`, highest first (file order breaks ties).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Variant {
    pub id: String,
    #[serde(default)]
    pub priority: i64,
    /// Clauses that must each be exactly `true`.
    pub when: Vec<String>,
    #[serde(default)]
    pub requires: Option<Requires>,
    /// Clauses of which one true demotes the variant below every eligible undemoted one.
    #[serde(default)]
    pub demote_when: Vec<String>,
    /// Variants, ranked higher, that make this one ineligible when they are eligible.
    #[serde(default)]
    pub superseded_by: Vec<String>,
    /// Overrides of the op's tunables, merged in before the variant's `derive`.
    #[serde(default)]
    pub tunables: IndexMap<String, Tunable>,
    /// Evaluated after the manifest's, shadowing its names.
    #[serde(default)]
    pub derive: Derive,
    #[serde(default)]
    pub intermediates: Vec<Intermediate>,
    pub passes: Vec<Pass>,
}

/// A buffer a variant allocates for its passes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intermediate {
    pub id: String,
    pub dtype: String,
    /// A list expression (`"[rows * blocks]"`).
    pub shape: String,
}

/// One compute pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    pub id: String,
    /// A label (`"Add.Vec4"`).
    pub name: String,
    /// The template, a file of the package.
    pub shader: String,
    /// Evaluated after the variant's, shadowing its names.
    #[serde(default)]
    pub derive: Derive,
    pub bindings: Vec<BindingRef>,
    pub dispatch: Dispatch,
}

/// A pass's workgroup counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatch {
    /// `{x, y?, z?}`: `y` and `z` default to 1.
    Grid {
        x: IntOrExpr,
        y: Option<IntOrExpr>,
        z: Option<IntOrExpr>,
    },
    /// `{threads, workgroupSize}`: `ceilDiv(threads, workgroupSize)` workgroups, folded.
    Threads {
        threads: IntOrExpr,
        workgroup_size: IntOrExpr,
    },
    /// `{workgroups}`: that many workgroups, folded.
    Workgroups(IntOrExpr),
}

/// Parses a Hub-dialect manifest, reporting the JSON path of the first structural error; a
/// spelling of the spec 2.0 draft is reported as the runtime reports it.
pub fn parse(text: &str) -> Result<Manifest, (String, String)> {
    super::parse_strict(text).map_err(draft::explain)
}

#[cfg(test)]
mod tests;
