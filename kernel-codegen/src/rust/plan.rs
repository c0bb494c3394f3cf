//! The plan of each variant in a generated op module, as data the runtime walks
//! (`rt::plan_spec`): the shader each pass looks up in the op's table (by its key, `table.rs`),
//! its overrides, its uniform fields (packed in order, the layout naga's was checked against),
//! its dispatch and the variant's intermediates, every value an index into the op's `value`
//! function; and the op's outputs.

use std::cell::RefCell;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::generic_type_vars;
use super::eval::{EnvScope, env_param, lower, lower_dims};
use super::{OpInput, ident};
use crate::model::{self, BindingTarget, DTypeRef, Dispatch, Expr, Op, Storage, Variant};

/// The distinct expressions of an op's plans, each once by its lowered text: the generated
/// `value` function computes one by its index, and the plans' specs name their indices.
#[derive(Default)]
pub(super) struct Values(RefCell<Vec<(String, TokenStream, String)>>);

impl Values {
    /// The index of `e`'s value; `source` says what it is computed from, for errors.
    fn index(&self, e: &Expr, scope: &EnvScope<'_>, source: String) -> proc_macro2::Literal {
        // A list written out (an intermediate's shape) becomes `Dims`: planning it allocates
        // nothing, so a bound call's `update` stays allocation-free.
        let lowered = match e.ir.ty {
            crate::expr::Type::List => lower_dims(&e.ir, scope),
            _ => None,
        }
        .unwrap_or_else(|| lower(&e.ir, scope));
        let text = lowered.to_string();
        let mut list = self.0.borrow_mut();
        let i = match list.iter().position(|(t, _, _)| *t == text) {
            Some(i) => i,
            None => {
                list.push((text, lowered, source));
                list.len() - 1
            }
        };
        proc_macro2::Literal::usize_unsuffixed(i)
    }

    /// A value the op computes by other means than a manifest expression (a dtype's name).
    fn index_of(&self, lowered: TokenStream) -> proc_macro2::Literal {
        let text = lowered.to_string();
        let mut list = self.0.borrow_mut();
        let i = match list.iter().position(|(t, _, _)| *t == text) {
            Some(i) => i,
            None => {
                list.push((text, lowered, String::new()));
                list.len() - 1
            }
        };
        proc_macro2::Literal::usize_unsuffixed(i)
    }

    /// `fn value(index, env)`, `VALUE_SOURCES`, the outputs every variant shares, and
    /// `plan_variant`, which walks a variant's spec with them.
    pub(super) fn functions(&self, op: &Op) -> TokenStream {
        let list = self.0.borrow();
        let count = list.len();
        let sources = list.iter().map(|(_, _, source)| source);
        let arms: Vec<TokenStream> = list
            .iter()
            .enumerate()
            .map(|(i, (_, lowered, _))| {
                let i = proc_macro2::Literal::usize_unsuffixed(i);
                quote!(#i => Value::from(#lowered))
            })
            .collect();
        let param = env_param(&quote!(#(#arms)*));
        let outputs = op.outputs.iter().map(|t| {
            let role = &t.role;
            let field = super::tensor_field(t);
            let dtype = tensor_dtype(op, t);
            quote!((#role, #dtype, env.shapes.#field.as_slice()))
        });
        let outputs_param = if op.outputs.is_empty() {
            format_ident!("_env")
        } else {
            format_ident!("env")
        };
        quote! {
            /// Value `index` of the plans, computed.
            fn value<'e>(index: usize, #param: &'e Env<'_>) -> Result<Value<'e>, EvalError> {
                let value = match index {
                    #(#arms,)*
                    _ => return Err(rt::when::no_test(index)),
                };
                Ok(value)
            }

            /// What each value of the plans is computed from, as errors name it.
            const VALUE_SOURCES: [&str; #count] = [#(#sources),*];

            /// The op's outputs, which every variant shares, written into `specs`.
            fn outputs(#outputs_param: &Env<'_>, specs: &mut ::std::vec::Vec<rt::OutputSpec>) -> Result<(), EvalError> {
                rt::support::set_outputs(specs, &[#(#outputs),*])
            }

            /// The plan of `variant`, whether or not its `when` holds.
            fn plan_variant(variant: &Variant<VariantSpec>, env: &Env<'_>) -> Result<rt::Plan, rt::PlanError> {
                let mut plan = rt::Plan::default();
                plan_variant_into(variant, env, &mut plan)?;
                Ok(plan)
            }

            /// [`plan_variant`] into `plan`, reusing its storage.
            fn plan_variant_into(variant: &Variant<VariantSpec>, env: &Env<'_>, plan: &mut rt::Plan) -> Result<(), rt::PlanError> {
                outputs(env, &mut plan.outputs)?;
                let values = rt::plan_spec::Values { value, sources: &VALUE_SOURCES };
                rt::plan_spec::build_into(OP_NAME, variant.id, &variant.plan, &SHADERS, &values, env, plan)
            }
        }
    }
}

/// A scalar the pass sets (a uniform field or an override), by its WGSL type.
fn field(wgsl_type: &str, slot: TokenStream) -> TokenStream {
    match wgsl_type {
        "u32" => quote!(U32(#slot)),
        "i32" => quote!(I32(#slot)),
        _ => quote!(F32(#slot)),
    }
}

/// A variant's plan as data: an `VariantSpec` whose values are indices into
/// the op's [`Values`].
pub(super) fn variant_spec(
    input: &OpInput<'_>,
    scope: &EnvScope<'_>,
    values: &Values,
    v: usize,
    variant: &Variant,
) -> TokenStream {
    let op = input.op;
    let slot = |name: &str, e: &Expr| {
        let i = values.index(e, scope, source(op, &e.ir));
        quote!((#name, #i))
    };
    let passes = variant.passes.iter().enumerate().map(|(p, pass)| {
        let combinations = super::table::pass_combinations(input, v, p);
        let key = super::table::pass_key(op, variant, pass, &combinations).lowered(scope);
        let key = key.into_iter().map(|k| values.index_of(k));
        let table_pass = proc_macro2::Literal::usize_unsuffixed(super::table::pass_index(op, v, p));
        let overrides = model::dynamic_values(variant, pass).map(|d| {
            let pipeline_name = op.override_name(&d.name);
            let field = field(d.override_type.wgsl(), slot(&d.name, &d.expr));
            quote!((#pipeline_name, #field))
        });
        let bindings = pass.bindings.iter().map(|b| match &b.target {
            BindingTarget::Tensor(i) => {
                let i = proc_macro2::Literal::usize_unsuffixed(*i);
                quote!(Arg(#i))
            }
            BindingTarget::Intermediate(i) => {
                let i = proc_macro2::Literal::usize_unsuffixed(*i);
                quote!(Intermediate(#i))
            }
            BindingTarget::Params => quote!(Params),
        });
        let params = pass
            .bindings
            .iter()
            .find_map(|b| b.params.as_ref())
            .map(|params| {
                params
                    .fields
                    .iter()
                    .map(|f| field(f.wgsl_type, slot(&f.name, &f.value)))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let dispatch = dispatch(&pass.dispatch, &slot);
        let id = &pass.id;
        quote! {
            PassSpec {
                id: #id,
                table_pass: #table_pass,
                key: &[#(#key),*],
                overrides: &[#(#overrides),*],
                bindings: &[#(#bindings),*],
                params: &[#(#params),*],
                dispatch: #dispatch,
            }
        }
    });
    let intermediates = variant.intermediates.iter().map(|i| {
        let id = &i.id;
        let dtype = format_ident!("{}", i.dtype.variant_name());
        let shape = values.index(&i.shape, scope, String::new());
        quote!(ScratchSpec { id: #id, dtype: rt::DType::#dtype, shape: #shape })
    });
    // An input bound `read_write` is written in place: a call whose outputs are all empty still
    // has something to compute.
    let writes_in_place = (variant.passes.iter().flat_map(|p| &p.bindings)).any(|b| {
        b.access == model::Access::ReadWrite
            && matches!(b.target, BindingTarget::Tensor(t) if t < op.inputs.len())
    });
    quote!(VariantSpec { passes: &[#(#passes),*], intermediates: &[#(#intermediates),*], writes_in_place: #writes_in_place })
}

/// The runtime dtype of a tensor, read from the environment for type variables.
fn tensor_dtype(op: &Op, tensor: &model::Tensor) -> TokenStream {
    match (&tensor.storage, &tensor.dtype) {
        // The logical dtype, so an untyped caller allocates an index tensor for it.
        (Storage::U32Checked, _) => quote!(rt::DType::I64),
        (_, DTypeRef::Var(var)) if generic_type_vars(op).contains(&var.as_str()) => {
            let field = ident(&model::snake_ident(var).to_ascii_lowercase());
            quote!(env.dtypes.#field)
        }
        (_, DTypeRef::Var(var)) => {
            let d = op
                .type_var(var)
                .and_then(|t| t.allowed.first())
                .map_or("F32", |d| d.variant_name());
            let d = format_ident!("{}", d);
            quote!(rt::DType::#d)
        }
        (_, DTypeRef::Fixed(d)) => {
            let d = format_ident!("{}", d.variant_name());
            quote!(rt::DType::#d)
        }
    }
}

fn dispatch(dispatch: &Dispatch, slot: &dyn Fn(&str, &Expr) -> TokenStream) -> TokenStream {
    match dispatch {
        Dispatch::Threads {
            threads,
            workgroup_size,
        } => {
            let t = slot("threads", threads);
            let w = slot("workgroupSize", workgroup_size);
            quote!(Threads { threads: #t, workgroup_size: #w })
        }
        Dispatch::Workgroups(n) => {
            let n = slot("workgroups", n);
            quote!(Workgroups(#n))
        }
        Dispatch::Grid { x, y, z } => {
            let x = slot("x", x);
            let y = y.as_ref().map_or(quote!(None), |y| {
                let y = slot("y", y);
                quote!(Some(#y))
            });
            let z = z.as_ref().map_or(quote!(None), |z| {
                let z = slot("z", z);
                quote!(Some(#z))
            });
            quote!(Grid(#x, #y, #z))
        }
        Dispatch::GridStride {
            items,
            workgroup_size,
        } => {
            let i = slot("gridStride", items);
            let w = slot("workgroupSize", workgroup_size);
            quote!(GridStride { items: #i, workgroup_size: #w })
        }
    }
}

/// What a value is computed from, as a planning error says after its name: the inputs and
/// arguments it reads (through `derive` entries), since the name alone is the package's own
/// ("`innerRepeat` (from the shapes of `data`, `bias`)"); empty for a constant.
fn source(op: &Op, ir: &crate::expr::Ir) -> String {
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
        String::new()
    } else {
        format!(" (from {})", from.join(" and "))
    }
}
