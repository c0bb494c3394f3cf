//! The compiled half of a generated op module: the expression environment, every `derive` as a
//! function, and variant selection with explanations; `plan.rs` emits each variant's plan.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::float_type_vars;
use super::{OpInput, ident};
use crate::expr::{self, Ir, IrKind, LowerScope, Symbol, Type, ast::BinOp};
use crate::model::{self, AttrRepr, Op};
use crate::webgpu;

/// Lowers symbols to reads of the generated `Env`.
pub(super) struct EnvScope<'a> {
    op: &'a Op,
}

impl LowerScope for EnvScope<'_> {
    fn symbol(&self, symbol: &Symbol) -> TokenStream {
        match symbol {
            Symbol::Shape(name) => {
                let role = super::tensor_field_of(self.op, name);
                quote!(env.shapes.#role.as_slice())
            }
            Symbol::Rank(name) => {
                let role = super::tensor_field_of(self.op, name);
                quote!(rt::support::rank(&env.shapes.#role))
            }
            Symbol::Dtype(var) => {
                if float_type_vars(self.op).contains(&var.as_str()) {
                    let field = ident(&model::snake_ident(var).to_ascii_lowercase());
                    quote!(env.dtypes.#field.wgsl_name())
                } else {
                    let single = self
                        .op
                        .type_var(var)
                        .and_then(|t| t.allowed.first())
                        .map_or("", |d| d.wgsl());
                    quote!(#single)
                }
            }
            Symbol::Attr(name) | Symbol::Arg(name) => {
                let Some(attribute) = self.op.attribute(name) else {
                    let field = ident(name);
                    return quote!(env.attrs.#field);
                };
                let field = super::api::attr_field(attribute);
                // An optional scalar arg is read only where it is given (the lowering tests
                // `is_defined` first where Jinja would); elsewhere its absence is an error.
                let value = if attribute.is_optional() {
                    let text = format!("args.{name}");
                    match attribute.repr {
                        AttrRepr::Str => {
                            quote!(rt::expr::given(env.attrs.#field.as_deref(), #text)?)
                        }
                        AttrRepr::IntList => {
                            quote!(rt::expr::given(env.attrs.#field.as_deref(), #text)?)
                        }
                        _ => quote!(rt::expr::given(env.attrs.#field, #text)?),
                    }
                } else {
                    match attribute.repr {
                        AttrRepr::IntList => quote!(env.attrs.#field.as_slice()),
                        AttrRepr::Str => quote!(env.attrs.#field.as_str()),
                        _ => quote!(env.attrs.#field),
                    }
                };
                match attribute.repr {
                    AttrRepr::Bool => quote!(i64::from(#value)),
                    AttrRepr::F32 => quote!(f64::from(#value)),
                    AttrRepr::I64 if attribute.int_width != model::IntWidth::I64 => {
                        quote!(i64::from(#value))
                    }
                    _ => value,
                }
            }
            Symbol::Tunable(name) => {
                let value = self.op.tunable(name).unwrap_or_default();
                quote!(#value)
            }
            Symbol::Limit(name) => {
                let path = webgpu::limit_path(name).unwrap_or_default();
                let fields = path.iter().map(|f| format_ident!("{}", f));
                quote!(rt::support::limit(env.caps #(.#fields)*))
            }
            Symbol::Derived(name) => {
                let function = derive_fn(name);
                quote!(#function(env)?)
            }
            Symbol::TensorDtype(name) => {
                let tensor = self.op.tensor(name);
                match tensor.map(|t| &t.dtype) {
                    Some(model::DTypeRef::Var(var))
                        if float_type_vars(self.op).contains(&var.as_str()) =>
                    {
                        let field = ident(&model::snake_ident(var).to_ascii_lowercase());
                        quote!(env.dtypes.#field.onnx_name())
                    }
                    // A dtype known here is still read through the runtime's name for it, so a
                    // manifest's `tensorDtypes.x == "float32"` does not become a comparison of
                    // two literals.
                    Some(model::DTypeRef::Var(var)) => {
                        let single = self
                            .op
                            .type_var(var)
                            .and_then(|t| t.allowed.first())
                            .map_or("F32", |d| d.runtime_variant());
                        let single = format_ident!("{single}");
                        quote!(rt::DType::#single.onnx_name())
                    }
                    Some(model::DTypeRef::Fixed(d)) => {
                        let variant = format_ident!("{}", d.runtime_variant());
                        quote!(rt::DType::#variant.onnx_name())
                    }
                    None => quote!(""),
                }
            }
            Symbol::AdapterInfo(name) => match name.as_str() {
                "subgroupMaxSize" => quote!(i64::from(env.caps.subgroup_max_size)),
                _ => quote!(i64::from(env.caps.subgroup_min_size)),
            },
            Symbol::Present(name) => match self.op.tensor(name) {
                Some(tensor) if tensor.optional => {
                    let field = super::tensor_field(tensor);
                    quote!(env.present.#field)
                }
                _ => quote!(true),
            },
        }
    }

    fn is_defined(&self, symbol: &Symbol) -> TokenStream {
        match symbol {
            // The adapter may not report subgroup sizes (then 0).
            Symbol::AdapterInfo(name) if name == "subgroupMaxSize" => {
                quote!(rt::support::reported(env.caps.subgroup_max_size))
            }
            Symbol::AdapterInfo(_) => quote!(rt::support::reported(env.caps.subgroup_min_size)),
            // An optional scalar arg may be absent; every other attribute has a value in the
            // typed API (a default or a required parameter).
            Symbol::Attr(name) | Symbol::Arg(name) => match self.op.attribute(name) {
                Some(attribute) if attribute.is_optional() => {
                    let field = super::api::attr_field(attribute);
                    quote!(env.attrs.#field.is_some())
                }
                _ => quote!(true),
            },
            _ => quote!(true),
        }
    }

    fn truthy_if_given(&self, symbol: &Symbol) -> Option<TokenStream> {
        let (Symbol::Attr(name) | Symbol::Arg(name)) = symbol else {
            return None;
        };
        let attribute = self.op.attribute(name).filter(|a| a.is_optional())?;
        let field = super::api::attr_field(attribute);
        Some(match attribute.repr {
            AttrRepr::Str | AttrRepr::IntList => {
                quote!(rt::expr::truthy_given(env.attrs.#field.as_deref()))
            }
            _ => quote!(rt::expr::truthy_given(env.attrs.#field)),
        })
    }

    fn dialect(&self) -> expr::Dialect {
        self.op.expr_dialect()
    }

    fn feature(&self, name: &str) -> TokenStream {
        quote!(env.caps.has_feature(#name))
    }

    fn runtime(&self) -> TokenStream {
        quote!(rt)
    }
}

/// Lowers `ir` for the typed API (see `fold`).
pub(super) fn lower(ir: &Ir, scope: &EnvScope<'_>) -> TokenStream {
    expr::lower(&super::fold::fold(ir), scope)
}

/// Lowers `ir` to a `Result` expression for the typed API.
pub(super) fn lower_result(ir: &Ir, scope: &EnvScope<'_>) -> TokenStream {
    expr::lower_result(&super::fold::fold(ir), scope)
}

fn derive_fn(name: &str) -> proc_macro2::Ident {
    format_ident!("derive_{}", model::snake_ident(name))
}

fn explain_static(name: &str) -> proc_macro2::Ident {
    format_ident!("EXPLAIN_{}", model::snake_ident(name).to_ascii_uppercase())
}

fn rust_type(ty: Type) -> TokenStream {
    match ty {
        Type::Int => quote!(i64),
        Type::Float => quote!(f64),
        Type::Bool => quote!(bool),
        Type::Str | Type::Dtype => quote!(&'static str),
        Type::List => quote!(::std::vec::Vec<i64>),
    }
}

pub fn emit(input: &OpInput<'_>) -> Result<TokenStream, String> {
    let op = input.op;
    let scope = EnvScope { op };
    let env = env_struct(op, &scope);
    let used = used_explanations(op);
    let derives = op.derives.iter().map(|d| {
        let name = derive_fn(&d.name);
        let ty = rust_type(d.expr.ir.ty);
        // An explained entry is computed from its explanation's clauses, compiled once.
        let (body, param) = if used.contains(d.name.as_str()) {
            let explanation = explain_static(&d.name);
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
    let explains = op
        .derives
        .iter()
        .filter(|d| used.contains(d.name.as_str()))
        .map(|d| {
            let name = explain_static(&d.name);
            let folded = super::fold::fold(&d.expr.ir);
            let (guard, clauses) = clauses(&folded).unwrap_or((None, vec![&folded]));
            let checks = clauses
                .into_iter()
                .map(|c| condition(op, &scope, &d.expr.source, c));
            let unless = match guard {
                Some(disjunction) => {
                    let text = d.expr.source.get(disjunction.span.start..disjunction.span.end).unwrap_or(&d.expr.source).trim();
                    let whole = lower_result(disjunction, &scope);
                    let param = env_param(disjunction);
                    quote!(Some((#text, |#param| #whole)))
                }
                None => quote!(None),
            };
            let doc = super::doc_lines(&format!(" How `{}` is explained, conjunct by conjunct.", d.name));
            quote! {
                #(#[doc = #doc])*
                static #name: rt::when::Explanation<Test> = rt::when::Explanation { unless: #unless, clauses: &[#(#checks),*] };
            }
        });
    let selection = selection(op, &scope);
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

        /// Checks the `when` list of variant `id` with the compiled code.
        #[doc(hidden)]
        pub fn accepts(id: &str, env: &Env<'_>) -> Option<Result<(), rt::support::Failure>> {
            rt::when::accepts(&VARIANTS, id, env)
        }
    }
}

/// `a and b and c` → `[a, b, c]`.
/// The explainable `derive` entries some `when` condition reaches, directly or through
/// another explanation: only those get an `explain_*` function.
fn used_explanations(op: &Op) -> std::collections::BTreeSet<&str> {
    let mut used = std::collections::BTreeSet::new();
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

/// `env`, or `_env` for a function whose expression reads nothing from it.
fn env_param(ir: &Ir) -> proc_macro2::Ident {
    if ir.symbols().is_empty() && ir.features().is_empty() {
        format_ident!("_env")
    } else {
        format_ident!("env")
    }
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
        return quote!(rt::when::Clause::Require(#name, #inner, #function));
    }
    let body = lower_result(ir, scope);
    let param = env_param(ir);
    quote!(rt::when::Clause::Check(#text, |#param| #body))
}

fn env_struct(op: &Op, scope: &EnvScope<'_>) -> TokenStream {
    let roles: Vec<proc_macro2::Ident> = op.tensors().map(super::tensor_field).collect();
    // Shapes `plan` is given (inputs, provided outputs); an absent optional one is empty.
    let given = super::api::shaped_tensors(op);
    let input_inits = given.iter().filter(|t| !t.is_computed_output()).map(|t| {
        let role = super::tensor_field(t);
        if t.optional {
            quote!(#role: shapes.#role.map(rt::support::shape_i64).unwrap_or_default(),)
        } else {
            quote!(#role: rt::support::shape_i64(shapes.#role),)
        }
    });
    let output_inits = op
        .outputs
        .iter()
        .filter(|t| t.is_computed_output())
        .map(|t| {
            let role = super::tensor_field(t);
            quote!(#role: ::std::vec::Vec::new(),)
        });
    let optional: Vec<&model::Tensor> = given.iter().copied().filter(|t| t.optional).collect();
    let present_fields = optional.iter().map(|t| super::tensor_field(t));
    let present_inits = optional.iter().map(|t| {
        let role = super::tensor_field(t);
        quote!(#role: shapes.#role.is_some(),)
    });
    let output_error = if op.outputs.iter().any(model::Tensor::is_computed_output) {
        quote! {
            fn output_error(role: &str, source: &str, error: &EvalError) -> rt::OpError {
                rt::OpError::Input { op: OP_NAME, input: role.into(), rule: format!("shape `{source}` could not be computed: {error}") }
            }
        }
    } else {
        quote!()
    };
    let (present_struct, present_field, present_init) = if optional.is_empty() {
        (quote!(), quote!(), quote!())
    } else {
        (
            quote! {
                /// Which optional tensors the call gives.
                #[doc(hidden)]
                #[derive(Clone, Copy, Debug, Default)]
                pub struct EnvPresent { #( pub #present_fields: bool, )* }
            },
            quote!(pub present: EnvPresent,),
            quote!(present: EnvPresent { #(#present_inits)* },),
        )
    };
    // Output shapes are computed into the environment when there are any to compute.
    let env_binding = if op.outputs.iter().any(model::Tensor::is_computed_output) {
        quote!(mut env)
    } else {
        quote!(env)
    };
    let mut output_fns = Vec::new();
    let output_shapes: Vec<TokenStream> = op.outputs.iter().filter(|t| t.is_computed_output()).map(|t| {
        let role = super::tensor_field(t);
        let role_text = &t.role;
        let shape_fn = format_ident!("output_shape_{}", model::snake_ident(&t.role));
        let shape = t.shape.as_ref().map(|s| lower_result(&s.ir, scope)).unwrap_or(quote!(Ok(::std::vec::Vec::new())));
        let param = t.shape.as_ref().map_or(format_ident!("_env"), |s| env_param(&s.ir));
        let shape_source = t.shape.as_ref().map_or("", |s| s.source.as_str());
        let shape_doc = super::doc_lines(&format!(" Shape of output `{role_text}`: `{shape_source}`."));
        output_fns.push(quote! {
            #(#[doc = #shape_doc])*
            fn #shape_fn(#param: &Env<'_>) -> Result<::std::vec::Vec<i64>, EvalError> { #shape }
        });
        let rank_check = t.rank_expr.as_ref().map(|r| {
            let rank_fn = format_ident!("output_rank_{}", model::snake_ident(&t.role));
            let rank = lower_result(&r.ir, scope);
            let param = env_param(&r.ir);
            let rank_source = &r.source;
            let rank_doc = super::doc_lines(&format!(" Rank of output `{role_text}`: `{rank_source}`."));
            output_fns.push(quote! {
                #(#[doc = #rank_doc])*
                fn #rank_fn(#param: &Env<'_>) -> Result<i64, EvalError> { #rank }
            });
            quote! {
                let rank = #rank_fn(&env).map_err(|e| output_error(#role_text, #rank_source, &e))?;
                if rank != rt::support::rank(&env.shapes.#role) {
                    return Err(rt::OpError::Input {
                        op: OP_NAME,
                        input: #role_text.into(),
                        rule: format!("rank expression `{}` gives {rank} but shape expression `{}` gives {} dimensions", #rank_source, #shape_source, env.shapes.#role.len()),
                    });
                }
            }
        });
        quote! {
            env.shapes.#role = #shape_fn(&env).map_err(|e| output_error(#role_text, #shape_source, &e))?;
            #rank_check
        }
    }).collect();
    let env_value = quote!(Env { shapes: EnvShapes { #(#input_inits)* #(#output_inits)* }, #present_init dtypes, attrs, caps });
    let construct = if output_shapes.is_empty() {
        quote!(Ok(#env_value))
    } else {
        quote! {
            let #env_binding = #env_value;
            #(#output_shapes)*
            Ok(env)
        }
    };
    quote! {
        /// Tensor shapes as expression integers, inputs and outputs.
        #[doc(hidden)]
        #[derive(Clone, Debug, Default)]
        pub struct EnvShapes { #( pub #roles: ::std::vec::Vec<i64>, )* }

        #present_struct

        /// Everything the manifest's expressions may read.
        #[doc(hidden)]
        #[derive(Clone, Debug)]
        pub struct Env<'a> {
            pub shapes: EnvShapes,
            #present_field
            pub dtypes: DTypes,
            pub attrs: &'a Attrs,
            pub caps: &'a rt::DeviceCaps,
        }

        #output_error

        impl<'a> Env<'a> {
            /// Input shapes as given; output shapes and ranks from the manifest's expressions.
            pub fn new(shapes: &Shapes<'_>, dtypes: DTypes, attrs: &'a Attrs, caps: &'a rt::DeviceCaps) -> Result<Self, rt::OpError> {
                #construct
            }
        }

        #(#output_fns)*
    }
}

fn selection(op: &Op, scope: &EnvScope<'_>) -> TokenStream {
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
    let variants = op.variants.iter().map(|variant| {
        let shared_clause = (shared > 0).then(|| quote!(rt::when::Clause::All(&SHARED_WHEN),));
        let checks = variant.when[shared..]
            .iter()
            .map(|w| condition(op, scope, &w.source, &w.ir));
        let plan = format_ident!("plan_{}", model::snake_ident(&variant.id));
        let id = &variant.id;
        quote!(rt::when::Variant::new(#id, &[#shared_clause #(#checks),*], #plan))
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
        /// A compiled `when` condition.
        type Test = fn(&Env<'_>) -> Result<bool, EvalError>;
        type VariantPlan = fn(&Env<'_>) -> Result<rt::Plan, EvalError>;

        /// The variants in priority order, each with its `when` conditions in order and its plan.
        ///
        #(#[doc = #docs])*
        static VARIANTS: [rt::when::Variant<Test, VariantPlan>; #count] = [#(#variants),*];

        #shared_static
    }
}
