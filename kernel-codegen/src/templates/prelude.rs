//! The WGSL declarations codegen writes for each shader: `enable`s, overrides, the `Params`
//! struct and every binding, all generated from the manifest so shader and manifest agree.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::model::{Access, Binding, Combination, DType, Op, Pass, Variant, dynamic_values};

/// A binding with its element type resolved for one combination.
#[derive(Debug, Clone)]
pub struct ResolvedBinding<'a> {
    pub index: u32,
    pub binding: &'a Binding,
    /// `None` for the uniform params binding.
    pub element: Option<DType>,
    /// Elements per array item: 1, or 2 / 4 for `vec2` / `vec4` words (a vector element type,
    /// or `vec4When` true under this combination).
    pub lanes: u8,
}

/// Resolves element types; `Err` names a binding whose element type is unknown here.
pub fn resolve_bindings<'a>(
    pass: &'a Pass,
    combination: &Combination,
) -> Result<Vec<ResolvedBinding<'a>>, String> {
    pass.bindings
        .iter()
        .enumerate()
        .map(|(index, binding)| {
            let (element, lanes) = match &binding.element {
                None => (None, 1),
                Some(element) => {
                    let (dtype, lanes) = combination.element(element).ok_or_else(|| {
                        format!(
                            "binding `{}`: element type {element:?} does not resolve to a scalar or vector type",
                            binding.name
                        )
                    })?;
                    (Some(dtype), lanes)
                }
            };
            let vec4 = binding.vec4_when.as_ref().is_some_and(|name| {
                combination.value(name) == Some(&crate::expr::Value::Bool(true))
            });
            Ok(ResolvedBinding {
                index: index as u32,
                binding,
                element,
                lanes: if vec4 { 4 } else { lanes },
            })
        })
        .collect()
}

/// Whether the shader needs `enable f16;` and the f16 capability.
pub fn uses_f16(bindings: &[ResolvedBinding<'_>], combination: &Combination) -> bool {
    bindings.iter().any(|b| b.element == Some(DType::F16))
        || combination.dtypes.values().any(|d| *d == DType::F16)
}

/// The capabilities a shader is validated with: f16 (and the f16-in-f32 builtins) where it
/// needs it, subgroups where its variant asks for them.
pub fn capabilities(f16: bool, features: &BTreeSet<String>) -> naga::valid::Capabilities {
    use naga::valid::Capabilities;
    let mut capabilities = Capabilities::empty();
    if f16 {
        // wgpu grants `pack2x16float` and its kin wherever it grants `shader-f16` (llvmpipe
        // offers them only then), so a shader that has f16 may also use them.
        capabilities |= Capabilities::SHADER_FLOAT16 | Capabilities::SHADER_FLOAT16_IN_FLOAT32;
    }
    if features.contains("subgroups") {
        capabilities |= Capabilities::SUBGROUP;
    }
    if features.contains(kernel_abi::device::FEATURE_SUBGROUP_MATRIX) {
        capabilities |= Capabilities::COOPERATIVE_MATRIX;
    }
    capabilities
}

/// The declarations the template places with `{{ prelude }}`.
pub fn prelude(
    op: &Op,
    variant: &Variant,
    pass: &Pass,
    bindings: &[ResolvedBinding<'_>],
    f16: bool,
) -> String {
    let mut out = String::new();
    // Templates with the loader's context write their own `enable`s before the declarations
    // (`env.wgsl.resourceDeclarations`).
    if f16 && !op.templates.loader_context {
        out.push_str("enable f16;\n\n");
    }
    let mut any_override = false;
    for value in dynamic_values(variant, pass) {
        let _ = writeln!(
            out,
            "override {}: {};",
            op.override_name(&value.name),
            value.override_type.wgsl()
        );
        any_override = true;
    }
    if any_override {
        out.push('\n');
    }
    for binding in bindings {
        if let Some(params) = &binding.binding.params {
            let _ = writeln!(out, "struct {} {{", params.name);
            for field in &params.fields {
                let _ = writeln!(out, "    {}: {},", field.name, field.wgsl_type);
            }
            out.push_str("}\n\n");
        }
    }
    for binding in bindings {
        let space = match binding.binding.access {
            Access::ReadOnly => "storage, read",
            Access::ReadWrite => "storage, read_write",
            Access::Uniform => "uniform",
        };
        let ty = match (&binding.binding.params, binding.element) {
            (Some(params), _) => params.name.clone(),
            (None, Some(element)) if binding.lanes > 1 => {
                format!("array<vec{}<{}>>", binding.lanes, element.wgsl_name())
            }
            (None, Some(element)) if binding.binding.atomic => {
                format!("array<atomic<{}>>", element.wgsl_name())
            }
            (None, Some(element)) => format!("array<{}>", element.wgsl_name()),
            (None, None) => "array<u32>".to_owned(),
        };
        let _ = writeln!(
            out,
            "@group(0) @binding({}) var<{space}> {}: {ty};",
            binding.index, binding.binding.name
        );
    }
    out
}
