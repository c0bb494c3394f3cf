//! The `schemaVersion: 1` dialect's manifest, mirrored strictly (unknown keys are errors).
//!
//! Where the dialect allows two spellings (a `when` string or list, a dispatch count as a
//! number or an expression, an output shape as one expression or a list), the mirror keeps
//! both as written; `model` normalises them.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::DeviceName;

/// One op package manifest (`manifest.json`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// Always 1 here (the dialect is chosen by it).
    pub schema_version: u32,
    pub domain: String,
    pub name: String,
    pub since_version: u32,
    #[serde(default)]
    pub description: String,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    #[serde(default)]
    pub type_constraints: IndexMap<String, Vec<String>>,
    /// Name → argument; required and non-empty.
    pub args: IndexMap<String, Arg>,
    /// Bare numbers, fixed at build time.
    #[serde(default)]
    pub tunables: IndexMap<String, Value>,
    #[serde(default)]
    pub binding_sets: IndexMap<String, Vec<Binding>>,
    /// Attribute defaults (the family's `attributes`; the scalar `args` usually take their place).
    #[serde(default)]
    pub attributes: IndexMap<String, Value>,
    #[serde(default)]
    pub derive: IndexMap<String, String>,
    pub variants: Vec<Variant>,
}

/// An input or output of the op.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Port {
    pub role: String,
    /// A type variable of `typeConstraints` or a concrete dtype name.
    pub dtype: String,
    #[serde(default)]
    pub rank: Option<u32>,
    #[serde(default)]
    pub optional: bool,
    /// Output shape: one expression (`"shapes.xT"`) or a list of dimension expressions and
    /// numbers (`["args.rows", 4]`).
    #[serde(default)]
    pub shape: Option<ShapeSpec>,
    #[serde(default)]
    pub description: String,
}

/// An output shape as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ShapeSpec {
    Expr(String),
    Dims(Vec<Scalar>),
}

/// A number or an expression, as dispatch counts, dims and constants are written.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Expr(String),
}

/// One kernel argument: a tensor view (`kind: "tensor"`) or a scalar.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Arg {
    /// `tensor`, `u32`, `i32`, `f32`, `bool` or `string`.
    pub kind: String,
    pub semantic: String,
    /// For tensors: `input`, `output`, `inout`, `weights` or `scratch`.
    #[serde(default)]
    pub role: Option<String>,
    /// `false` makes the argument optional (absent tensors: `present.<arg>` is false;
    /// absent scalars are falsy).
    #[serde(default = "yes")]
    pub required: bool,
    /// Storage dtype when it differs from the port's.
    #[serde(default)]
    pub dtype: Option<String>,
    /// For `string` scalars: the allowed values.
    #[serde(default)]
    pub one_of: Option<Vec<String>>,
    #[serde(default)]
    pub description: String,
}

fn yes() -> bool {
    true
}

/// A variant: candidates are tried `default` first, then by `priority`, highest first.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Variant {
    pub id: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub priority: i64,
    #[serde(default)]
    pub default: bool,
    /// Accepted by the family's loader; unused by known packages.
    #[serde(default)]
    pub select_above: Option<Value>,
    #[serde(default)]
    pub when: Option<When>,
    /// Name → expression or JSON literal, evaluated per call in order.
    #[serde(default)]
    pub constants: IndexMap<String, Scalar>,
    #[serde(default)]
    pub intermediates: Vec<Intermediate>,
    #[serde(default)]
    pub required_features: Vec<DeviceName>,
    #[serde(default)]
    pub required_subgroup_min_size: Option<u32>,
    pub passes: Vec<Pass>,
}

/// `when`: one expression or a list of them, all of which must be exactly `true`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum When {
    One(String),
    All(Vec<String>),
}

impl When {
    /// The clauses in order.
    pub fn clauses(&self) -> Vec<&str> {
        match self {
            When::One(text) => vec![text.as_str()],
            When::All(list) => list.iter().map(String::as_str).collect(),
        }
    }
}

/// A buffer between passes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intermediate {
    pub id: String,
    pub dtype: String,
    /// A list expression (`"[256]"`) or a list.
    pub shape: ShapeSpec,
}

/// One compute pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    pub id: String,
    pub name: String,
    /// The template, when given directly.
    #[serde(default)]
    pub shader: Option<String>,
    /// The template with extra inputs (visible to it as `source.<name>`).
    #[serde(default)]
    pub source: Option<Source>,
    pub bindings: Bindings,
    pub dispatch: Dispatch,
    /// Semantics (or intermediate ids) the pass reads and writes.
    #[serde(default)]
    pub reads: Vec<String>,
    #[serde(default)]
    pub writes: Vec<String>,
}

/// A pass's template and its extra inputs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Always `template`.
    pub kind: String,
    pub shader: String,
    #[serde(default)]
    pub version: Option<Value>,
    #[serde(default)]
    pub inputs: IndexMap<String, Scalar>,
}

/// A binding-set name or an inline list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Bindings {
    Set(String),
    Inline(Vec<Binding>),
}

/// One `@group(0) @binding(i)` entry; its index is its position in the list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Binding {
    pub name: String,
    #[serde(default)]
    pub arg: Option<String>,
    pub semantic: String,
    #[serde(default)]
    pub role: Option<String>,
    pub buffer: Buffer,
    /// `f32`, `vec4<f16>`, … or `$name` (a pass constant, else a type variable).
    #[serde(default)]
    pub element_type: Option<String>,
    #[serde(default, rename = "struct")]
    pub struct_: Option<Struct>,
}

/// WebGPU buffer binding type.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffer {
    #[serde(rename = "type")]
    pub ty: String,
}

/// The uniform struct of a pass.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Struct {
    pub name: String,
    pub fields: Vec<Field>,
}

/// One uniform field: `value`, else `args[name]`, else `default`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    #[serde(default)]
    pub value: Option<Scalar>,
    #[serde(default)]
    pub default: Option<Scalar>,
}

/// Workgroup counts per dimension; `y` and `z` default to 1.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    pub x: Scalar,
    #[serde(default)]
    pub y: Option<Scalar>,
    #[serde(default)]
    pub z: Option<Scalar>,
}

/// Parses a `schemaVersion: 1` manifest, reporting the JSON path of the first structural error.
pub fn parse(text: &str) -> Result<Manifest, (String, String)> {
    super::parse_strict(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{
        "schemaVersion": 1, "domain": "test", "name": "Copy", "sinceVersion": 1,
        "inputs": [{"role": "X", "dtype": "T"}],
        "outputs": [{"role": "Y", "dtype": "T", "shape": ["args.rows", 4]}],
        "typeConstraints": {"T": ["float32"]},
        "args": {
            "xT": {"kind": "tensor", "semantic": "X", "role": "input"},
            "yT": {"kind": "tensor", "semantic": "Y", "role": "output"},
            "rows": {"kind": "u32", "semantic": "rows", "required": false}
        },
        "variants": [{
            "id": "main", "when": "args.rows > 0",
            "passes": [{
                "id": "p", "name": "Copy", "shader": "copy.wgsl.jinja",
                "bindings": [{"name": "x", "arg": "xT", "semantic": "X", "role": "input",
                              "buffer": {"type": "read-only-storage"}, "elementType": "$T"}],
                "dispatch": {"x": "ceil(args.rows / 64)", "y": 1, "z": 1},
                "reads": ["X"], "writes": ["Y"]
            }]
        }]
    }"#;

    #[test]
    fn reads_both_spellings_of_the_flexible_fields() {
        let m = parse(SMALL).expect("parses");
        assert!(!m.args["rows"].required);
        assert!(m.args["xT"].required);
        assert!(matches!(&m.outputs[0].shape, Some(ShapeSpec::Dims(d)) if d.len() == 2));
        let variant = &m.variants[0];
        assert_eq!(
            variant.when.as_ref().map(When::clauses),
            Some(vec!["args.rows > 0"])
        );
        assert!(matches!(variant.passes[0].dispatch.y, Some(Scalar::Int(1))));
    }

    #[test]
    fn unknown_keys_are_errors_at_their_path() {
        let text = SMALL.replace("\"reads\"", "\"readz\"");
        let (path, message) = parse(&text).expect_err("unknown key");
        assert_eq!(path, "variants[0].passes[0].readz");
        assert!(message.contains("unknown field `readz`"), "{message}");
    }

    #[test]
    fn the_dialect_is_chosen_by_schema_version() {
        let declared = super::super::read(SMALL).expect("a valid manifest");
        assert_eq!(declared.dialect, super::super::Dialect::V1);
        let future = SMALL.replace("\"schemaVersion\": 1", "\"schemaVersion\": 2");
        let problems = super::super::read(&future).expect_err("unknown version");
        let (path, message) = &problems[0];
        assert_eq!(path, "schemaVersion");
        assert!(message.contains("unsupported schemaVersion 2"), "{message}");
    }
}
