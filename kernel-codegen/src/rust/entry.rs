//! The entry points of a generated op: `plan` (GPU-free), `record`, `run`, and the untyped
//! `plan_dyn` behind the registry.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::api::{Layout, float_type_vars, generic_args, generic_params, vars_of};
use super::{OpInput, ident};
use crate::model::{self, DType, DTypeRef, Storage, Tensor};

fn var_field(var: &str) -> Ident {
    ident(&model::snake_ident(var).to_ascii_lowercase())
}

pub fn emit(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let dtype_checks = float_type_vars(op).into_iter().map(|var| {
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
        let roles = roles.join(", ");
        let allowed = if allowed == [format_ident!("F32"), format_ident!("F16")] {
            quote!(rt::DType::FLOATS)
        } else {
            quote!(&[#(rt::DType::#allowed),*])
        };
        quote!(rt::support::dtype_allowed(OP_NAME, #roles, #var, dtypes.#field, #allowed)?;)
    });
    let rank_checks = op.inputs.iter().filter(|t| !t.optional).filter_map(|t| {
        let rank = t.rank? as usize;
        let role = super::tensor_field(t);
        let text = &t.role;
        Some(quote!(rt::support::rank_is(OP_NAME, #text, shapes.#role, #rank)?;))
    });
    let host_check_call = |views: TokenStream| match &input.host_check {
        Some(check) => quote!(#check(&#views, attrs)?;),
        None => quote!(),
    };
    let layout = Layout::of(op);
    let all_vars = float_type_vars(op);
    let bounds = generic_params(&all_vars);
    let read_vars = vars_of(op, &layout.read);
    let read_bounds = generic_params(&read_vars);
    let read_args = generic_args(&read_vars);
    let tensor_vars = vars_of(op, &op.tensors().collect::<Vec<_>>());
    let tensor_bounds = generic_params(&tensor_vars);
    let written_args = generic_args(&vars_of(op, &layout.written));
    let inputs_of = |lifetime: TokenStream| {
        if layout.read.is_empty() {
            quote!(Inputs)
        } else {
            quote!(Inputs<#lifetime, #read_args>)
        }
    };
    let outputs_mut_of = |lifetime: TokenStream| quote!(OutputsMut<#lifetime, #written_args>);
    let inputs_ty = inputs_of(quote!('_));
    let outputs_mut_ty = outputs_mut_of(quote!('_));
    let associated = (inputs_of(quote!('a)), outputs_mut_of(quote!('a)));

    // Typed path. Host checks see the required inputs the op only reads.
    let typed_views = layout.read.iter().filter(|t| !t.optional).map(|t| {
        let role = super::tensor_field(t);
        let text = &t.role;
        let values = if t.storage == Storage::U32Checked {
            quote!(inputs.#role.values())
        } else {
            quote!(None)
        };
        quote!(rt::registry::ArgView::new(#text, inputs.#role.shape(), #values))
    });
    let typed_host_check = host_check_call(quote!([#(#typed_views),*]));
    let output_checks = op.outputs.iter().enumerate().map(|(i, t)| {
        let role = super::tensor_field(t);
        if t.optional {
            quote!(if let Some(output) = &outputs.#role { rt::support::check_output(OP_NAME, &plan.outputs[#i], output.shape())?; })
        } else {
            quote!(rt::support::check_output(OP_NAME, &plan.outputs[#i], outputs.#role.shape())?;)
        }
    });
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
    let (shapes_call, shapes_of_refs) = if layout.allocates {
        (quote!(inputs.shapes()), quote!(inputs.shapes()))
    } else {
        (
            quote!(shapes(inputs, &outputs)),
            quote!(shapes(inputs, outputs)),
        )
    };
    let dtypes_call = if layout.inputs_suffice(op) {
        quote!(inputs.dtypes())
    } else {
        let all_args = generic_args(&all_vars);
        quote!(dtypes::<#all_args>())
    };
    let planned_with = |shapes: TokenStream| {
        if typed_host_check.is_empty() {
            quote!(plan(ctx.caps(), &#shapes, &#dtypes_call, attrs)?)
        } else {
            quote!(checked_plan(ctx, &#shapes, &#dtypes_call, inputs, attrs)?)
        }
    };
    let planned = planned_with(shapes_call.clone());
    let planned_inputs = planned_with(quote!(inputs.shapes()));
    let inputs_unused = if layout.read.is_empty() {
        quote!(let _ = inputs;)
    } else {
        quote!()
    };

    let allocating = if layout.allocates {
        let output_allocs = op.outputs.iter().enumerate().map(|(i, t)| {
            let role = super::tensor_field(t);
            let ty = output_type(t);
            quote!(let mut #role = #ty::zeros_for(ctx, plan.op, &plan.outputs[#i])?;)
        });
        let out_roles: Vec<Ident> = op.outputs.iter().map(super::tensor_field).collect();
        let outputs_args = generic_args(&vars_of(op, &op.outputs.iter().collect::<Vec<_>>()));
        quote! {
            /// Records the op into `encoder` with new outputs, so several ops can share one
            /// submission. The outputs are valid once the encoder has been submitted.
            pub fn record<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &#inputs_ty, attrs: &Attrs) -> Result<Outputs<#outputs_args>, rt::OpError> {
                let plan = #planned_inputs;
                #(#output_allocs)*
                encode(ctx, encoder, &plan, inputs, &OutputsMut { #(#out_roles: &mut #out_roles),* }, false)?;
                Ok(Outputs { #(#out_roles),* })
            }

            /// Runs the op with new outputs and waits for the GPU.
            pub fn run<#bounds>(ctx: &rt::Context, inputs: &#inputs_ty, attrs: &Attrs) -> Result<Outputs<#outputs_args>, rt::OpError> {
                ctx.record_and_submit(|encoder| record(ctx, encoder, inputs, attrs))
            }
        }
    } else {
        quote!()
    };

    // Untyped path: inputs only, so only ops that allocate their outputs have one.
    let input_idents: Vec<Ident> = op.inputs.iter().map(super::tensor_field).collect();
    let role_list = op
        .inputs
        .iter()
        .map(|t| t.role.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let kind_checks = op.inputs.iter().map(|t| {
        let role = super::tensor_field(t);
        let text = &t.role;
        match (t.storage, fixed_dtype(op, t)) {
            (Storage::U32Checked, _) => quote!(rt::support::expect_index(OP_NAME, #text, #role)?;),
            (_, Some(d)) => {
                let d = format_ident!("{}", d.variant_name());
                quote!(rt::support::expect_dtype(OP_NAME, #text, #role, rt::DType::#d)?;)
            }
            (_, None) => quote!(rt::support::expect_float(OP_NAME, #text, #role)?;),
        }
    });
    let dyn_dtypes = all_vars.iter().map(|var| {
        let field = var_field(var);
        let members = op
            .inputs
            .iter()
            .filter(|t: &&Tensor| t.dtype == DTypeRef::Var((*var).to_owned()))
            .map(|t| {
                let role = super::tensor_field(t);
                let text = &t.role;
                quote!((#text, #role.dtype()))
            });
        quote!(#field: rt::support::unify_dtype(OP_NAME, #var, &[#(#members),*])?,)
    });
    let dyn_shapes = op.inputs.iter().map(|t| {
        let role = super::tensor_field(t);
        quote!(#role: #role.shape(),)
    });
    let dyn_views = op.inputs.iter().map(|t| {
        let role = super::tensor_field(t);
        let text = &t.role;
        quote!(rt::registry::ArgView::of(#text, #role))
    });
    let dyn_host_check = host_check_call(quote!([#(#dyn_views),*]));
    let untyped_ok = layout.inputs_suffice(op)
        && op.inputs.iter().all(|t| !t.optional)
        && op.tensors().all(|t| untyped_carries(op, t));
    let plan_dyn = if untyped_ok {
        quote! {
            fn plan_dyn(ctx: &rt::Context, inputs: &[&rt::AnyTensor], raw: &[(::std::string::String, rt::support::AttrValue)]) -> Result<rt::Plan, rt::OpError> {
                let attrs = Attrs::from_raw(raw)?;
                let attrs = &attrs;
                let [#(#input_idents),*] = rt::support::inputs_exactly(OP_NAME, #role_list, inputs)?;
                #(#kind_checks)*
                let dtypes = DTypes { #(#dyn_dtypes)* };
                let plan = plan(ctx.caps(), &Shapes { #(#dyn_shapes)* }, &dtypes, attrs)?;
                #dyn_host_check
                Ok(plan)
            }
        }
    } else {
        let (role, reason) = typed_only_reason(op, &layout);
        quote! {
            fn plan_dyn(_ctx: &rt::Context, _inputs: &[&rt::AnyTensor], _raw: &[(::std::string::String, rt::support::AttrValue)]) -> Result<rt::Plan, rt::OpError> {
                Err(rt::support::typed_only(OP_NAME, #role, #reason))
            }
        }
    };
    // Without a host check, `plan` is all a call needs.
    let checked_plan = if typed_host_check.is_empty() {
        quote!()
    } else {
        quote! {
            /// [`plan`] for a call's tensors on the context's device, with the op's host checks.
            fn checked_plan<#read_bounds>(ctx: &rt::Context, shapes: &Shapes<'_>, dtypes: &DTypes, inputs: &#inputs_ty, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
                let plan = plan(ctx.caps(), shapes, dtypes, attrs)?;
                #typed_host_check
                Ok(plan)
            }
        }
    };

    let op_type = op_type(op, &layout, &associated, &shapes_of_refs, &dtypes_call);

    quote! {
        #op_type

        /// Compiles, ahead of the first call, every shader of this op the device can run: the
        /// whole pipeline where one serves all shapes, the shader module where pipelines take
        /// shape-dependent overrides. Returns the number of shaders prepared.
        pub fn precompile(ctx: &rt::Context) -> Result<usize, rt::OpError> {
            rt::support::precompile(ctx, &SHADERS)
        }

        /// Chooses the variant and computes everything about the dispatch, without a GPU:
        /// passes, shaders, overrides, uniform bytes, dispatch sizes, intermediates, outputs.
        pub fn plan(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
            attrs.validate()?;
            #(#dtype_checks)*
            #(#rank_checks)*
            let env = Env::new(shapes, *dtypes, attrs, caps)?;
            let variant = rt::when::select(OP_NAME, &VARIANTS, &CONDITIONS, &env)?;
            rt::support::planned(OP_NAME, variant.id, plan_variant(variant, &env))
        }

        #checked_plan

        /// Records `plan`; `reuse` keeps the bind groups for the caller's next call with the
        /// same tensors (see [`rt::Context::record_plan_reusing`]).
        fn encode<#tensor_bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, plan: &rt::Plan, inputs: &#inputs_ty, outputs: &#outputs_mut_ty, reuse: bool) -> Result<(), rt::OpError> {
            #inputs_unused
            rt::support::record(ctx, encoder, plan, &[#(#args),*], reuse)
        }

        #allocating

        /// Records the op into `encoder`, writing into tensors the caller provides (tensors
        /// of its own or views of its buffers), so a loop allocates nothing per step and an
        /// output can be the next op's input. Bind groups are kept for the next call with the
        /// same tensors (see [`rt::Context::record_plan_reusing`]). A provided output of the wrong shape is
        /// [`rt::OpError::Output`]; one that shares bytes with another argument is
        /// [`rt::RuntimeError::Alias`].
        pub fn record_into<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &#inputs_ty, outputs: #outputs_mut_ty, attrs: &Attrs) -> Result<(), rt::OpError> {
            let plan = #planned;
            #(#output_checks)*
            encode(ctx, encoder, &plan, inputs, &outputs, true)
        }

        /// [`record_into`] in an encoder of its own, submitted; waits for the GPU natively.
        pub fn run_into<#bounds>(ctx: &rt::Context, inputs: &#inputs_ty, outputs: #outputs_mut_ty, attrs: &Attrs) -> Result<(), rt::OpError> {
            ctx.record_and_submit(|encoder| record_into(ctx, encoder, inputs, outputs, attrs))
        }

        #plan_dyn
    }
}

/// `Op`, the type that implements `rt::Op` (and `rt::AllocatingOp` where the op allocates its
/// outputs) by the module's functions, its type parameters those of the op's type variables;
/// and `rt::OpHooks`, what tests that compare the op with its manifest's expressions call.
fn op_type(
    op: &model::Op,
    layout: &Layout<'_>,
    (inputs_ty, outputs_mut_ty): &(TokenStream, TokenStream),
    shapes_call: &TokenStream,
    dtypes_call: &TokenStream,
) -> TokenStream {
    let vars = float_type_vars(op);
    let params = generic_params(&vars);
    let args = generic_args(&vars);
    let idents: Vec<Ident> = vars.iter().map(|v| format_ident!("{}", v)).collect();
    let (declaration, self_ty) = if vars.is_empty() {
        (
            quote!(
                pub struct Op;
            ),
            quote!(Op),
        )
    } else {
        (
            quote!(pub struct Op<#(#idents: rt::Float = f32),*>(::core::marker::PhantomData<(#(#idents,)*)>);),
            quote!(Op<#args>),
        )
    };
    let turbofish = if vars.is_empty() {
        quote!()
    } else {
        quote!(::<#args>)
    };
    let allocating = layout.allocates.then(|| {
        let outputs_args = generic_args(&vars_of(op, &op.outputs.iter().collect::<Vec<_>>()));
        let outputs_ty = if op.outputs.is_empty() {
            quote!(Outputs)
        } else {
            quote!(Outputs<#outputs_args>)
        };
        quote! {
            impl<#params> rt::AllocatingOp for #self_ty {
                type Outputs = #outputs_ty;

                fn record(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &Self::Inputs<'_>, attrs: &Attrs) -> Result<Self::Outputs, rt::OpError> {
                    record #turbofish(ctx, encoder, inputs, attrs)
                }
            }
        }
    });
    quote! {
        /// The op as a type: `rt::Op` (and `rt::AllocatingOp` where it allocates its outputs)
        /// by this module's functions, for code that drives any op alike. Its type parameters
        /// are the element types of the op's type variables.
        #declaration

        impl<#params> rt::Op for #self_ty {
            const NAME: &'static str = OP_NAME;
            const ENTRY: rt::registry::OpEntry = ENTRY;
            type Attrs = Attrs;
            type DTypes = DTypes;
            type Shapes<'a> = Shapes<'a>;
            type Inputs<'a> = #inputs_ty;
            type OutputsMut<'a> = #outputs_mut_ty;

            fn attrs(values: &[(::std::string::String, rt::support::AttrValue)]) -> Result<Attrs, rt::OpError> {
                Attrs::from_raw(values)
            }

            fn plan(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
                plan(caps, shapes, dtypes, attrs)
            }

            fn call_shapes<'a>(inputs: &'a Self::Inputs<'_>, outputs: &'a Self::OutputsMut<'_>) -> (Shapes<'a>, DTypes) {
                let _ = outputs;
                (#shapes_call, #dtypes_call)
            }

            fn record_into(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &Self::Inputs<'_>, outputs: Self::OutputsMut<'_>, attrs: &Attrs) -> Result<(), rt::OpError> {
                record_into #turbofish(ctx, encoder, inputs, outputs, attrs)
            }

            fn precompile(ctx: &rt::Context) -> Result<usize, rt::OpError> {
                precompile(ctx)
            }
        }

        #allocating

        impl<#params> rt::OpHooks for #self_ty {
            type Env<'a> = Env<'a>;
            const VARIANT_IDS: &'static [&'static str] = VARIANT_IDS;

            fn shapes_from<'a>(get: &dyn Fn(&str) -> Option<&'a [usize]>) -> Shapes<'a> {
                Shapes::from_lookup(get)
            }

            fn dtypes_from(get: &dyn Fn(&str) -> rt::DType) -> DTypes {
                DTypes::from_lookup(get)
            }

            fn env<'a>(shapes: &Shapes<'_>, dtypes: DTypes, attrs: &'a Attrs, caps: &'a rt::DeviceCaps) -> Result<Env<'a>, rt::OpError> {
                Env::new(shapes, dtypes, attrs, caps)
            }

            fn accepts(id: &str, env: &Env<'_>) -> Option<Result<(), rt::support::Failure>> {
                rt::when::accepts(&VARIANTS, &CONDITIONS, id, env)
            }

            fn plan_of(id: &str, env: &Env<'_>) -> Option<Result<rt::Plan, EvalError>> {
                let variant = VARIANTS.iter().find(|v| v.id == id)?;
                Some(plan_variant(variant, env))
            }
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
    if let Some(t) = op.tensors().find(|t| !untyped_carries(op, t)) {
        let d = fixed_dtype(op, t).unwrap_or(DType::U32);
        return (
            t.role.clone(),
            format!("is a {d} tensor, which untyped tensors do not carry"),
        );
    }
    let vars = float_type_vars(op);
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

/// The one dtype of a tensor that is not of a float type variable.
fn fixed_dtype(op: &model::Op, t: &Tensor) -> Option<DType> {
    match &t.dtype {
        DTypeRef::Fixed(d) => Some(*d),
        DTypeRef::Var(var) if float_type_vars(op).contains(&var.as_str()) => None,
        DTypeRef::Var(var) => Some(
            op.type_var(var)
                .and_then(|v| v.allowed.first())
                .copied()
                .unwrap_or(DType::F32),
        ),
    }
}

/// Whether an untyped tensor (`AnyTensor`: float32, float16, int64 indices) can be `t`.
fn untyped_carries(op: &model::Op, t: &Tensor) -> bool {
    t.storage == Storage::U32Checked
        || fixed_dtype(op, t).is_none_or(|d| matches!(d, DType::F32 | DType::F16))
}

/// The Rust type of a newly allocated output.
fn output_type(t: &Tensor) -> TokenStream {
    match &t.dtype {
        DTypeRef::Var(var) => {
            let g = format_ident!("{}", var);
            quote!(rt::Tensor::<#g>)
        }
        DTypeRef::Fixed(DType::F16) => quote!(rt::Tensor::<rt::half::f16>),
        DTypeRef::Fixed(DType::U32) => quote!(rt::Tensor::<u32>),
        DTypeRef::Fixed(_) => quote!(rt::Tensor::<f32>),
    }
}
