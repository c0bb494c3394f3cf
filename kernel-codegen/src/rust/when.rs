//! Variant selection as data in a generated op module: each variant's `when` conditions as a
//! `Clause` table, runs of clauses several variants write alike once, and an `Explanation`
//! static per boolean `derive` entry explained conjunct by conjunct. Every distinct test is
//! one arm of the module's `test` function and every operand a rejection shows one arm of its
//! `operand` function; the tables name them by index.

use std::cell::RefCell;
use std::collections::BTreeSet;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::eval::{EnvScope, derive_fn, env_param, lower};
use super::shared_clauses::{ClauseTree, share};
use crate::expr::ast::{BinOp, UnaryOp};
use crate::expr::{Ir, IrKind, Symbol};
use crate::model::{self, DType, Op, Variant};
use crate::shader::Shader;

/// The operands the op's clauses show in rejections, each once by source text: the generated
/// `operand` function computes one by its index, and each clause lists its indices.
#[derive(Default)]
pub(super) struct Operands(RefCell<Vec<(String, Ir)>>);

impl Operands {
    fn index(&self, text: &str, ir: &Ir) -> usize {
        let mut list = self.0.borrow_mut();
        match list.iter().position(|(t, _)| t == text) {
            Some(i) => i,
            None => {
                list.push((text.to_owned(), ir.clone()));
                list.len() - 1
            }
        }
    }

    /// `fn operand(index, env)`, which every variant names, and the operands' texts.
    pub(super) fn function(&self, scope: &EnvScope<'_>) -> TokenStream {
        let list = self.0.borrow();
        let count = list.len();
        let texts = list.iter().map(|(text, _)| text);
        let arms: Vec<TokenStream> = list
            .iter()
            .enumerate()
            .map(|(i, (_, ir))| {
                let value = lower(ir, scope);
                let i = proc_macro2::Literal::usize_unsuffixed(i);
                quote!(#i => rt::when::shown(#value))
            })
            .collect();
        let param = env_param(&quote!(#(#arms)*));
        quote! {
            /// The source text of each operand a rejection may show.
            const OPERANDS: [&str; #count] = [#(#texts),*];

            /// Operand `index` of a failing clause, with its value.
            fn operand(index: usize, env: &Env<'_>) -> rt::when::Operand {
                let text = OPERANDS.get(index).copied().unwrap_or_default();
                rt::when::operand(text, operand_value(index, env))
            }

            /// The value of operand `index`, as a rejection prints it.
            fn operand_value(index: usize, #param: &Env<'_>) -> Result<String, EvalError> {
                let value = match index {
                    #(#arms,)*
                    _ => String::new(),
                };
                Ok(value)
            }
        }
    }
}

/// The op's compiled tests, each once by its lowered text: the generated `test` function
/// evaluates one by its index, and each clause names its index.
#[derive(Default)]
pub(super) struct Tests(RefCell<Vec<(String, TokenStream)>>);

impl Tests {
    /// The index of the test whose body (a `bool` expression, `?` allowed) is `body`.
    fn index(&self, body: TokenStream) -> proc_macro2::Literal {
        let text = body.to_string();
        let mut list = self.0.borrow_mut();
        let i = match list.iter().position(|(t, _)| *t == text) {
            Some(i) => i,
            None => {
                list.push((text, body));
                list.len() - 1
            }
        };
        proc_macro2::Literal::usize_unsuffixed(i)
    }

    /// `fn test(index, env)` and the `CONDITIONS` static that pairs it with `operand`.
    pub(super) fn function(&self) -> TokenStream {
        let list = self.0.borrow();
        let arms: Vec<TokenStream> = list
            .iter()
            .enumerate()
            .map(|(i, (_, body))| {
                let i = proc_macro2::Literal::usize_unsuffixed(i);
                quote!(#i => #body)
            })
            .collect();
        let param = env_param(&quote!(#(#arms)*));
        quote! {
            /// Test `index` of the clause tables, evaluated.
            fn test(index: usize, #param: &Env<'_>) -> Result<bool, EvalError> {
                let holds = match index {
                    #(#arms,)*
                    _ => return Err(rt::when::no_test(index)),
                };
                Ok(holds)
            }

            type Test = fn(usize, &Env<'_>) -> Result<bool, EvalError>;
            type Operand = fn(usize, &Env<'_>) -> rt::when::Operand;

            /// The tests the clause tables name, and the operands their rejections show.
            static CONDITIONS: rt::when::Conditions<Test, Operand> =
                rt::when::Conditions { test, operand };
        }
    }
}

pub(super) fn explain_static(name: &str) -> proc_macro2::Ident {
    format_ident!("EXPLAIN_{}", model::snake_ident(name).to_ascii_uppercase())
}

/// The `Explanation` statics of the explained `derive` entries.
pub(super) fn explanations(
    op: &Op,
    scope: &EnvScope<'_>,
    used: &BTreeSet<&str>,
    operands: &Operands,
    tests: &Tests,
) -> Vec<TokenStream> {
    op.derives
        .iter()
        .filter(|d| used.contains(d.name.as_str()))
        .map(|d| {
            let name = explain_static(&d.name);
            let folded = super::fold::fold(&d.expr.ir, op);
            let (guard, clauses) = clauses(&folded).unwrap_or((None, vec![&folded]));
            let checks = clauses
                .into_iter()
                .map(|c| condition(op, scope, operands, tests, &d.expr.source, c).render());
            let unless = match guard {
                Some(disjunction) => {
                    let text = d.expr.source.get(disjunction.span.start..disjunction.span.end).unwrap_or(&d.expr.source).trim();
                    let (indices, test) = test(scope, operands, tests, &d.expr.source, disjunction);
                    quote!(Some((#text, &[#(#indices),*], #test)))
                }
                None => quote!(None),
            };
            let doc = super::doc_lines(&format!(" How `{}` is explained, conjunct by conjunct.", d.name));
            quote! {
                #(#[doc = #doc])*
                static #name: Explanation = Explanation { unless: #unless, clauses: &[#(#checks),*] };
            }
        })
        .collect()
}

/// The explainable `derive` entries some `when` or `demoteWhen` condition reaches, directly or through
/// another explanation: only those get an `explain_*` function.
pub(super) fn used_explanations(op: &Op) -> BTreeSet<&str> {
    let mut used = BTreeSet::new();
    let mut stack: Vec<Ir> = op
        .variants
        .iter()
        .flat_map(|v| v.when.iter().chain(&v.demote_when))
        .map(|w| w.ir.clone())
        .collect();
    while let Some(ir) = stack.pop() {
        if let IrKind::Sym(Symbol::Derived(name)) = &ir.kind
            && let Some(derived) = op.derived(name)
            && explainable(op, derived)
            && used.insert(derived.name.as_str())
        {
            let folded = super::fold::fold(&derived.expr.ir, op);
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
fn explainable(op: &Op, derived: &model::Derived) -> bool {
    clauses(&super::fold::fold(&derived.expr.ir, op)).is_some()
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
/// to its explanation, and a conjunction is explained by its conjuncts, each a clause of its
/// own (so a rejection names the one that failed).
fn condition(
    op: &Op,
    scope: &EnvScope<'_>,
    operands: &Operands,
    tests: &Tests,
    source: &str,
    ir: &Ir,
) -> ClauseTree {
    if let IrKind::Sym(Symbol::Derived(name)) = &ir.kind
        && op.derived(name).is_some_and(|d| explainable(op, d))
    {
        let explanation = explain_static(name);
        return ClauseTree::Leaf(quote!(Explain(#name, &#explanation)));
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
        let test = tests.index(quote!(#function(env)?));
        let folded = super::fold::fold(&derived.expr.ir, op);
        let source = &derived.expr.source;
        let inner = source
            .get(folded.span.start..folded.span.end)
            .unwrap_or(source)
            .trim();
        let indices = operand_indices(operands, source, &folded);
        return ClauseTree::Leaf(quote!(Require(#name, #inner, &[#(#indices),*], #test)));
    }
    let parts = conjuncts(ir);
    if parts.len() > 1 {
        let clauses = parts
            .iter()
            .map(|part| condition(op, scope, operands, tests, source, part))
            .collect();
        return ClauseTree::Conjunction(text.to_owned(), clauses);
    }
    let (indices, test) = test(scope, operands, tests, source, ir);
    ClauseTree::Leaf(quote!(Check(#text, &[#(#indices),*], #test)))
}

/// A compiled condition: the indices of the operands a rejection shows, and its test's.
fn test(
    scope: &EnvScope<'_>,
    operands: &Operands,
    tests: &Tests,
    source: &str,
    ir: &Ir,
) -> (Vec<proc_macro2::Literal>, proc_macro2::Literal) {
    (
        operand_indices(operands, source, ir),
        tests.index(lower(ir, scope)),
    )
}

/// The indices of `ir`'s operands in the op's [`Operands`].
fn operand_indices(operands: &Operands, source: &str, ir: &Ir) -> Vec<proc_macro2::Literal> {
    let mut found = Vec::new();
    self::operands(ir, source, &mut found);
    found
        .iter()
        .map(|(text, operand)| {
            proc_macro2::Literal::usize_unsuffixed(operands.index(text, operand))
        })
        .collect()
}

/// What a rejection shows beside a failing condition: the sides of its comparisons and the
/// arguments of its boolean calls that are not literals, through `and`, `or` and `not`, once
/// each by source text.
fn operands<'i>(ir: &'i Ir, source: &str, out: &mut Vec<(String, &'i Ir)>) {
    let mut push = |operand: &'i Ir| {
        let text = source
            .get(operand.span.start..operand.span.end)
            .unwrap_or_default()
            .trim();
        // A value written as a literal says itself; a tunable's, inlined, is still shown.
        let written = text
            .starts_with(|c: char| c.is_ascii_digit() || matches!(c, '-' | '.' | '"' | '\'' | '['))
            || matches!(text, "true" | "false" | "True" | "False");
        let literal = written
            && matches!(
                operand.kind,
                IrKind::Int(_)
                    | IrKind::Float(_)
                    | IrKind::Bool(_)
                    | IrKind::Str(_)
                    | IrKind::List(_)
            );
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

pub(super) fn selection(
    op: &Op,
    scope: &EnvScope<'_>,
    shaders: &[Shader],
    operands: &Operands,
    tests: &Tests,
    plans: &[TokenStream],
) -> TokenStream {
    let mut lists: Vec<Vec<ClauseTree>> = op
        .variants
        .iter()
        .enumerate()
        .map(|(v, variant)| {
            let mut clauses: Vec<ClauseTree> = variant
                .when
                .iter()
                .map(|w| condition(op, scope, operands, tests, &w.source, &w.ir))
                .collect();
            clauses.extend(
                built_dtypes(op, variant, v, shaders, operands, tests)
                    .into_iter()
                    .map(ClauseTree::Leaf),
            );
            clauses
        })
        .collect();
    let shared_statics = share(&mut lists);
    let variants = op
        .variants
        .iter()
        .zip(&lists)
        .enumerate()
        .map(|(v, (variant, clauses))| {
            let clauses = clauses.iter().map(ClauseTree::render);
            let id = &variant.id;
            let plan = &plans[v];
            quote!(Variant { id: #id, when: &[#(#clauses),*], plan: #plan })
        });
    let ranking = ranking(op, scope, operands, tests);
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
        /// The variants in priority order, each with its `when` conditions in order and its
        /// plan.
        ///
        #(#[doc = #docs])*
        static VARIANTS: [Variant<VariantSpec>; #count] = [#(#variants),*];

        #ranking

        #shared_statics
    }
}

/// Whether any variant ranks by more than its priority (`demoteWhen`, `supersededBy`).
fn ranked(op: &Op) -> bool {
    op.variants
        .iter()
        .any(|v| !v.demote_when.is_empty() || !v.superseded_by.is_empty())
}

/// The selection call `plan` makes: under the op's `RANKING` where it has one.
pub(super) fn select_call(op: &Op) -> TokenStream {
    if ranked(op) {
        quote!(rt::when::select_ranked(
            OP_NAME,
            &VARIANTS,
            &RANKING,
            &CONDITIONS,
            &env
        ))
    } else {
        quote!(rt::when::select(OP_NAME, &VARIANTS, &CONDITIONS, &env))
    }
}

/// `RANKING`, for an op whose variants rank by more than priority: each variant's demotion
/// conditions, and the indices of the variants that supersede it.
fn ranking(op: &Op, scope: &EnvScope<'_>, operands: &Operands, tests: &Tests) -> TokenStream {
    if !ranked(op) {
        return TokenStream::new();
    }
    let demote = op.variants.iter().map(|variant| {
        let clauses = (variant.demote_when.iter())
            .map(|w| condition(op, scope, operands, tests, &w.source, &w.ir).render());
        quote!(&[#(#clauses),*])
    });
    let superseded = op.variants.iter().map(|variant| {
        let indices = (variant.superseded_by.iter())
            .filter_map(|id| op.variants.iter().position(|v| &v.id == id));
        quote!(&[#(#indices),*])
    });
    quote! {
        /// How the variants rank beyond priority: the conditions that demote each, and the
        /// variants that supersede it.
        static RANKING: rt::when::Ranking = rt::when::Ranking {
            demote: &[#(#demote),*],
            superseded_by: &[#(#superseded),*],
        };
    }
}

/// A clause per pass whose shaders exist for only some of the dtypes the manifest allows
/// (combinations whose bindings cannot hold their dtypes are left out at build time): the
/// variant then rejects the others by name instead of failing to find a shader.
fn built_dtypes(
    op: &Op,
    variant: &Variant,
    v: usize,
    shaders: &[Shader],
    operands: &Operands,
    tests: &Tests,
) -> Vec<TokenStream> {
    let generic_vars = super::api::generic_type_vars(op);
    let mut clauses: Vec<(String, TokenStream)> = Vec::new();
    for p in 0..variant.passes.len() {
        let of_pass: Vec<&Shader> = shaders
            .iter()
            .filter(|s| s.variant == v && s.pass == p)
            .collect();
        let Some(first) = of_pass.first() else {
            continue;
        };
        let vars: Vec<&str> = generic_vars
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
        built.sort_by_key(|t| t.iter().map(|d| d.unique_name()).collect::<Vec<_>>());
        built.dedup();
        let allowed = vars
            .iter()
            .map(|var| op.type_var(var).map_or(0, |t| t.allowed.len()));
        if built.len() >= allowed.product::<usize>() {
            continue;
        }
        let spell = |t: &[DType]| {
            t.iter()
                .map(|d| d.unique_name())
                .collect::<Vec<_>>()
                .join(", ")
        };
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
        let indices = vars.iter().map(|var| {
            let name = format!("dtypes.{var}");
            let ir = Ir {
                kind: IrKind::Sym(Symbol::Dtype((*var).to_owned())),
                ty: crate::expr::Type::Dtype,
                span: Default::default(),
            };
            proc_macro2::Literal::usize_unsuffixed(operands.index(&name, &ir))
        });
        let patterns = built.iter().map(|t| {
            let dtypes = t.iter().map(|d| format_ident!("{}", d.variant_name()));
            quote!((#(rt::DType::#dtypes,)*))
        });
        let test = tests.index(quote!(matches!((#(#fields,)*), #(#patterns)|*)));
        let clause = quote!(Check(#text, &[#(#indices),*], #test));
        if !clauses.iter().any(|(t, _)| *t == text) {
            clauses.push((text, clause));
        }
    }
    clauses.into_iter().map(|(_, c)| c).collect()
}
