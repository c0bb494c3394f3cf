//! The seed dialect (no `schemaVersion`): its JSON mirrored strictly (an unknown key is an
//! error at its JSON path), then read into the declaration. Its leaf entries are the
//! declaration's own types; the seed dialect has no scalar args, optional tensors or
//! hints-only fields, so those start empty.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use super::Dialect;
use super::declaration::{
    ArgDecl, AttributeConstraint, BindingDecl, BindingsRef, IntermediateDecl, SourceDecl,
};

/// One op package manifest (`<domain>.<name>.manifest.json`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Manifest {
    domain: String,
    name: String,
    since_version: u32,
    #[serde(default)]
    description: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    /// Attribute defaults: an attribute listed here is optional.
    #[serde(default)]
    attributes: IndexMap<String, Value>,
    #[serde(default)]
    attribute_constraints: IndexMap<String, AttributeConstraint>,
    #[serde(default)]
    attribute_descriptions: IndexMap<String, String>,
    type_constraints: IndexMap<String, Vec<String>>,
    args: IndexMap<String, ArgDecl>,
    #[serde(default)]
    tunables: IndexMap<String, Value>,
    #[serde(default)]
    derive: IndexMap<String, String>,
    #[serde(default)]
    binding_sets: IndexMap<String, Vec<BindingDecl>>,
    variants: Vec<Variant>,
}

/// An input or output tensor of the op.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tensor {
    role: String,
    /// A type variable of `typeConstraints` or a concrete dtype name.
    dtype: String,
    /// A literal rank (inputs) or an expression (outputs).
    #[serde(default)]
    rank: Option<Value>,
    /// Output shape expression.
    #[serde(default)]
    shape: Option<String>,
    #[serde(default)]
    description: String,
}

/// A kernel variant, selected by `priority` and `when`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Variant {
    id: String,
    /// What the variant does and when it is chosen (an extension of the seed format; optional).
    #[serde(default)]
    description: String,
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    when: Vec<String>,
    #[serde(default)]
    constants: IndexMap<String, Value>,
    #[serde(default)]
    intermediates: Vec<IntermediateDecl>,
    passes: Vec<Pass>,
}

/// One compute pass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Pass {
    id: String,
    name: String,
    source: SourceDecl,
    bindings: BindingsRef,
    dispatch: IndexMap<String, Value>,
}

/// Parses a seed-dialect manifest into the declaration, reporting the JSON path of the first
/// structural error.
pub fn parse(text: &str) -> Result<super::Manifest, (String, String)> {
    let m: Manifest = super::parse_strict(text)?;
    let tensor = |t: Tensor| super::TensorDecl {
        role: t.role,
        dtype: t.dtype,
        rank: t.rank,
        shape: t.shape,
        description: t.description,
        optional: false,
        onnx: None,
    };
    let pass = |p: Pass| super::PassDecl {
        id: p.id,
        name: p.name,
        source: p.source,
        bindings: p.bindings,
        dispatch: p.dispatch,
        replaced_dispatch: IndexMap::new(),
    };
    let variant = |v: Variant| super::VariantDecl {
        id: v.id,
        description: v.description,
        priority: v.priority,
        when: v.when,
        demote_when: Vec::new(),
        superseded_by: Vec::new(),
        tunables: IndexMap::new(),
        constants: v.constants,
        intermediates: v.intermediates,
        passes: v.passes.into_iter().map(pass).collect(),
        specialise: IndexMap::new(),
    };
    Ok(super::Manifest {
        dialect: Dialect::Seed,
        scalars: IndexMap::new(),
        domain: m.domain,
        name: m.name,
        since_version: m.since_version,
        description: m.description,
        inputs: m.inputs.into_iter().map(tensor).collect(),
        outputs: m.outputs.into_iter().map(tensor).collect(),
        attributes: m.attributes,
        attribute_constraints: m.attribute_constraints,
        attribute_descriptions: m.attribute_descriptions,
        type_constraints: m.type_constraints,
        args: m.args,
        tunables: m.tunables,
        derive: m.derive,
        binding_sets: m.binding_sets,
        variants: m.variants.into_iter().map(variant).collect(),
        source_paths: Vec::new(),
    })
}
