//! Reads a `schemaVersion: 1` manifest into the declaration the model is built from,
//! spelling each construct the way the seed dialect does where it has one (`when` lists,
//! dispatch `x/y/z`, output shapes as list expressions, `source`) and keeping what only this
//! dialect has (scalar args, optional tensors, its expression rules) in the fields made for it.

use indexmap::IndexMap;
use serde_json::Value;

use super::declaration::{
    ArgDecl, BindingDecl, BindingsRef, BufferDecl, FieldDecl, IntermediateDecl, Manifest, PassDecl,
    ScalarDecl, SourceDecl, StructDecl, TensorDecl, VariantDecl,
};
use super::v1::{self, Scalar, ShapeSpec};
use super::{Dialect, Problems};

/// Kinds a scalar argument may have.
const SCALAR_KINDS: &[&str] = &["bool", "f32", "i32", "string", "u32"];

impl v1::Manifest {
    /// The declaration this manifest makes, or every structural problem found.
    pub fn into_declaration(self) -> Result<Manifest, Problems> {
        let mut problems = Problems::new();
        let mut scalars = IndexMap::new();
        let mut args = IndexMap::new();
        if self.args.is_empty() {
            problems.push((
                "args".to_owned(),
                "a manifest needs at least one arg".to_owned(),
            ));
        }
        for (name, arg) in &self.args {
            let path = format!("args.{name}");
            if arg.kind == "tensor" {
                let role = arg.role.clone().unwrap_or_else(|| "input".to_owned());
                if !matches!(
                    role.as_str(),
                    "input" | "output" | "inout" | "weights" | "scratch"
                ) {
                    problems.push((
                        format!("{path}.role"),
                        format!(
                            "unknown tensor role `{role}` (known: input, output, inout, weights, scratch)"
                        ),
                    ));
                }
                args.insert(
                    name.clone(),
                    ArgDecl {
                        kind: arg.kind.clone(),
                        semantic: arg.semantic.clone(),
                        role,
                        dtype: arg.dtype.clone(),
                        // The arg's dtype is how the tensor is stored: an int64 port stored as
                        // uint32 is converted on upload, each value checked to fit.
                        narrowing: (arg.dtype.as_deref() == Some("uint32"))
                            .then(|| "checked".to_owned()),
                    },
                );
            } else if SCALAR_KINDS.contains(&arg.kind.as_str()) {
                if arg.one_of.is_some() && arg.kind != "string" {
                    problems.push((
                        format!("{path}.oneOf"),
                        "only `string` scalars list their values".to_owned(),
                    ));
                }
                scalars.insert(
                    name.clone(),
                    ScalarDecl {
                        kind: arg.kind.clone(),
                        required: arg.required,
                        one_of: arg.one_of.clone(),
                        description: arg.description.clone(),
                    },
                );
            } else {
                problems.push((
                    format!("{path}.kind"),
                    format!(
                        "unknown arg kind `{}` (known: tensor, {})",
                        arg.kind,
                        SCALAR_KINDS.join(", ")
                    ),
                ));
            }
        }
        // A tensor arg that is not required makes its port optional, and the reverse.
        let optional_semantic = |semantic: &str| {
            self.args
                .values()
                .any(|a| a.kind == "tensor" && a.semantic == semantic && !a.required)
        };
        let port = |p: &v1::Port, path: String, problems: &mut Problems| TensorDecl {
            role: p.role.clone(),
            dtype: p.dtype.clone(),
            rank: p.rank.map(Value::from),
            shape: p
                .shape
                .as_ref()
                .and_then(|s| shape_text(s, &path, problems)),
            description: p.description.clone(),
            optional: p.optional || optional_semantic(&p.role),
            onnx: None,
        };
        let inputs = (self.inputs.iter().enumerate())
            .map(|(i, p)| port(p, format!("inputs[{i}].shape"), &mut problems))
            .collect();
        let outputs = (self.outputs.iter().enumerate())
            .map(|(i, p)| port(p, format!("outputs[{i}].shape"), &mut problems))
            .collect();
        let binding_sets = self
            .binding_sets
            .iter()
            .map(|(set, list)| {
                let path = format!("bindingSets.{set}");
                (set.clone(), bindings(list, &path, &scalars, &mut problems))
            })
            .collect();
        let variants = (self.variants.iter().enumerate())
            .map(|(v, variant)| {
                variant_decl(variant, &format!("variants[{v}]"), &scalars, &mut problems)
            })
            .collect();
        let manifest = Manifest {
            dialect: Dialect::V1,
            scalars,
            domain: self.domain,
            name: self.name,
            since_version: self.since_version,
            description: self.description,
            inputs,
            outputs,
            attributes: self.attributes,
            attribute_constraints: IndexMap::new(),
            attribute_descriptions: IndexMap::new(),
            type_constraints: self.type_constraints,
            args,
            tunables: self.tunables,
            derive: self.derive,
            binding_sets,
            variants,
            source_paths: Vec::new(),
        };
        if problems.is_empty() {
            Ok(manifest)
        } else {
            Err(problems)
        }
    }
}

fn variant_decl(
    variant: &v1::Variant,
    path: &str,
    scalars: &IndexMap<String, ScalarDecl>,
    problems: &mut Problems,
) -> VariantDecl {
    let mut when: Vec<String> = variant
        .when
        .as_ref()
        .map(|w| w.clauses().into_iter().map(str::to_owned).collect())
        .unwrap_or_default();
    // Device requirements are conditions like any other, so a rejection names them.
    for feature in &variant.required_features {
        when.push(format!("device.features.has(\"{feature}\")"));
    }
    if let Some(size) = variant.required_subgroup_min_size {
        when.push(format!(
            "has(device.adapterInfo, \"subgroupMinSize\") and device.adapterInfo.subgroupMinSize >= {size}"
        ));
    }
    let intermediates = (variant.intermediates.iter().enumerate())
        .filter_map(|(i, m)| {
            let shape = shape_text(
                &m.shape,
                &format!("{path}.intermediates[{i}].shape"),
                problems,
            )?;
            Some(IntermediateDecl {
                id: m.id.clone(),
                dtype: m.dtype.clone(),
                shape,
            })
        })
        .collect();
    let passes = (variant.passes.iter().enumerate())
        .filter_map(|(p, pass)| pass_decl(pass, &format!("{path}.passes[{p}]"), scalars, problems))
        .collect();
    VariantDecl {
        id: variant.id.clone(),
        description: variant.description.clone(),
        // `default: true` is tried before any priority.
        priority: if variant.default {
            i64::MAX
        } else {
            variant.priority
        },
        when,
        demote_when: Vec::new(),
        superseded_by: Vec::new(),
        tunables: IndexMap::new(),
        constants: variant
            .constants
            .iter()
            .map(|(k, v)| (k.clone(), json(v)))
            .collect(),
        intermediates,
        passes,
        specialise: IndexMap::new(),
    }
}

fn pass_decl(
    pass: &v1::Pass,
    path: &str,
    scalars: &IndexMap<String, ScalarDecl>,
    problems: &mut Problems,
) -> Option<PassDecl> {
    let source = match (&pass.shader, &pass.source) {
        (Some(shader), None) => SourceDecl {
            shader: shader.clone(),
            inputs: IndexMap::new(),
        },
        (None, Some(source)) => {
            if source.kind != "template" {
                problems.push((
                    format!("{path}.source.kind"),
                    format!("unknown source kind `{}` (known: template)", source.kind),
                ));
            }
            SourceDecl {
                shader: source.shader.clone(),
                inputs: source
                    .inputs
                    .iter()
                    .map(|(k, v)| (k.clone(), json(v)))
                    .collect(),
            }
        }
        (Some(_), Some(_)) => {
            problems.push((
                path.to_owned(),
                "a pass names its template once: `shader` or `source`, not both".to_owned(),
            ));
            return None;
        }
        (None, None) => {
            problems.push((
                path.to_owned(),
                "a pass needs `shader` or `source`".to_owned(),
            ));
            return None;
        }
    };
    let bindings = match &pass.bindings {
        v1::Bindings::Set(name) => BindingsRef::Set(name.clone()),
        v1::Bindings::Inline(list) => BindingsRef::Inline(bindings(
            list,
            &format!("{path}.bindings"),
            scalars,
            problems,
        )),
    };
    let one = Scalar::Int(1);
    let mut dispatch = IndexMap::new();
    dispatch.insert("x".to_owned(), json(&pass.dispatch.x));
    dispatch.insert(
        "y".to_owned(),
        json(pass.dispatch.y.as_ref().unwrap_or(&one)),
    );
    dispatch.insert(
        "z".to_owned(),
        json(pass.dispatch.z.as_ref().unwrap_or(&one)),
    );
    Some(PassDecl {
        id: pass.id.clone(),
        name: pass.name.clone(),
        source,
        bindings,
        dispatch,
        replaced_dispatch: IndexMap::new(),
    })
}

fn bindings(
    list: &[v1::Binding],
    path: &str,
    scalars: &IndexMap<String, ScalarDecl>,
    problems: &mut Problems,
) -> Vec<BindingDecl> {
    let mut out = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let struct_ = b.struct_.as_ref().map(|s| StructDecl {
            name: s.name.clone(),
            fields: (s.fields.iter().enumerate())
                .filter_map(|(f, field)| {
                    let value = match (&field.value, &field.default) {
                        (Some(value), _) => scalar_text(value),
                        // The family's rule: the arg of the field's name, else the default
                        // (also where the arg is optional and the call leaves it out).
                        (None, default) if scalars.contains_key(&field.name) => {
                            let arg = format!("args.{}", field.name);
                            match default {
                                Some(default) if !scalars[&field.name].required => format!(
                                    "{arg} if has(args, \"{}\") else {}",
                                    field.name,
                                    scalar_text(default)
                                ),
                                _ => arg,
                            }
                        }
                        (None, Some(default)) => scalar_text(default),
                        (None, None) => {
                            problems.push((
                                format!("{path}[{i}].struct.fields[{f}]"),
                                format!("field `{}` has no `value`, no `default` and no arg of its name", field.name),
                            ));
                            return None;
                        }
                    };
                    Some(FieldDecl {
                        name: field.name.clone(),
                        ty: field.ty.clone(),
                        value,
                    })
                })
                .collect(),
        });
        out.push(BindingDecl {
            name: b.name.clone(),
            arg: b.arg.clone(),
            semantic: b.semantic.clone(),
            buffer: BufferDecl {
                ty: b.buffer.ty.clone(),
            },
            element_type: b.element_type.clone(),
            struct_,
            vec4_when: None,
        });
    }
    out
}

/// An output or intermediate shape as one list expression.
fn shape_text(shape: &ShapeSpec, path: &str, problems: &mut Problems) -> Option<String> {
    match shape {
        ShapeSpec::Expr(text) => Some(text.clone()),
        ShapeSpec::Dims(dims) => {
            let mut parts = Vec::new();
            for dim in dims {
                match dim {
                    Scalar::Int(n) => parts.push(n.to_string()),
                    Scalar::Expr(e) => parts.push(format!("({e})")),
                    Scalar::Bool(_) | Scalar::Float(_) => {
                        problems.push((
                            path.to_owned(),
                            "a dimension is an integer or an expression".to_owned(),
                        ));
                        return None;
                    }
                }
            }
            Some(format!("[{}]", parts.join(", ")))
        }
    }
}

/// A JSON literal or expression as expression source.
fn scalar_text(value: &Scalar) -> String {
    match value {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => format!("{f:?}"),
        Scalar::Expr(e) => e.clone(),
    }
}

fn json(value: &Scalar) -> Value {
    match value {
        Scalar::Bool(b) => Value::Bool(*b),
        Scalar::Int(i) => Value::from(*i),
        Scalar::Float(f) => Value::from(*f),
        Scalar::Expr(e) => Value::String(e.clone()),
    }
}
