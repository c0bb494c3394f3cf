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
    let derives = op.derives.iter().map(|d| {
        let name = derive_fn(&d.name);
        let ty = rust_type(d.expr.ir.ty);
        // An explained entry is computed from its explanation's clauses, compiled once.
        let body = if used.contains(d.name.as_str()) {
            let explanation = super::when::explain_static(&d.name);
            quote!(rt::when::value(&#explanation, &CONDITIONS, env))
        } else {
            lower_result(&d.expr.ir, &scope)
        };
        let field = super::eval::derived_field(&d.name);
        let doc = super::doc_lines(&format!(" `{}` = `{}`", d.name, d.expr.source));
        // Computed once per call: clauses, keys and plan values all read it.
        quote! {
            #(#[doc = #doc])*
            #[doc(hidden)]
            pub fn #name(env: &Env<'_>) -> Result<#ty, EvalError> {
                env.derived.#field.get_or_init(|| #body).clone()
            }
        }
    });
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

/// The variant ids in selection order, for the registry and the `OpHooks` impl.
fn introspection(op: &Op) -> TokenStream {
    let ids: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    quote! {
        /// The variant ids, in selection order.
        const VARIANT_IDS: &[&str] = &[#(#ids),*];
    }
}
