//! The plan of each variant in a generated op module: which pre-rendered shader a pass uses
//! (a match on its static values), its overrides, its uniform struct (layout asserted against
//! naga's), its dispatch, the variant's intermediates and the op's outputs.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::float_type_vars;
use super::eval::{EnvScope, lower};
use super::{OpInput, camel_ident, ident, upper_ident};
use crate::expr::{Type, Value};
use crate::model::{self, BindingTarget, DTypeRef, Dispatch, Expr, Op, Storage, Variant};

fn pattern(value: &Value) -> Result<TokenStream, String> {
    Ok(match value {
        Value::Bool(b) => quote!(#b),
        Value::Int(i) => quote!(#i),
        Value::Str(s) | Value::Dtype(s) => quote!(#s),
        // Floats are matched by their bits (see the key in `variant_plan`).
        Value::Float(f) => {
            let bits = f.to_bits();
            quote!(#bits)
        }
        Value::List(_) => {
            return Err(format!(
                "static value {value:?} cannot select a shader (only booleans, integers, strings and dtypes can)"
            ));
        }
    })
}

fn is_literal(ir: &crate::expr::Ir) -> bool {
    use crate::expr::IrKind;
    matches!(
        ir.kind,
        IrKind::Int(_) | IrKind::Float(_) | IrKind::Bool(_) | IrKind::Str(_)
    )
}

pub(super) fn variant_plan(
    input: &OpInput<'_>,
    scope: &EnvScope<'_>,
    v: usize,
    variant: &Variant,
) -> Result<TokenStream, String> {
    let op = input.op;
    let mut items = Vec::new();
    let mut passes = Vec::new();
    for (p, pass) in variant.passes.iter().enumerate() {
        let shaders: Vec<&crate::wgsl::Shader> = input
            .shaders
            .iter()
            .filter(|s| s.variant == v && s.pass == p)
            .collect();
        let statics = upper_ident(&["KERNELS", &variant.id, &pass.id]);
        let kernel_fn = format_ident!(
            "kernel_{}_{}",
            model::snake_ident(&variant.id),
            model::snake_ident(&pass.id)
        );
        // Combinations that render the same text share a kernel.
        let unique: Vec<&&crate::wgsl::Shader> =
            shaders.iter().filter(|s| s.same_as.is_none()).collect();
        let kernel_index = |shader: &crate::wgsl::Shader| -> usize {
            let origin = shader.same_as.map_or(shader.digest.as_str(), |first| {
                input.shaders[first].digest.as_str()
            });
            unique.iter().position(|u| u.digest == origin).unwrap_or(0)
        };
        let count = unique.len();
        let label = &pass.label;
        let kernels = unique.iter().map(|s| {
            let path = format!("{}/{}", op.module, s.file_name);
            let digest = &s.digest;
            let web_enables = s.web_enables;
            quote!(rt::Kernel { label: #label, source: include_str!(#path), entry_point: "main", digest: #digest, web_enables: #web_enables })
        });
        // A value the typed API folds to a literal is the same for every call: not a key.
        let keyed: Vec<bool> = model::static_values(variant, pass)
            .map(|s| !is_literal(&super::fold::fold(&s.expr.ir)))
            .collect();
        let static_values: Vec<&model::TemplateValue> = model::static_values(variant, pass)
            .zip(&keyed)
            .filter(|(_, keyed)| **keyed)
            .map(|(s, _)| s)
            .collect();
        // A float value (a pinned `8 / args.bits` of the true-division dialect) is matched by
        // its bits: every pattern is a value the same expression computed at build time.
        // A string the expression builds (`~`) is bound first and matched as a `&str`.
        let mut key_lets = Vec::new();
        let keys: Vec<TokenStream> = static_values
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let lowered = lower(&s.expr.ir, scope);
                if s.expr.ir.ty == Type::Float {
                    quote!(f64::to_bits(#lowered))
                } else if crate::expr::is_owned_str(&super::fold::fold(&s.expr.ir)) {
                    let name = format_ident!("key_{i}");
                    key_lets.push(quote!(let #name = #lowered;));
                    quote!(#name.as_str())
                } else {
                    lowered
                }
            })
            .collect();
        // Type variables that only set binding element types (`$T`) are part of the key too,
        // where the static values do not already tell their shaders apart.
        let float_vars = float_type_vars(op);
        let mut dtypes_by_values = std::collections::BTreeMap::new();
        let ambiguous = shaders.iter().any(|s| {
            let values = format!("{:?}", s.combination.values);
            let dtypes = format!("{:?}", s.combination.dtypes);
            dtypes_by_values
                .entry(values)
                .or_insert_with(|| dtypes.clone())
                != &dtypes
        });
        let dtype_vars: Vec<&str> = shaders
            .iter()
            .filter(|_| ambiguous)
            .flat_map(|s| s.combination.dtypes.keys())
            .map(String::as_str)
            .filter(|var| float_vars.contains(var))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut keys = keys;
        for var in &dtype_vars {
            let field = ident(&model::snake_ident(var).to_ascii_lowercase());
            keys.push(quote!(env.dtypes.#field.wgsl_name()));
        }
        let env_param = if keys.is_empty() {
            format_ident!("_env")
        } else {
            format_ident!("env")
        };
        let mut arms = Vec::new();
        for shader in &shaders {
            let index = kernel_index(shader);
            let mut patterns = shader
                .combination
                .values
                .iter()
                .zip(&keyed)
                .filter(|(_, keyed)| **keyed)
                .map(|((_, value), _)| pattern(value))
                .collect::<Result<Vec<_>, _>>()?;
            for var in &dtype_vars {
                let wgsl = shader.combination.dtypes.get(*var).map_or("", |d| d.wgsl());
                patterns.push(quote!(#wgsl));
            }
            arms.push(quote!((#(#patterns,)*) => #index,));
        }
        let what = format!("{}: variant `{}`, pass `{}`", op.name, variant.id, pass.id);
        let override_names: Vec<String> = crate::wgsl::dynamic_values(variant, pass)
            .map(|d| op.override_name(&d.name))
            .collect();
        let infos_name = upper_ident(&["SHADERS", &variant.id, &pass.id]);
        let infos = unique.iter().enumerate().map(|(index, s)| {
            let features = &s.features;
            quote!(rt::support::ShaderInfo { kernel: &#statics[#index], features: &[#(#features),*], overrides: &[#(#override_names),*] })
        });
        items.push(quote! {
            static #infos_name: [rt::support::ShaderInfo; #count] = [#(#infos),*];
        });
        items.push(quote! {
            static #statics: [rt::Kernel; #count] = [#(#kernels),*];

            fn #kernel_fn(#env_param: &Env<'_>) -> Result<&'static rt::Kernel, EvalError> {
                #(#key_lets)*
                let key = (#(#keys,)*);
                let index = match key {
                    #(#arms)*
                    #[allow(unreachable_patterns)]
                    _ => return Err(EvalError::new(format!("{}: no pre-rendered shader for {key:?}", #what))),
                };
                Ok(&#statics[index])
            }
        });
        let overrides = crate::wgsl::dynamic_values(variant, pass).map(|d| {
            let name = &d.name;
            let pipeline_name = op.override_name(name);
            let lowered = lower(&d.expr.ir, scope);
            let value = match d.expr.ir.ty {
                Type::Float => quote!(#lowered),
                Type::Bool => quote!(if #lowered { 1.0 } else { 0.0 }),
                _ => quote!(f64::from(rt::support::to_u32(#name, #lowered)?)),
            };
            quote!((#pipeline_name, #value))
        });
        let bindings = pass.bindings.iter().map(|b| match &b.target {
            BindingTarget::Tensor(i) => quote!(rt::Binding::Arg(#i)),
            BindingTarget::Intermediate(i) => quote!(rt::Binding::Intermediate(#i)),
            BindingTarget::Params => quote!(rt::Binding::Params),
        });
        let params = match pass.bindings.iter().find_map(|b| b.params.as_ref()) {
            Some(params) => {
                let size = shaders
                    .first()
                    .and_then(|s| s.uniform_size)
                    .unwrap_or(4 * params.fields.len() as u32);
                let (item, call) = params_struct(scope, &[&variant.id, &pass.id], params, size);
                items.push(item);
                call
            }
            None => quote!(::std::vec::Vec::new()),
        };
        let dispatch = dispatch(scope, &pass.dispatch);
        let id = &pass.id;
        passes.push(quote! {
            rt::PlannedPass { id: #id, kernel: #kernel_fn(env)?, overrides: vec![#(#overrides),*], bindings: vec![#(#bindings),*], params: #params, dispatch: #dispatch }
        });
    }
    let intermediates = variant.intermediates.iter().map(|i| {
        let id = &i.id;
        let dtype = format_ident!("{}", i.dtype.runtime_variant());
        let shape = lower(&i.shape.ir, scope);
        quote!(rt::IntermediateSpec { id: #id, dtype: rt::DType::#dtype, len: rt::support::element_count(#id, &#shape)? })
    });
    let outputs = op.outputs.iter().map(|t| {
        let role = &t.role;
        let field = super::tensor_field(t);
        let dtype = tensor_dtype(op, t);
        quote!(rt::OutputSpec { role: #role, dtype: #dtype, shape: rt::support::to_shape(#role, &env.shapes.#field)? })
    });
    let plan_fn = format_ident!("plan_{}", model::snake_ident(&variant.id));
    let id = &variant.id;
    let doc = super::doc_lines(&format!(" The plan of variant `{id}`."));
    Ok(quote! {
        #(#items)*

        #(#[doc = #doc])*
        fn #plan_fn(env: &Env<'_>) -> Result<rt::Plan, EvalError> {
            Ok(rt::Plan {
                op: OP_NAME,
                variant: #id,
                passes: vec![#(#passes),*],
                intermediates: vec![#(#intermediates),*],
                outputs: vec![#(#outputs),*],
            })
        }
    })
}

/// The runtime dtype of a tensor, read from the environment for type variables.
fn tensor_dtype(op: &Op, tensor: &model::Tensor) -> TokenStream {
    match (&tensor.storage, &tensor.dtype) {
        (Storage::U32Checked, _) => quote!(rt::DType::U32),
        (_, DTypeRef::Var(var)) if float_type_vars(op).contains(&var.as_str()) => {
            let field = ident(&model::snake_ident(var).to_ascii_lowercase());
            quote!(env.dtypes.#field)
        }
        (_, DTypeRef::Var(var)) => {
            let d = op
                .type_var(var)
                .and_then(|t| t.allowed.first())
                .map_or("F32", |d| d.runtime_variant());
            let d = format_ident!("{}", d);
            quote!(rt::DType::#d)
        }
        (_, DTypeRef::Fixed(d)) => {
            let d = format_ident!("{}", d.runtime_variant());
            quote!(rt::DType::#d)
        }
    }
}

/// The function that packs a pass's uniform struct (every field a 4-byte scalar at offset
/// `4 * i`, which `wgsl::validate` checked against naga's layout) and its call.
fn params_struct(
    scope: &EnvScope<'_>,
    parts: &[&str],
    params: &model::ParamsStruct,
    naga_size: u32,
) -> (TokenStream, TokenStream) {
    let mut name_parts = vec!["Params"];
    name_parts.extend_from_slice(parts);
    let name = camel_ident(&name_parts);
    let fill = format_ident!("fill_{}", model::snake_ident(&name.to_string()));
    let words = params.fields.iter().map(|f| {
        let text = &f.name;
        let lowered = lower(&f.value.ir, scope);
        match f.wgsl_type {
            "u32" => quote!(.u32(rt::support::to_u32(#text, #lowered)?)),
            "i32" => quote!(.i32(rt::support::to_i32(#text, #lowered)?)),
            _ => quote!(.f32((#lowered) as f32)),
        }
    });
    let count = params.fields.len();
    let doc = super::doc_lines(&format!(
        " Uniform `{}` of {} ({naga_size} bytes): its fields in order, four bytes each.",
        params.name,
        parts.join("/")
    ));
    let item = quote! {
        #(#[doc = #doc])*
        fn #fill(env: &Env<'_>) -> Result<::std::vec::Vec<u8>, EvalError> {
            Ok(rt::uniform::Words::with_fields(#count) #(#words)* .into_bytes())
        }
    };
    (item, quote!(#fill(env)?))
}

fn dispatch(scope: &EnvScope<'_>, dispatch: &Dispatch) -> TokenStream {
    let count = |name: &str, e: &Expr| {
        let lowered = lower(&e.ir, scope);
        quote!(rt::support::to_u64(#name, #lowered)?)
    };
    let size = |name: &str, e: &Expr| {
        let lowered = lower(&e.ir, scope);
        quote!(rt::support::to_u32(#name, #lowered)?)
    };
    match dispatch {
        Dispatch::Threads {
            threads,
            workgroup_size,
        } => {
            let t = count("threads", threads);
            let w = size("workgroupSize", workgroup_size);
            quote!(rt::Dispatch::Threads { threads: #t, workgroup_size: #w })
        }
        Dispatch::Workgroups(n) => {
            let n = count("workgroups", n);
            quote!(rt::Dispatch::Workgroups(#n))
        }
        Dispatch::Grid { x, y, z } => {
            let x = count("x", x);
            let y = y.as_ref().map_or(quote!(1), |y| count("y", y));
            let z = z.as_ref().map_or(quote!(1), |z| count("z", z));
            quote!(rt::Dispatch::Grid { x: #x, y: #y, z: #z })
        }
        Dispatch::GridStride {
            items,
            workgroup_size,
        } => {
            let i = count("gridStride", items);
            let w = size("workgroupSize", workgroup_size);
            quote!(rt::Dispatch::GridStride { items: #i, workgroup_size: #w })
        }
    }
}
