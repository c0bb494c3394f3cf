//! The compiled half of a generated op module, put together: the environment (`eval.rs`),
//! every `derive` as a function, the variants' clause tables (`when.rs`) with each variant's
//! plan (`plan.rs`), and the `test`, `operand` and `value` functions they index.

use proc_macro2::TokenStream;
use quote::quote;

use super::OpInput;
use super::eval::{EnvScope, derive_fn, lower_result, rust_type};
use crate::model::Op;

/// The compiled half of an op module: `Env`, every `derive` as a function, the clause
/// tables, each variant's plan and the variant ids.
pub fn emit(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let scope = EnvScope { op };
    let env = super::eval::env_struct(op, &scope);
    let used = super::when::used_explanations(op);
    let derives: Vec<(proc_macro2::Ident, TokenStream)> = op
        .derives
        .iter()
        .map(|d| {
            let name = derive_fn(&d.name);
            let ty = rust_type(d.expr.ir.ty);
            // An explained entry is computed from its explanation's clauses, compiled once.
            let body = if used.contains(d.name.as_str()) {
                let explanation = super::when::explain_static(&d.name);
                quote!(rt::when::value(&#explanation, &CONDITIONS, env))
            } else if crate::expr::is_owned_str(&super::fold::fold(&d.expr.ir, op)) {
                // A computed string is kept as the `&'static str` string values are.
                let value = super::eval::lower(&d.expr.ir, &scope);
                quote!(rt::support::interned(#value))
            } else {
                lower_result(&d.expr.ir, &scope)
            };
            let field = super::eval::derived_field(&d.name);
            let doc = super::doc_lines(&format!(" `{}` = `{}`", d.name, d.expr.source));
            // Computed once per call: clauses, keys and plan values all read it.
            let item = quote! {
                #(#[doc = #doc])*
                fn #name(env: &Env<'_>) -> Result<#ty, EvalError> {
                    rt::support::memo(&env.derived.#field, || #body)
                }
            };
            (name, item)
        })
        .collect();
    let introspection = introspection(op);
    let operands = super::when::Operands::default();
    let tests = super::when::Tests::default();
    let values = super::plan::Values::default();
    let explains = super::when::explanations(op, &scope, &used, &operands, &tests);
    let plans: Vec<TokenStream> = op
        .variants
        .iter()
        .enumerate()
        .map(|(v, variant)| super::plan::variant_spec(input, &scope, &values, v, variant))
        .collect();
    let selection = super::when::selection(op, &scope, input.shaders, &operands, &tests, &plans);
    let operand = operands.function(&scope);
    let test = tests.function();
    let value = values.functions(op);
    let rest = quote!(#env #(#explains)* #selection #test #operand #value);
    let derives = reachable(derives, &rest);
    quote! {
        #env
        #(#derives)*
        #(#explains)*
        #selection
        #test
        #operand
        #value
        #introspection
    }
}

/// The `derive` functions something calls: from `rest` (the module's compiled code) or from
/// another such function. The others are left out: private, they would be dead code.
fn reachable(
    mut derives: Vec<(proc_macro2::Ident, TokenStream)>,
    rest: &TokenStream,
) -> Vec<TokenStream> {
    loop {
        let calls = |name: &proc_macro2::Ident, tokens: &TokenStream| {
            super::eval::any_token(
                tokens,
                &|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == name),
            )
        };
        let before = derives.len();
        let kept: Vec<(proc_macro2::Ident, TokenStream)> = derives
            .iter()
            .filter(|(name, _)| {
                calls(name, rest)
                    || derives
                        .iter()
                        .any(|(other, item)| other != name && calls(name, item))
            })
            .cloned()
            .collect();
        derives = kept;
        if derives.len() == before {
            return derives.into_iter().map(|(_, item)| item).collect();
        }
    }
}

/// The variant ids in selection order, for the registry and the `OpHooks` impl.
fn introspection(op: &Op) -> TokenStream {
    let ids: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    quote! {
        /// The variant ids, in selection order.
        const VARIANT_IDS: &[&str] = &[#(#ids),*];
    }
}
