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
/// tables, each variant's plan and the variant ids.
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
            let body = lower_result(&d.expr.ir, &scope);
            let param = env_param(&body);
            (body, param)
        };
        let doc = super::doc_lines(&format!(" `{}` = `{}`", d.name, d.expr.source));
        quote! {
            #(#[doc = #doc])*
            #[doc(hidden)]
            pub fn #name(#param: &Env<'_>) -> Result<#ty, EvalError> { #body }
        }
    });
    let introspection = introspection(op);
    let operands = super::when::Operands::default();
    let explains = super::when::explanations(op, &scope, &used, &operands);
    let selection = super::when::selection(op, &scope, input.shaders, &operands);
    let operand = operands.function(&scope);
    let mut plans = Vec::new();
    for (v, variant) in op.variants.iter().enumerate() {
        plans.push(super::plan::variant_plan(input, &scope, v, variant)?);
    }
    Ok(quote! {
        #env
        #(#derives)*
        #(#explains)*
        #selection
        #operand
        #(#plans)*
        #introspection
    })
}

/// The variant ids in selection order, for tools that explain a selection and for the
/// differential test against the interpreter.
fn introspection(op: &Op) -> TokenStream {
    let ids: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    quote! {
        /// The variant ids, in selection order.
        #[doc(hidden)]
        pub const VARIANT_IDS: &[&str] = &[#(#ids),*];
    }
}
