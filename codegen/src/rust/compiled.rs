//! The compiled half of a generated op module, put together: the environment (`eval.rs`),
//! every `derive` as a function, the variants' clause tables (`when.rs`) and each variant's
//! plan (`plan.rs`).

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::OpInput;
use super::eval::{EnvScope, derive_fn, env_param, lower_result};
use crate::expr::Type;
use crate::model::Op;

fn rust_type(ty: Type) -> TokenStream {
    match ty {
        Type::Int => quote!(i64),
        Type::Float => quote!(f64),
        Type::Bool => quote!(bool),
        Type::Str | Type::Dtype => quote!(&'static str),
        Type::List => quote!(::std::vec::Vec<i64>),
    }
}

/// The compiled half of an op module: `Env`, every `derive` as a function, the clause
/// tables, each variant's plan and the name-keyed introspection.
pub fn emit(input: &OpInput<'_>) -> Result<TokenStream, String> {
    let op = input.op;
    let scope = EnvScope { op };
    let env = super::eval::env_struct(op, &scope);
    let used = super::when::used_explanations(op);
    let derives = op.derives.iter().map(|d| {
        let name = derive_fn(&d.name);
        let ty = rust_type(d.expr.ir.ty);
        // An explained entry is computed from its explanation's clauses, compiled once.
        let (body, param) = if used.contains(d.name.as_str()) {
            let explanation = super::when::explain_static(&d.name);
            (
                quote!(rt::when::value(&#explanation, env)),
                format_ident!("env"),
            )
        } else {
            (lower_result(&d.expr.ir, &scope), env_param(&d.expr.ir))
        };
        let doc = super::doc_lines(&format!(" `{}` = `{}`", d.name, d.expr.source));
        quote! {
            #(#[doc = #doc])*
            #[doc(hidden)]
            pub fn #name(#param: &Env<'_>) -> Result<#ty, EvalError> { #body }
        }
    });
    let introspection = introspection(op);
    let explains = super::when::explanations(op, &scope, &used);
    let selection = super::when::selection(op, &scope, input.shaders);
    let mut plans = Vec::new();
    for (v, variant) in op.variants.iter().enumerate() {
        plans.push(super::plan::variant_plan(input, &scope, v, variant)?);
    }
    Ok(quote! {
        #env
        #(#derives)*
        #(#explains)*
        #selection
        #(#plans)*
        #introspection
    })
}

/// Name-keyed access to `derive` entries and `when` lists, for the differential test against
/// the interpreter and for tools that explain a selection.
fn introspection(op: &Op) -> TokenStream {
    let names: Vec<&str> = op.derives.iter().map(|d| d.name.as_str()).collect();
    let functions = op.derives.iter().map(|d| derive_fn(&d.name));
    let ids: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    // With no `derive` entries there is nothing to look up.
    let derived_body = if names.is_empty() {
        quote! {
            let _ = (name, env);
            None
        }
    } else {
        quote! {
            Some(match name {
                #( #names => #functions(env).map(rt::support::ExprValue::from), )*
                _ => return None,
            })
        }
    };
    quote! {
        /// The manifest's `derive` names, in dependency order.
        #[doc(hidden)]
        pub const DERIVED_NAMES: &[&str] = &[#(#names),*];

        /// The variant ids, in selection order.
        #[doc(hidden)]
        pub const VARIANT_IDS: &[&str] = &[#(#ids),*];

        /// Evaluates the `derive` entry `name` with the compiled code.
        #[doc(hidden)]
        pub fn derived_value(name: &str, env: &Env<'_>) -> rt::support::DerivedValue {
            #derived_body
        }
    }
}
