//! The plan of each variant in a generated op module: the shader each pass looks up in the
//! op's table (by its key, `table.rs`), its overrides, its uniform bytes (packed field by
//! field, the layout naga's was checked against), its dispatch, the variant's intermediates
//! and the op's outputs.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::float_type_vars;
use super::eval::{EnvScope, any_token, lower, lower_result};
use super::{OpInput, ident};
use crate::expr::Type;
use crate::model::{self, BindingTarget, DTypeRef, Dispatch, Expr, Op, Storage, Variant};

pub(super) fn variant_plan(
    input: &OpInput<'_>,
    scope: &EnvScope<'_>,
    v: usize,
    variant: &Variant,
) -> Result<TokenStream, String> {
    let op = input.op;
    let mut passes = Vec::new();
    for (p, pass) in variant.passes.iter().enumerate() {
        let shaders = super::table::pass_shaders(input.shaders, v, p);
        let keys = super::table::pass_key(op, variant, pass, &shaders).lowered(scope);
        let table_pass = super::table::pass_index(op, v, p);
        let at = |name: &str, e: &Expr| {
            let what = format!("pass `{}`, {}", pass.id, described(op, name, &e.ir));
            located(&what, e, scope)
        };
        let overrides = model::dynamic_values(variant, pass).map(|d| {
            let name = &d.name;
            let pipeline_name = op.override_name(name);
            let lowered = at(name, &d.expr);
            let value = match d.expr.ir.ty {
                Type::Float => quote!(#lowered),
                Type::Bool => quote!(if #lowered { 1.0 } else { 0.0 }),
                _ => {
                    let what = described(op, name, &d.expr.ir);
                    quote!(f64::from(rt::support::to_u32(#what, #lowered)?))
                }
            };
            quote!((#pipeline_name, #value))
        });
        let bindings = pass.bindings.iter().map(|b| match &b.target {
            BindingTarget::Tensor(i) => quote!(rt::Binding::Arg(#i)),
            BindingTarget::Intermediate(i) => quote!(rt::Binding::Intermediate(#i)),
            BindingTarget::Params => quote!(rt::Binding::Params),
        });
        let params = match pass.bindings.iter().find_map(|b| b.params.as_ref()) {
            Some(params) => params_bytes(op, params, &at),
            None => quote!(::std::vec::Vec::new()),
        };
        let dispatch = dispatch(op, &pass.dispatch, &at);
        let id = &pass.id;
        passes.push(quote! {
            rt::PlannedPass { id: #id, kernel: SHADERS.kernel(#table_pass, &[#(#keys),*])?, overrides: vec![#(#overrides),*], bindings: vec![#(#bindings),*], params: #params, dispatch: #dispatch }
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

/// The bytes of a pass's uniform struct, packed field by field: every field is a 4-byte scalar
/// at offset `4 * i`, which `wgsl::validate` checked against naga's layout.
fn params_bytes(
    op: &Op,
    params: &model::ParamsStruct,
    at: &dyn Fn(&str, &Expr) -> TokenStream,
) -> TokenStream {
    let words = params.fields.iter().map(|f| {
        let text = described(op, &f.name, &f.value.ir);
        let lowered = at(&f.name, &f.value);
        match f.wgsl_type {
            "u32" => quote!(.checked_u32(#text, #lowered)?),
            "i32" => quote!(.checked_i32(#text, #lowered)?),
            _ => quote!(.f32((#lowered) as f32)),
        }
    });
    let count = params.fields.len();
    quote!(rt::uniform::Words::with_fields(#count) #(#words)* .into_bytes())
}

/// `e` lowered; where it can fail to evaluate, its error says `what` it computes.
fn located(what: &str, e: &Expr, scope: &EnvScope<'_>) -> TokenStream {
    let lowered = lower(&e.ir, scope);
    let fallible = any_token(
        &lowered,
        &|t| matches!(t, proc_macro2::TokenTree::Punct(p) if p.as_char() == '?'),
    );
    if fallible {
        let result = lower_result(&e.ir, scope);
        quote!(rt::support::value(#what, || #result)?)
    } else {
        lowered
    }
}

fn dispatch(op: &Op, dispatch: &Dispatch, at: &dyn Fn(&str, &Expr) -> TokenStream) -> TokenStream {
    let count = |name: &str, e: &Expr| {
        let lowered = at(name, e);
        let what = described(op, name, &e.ir);
        quote!(rt::support::to_u64(#what, #lowered)?)
    };
    let size = |name: &str, e: &Expr| {
        let lowered = at(name, e);
        let what = described(op, name, &e.ir);
        quote!(rt::support::to_u32(#what, #lowered)?)
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

/// A value as a planning error names it: the name, and the inputs and arguments it is
/// computed from (through `derive` entries), since the name alone is the package's own
/// ("`innerRepeat` (from the shapes of `data`, `bias`)").
fn described(op: &Op, name: &str, ir: &crate::expr::Ir) -> String {
    let mut tensors = std::collections::BTreeSet::new();
    let mut attrs = std::collections::BTreeSet::new();
    let mut args = std::collections::BTreeSet::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut stack: Vec<crate::expr::Symbol> = ir.symbols().into_iter().collect();
    while let Some(symbol) = stack.pop() {
        use crate::expr::Symbol;
        match symbol {
            Symbol::Shape(role) | Symbol::Rank(role) => {
                tensors.insert(op.tensor(&role).map_or(role, |t| t.role.clone()));
            }
            Symbol::Attr(a) => {
                attrs.insert(a);
            }
            Symbol::Arg(a) => {
                args.insert(a);
            }
            Symbol::Derived(d) if seen.insert(d.clone()) => {
                if let Some(derived) = op.derived(&d) {
                    stack.extend(derived.expr.ir.symbols());
                }
            }
            _ => {}
        }
    }
    let quote_all = |names: &std::collections::BTreeSet<String>| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut from = Vec::new();
    if !tensors.is_empty() {
        let noun = if tensors.len() == 1 {
            "the shape of"
        } else {
            "the shapes of"
        };
        from.push(format!("{noun} {}", quote_all(&tensors)));
    }
    for (names, one, many) in [
        (&attrs, "attribute", "attributes"),
        (&args, "argument", "arguments"),
    ] {
        if !names.is_empty() {
            let noun = if names.len() == 1 { one } else { many };
            from.push(format!("{noun} {}", quote_all(names)));
        }
    }
    if from.is_empty() {
        format!("`{name}`")
    } else {
        format!("`{name}` (from {})", from.join(" and "))
    }
}
