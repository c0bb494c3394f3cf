//! Builds a pass's bindings: what each binds (a tensor, an intermediate, the uniform params),
//! its access and element type, and the params struct's fields.

use super::scope::{Cx, join_keys};
use crate::expr::Type;
use crate::manifest::BindingDecl;
use crate::model::{
    Access, Binding, BindingTarget, Class, DType, ElementType, Intermediate, Op, ParamField,
    ParamsStruct, TemplateValue,
};

/// The arg a tensor binding names: its `arg`, else (the field is optional) the tensor arg of
/// its `semantic`, unless that is the uniform's or an intermediate's.
fn bound_arg(cx: &Cx<'_>, decl: &BindingDecl, intermediates: &[Intermediate]) -> Option<String> {
    if let Some(arg) = &decl.arg {
        return Some(arg.clone());
    }
    if decl.semantic == "kernel.params" || intermediates.iter().any(|i| i.id == decl.semantic) {
        return None;
    }
    cx.manifest
        .args
        .iter()
        .find(|(_, arg)| arg.kind == "tensor" && arg.semantic == decl.semantic)
        .map(|(name, _)| name.clone())
}

pub(super) fn build_bindings(
    cx: &mut Cx<'_>,
    base: &str,
    decls: &[BindingDecl],
    intermediates: &[Intermediate],
    constants: &[TemplateValue],
    inputs: &[TemplateValue],
) -> Vec<Binding> {
    let op = cx.scope.op;
    // `$name` element types read the variant's values and the pass's.
    let element_values: Vec<TemplateValue> = constants.iter().chain(inputs).cloned().collect();
    let mut out = Vec::new();
    for (i, decl) in decls.iter().enumerate() {
        let path = format!("{base}[{i}]");
        let access = match decl.buffer.ty.as_str() {
            "read-only-storage" => Access::ReadOnly,
            "storage" => Access::ReadWrite,
            "uniform" => Access::Uniform,
            other => {
                cx.error(
                    format!("{path}.buffer.type"),
                    format!(
                        "unknown buffer type `{other}` (known: read-only-storage, storage, uniform)"
                    ),
                );
                continue;
            }
        };
        // The loader builds the uniform from a binding's `struct`, whatever its `arg` and
        // `semantic` say (packages name it `params`, `paramsT`, `kernel.params`).
        let target = if decl.struct_.is_some() {
            if access != Access::Uniform {
                cx.error(
                    format!("{path}.buffer.type"),
                    format!(
                        "a binding with a `struct` is the pass's uniform, so its buffer type must be `uniform`, not `{}`",
                        decl.buffer.ty
                    ),
                );
                continue;
            }
            BindingTarget::Params
        } else if access == Access::Uniform {
            cx.error(
                &path,
                "a uniform binding is the pass's uniform: it needs a `struct` whose fields the loader fills",
            );
            continue;
        } else if let Some(arg) = &bound_arg(cx, decl, intermediates) {
            let Some(arg_decl) = cx.manifest.args.get(arg) else {
                cx.error(
                    format!("{path}.arg"),
                    format!(
                        "unknown arg `{arg}` (known: {})",
                        join_keys(&cx.manifest.args)
                    ),
                );
                continue;
            };
            if arg_decl.semantic != decl.semantic {
                cx.error(
                    &path,
                    format!(
                        "arg `{arg}` has semantic `{}` but the binding says `{}`",
                        arg_decl.semantic, decl.semantic
                    ),
                );
            }
            match op.tensors().position(|t| t.role == arg_decl.semantic) {
                Some(index) => {
                    let is_output = index >= op.inputs.len();
                    let in_place = op.inputs.get(index).is_some_and(|t| t.in_place);
                    if is_output && access != Access::ReadWrite {
                        cx.error(
                            &path,
                            format!("output `{}` must be bound as `storage`", arg_decl.semantic),
                        );
                    }
                    if !is_output && !in_place && access == Access::ReadWrite {
                        cx.error(
                            &path,
                            format!("input `{}` must not be bound writable", arg_decl.semantic),
                        );
                    }
                    BindingTarget::Tensor(index)
                }
                None => {
                    cx.error(
                        &path,
                        format!(
                            "arg `{arg}` names semantic `{}`, which is no input or output role",
                            arg_decl.semantic
                        ),
                    );
                    continue;
                }
            }
        } else if decl.semantic == "kernel.params" {
            BindingTarget::Params
        } else if let Some(index) = intermediates
            .iter()
            .position(|inter| inter.id == decl.semantic)
        {
            BindingTarget::Intermediate(index)
        } else {
            cx.error(&path, format!("semantic `{}` is neither `kernel.params` nor an intermediate of this variant, and the binding has no `arg`", decl.semantic));
            continue;
        };
        let params = match (&decl.struct_, target == BindingTarget::Params) {
            (Some(decl_struct), true) => {
                let mut fields = Vec::new();
                for (f, field) in decl_struct.fields.iter().enumerate() {
                    let field_path = format!("{path}.struct.fields[{f}].value");
                    let (wgsl_type, expected) = match field.ty.as_str() {
                        "u32" => ("u32", Type::Int),
                        "i32" => ("i32", Type::Int),
                        "f32" => ("f32", Type::Float),
                        other => {
                            cx.error(format!("{path}.struct.fields[{f}].type"), format!("unsupported uniform field type `{other}` (known: u32, i32, f32)"));
                            continue;
                        }
                    };
                    if let Some(value) = cx.expr(&field_path, &field.value, expected) {
                        fields.push(ParamField {
                            name: field.name.clone(),
                            wgsl_type,
                            value,
                        });
                    }
                }
                Some(ParamsStruct {
                    name: decl_struct.name.clone(),
                    fields,
                })
            }
            (None, true) => {
                cx.error(
                    &path,
                    "a `kernel.params` binding needs a `struct`: the loader builds the uniform from its fields",
                );
                continue;
            }
            (_, false) => None,
        };
        if access != Access::Uniform && target == BindingTarget::Params {
            cx.error(
                format!("{path}.buffer.type"),
                "the `kernel.params` binding is the pass's uniform: its buffer type must be `uniform`",
            );
        }
        // `atomic<u32>` words: the buffer is read and written with atomic operations.
        let atomic_inner = decl
            .element_type
            .as_deref()
            .and_then(|ty| ty.trim().strip_prefix("atomic<"))
            .and_then(|ty| ty.strip_suffix('>'))
            .map(str::trim);
        if let Some(inner) = atomic_inner {
            // WGSL has atomics of the two 32-bit integer scalars only.
            if inner != "u32" && inner != "i32" {
                cx.error(
                    format!("{path}.elementType"),
                    format!("atomic bindings hold `u32` or `i32`, not `{inner}`"),
                );
                continue;
            }
            if access != Access::ReadWrite {
                cx.error(
                    format!("{path}.buffer.type"),
                    "an `atomic<…>` binding is written: its buffer type must be `storage`",
                );
                continue;
            }
        }
        let element_type = atomic_inner.or(decl.element_type.as_deref());
        let element = match (element_type, target == BindingTarget::Params) {
            (_, true) => None,
            (None, false) => {
                cx.error(&path, "storage bindings need an `elementType`");
                continue;
            }
            (Some(ty), false) => match resolve_element(op, &element_values, ty) {
                Ok(element) => Some(element),
                Err(message) => {
                    cx.error(format!("{path}.elementType"), message);
                    continue;
                }
            },
        };
        let vec4_when = match &decl.vec4_when {
            None => None,
            Some(name) => {
                let value = constants.iter().chain(inputs).find(|v| &v.name == name);
                match value {
                    Some(v)
                        if v.class == Class::Static
                            && v.expr.ir.ty == Type::Bool
                            && element.is_some() =>
                    {
                        Some(name.clone())
                    }
                    Some(_) if element.is_none() => {
                        cx.error(
                            format!("{path}.vec4When"),
                            "only storage bindings can be seen as vec4 words",
                        );
                        None
                    }
                    Some(_) => {
                        cx.error(
                            format!("{path}.vec4When"),
                            format!("`{name}` must be a boolean of the pass (it is not)"),
                        );
                        None
                    }
                    None if cx.scope.failed.contains(name) => None,
                    None => {
                        cx.error(
                            format!("{path}.vec4When"),
                            format!(
                                "`{name}` is neither a constant nor a source input of this pass"
                            ),
                        );
                        None
                    }
                }
            }
        };
        out.push(Binding {
            name: decl.name.clone(),
            target,
            access,
            element,
            atomic: atomic_inner.is_some(),
            params,
            vec4_when,
        });
    }
    out
}

fn resolve_element(op: &Op, constants: &[TemplateValue], ty: &str) -> Result<ElementType, String> {
    if let Some(name) = ty.strip_prefix('$') {
        if op.type_var(name).is_some() {
            return Ok(ElementType::Var(name.to_owned()));
        }
        // The pass's value of a name shadows the variant's (`constants` lists the variant's
        // first), as the template sees it.
        return match constants.iter().rev().find(|c| c.name == name) {
            // A dtype, or a string naming an element type (`"vec4<f16>"`), checked per shader.
            Some(c)
                if c.class == Class::Static && matches!(c.expr.ir.ty, Type::Dtype | Type::Str) =>
            {
                Ok(ElementType::Constant(name.to_owned()))
            }
            Some(_) => Err(format!(
                "`${name}` must name a static dtype or element-type constant"
            )),
            None => Err(format!(
                "`${name}` is neither a type variable nor a value of this variant or pass"
            )),
        };
    }
    // A binding's element type is a WGSL scalar, which `parse_element` also reads as an ONNX
    // name; `int64` has no WGSL scalar (such tensors are bound as `u32`), and `int8`/`uint8`
    // /`int16` are bound as the `i32`/`u32` words they are stored in, so those are named that
    // way.
    match crate::model::parse_element(ty) {
        Some((DType::I64 | DType::I8 | DType::U8 | DType::I16, _)) | None => Err(format!(
            "unsupported element type `{ty}` (known: f32, f16, u32, i32, vec2<…>, vec4<…> of them, atomic<u32>, atomic<i32>, $<type variable>, $<constant>; int8, int16 and uint8 tensors are bound as i32, i32 and u32)"
        )),
        Some((dtype, lanes)) => Ok(ElementType::Fixed(dtype, lanes)),
    }
}
