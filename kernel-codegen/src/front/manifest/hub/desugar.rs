//! Reads a Hub-dialect manifest into the declaration the model is built from. Ports keyed by
//! bind key become tensors whose role and binding arg are that key; `{default}` attributes
//! and tunables their defaults; `derive` maps the manifest's derives, the variant's constants
//! and the pass's template values, in order (each level sees the ones before it and shadows
//! them, as the runtime evaluates them); binding handles and inline bindings the pass's
//! binding list; `requires` and the top-level `when` clauses of every variant; the dispatch
//! shorthands the explicit axes the runtime folds them into.

use indexmap::IndexMap;
use serde_json::Value;

use super::{
    Binding, BindingRef, Buffer, DeriveValue, Dispatch, FieldType, IntOrExpr, Narrowing, Pass,
    Requires, Variant,
};
use serde::Deserialize;

use crate::manifest::declaration::{
    ArgDecl, AttributeConstraint, BindingDecl, BindingsRef, BufferDecl, FieldDecl,
    IntermediateDecl, Manifest, PassDecl, ScalarDecl, SourceDecl, StructDecl, TensorDecl,
    VariantDecl,
};
use crate::manifest::{Dialect, Problems};

/// The workgroup count a folded axis holds at most.
const FOLD_WIDTH: i64 = crate::expr::DISPATCH_FOLD_WIDTH.1;

/// Kinds an `args` entry may have.
const SCALAR_KINDS: &[&str] = &["bool", "f32", "i32", "string", "u32"];

impl super::Manifest {
    /// The declaration this manifest makes, or every structural problem found.
    pub fn into_declaration(self) -> Result<Manifest, Problems> {
        let mut problems = Problems::new();
        let scalars = scalars(&self.args, &mut problems);
        let mut args = IndexMap::new();
        let mut inputs = Vec::new();
        for (key, port) in &self.inputs {
            let path = format!("inputs.{key}");
            let storage = storage(&path, &port.dtype, port.storage.as_deref(), port.narrowing);
            let storage = note(storage, &mut problems);
            check_layout(&path, port.layout.as_deref(), &mut problems);
            args.insert(key.clone(), tensor_arg(key, "input", storage));
            inputs.push(TensorDecl {
                role: key.clone(),
                dtype: port.dtype.clone(),
                rank: port.rank.as_ref().map(rank_value),
                shape: None,
                description: port.description.clone().unwrap_or_default(),
                optional: port.optional,
                onnx: port.onnx.clone(),
            });
        }
        let mut outputs = Vec::new();
        for (key, port) in &self.outputs {
            let path = format!("outputs.{key}");
            if self.inputs.contains_key(key) {
                problems.push((
                    path.clone(),
                    format!("`{key}` is the bind key of an input too"),
                ));
            }
            let storage = storage(&path, &port.dtype, port.storage.as_deref(), port.narrowing);
            let storage = note(storage, &mut problems);
            check_layout(&path, port.layout.as_deref(), &mut problems);
            args.insert(key.clone(), tensor_arg(key, "output", storage));
            outputs.push(TensorDecl {
                role: key.clone(),
                dtype: port.dtype.clone(),
                rank: port.rank.as_ref().map(rank_value),
                shape: port.shape.clone(),
                description: port.description.clone().unwrap_or_default(),
                optional: port.optional,
                onnx: port.onnx.clone(),
            });
        }
        // Clauses every variant needs: the manifest's `when`, then its `requires`.
        let mut common = self.when.clone();
        if let Some(requires) = &self.requires {
            common.extend(requirement_clauses(requires));
        }
        // A binding's element type defaults from what the port is stored as.
        let stored = |port_dtype: &String, storage: &Option<String>| {
            storage.clone().unwrap_or_else(|| port_dtype.clone())
        };
        let ports = Ports {
            inputs: (self.inputs.iter())
                .map(|(key, port)| (key.clone(), stored(&port.dtype, &port.storage)))
                .collect(),
            outputs: (self.outputs.iter())
                .map(|(key, port)| (key.clone(), stored(&port.dtype, &port.storage)))
                .collect(),
            handles: &self.bindings,
        };
        let variants = (self.variants.iter().enumerate())
            .map(|(v, variant)| {
                variant_decl(
                    variant,
                    &format!("variants[{v}]"),
                    &common,
                    &ports,
                    &mut problems,
                )
            })
            .collect();
        let source_paths = self.source_paths(common.len());
        let manifest = Manifest {
            dialect: Dialect::Hub,
            scalars,
            domain: self.domain,
            name: self.name,
            since_version: self.since_version,
            description: self.description.unwrap_or_default(),
            inputs,
            outputs,
            attributes: (self.attributes.iter())
                .map(|(name, a)| (name.clone(), a.default.clone()))
                .collect(),
            attribute_constraints: attribute_constraints(
                &self.attribute_constraints,
                &self.attributes,
                &mut problems,
            ),
            attribute_descriptions: (self.attributes.iter())
                .filter_map(|(name, a)| Some((name.clone(), a.description.clone()?)))
                .collect(),
            type_constraints: self.type_constraints,
            args,
            tunables: (self.tunables.iter())
                .map(|(name, t)| (name.clone(), Value::from(t.default)))
                .collect(),
            derive: (self.derive.iter())
                .map(|(name, value)| (name.clone(), derive_text(value)))
                .collect(),
            binding_sets: IndexMap::new(),
            variants,
            source_paths,
        };
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(problems)
        }
    }
}

/// `attributeConstraints`, which the Hub's runtime accepts without saying their shape, read in
/// the shape the `schemaVersion: 1` dialect gives them (`{values, required}` per attribute), so
/// that a package's constraints are checked rather than dropped; another shape, or a
/// constraint on an attribute the manifest does not declare, is an error at its path.
fn attribute_constraints(
    constraints: &IndexMap<String, Value>,
    attributes: &IndexMap<String, super::Attribute>,
    problems: &mut Problems,
) -> IndexMap<String, AttributeConstraint> {
    let mut out = IndexMap::new();
    for (name, constraint) in constraints {
        let path = format!("attributeConstraints.{name}");
        if !attributes.contains_key(name) {
            problems.push((
                path,
                format!("`{name}` is not an attribute of this manifest"),
            ));
            continue;
        }
        match AttributeConstraint::deserialize(constraint) {
            Ok(c) => {
                out.insert(name.clone(), c);
            }
            Err(e) => problems.push((
                path,
                format!("a constraint is `{{\"values\": [...], \"required\": bool}}`: {e}"),
            )),
        }
    }
    out
}

/// The `args` entries of scalar kinds; the dialect's packages have none, so only the fields
/// the `schemaVersion: 1` dialect gives them are read.
fn scalars(
    args: &IndexMap<String, super::Arg>,
    problems: &mut Problems,
) -> IndexMap<String, ScalarDecl> {
    let mut out = IndexMap::new();
    for (name, arg) in args {
        let path = format!("args.{name}");
        let text = |key: &str| arg.0.get(key).and_then(Value::as_str).map(str::to_owned);
        let kind = text("kind").unwrap_or_default();
        if !SCALAR_KINDS.contains(&kind.as_str()) {
            problems.push((
                format!("{path}.kind"),
                format!(
                    "unknown arg kind `{kind}` (known: {})",
                    SCALAR_KINDS.join(", ")
                ),
            ));
            continue;
        }
        let one_of = arg.0.get("oneOf").and_then(Value::as_array).map(|values| {
            values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        });
        out.insert(
            name.clone(),
            ScalarDecl {
                kind,
                required: arg.0.get("required").and_then(Value::as_bool) == Some(true),
                one_of,
                description: text("description").unwrap_or_default(),
            },
        );
    }
    out
}

/// How a port is stored when that differs from its dtype: an `int64` port as `uint32`, each
/// value checked to fit, is the one form the runtime here has.
fn storage(
    path: &str,
    dtype: &str,
    storage: Option<&str>,
    narrowing: Option<Narrowing>,
) -> Result<Option<&'static str>, (String, String)> {
    match (storage, narrowing) {
        (None, None) => Ok(None),
        (Some("uint32"), Some(Narrowing::Checked)) if dtype != "float32" && dtype != "float16" => {
            Ok(Some("uint32"))
        }
        (Some(_), None) => Err((
            format!("{path}.narrowing"),
            "an int64 port stored narrower needs `narrowing` (checked or saturating)".to_owned(),
        )),
        (None, Some(_)) => Err((
            format!("{path}.storage"),
            "`narrowing` applies to an int64 port stored narrower: name the `storage`".to_owned(),
        )),
        (Some(other), Some(how)) => Err((
            format!("{path}.storage"),
            format!(
                "storage `{other}` with {how:?} narrowing is not supported (supported: an int64 port stored as uint32 with checked narrowing)"
            ),
        )),
    }
}

fn note<T>(result: Result<Option<T>, (String, String)>, problems: &mut Problems) -> Option<T> {
    result.unwrap_or_else(|problem| {
        problems.push(problem);
        None
    })
}

fn check_layout(path: &str, layout: Option<&str>, problems: &mut Problems) {
    if let Some(layout) = layout {
        problems.push((
            format!("{path}.layout"),
            format!("layout `{layout}` is not supported: a tensor is stored one element per word"),
        ));
    }
}

/// The tensor arg a port binds through: its bind key, naming the port's role.
fn tensor_arg(key: &str, role: &str, storage: Option<&str>) -> ArgDecl {
    ArgDecl {
        kind: "tensor".to_owned(),
        semantic: key.to_owned(),
        role: role.to_owned(),
        dtype: storage.map(str::to_owned),
        narrowing: storage.map(|_| "checked".to_owned()),
    }
}

fn rank_value(rank: &IntOrExpr) -> Value {
    match rank {
        IntOrExpr::Int(n) => Value::from(*n),
        IntOrExpr::Expr(text) => Value::String(text.clone()),
    }
}

fn int_or_expr_text(value: &IntOrExpr) -> String {
    match value {
        IntOrExpr::Int(n) => n.to_string(),
        IntOrExpr::Expr(text) => text.clone(),
    }
}

/// A derive value as expression source; a list is a list literal of its expressions.
fn derive_text(value: &DeriveValue) -> String {
    match value {
        DeriveValue::Expr(text) => text.clone(),
        DeriveValue::Bool(b) => b.to_string(),
        DeriveValue::Int(i) => i.to_string(),
        DeriveValue::Float(f) => format!("{f:?}"),
        DeriveValue::List(items) => {
            let items: Vec<String> = items.iter().map(|e| format!("({e})")).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

/// A derive value as a variant constant or template value: literals stay literals.
fn derive_value(value: &DeriveValue) -> Value {
    match value {
        DeriveValue::Bool(b) => Value::Bool(*b),
        DeriveValue::Int(i) => Value::from(*i),
        DeriveValue::Float(f) => Value::from(*f),
        DeriveValue::Expr(_) | DeriveValue::List(_) => Value::String(derive_text(value)),
    }
}

/// `requires` as `when` clauses, so that a rejection names what the device lacks.
pub(super) fn requirement_clauses(requires: &Requires) -> Vec<String> {
    let mut clauses: Vec<String> = (requires.features.iter())
        .map(|f| format!("device.features.has(\"{f}\")"))
        .collect();
    // Subgroup-matrix configurations are reported only by devices with Chromium's feature.
    const MATRIX: &str = "chromium-experimental-subgroup-matrix";
    if !requires.subgroup_matrix_configs.is_empty()
        && !requires.features.iter().any(|f| f.as_str() == MATRIX)
    {
        clauses.push(format!("device.features.has(\"{MATRIX}\")"));
    }
    for config in &requires.subgroup_matrix_configs {
        clauses.push(format!(
            "device.features.has(\"{}\")",
            config.feature_name()
        ));
    }
    for (limit, least) in &requires.limits {
        clauses.push(format!("device.limits.{limit} >= {least}"));
    }
    if let Some(size) = requires.subgroup_min_size {
        clauses.push(format!(
            "has(device.adapterInfo, \"subgroupMinSize\") and device.adapterInfo.subgroupMinSize >= {size}"
        ));
    }
    if let Some(size) = requires.subgroup_max_size {
        clauses.push(format!(
            "has(device.adapterInfo, \"subgroupMaxSize\") and device.adapterInfo.subgroupMaxSize <= {size}"
        ));
    }
    clauses
}

/// What a binding can name.
struct Ports<'a> {
    /// Bind key → the dtype the port is stored as (its `storage`, else its dtype).
    inputs: IndexMap<String, String>,
    outputs: IndexMap<String, String>,
    handles: &'a IndexMap<String, Binding>,
}

fn variant_decl(
    variant: &Variant,
    path: &str,
    common: &[String],
    ports: &Ports<'_>,
    problems: &mut Problems,
) -> VariantDecl {
    let mut when: Vec<String> = common.to_vec();
    when.extend(variant.when.iter().cloned());
    if let Some(requires) = &variant.requires {
        when.extend(requirement_clauses(requires));
    }
    let intermediates: Vec<IntermediateDecl> = (variant.intermediates.iter())
        .map(|m| IntermediateDecl {
            id: m.id.clone(),
            dtype: m.dtype.clone(),
            shape: m.shape.clone(),
        })
        .collect();
    let scratch: IndexMap<String, String> = (intermediates.iter())
        .map(|m| (m.id.clone(), m.dtype.clone()))
        .collect();
    let passes = (variant.passes.iter().enumerate())
        .map(|(p, pass)| {
            pass_decl(
                pass,
                &format!("{path}.passes[{p}]"),
                ports,
                &scratch,
                problems,
            )
        })
        .collect();
    VariantDecl {
        id: variant.id.clone(),
        description: String::new(),
        priority: variant.priority,
        when,
        demote_when: variant.demote_when.clone(),
        superseded_by: variant.superseded_by.clone(),
        tunables: (variant.tunables.iter())
            .map(|(name, t)| (name.clone(), t.default))
            .collect(),
        constants: (variant.derive.iter())
            .map(|(name, value)| (name.clone(), derive_value(value)))
            .collect(),
        intermediates,
        passes,
        specialise: IndexMap::new(),
    }
}

fn pass_decl(
    pass: &Pass,
    path: &str,
    ports: &Ports<'_>,
    scratch: &IndexMap<String, String>,
    problems: &mut Problems,
) -> PassDecl {
    let mut bindings = Vec::new();
    for (i, entry) in pass.bindings.iter().enumerate() {
        let at = format!("{path}.bindings[{i}]");
        let (handle, binding) = match entry {
            BindingRef::Handle(key) => match ports.handles.get(key) {
                Some(binding) => (Some(key.as_str()), binding),
                None => {
                    let known: Vec<&str> = ports.handles.keys().map(String::as_str).collect();
                    problems.push((
                        at,
                        format!(
                            "unknown binding handle `{key}` (known: {})",
                            known.join(", ")
                        ),
                    ));
                    continue;
                }
            },
            BindingRef::Inline(binding) => (None, binding),
        };
        match binding_decl(handle, binding, ports, scratch) {
            Ok(decl) => bindings.push(decl),
            Err(message) => problems.push((at, message)),
        }
    }
    let mut dispatch = IndexMap::new();
    let mut axis = |name: &str, text: String| {
        dispatch.insert(name.to_owned(), Value::String(text));
    };
    match &pass.dispatch {
        Dispatch::Grid { x, y, z } => {
            let one = IntOrExpr::Int(1);
            axis("x", int_or_expr_text(x));
            axis("y", int_or_expr_text(y.as_ref().unwrap_or(&one)));
            axis("z", int_or_expr_text(z.as_ref().unwrap_or(&one)));
        }
        // The runtime folds a workgroup count W into x = min(W, 65535), y = ceilDiv(W, 65535).
        Dispatch::Threads {
            threads,
            workgroup_size,
        } => fold(
            &mut axis,
            &format!(
                "ceilDiv({}, {})",
                int_or_expr_text(threads),
                int_or_expr_text(workgroup_size)
            ),
        ),
        Dispatch::Workgroups(count) => fold(&mut axis, &format!("({})", int_or_expr_text(count))),
    }
    PassDecl {
        id: pass.id.clone(),
        name: pass.name.clone(),
        source: SourceDecl {
            shader: pass.shader.clone(),
            inputs: (pass.derive.iter())
                .map(|(name, value)| (name.clone(), derive_value(value)))
                .collect(),
        },
        bindings: BindingsRef::Inline(bindings),
        dispatch,
        replaced_dispatch: IndexMap::new(),
    }
}

/// The axes of `count` workgroups folded as the runtime folds them.
fn fold(axis: &mut impl FnMut(&str, String), count: &str) {
    axis("x", format!("min({count}, {FOLD_WIDTH})"));
    axis("y", format!("ceilDiv({count}, {FOLD_WIDTH})"));
    axis("z", "1".to_owned());
}

/// One binding as the runtime resolves it: its target is `arg`, else `scratch`, else `name`,
/// else the handle, looked up as a port's bind key and then as an intermediate of the
/// variant; its WGSL variable is `name`, else `arg`, else the handle; inputs are read-only
/// and outputs and scratch read-write unless `buffer` says otherwise.
fn binding_decl(
    handle: Option<&str>,
    binding: &Binding,
    ports: &Ports<'_>,
    scratch: &IndexMap<String, String>,
) -> Result<BindingDecl, String> {
    let wgsl_name = (binding.name.as_deref())
        .or(binding.arg.as_deref())
        .or(handle);
    if let Some(fields) = &binding.struct_ {
        return Ok(BindingDecl {
            name: wgsl_name.unwrap_or("params").to_owned(),
            arg: None,
            semantic: "kernel.params".to_owned(),
            buffer: BufferDecl {
                ty: "uniform".to_owned(),
            },
            element_type: None,
            struct_: Some(StructDecl {
                name: "Params".to_owned(),
                fields: (fields.iter())
                    .map(|f| FieldDecl {
                        name: f.name.clone(),
                        ty: match f.ty {
                            FieldType::U32 => "u32",
                            FieldType::I32 => "i32",
                            FieldType::F32 => "f32",
                        }
                        .to_owned(),
                        value: f.value.clone(),
                    })
                    .collect(),
            }),
            vec4_when: None,
        });
    }
    let Some(wgsl_name) = wgsl_name else {
        return Err(
            "an inline binding names its target: `arg` (a port), `scratch` (an intermediate) or `name`"
                .to_owned(),
        );
    };
    let target = (binding.arg.as_deref())
        .or(binding.scratch.as_deref())
        .or(binding.name.as_deref())
        .or(handle)
        .unwrap_or(wgsl_name);
    let (arg, default_access, dtype) = match (
        binding.scratch.is_none(),
        ports.inputs.get(target),
        ports.outputs.get(target),
        scratch.get(target),
    ) {
        (true, Some(dtype), _, _) => (Some(target.to_owned()), "read-only-storage", dtype),
        (true, None, Some(dtype), _) => (Some(target.to_owned()), "storage", dtype),
        (_, _, _, Some(dtype)) => (None, "storage", dtype),
        _ => {
            let known: Vec<&str> = (ports.inputs.keys().chain(ports.outputs.keys()))
                .chain(scratch.keys())
                .map(String::as_str)
                .collect();
            return Err(format!(
                "the binding's target `{target}` is neither a port's bind key nor an intermediate of this variant (known: {})",
                known.join(", ")
            ));
        }
    };
    let access = match binding.buffer {
        Some(Buffer::Storage) => "storage",
        Some(Buffer::ReadOnlyStorage) => "read-only-storage",
        None => default_access,
    };
    Ok(BindingDecl {
        name: wgsl_name.to_owned(),
        arg,
        semantic: target.to_owned(),
        buffer: BufferDecl {
            ty: access.to_owned(),
        },
        element_type: Some(
            binding
                .element_type
                .clone()
                .unwrap_or_else(|| default_element(dtype)),
        ),
        struct_: None,
        vec4_when: None,
    })
}

/// The element type of a binding that names none: its tensor's dtype, a type variable as
/// `$T`, a fixed dtype as its WGSL scalar (`int8` is stored as `i32`).
fn default_element(dtype: &str) -> String {
    match kernel_abi::DType::from_onnx_name(dtype) {
        Some(fixed) => fixed.wgsl_name().to_owned(),
        None => format!("${dtype}"),
    }
}
