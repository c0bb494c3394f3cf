//! Variant selection as data in a generated op module: each variant's `when` conditions as a
//! `rt::when::Clause` table, the conditions every variant shares once, and an `Explanation`
//! static per boolean `derive` entry explained conjunct by conjunct.

use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::eval::{EnvScope, derive_fn, env_param, lower_result};
use crate::expr::ast::{BinOp, UnaryOp};
use crate::expr::{Ir, IrKind, Symbol};
use crate::model::{self, DType, Op, Variant};
use crate::shader::Shader;

pub(super) fn explain_static(name: &str) -> proc_macro2::Ident {
    format_ident!("EXPLAIN_{}", model::snake_ident(name).to_ascii_uppercase())
}

/// The `Explanation` statics of the explained `derive` entries.
pub(super) fn explanations(
    op: &Op,
    scope: &EnvScope<'_>,
    used: &BTreeSet<&str>,
) -> Vec<TokenStream> {
    op.derives
        .iter()
        .filter(|d| used.contains(d.name.as_str()))
        .map(|d| {
            let name = explain_static(&d.name);
            let folded = super::fold::fold(&d.expr.ir);
            let (guard, clauses) = clauses(&folded).unwrap_or((None, vec![&folded]));
            let checks = clauses
                .into_iter()
                .map(|c| condition(op, scope, &d.expr.source, c));
            let unless = match guard {
                Some(disjunction) => {
                    let text = d.expr.source.get(disjunction.span.start..disjunction.span.end).unwrap_or(&d.expr.source).trim();
                    let test = test(scope, &d.expr.source, disjunction);
                    quote!(Some((#text, #test)))
                }
                None => quote!(None),
            };
            let doc = super::doc_lines(&format!(" How `{}` is explained, conjunct by conjunct.", d.name));
            quote! {
                #(#[doc = #doc])*
                static #name: rt::when::Explanation<Test> = rt::when::Explanation { unless: #unless, clauses: &[#(#checks),*] };
            }
        })
        .collect()
}

/// The explainable `derive` entries some `when` condition reaches, directly or through
/// another explanation: only those get an `explain_*` function.
pub(super) fn used_explanations(op: &Op) -> BTreeSet<&str> {
    let mut used = BTreeSet::new();
    let mut stack: Vec<Ir> = op
        .variants
        .iter()
        .flat_map(|v| &v.when)
        .map(|w| w.ir.clone())
        .collect();
    while let Some(ir) = stack.pop() {
        if let IrKind::Sym(Symbol::Derived(name)) = &ir.kind
            && let Some(derived) = op.derived(name)
            && explainable(derived)
            && used.insert(derived.name.as_str())
        {
            let folded = super::fold::fold(&derived.expr.ir);
            if let Some((_, clauses)) = clauses(&folded) {
                stack.extend(clauses.into_iter().cloned());
            }
        }
    }
    used
}

/// How a `derive` entry is explained clause by clause: a conjunction by its conjuncts; a
/// disjunction whose last alternative is a conjunction (the general case after special
/// cases, like BiasSoftmax's `biasContract`) by that alternative's conjuncts once the whole
/// disjunction is false.
fn clauses(folded: &Ir) -> Option<(Option<&Ir>, Vec<&Ir>)> {
    let all = conjuncts(folded);
    if all.len() > 1 {
        return Some((None, all));
    }
    if let IrKind::Binary(BinOp::Or, _, last) = &folded.kind {
        let last = conjuncts(last);
        if last.len() > 1 {
            return Some((Some(folded), last));
        }
    }
    None
}

/// Whether a `derive` entry is explained clause by clause.
fn explainable(derived: &model::Derived) -> bool {
    clauses(&super::fold::fold(&derived.expr.ir)).is_some()
}

fn conjuncts(ir: &Ir) -> Vec<&Ir> {
    match &ir.kind {
        IrKind::Binary(BinOp::And, lhs, rhs) => {
            let mut out = conjuncts(lhs);
            out.extend(conjuncts(rhs));
            out
        }
        _ => vec![ir],
    }
}

/// One clause of a `when` list or explanation: a reference to an explainable `derive` refers
/// to its explanation.
fn condition(op: &Op, scope: &EnvScope<'_>, source: &str, ir: &Ir) -> TokenStream {
    if let IrKind::Sym(Symbol::Derived(name)) = &ir.kind
        && op.derived(name).is_some_and(explainable)
    {
        let explanation = explain_static(name);
        return quote!(rt::when::Clause::Explain(#name, &#explanation));
    }
    let text = source
        .get(ir.span.start..ir.span.end)
        .unwrap_or(source)
        .trim();
    if let IrKind::Sym(Symbol::Derived(name)) = &ir.kind
        && let Some(derived) = op.derived(name)
    {
        // Quote the entry's own text, so the message shows the rule and not just its name.
        let function = derive_fn(name);
        let folded = super::fold::fold(&derived.expr.ir);
        let source = &derived.expr.source;
        let inner = source
            .get(folded.span.start..folded.span.end)
            .unwrap_or(source)
            .trim();
        let operands = operands_fn(scope, source, &folded);
        return quote!(rt::when::Clause::Require(#name, #inner, rt::when::Test { holds: #function, operands: #operands }));
    }
    let test = test(scope, source, ir);
    quote!(rt::when::Clause::Check(#text, #test))
}

/// A compiled condition: its test and the operands a rejection shows.
fn test(scope: &EnvScope<'_>, source: &str, ir: &Ir) -> TokenStream {
    let body = lower_result(ir, scope);
    let param = env_param(ir);
    let operands = operands_fn(scope, source, ir);
    quote!(rt::when::Test { holds: |#param| #body, operands: #operands })
}

/// The function that computes the operands of `ir` for a rejection: of a conjunction, those of
/// its first conjunct that does not hold (`|_| Vec::new()` when there are none).
fn operands_fn(scope: &EnvScope<'_>, source: &str, ir: &Ir) -> TokenStream {
    let values = |part: &Ir| {
        let mut found = Vec::new();
        operands(part, source, &mut found);
        let values: Vec<TokenStream> = found
            .iter()
            .map(|(text, operand)| {
                let value = lower_result(operand, scope);
                quote!(rt::when::operand(#text, || #value))
            })
            .collect();
        values
    };
    let parts = conjuncts(ir);
    let param = env_param(ir);
    if parts.len() > 1 {
        let arms: Vec<TokenStream> = parts
            .iter()
            .filter_map(|part| {
                let values = values(part);
                if values.is_empty() {
                    return None;
                }
                let holds = lower_result(part, scope);
                Some(quote! {
                    if rt::when::fails(|| #holds) {
                        return Vec::from([#(#values),*]);
                    }
                })
            })
            .collect();
        if arms.is_empty() {
            return quote!(|_| Vec::new());
        }
        return quote!(|#param| { #(#arms)* Vec::new() });
    }
    let values = values(ir);
    if values.is_empty() {
        return quote!(|_| Vec::new());
    }
    quote!(|#param| Vec::from([#(#values),*]))
}

/// What a rejection shows beside a failing condition: the sides of its comparisons and the
/// arguments of its boolean calls that are not literals, through `and`, `or` and `not`, once
/// each by source text.
fn operands<'i>(ir: &'i Ir, source: &str, out: &mut Vec<(String, &'i Ir)>) {
    let mut push = |operand: &'i Ir| {
        let literal = matches!(
            operand.kind,
            IrKind::Int(_) | IrKind::Float(_) | IrKind::Bool(_) | IrKind::Str(_) | IrKind::List(_)
        );
        let text = source
            .get(operand.span.start..operand.span.end)
            .unwrap_or_default()
            .trim();
        if !literal && !text.is_empty() && !out.iter().any(|(t, _)| t == text) {
            out.push((text.to_owned(), operand));
        }
    };
    match &ir.kind {
        IrKind::Binary(BinOp::And | BinOp::Or, lhs, rhs) => {
            operands(lhs, source, out);
            operands(rhs, source, out);
        }
        IrKind::Unary(UnaryOp::Not, inner) => operands(inner, source, out),
        IrKind::Binary(_, lhs, rhs) | IrKind::LooseCompare(_, lhs, rhs) => {
            push(lhs);
            push(rhs);
        }
        IrKind::Call(_, args) => args.iter().for_each(push),
        IrKind::Truthy(inner) => push(inner),
        _ => {}
    }
}

pub(super) fn selection(op: &Op, scope: &EnvScope<'_>, shaders: &[Shader]) -> TokenStream {
    // The leading conditions every variant writes alike are emitted once.
    let shared = match op.variants.split_first() {
        Some((first, rest)) if !rest.is_empty() => (0..first.when.len())
            .take_while(|&i| {
                rest.iter().all(|v| {
                    v.when
                        .get(i)
                        .is_some_and(|w| w.source == first.when[i].source)
                })
            })
            .count(),
        _ => 0,
    };
    let shared = if shared >= 2 { shared } else { 0 };
    let shared_static = op.variants.first().filter(|_| shared > 0).map(|first| {
        let checks = first.when[..shared]
            .iter()
            .map(|w| condition(op, scope, &w.source, &w.ir));
        quote! {
            /// The `when` conditions every variant starts with.
            static SHARED_WHEN: [rt::when::Clause<Test>; #shared] = [#(#checks),*];
        }
    });
    let variants = op.variants.iter().enumerate().map(|(v, variant)| {
        let shared_clause = (shared > 0).then(|| quote!(rt::when::Clause::All(&SHARED_WHEN),));
        let checks = variant.when[shared..]
            .iter()
            .map(|w| condition(op, scope, &w.source, &w.ir));
        let plan = format_ident!("plan_{}", model::snake_ident(&variant.id));
        let id = &variant.id;
        let built = built_dtypes(op, variant, v, shaders);
        quote!(rt::when::Variant::new(#id, &[#shared_clause #(#checks,)* #(#built),*], #plan))
    });
    let count = op.variants.len();
    let docs = op
        .variants
        .iter()
        .filter(|v| !v.description.is_empty())
        .map(|v| {
            super::doc_lines(&format!(
                " - `{}`: {}",
                v.id,
                v.description.replace('\n', " ")
            ))
        });
    let docs: Vec<String> = docs.flatten().collect();
    quote! {
        /// A compiled `when` condition: its test, and its operands' values for a rejection.
        type Test = rt::when::Test<
            fn(&Env<'_>) -> Result<bool, EvalError>,
            fn(&Env<'_>) -> Vec<rt::when::Operand>,
        >;
        type VariantPlan = fn(&Env<'_>) -> Result<rt::Plan, EvalError>;

        /// The variants in priority order, each with its `when` conditions in order and its
        /// plan (tests check and plan one with `rt::when::accepts` and `rt::when::plan_of`).
        ///
        #(#[doc = #docs])*
        #[doc(hidden)]
        pub static VARIANTS: [rt::when::Variant<Test, VariantPlan>; #count] = [#(#variants),*];

        #shared_static
    }
}

/// A clause per pass whose shaders exist for only some of the dtypes the manifest allows
/// (combinations whose bindings cannot hold their dtypes are left out at build time): the
/// variant then rejects the others by name instead of failing to find a shader.
fn built_dtypes(op: &Op, variant: &Variant, v: usize, shaders: &[Shader]) -> Vec<TokenStream> {
    let float_vars = super::api::float_type_vars(op);
    let mut clauses: Vec<(String, TokenStream)> = Vec::new();
    for p in 0..variant.passes.len() {
        let of_pass: Vec<&Shader> = shaders
            .iter()
            .filter(|s| s.variant == v && s.pass == p)
            .collect();
        let Some(first) = of_pass.first() else {
            continue;
        };
        let vars: Vec<&str> = float_vars
            .iter()
            .copied()
            .filter(|var| first.combination.dtypes.contains_key(*var))
            .collect();
        if vars.is_empty() {
            continue;
        }
        let tuple = |s: &Shader| -> Option<Vec<DType>> {
            vars.iter()
                .map(|var| s.combination.dtypes.get(*var).copied())
                .collect()
        };
        let mut built: Vec<Vec<DType>> = of_pass.iter().filter_map(|s| tuple(s)).collect();
        built.sort_by_key(|t| t.iter().map(|d| d.wgsl()).collect::<Vec<_>>());
        built.dedup();
        let allowed = vars.iter().map(|var| {
            op.type_var(var).map_or(0, |t| {
                t.allowed
                    .iter()
                    .filter(|d| matches!(d, DType::F32 | DType::F16))
                    .count()
            })
        });
        if built.len() >= allowed.product::<usize>() {
            continue;
        }
        let spell = |t: &[DType]| t.iter().map(|d| d.wgsl()).collect::<Vec<_>>().join(", ");
        let text = format!(
            "({}) is one of ({}): the dtypes pass `{}` has shaders for (its bindings' element types hold no others)",
            vars.iter()
                .map(|v| format!("dtypes.{v}"))
                .collect::<Vec<_>>()
                .join(", "),
            built
                .iter()
                .map(|t| spell(t))
                .collect::<Vec<_>>()
                .join("), ("),
            variant.passes[p].id,
        );
        let fields: Vec<TokenStream> = vars
            .iter()
            .map(|var| {
                let field = super::ident(&model::snake_ident(var).to_ascii_lowercase());
                quote!(env.dtypes.#field)
            })
            .collect();
        let names = vars.iter().map(|var| format!("dtypes.{var}"));
        let operands =
            quote!(|env| Vec::from([#(rt::when::operand(#names, || Ok(#fields.wgsl_name()))),*]));
        let patterns = built.iter().map(|t| {
            let dtypes = t.iter().map(|d| format_ident!("{}", d.runtime_variant()));
            quote!((#(rt::DType::#dtypes,)*))
        });
        let clause = quote!(rt::when::Clause::Check(#text, rt::when::Test { holds: |env| Ok(matches!((#(#fields,)*), #(#patterns)|*)), operands: #operands }));
        if !clauses.iter().any(|(t, _)| *t == text) {
            clauses.push((text, clause));
        }
    }
    clauses.into_iter().map(|(_, c)| c).collect()
}
