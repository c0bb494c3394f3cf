//! The entry points of a generated op: `plan` (GPU-free) and the `Op` type whose trait impls
//! give `record_into`, `run_into`, `record`, `run` and the registry's untyped entry, with the
//! module's free functions calling them.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::api::{
    element_type, generic_args, generic_params, generic_params_with_defaults, generic_type_vars,
    vars_of,
};
use super::call::Layout;
use super::{OpInput, ident};
use crate::model::{self, DTypeRef, Storage, Tensor};

fn var_field(var: &str) -> Ident {
    ident(&model::snake_ident(var).to_ascii_lowercase())
}

/// A generated op's entry points, and what they read that a reader of the API can skip.
pub struct EntryPoints {
    /// The free functions (`run`, `record`, `run_into`, `record_into`, `bind`, `plan`,
    /// `plan_into`, `precompile`, in that order) and the `Op` type with its trait impls.
    pub api: TokenStream,
    /// The registry's untyped entry (`UNTYPED`).
    pub tables: TokenStream,
}

pub fn emit(input: &OpInput<'_>) -> EntryPoints {
    let op = input.op;
    let select = super::when::select_call(op);
    let dtype_checks = generic_type_vars(op).into_iter().map(|var| {
        let field = var_field(var);
        let allowed: Vec<Ident> = op
            .type_var(var)
            .map(|t| {
                t.allowed
                    .iter()
                    .map(|d| format_ident!("{}", d.variant_name()))
                    .collect()
            })
            .unwrap_or_default();
        let roles: Vec<&str> = op
            .inputs
            .iter()
            .filter(|t| t.dtype == DTypeRef::Var(var.to_owned()))
            .map(|t| t.role.as_str())
            .collect();
        let allowed = if allowed == [format_ident!("F32"), format_ident!("F16")] {
            quote!(rt::DType::FLOATS)
        } else {
            quote!(&[#(rt::DType::#allowed),*])
        };
        quote!(rt::support::dtype_allowed(OP_NAME, &[#(#roles),*], #var, dtypes.#field, #allowed)?;)
    });
    let rank_checks = op.inputs.iter().filter(|t| !t.optional).filter_map(|t| {
        let rank = t.rank? as usize;
        let role = super::tensor_field(t);
        let text = &t.role;
        Some(quote!(rt::support::rank_is(OP_NAME, #text, shapes.#role, #rank)?;))
    });
    let layout = Layout::of(op);
    let signatures = Signatures::of(op, &layout);
    let Signatures {
        bounds,
        self_ty,
        inputs_ty,
        outputs_mut_ty,
        ..
    } = &signatures;
    let allocating = layout.allocates.then(|| {
        let outputs_ty = &signatures.outputs_ty;
        // The trait takes the in-place tensors of every op; one that writes none takes `()`,
        // which its free functions leave out.
        let (param, arg, written) = match &signatures.in_place_ty {
            Some(in_place_ty) => (
                quote!(in_place: #in_place_ty,),
                quote!(in_place),
                "The outputs, and the tensors written in place,",
            ),
            None => (quote!(), quote!(()), "The outputs"),
        };
        let record_doc = super::doc_lines(&format!(
            " Records the op into `encoder` with new outputs, so several ops can share one\n \
             submission ([`rt::AllocatingOp::record`]). {written} are valid once the\n \
             encoder has been submitted."
        ));
        quote! {
            /// Runs the op with new outputs and waits for the GPU ([`rt::AllocatingOp::run`]).
            pub fn run<#bounds>(ctx: &rt::Context, inputs: &#inputs_ty, #param attrs: &Attrs) -> Result<#outputs_ty, rt::OpError> {
                <#self_ty as rt::AllocatingOp>::run(ctx, inputs, #arg, attrs)
            }

            #(#[doc = #record_doc])*
            pub fn record<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &#inputs_ty, #param attrs: &Attrs) -> Result<#outputs_ty, rt::OpError> {
                <#self_ty as rt::AllocatingOp>::record(ctx, encoder, inputs, #arg, attrs)
            }
        }
    });
    // Untyped tensors carry every dtype a manifest names, so only the layout decides.
    let untyped = if layout.inputs_suffice(op) && op.inputs.iter().all(|t| !t.optional) {
        quote!(rt::registry::Untyped::Plan(rt::plan_untyped::<Op>))
    } else {
        let (role, reason) = typed_only_reason(op, &layout);
        quote!(rt::registry::Untyped::TypedOnly { role: #role, reason: #reason })
    };
    let op_type = op_type(input, &layout, &signatures);

    let tables = quote! {
        /// The untyped entry of the registry, or why the op has none.
        const UNTYPED: rt::registry::Untyped = #untyped;
    };
    let api = quote! {
        #allocating

        /// Runs the op into tensors the caller provides and waits for the GPU natively:
        /// [`record_into`] in an encoder of its own, submitted.
        pub fn run_into<#bounds>(ctx: &rt::Context, inputs: &#inputs_ty, outputs: #outputs_mut_ty, attrs: &Attrs) -> Result<(), rt::OpError> {
            <#self_ty as rt::Op>::run_into(ctx, inputs, outputs, attrs)
        }

        /// Records the op into `encoder`, writing into tensors the caller provides, so a loop
        /// allocates nothing per step and an output can be the next op's input
        /// ([`rt::Op::record_into`]: bind groups are kept for the next call with the same
        /// tensors; an output of the wrong shape or one that shares bytes with another
        /// argument is an error).
        pub fn record_into<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &#inputs_ty, outputs: #outputs_mut_ty, attrs: &Attrs) -> Result<(), rt::OpError> {
            <#self_ty as rt::Op>::record_into(ctx, encoder, inputs, outputs, attrs)
        }

        /// Binds a call to these tensors, for a call site recorded step after step
        /// ([`rt::Bound`]): `update` it with new attributes, `record` it into a compute pass,
        /// with nothing created or looked up while its plan keeps its shape.
        pub fn bind<#bounds>(ctx: &rt::Context, inputs: &#inputs_ty, outputs: #outputs_mut_ty, attrs: &Attrs) -> Result<rt::Bound<#self_ty>, rt::OpError> {
            rt::Bound::new(ctx, inputs, outputs, attrs)
        }

        /// Chooses the variant and computes everything about the dispatch, without a GPU:
        /// passes, shaders, overrides, uniform bytes, dispatch sizes, intermediates, outputs.
        pub fn plan(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
            let mut plan = rt::Plan::default();
            plan_into(caps, shapes, dtypes, attrs, &mut plan)?;
            Ok(plan)
        }

        /// [`plan`] into `plan`, reusing its storage ([`rt::Op::plan_into`]): planning the op
        /// again allocates nothing once its shapes have been seen.
        pub fn plan_into(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs, plan: &mut rt::Plan) -> Result<(), rt::OpError> {
            attrs.validate()?;
            #(#dtype_checks)*
            #(#rank_checks)*
            let env = Env::new(shapes, *dtypes, attrs, caps)?;
            let variant = #select?;
            rt::support::planned(OP_NAME, variant.id, plan_variant_into(variant, &env, plan))
        }

        /// Compiles, ahead of the first call, every shader of this op the device can run
        /// ([`rt::Op::precompile`]). Returns the number of shaders prepared.
        pub fn precompile(ctx: &rt::Context) -> Result<usize, rt::OpError> {
            <Op as rt::Op>::precompile(ctx)
        }

        #op_type
    };
    EntryPoints { api, tables }
}

/// The types the entry points and trait impls name.
struct Signatures {
    /// `T: rt::Float, …`, every generic type variable with its bound.
    bounds: TokenStream,
    /// `Op<T, …>`.
    self_ty: TokenStream,
    /// `Inputs<'_, …>` (or `Inputs` when the op only writes).
    inputs_ty: TokenStream,
    /// `OutputsMut<'_, …>`.
    outputs_mut_ty: TokenStream,
    /// `Outputs<…>`, for ops that allocate.
    outputs_ty: TokenStream,
    /// `InPlace<'_, …>`, for ops that allocate and write tensors in place.
    in_place_ty: Option<TokenStream>,
    /// The same with the lifetime `'a`, for the associated types.
    inputs_ty_a: TokenStream,
    outputs_mut_ty_a: TokenStream,
    in_place_ty_a: TokenStream,
}

impl Signatures {
    fn of(op: &model::Op, layout: &Layout<'_>) -> Self {
        let vars = generic_type_vars(op);
        let read_args = generic_args(&vars_of(op, &layout.read));
        let written_args = generic_args(&vars_of(op, &layout.written));
        let inputs_of = |lifetime: TokenStream| {
            if layout.read.is_empty() {
                quote!(Inputs)
            } else {
                quote!(Inputs<#lifetime, #read_args>)
            }
        };
        let args = generic_args(&vars);
        let outputs_args = generic_args(&vars_of(op, &op.outputs.iter().collect::<Vec<_>>()));
        let in_place_args = generic_args(&vars_of(op, &layout.in_place));
        let in_place_of = |lifetime: TokenStream| {
            (layout.allocates && !layout.in_place.is_empty())
                .then(|| quote!(InPlace<#lifetime, #in_place_args>))
        };
        Signatures {
            bounds: generic_params(op, &vars),
            self_ty: if vars.is_empty() {
                quote!(Op)
            } else {
                quote!(Op<#args>)
            },
            inputs_ty: inputs_of(quote!('_)),
            outputs_mut_ty: quote!(OutputsMut<'_, #written_args>),
            outputs_ty: if op.outputs.is_empty() {
                quote!(Outputs)
            } else {
                quote!(Outputs<#outputs_args>)
            },
            in_place_ty: in_place_of(quote!('_)),
            inputs_ty_a: inputs_of(quote!('a)),
            outputs_mut_ty_a: quote!(OutputsMut<'a, #written_args>),
            in_place_ty_a: in_place_of(quote!('a)).unwrap_or_else(|| quote!(())),
        }
    }
}

/// `Op`, the type that implements `rt::Op` (and `rt::AllocatingOp` where the op allocates its
/// outputs), its type parameters those of the op's type variables; and `rt::OpHooks`, what
/// tests that compare the op with its manifest's expressions call.
fn op_type(input: &OpInput<'_>, layout: &Layout<'_>, signatures: &Signatures) -> TokenStream {
    let op = input.op;
    let vars = generic_type_vars(op);
    let Signatures {
        bounds: params,
        self_ty,
        inputs_ty_a,
        outputs_mut_ty_a,
        outputs_ty,
        in_place_ty_a,
        ..
    } = signatures;
    let idents: Vec<Ident> = vars.iter().map(|v| format_ident!("{}", v)).collect();
    let declaration = if vars.is_empty() {
        quote!(
            pub struct Op;
        )
    } else {
        let params = generic_params_with_defaults(op, &vars);
        quote!(pub struct Op<#params>(::core::marker::PhantomData<(#(#idents,)*)>);)
    };
    let dtypes_of = super::call::dtypes_of(op);
    let arg = |t: &Tensor, from: TokenStream, access: TokenStream| {
        let role = super::tensor_field(t);
        let text = &t.role;
        if t.optional {
            quote!(match &#from.#role { Some(t) => rt::Arg::#access(#text, t.binding()), None => rt::Arg::absent(#text) })
        } else {
            quote!(rt::Arg::#access(#text, #from.#role.binding()))
        }
    };
    let args = op
        .inputs
        .iter()
        .map(|t| {
            if t.in_place {
                arg(t, quote!(outputs), quote!(read_write))
            } else {
                arg(t, quote!(inputs), quote!(read))
            }
        })
        .chain(
            op.outputs
                .iter()
                .map(|t| arg(t, quote!(outputs), quote!(write))),
        );
    let inputs_unused = layout.read.is_empty().then(|| quote!(let _ = inputs;));
    let shape = |t: &Tensor, from: TokenStream| {
        let role = super::tensor_field(t);
        if t.optional {
            quote!(match &#from.#role { Some(t) => Some(t.shape()), None => None })
        } else {
            quote!(Some(#from.#role.shape()))
        }
    };
    let arg_shapes = op
        .inputs
        .iter()
        .map(|t| {
            if t.in_place {
                shape(t, quote!(outputs))
            } else {
                shape(t, quote!(inputs))
            }
        })
        .chain(op.outputs.iter().map(|t| shape(t, quote!(outputs))));
    let arg_count = op.inputs.len() + op.outputs.len();
    let outputs_unused = (op.outputs.is_empty() && op.inputs.iter().all(|t| !t.in_place))
        .then(|| quote!(let _ = outputs;));
    // Hand-written checks of input values see the required inputs the op only reads.
    let host_checks = input.host_check.as_ref().map(|check| {
        let views = layout.read.iter().filter(|t| !t.optional).map(|t| {
            let role = super::tensor_field(t);
            let text = &t.role;
            let values = if t.storage == Storage::U32Checked {
                quote!(inputs.#role.values())
            } else {
                quote!(None)
            };
            quote!(rt::registry::ArgView::new(#text, inputs.#role.shape(), #values))
        });
        (
            quote! {
                fn check_inputs(inputs: &Self::Inputs<'_>, attrs: &Attrs) -> Result<(), rt::OpError> {
                    #check(&[#(#views),*], attrs)
                }
            },
            quote! {
                fn check_views(views: &[rt::registry::ArgView<'_>], attrs: &Attrs) -> Result<(), rt::OpError> {
                    #check(views, attrs)
                }
            },
        )
    });
    let (check_inputs, check_views) = host_checks.unzip();
    let allocating = layout.allocates.then(|| {
        let allocations = op.outputs.iter().enumerate().map(|(i, t)| {
            let role = super::tensor_field(t);
            let tensor = allocate_output(t, i);
            quote!(#role: #tensor)
        });
        let in_place = layout.in_place.iter().map(|t| {
            let role = super::tensor_field(t);
            // Reborrowed: the caller's tensors stay its own after the call.
            if t.optional {
                quote!(#role: in_place.#role.as_deref_mut())
            } else {
                quote!(#role: &mut *in_place.#role)
            }
        });
        let borrows = op.outputs.iter().map(|t| {
            let role = super::tensor_field(t);
            quote!(#role: &mut outputs.#role)
        });
        let shapes = if layout.in_place.is_empty() {
            quote!(inputs.shapes())
        } else {
            let inits = super::call::shape_inits(op, &quote!(inputs), &quote!(in_place));
            quote!(Shapes { #(#inits)* })
        };
        // An op that writes nothing in place takes `()`.
        let in_place_param = if layout.in_place.is_empty() {
            quote!(_in_place)
        } else {
            quote!(in_place)
        };
        quote! {
            impl<#params> rt::AllocatingOp for #self_ty {
                type Outputs = #outputs_ty;
                type InPlace<'a> = #in_place_ty_a;

                fn input_shapes<'a>(inputs: &'a Self::Inputs<'_>, #in_place_param: &'a Self::InPlace<'_>) -> (Shapes<'a>, DTypes) {
                    #inputs_unused
                    (#shapes, #dtypes_of)
                }

                fn allocate(ctx: &rt::Context, plan: &rt::Plan) -> Result<Self::Outputs, rt::OpError> {
                    Ok(Outputs { #(#allocations),* })
                }

                fn outputs_mut<'a>(#in_place_param: &'a mut Self::InPlace<'_>, outputs: &'a mut Self::Outputs) -> Self::OutputsMut<'a> {
                    OutputsMut { #(#in_place,)* #(#borrows),* }
                }
            }
        }
    });
    quote! {
        /// The op as a type: `rt::Op` (and `rt::AllocatingOp` where it allocates its outputs),
        /// for code that drives any op alike. Its type parameters are the element types of the
        /// op's type variables.
        #declaration

        impl<#params> rt::Op for #self_ty {
            const NAME: &'static str = OP_NAME;
            const ENTRY: rt::registry::OpEntry = ENTRY;
            type Attrs = Attrs;
            type DTypes = DTypes;
            type Shapes<'a> = Shapes<'a>;
            type Inputs<'a> = #inputs_ty_a;
            type OutputsMut<'a> = #outputs_mut_ty_a;

            fn attrs(values: &[(::std::string::String, rt::AttrValue)]) -> Result<Attrs, rt::OpError> {
                Attrs::from_raw(values)
            }

            fn plan(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
                plan(caps, shapes, dtypes, attrs)
            }

            fn plan_into(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs, plan: &mut rt::Plan) -> Result<(), rt::OpError> {
                plan_into(caps, shapes, dtypes, attrs, plan)
            }

            fn call_shapes<'a>(inputs: &'a Self::Inputs<'_>, outputs: &'a Self::OutputsMut<'_>) -> (Shapes<'a>, DTypes) {
                (shapes(inputs, outputs), dtypes(inputs, outputs))
            }

            type Args<'t> = [rt::Arg<'t>; #arg_count];
            type ArgShapes<'t> = [Option<&'t [usize]>; #arg_count];

            fn args<'t>(inputs: &'t Self::Inputs<'_>, outputs: &'t Self::OutputsMut<'_>) -> Self::Args<'t> {
                #inputs_unused
                #outputs_unused
                [#(#args),*]
            }

            fn arg_shapes<'t>(inputs: &'t Self::Inputs<'_>, outputs: &'t Self::OutputsMut<'_>) -> Self::ArgShapes<'t> {
                #inputs_unused
                #outputs_unused
                [#(#arg_shapes),*]
            }

            fn shapes_from<'a>(get: &dyn Fn(&str) -> Option<&'a [usize]>) -> Shapes<'a> {
                Shapes::from_lookup(get)
            }

            #check_inputs
        }

        #allocating

        impl<#params> rt::OpHooks for #self_ty {
            type Env<'a> = Env<'a>;
            const VARIANT_IDS: &'static [&'static str] = VARIANT_IDS;

            fn dtypes_from(get: &dyn Fn(&str) -> rt::DType) -> DTypes {
                DTypes::from_lookup(get)
            }

            fn env<'a>(shapes: &Shapes<'_>, dtypes: DTypes, attrs: &'a Attrs, caps: &'a rt::DeviceCaps) -> Result<Env<'a>, rt::OpError> {
                Env::new(shapes, dtypes, attrs, caps)
            }

            fn accepts(id: &str, env: &Env<'_>) -> Option<Result<(), rt::support::Failure>> {
                rt::when::accepts(&VARIANTS, &CONDITIONS, id, env)
            }

            fn plan_of(id: &str, env: &Env<'_>) -> Option<Result<rt::Plan, rt::PlanError>> {
                let variant = VARIANTS.iter().find(|v| v.id == id)?;
                Some(plan_variant(variant, env))
            }

            #check_views
        }
    }
}

/// Why the untyped entry, which takes inputs only and allocates the outputs, cannot serve the
/// op: the first tensor that needs the typed API, and what it is.
fn typed_only_reason(op: &model::Op, layout: &Layout<'_>) -> (String, String) {
    if let Some(t) = op.inputs.iter().find(|t| t.in_place) {
        return (t.role.clone(), "is written in place".to_owned());
    }
    if let Some(t) = op.inputs.iter().find(|t| t.optional) {
        return (t.role.clone(), "is an optional input".to_owned());
    }
    if let Some(t) = op
        .outputs
        .iter()
        .find(|t| !t.is_computed_output() || t.optional)
    {
        let what = if t.optional {
            "is an optional output"
        } else {
            "is an output without a shape expression: the caller provides it"
        };
        return (t.role.clone(), what.to_owned());
    }
    let vars = generic_type_vars(op);
    let read = vars_of(op, &layout.read);
    let var = vars
        .iter()
        .find(|v| !read.contains(v))
        .copied()
        .unwrap_or_default();
    (
        var.to_owned(),
        "is a type variable no input binds (only outputs have it)".to_owned(),
    )
}

/// A newly allocated output, the `i`th of the plan.
fn allocate_output(t: &Tensor, i: usize) -> TokenStream {
    let zeros = |ty: TokenStream| quote!(#ty::zeros_for(ctx, plan.op, &plan.outputs[#i])?);
    match (&t.storage, &t.dtype) {
        // Indices the op writes: a `u32` tensor without host values.
        (Storage::U32Checked, _) => {
            let tensor = zeros(quote!(rt::Tensor::<u32>));
            quote!(rt::IndexTensor::from_tensor(#tensor))
        }
        (_, DTypeRef::Var(var)) => {
            let g = format_ident!("{}", var);
            zeros(quote!(rt::Tensor::<#g>))
        }
        (_, DTypeRef::Fixed(d)) => {
            let element = element_type(*d);
            zeros(quote!(rt::Tensor::<#element>))
        }
    }
}
