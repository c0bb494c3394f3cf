//! The entry points of a generated op: `plan` (GPU-free), `record`, `run`, and the untyped
//! `plan_dyn` behind the registry.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::api::float_type_vars;
use super::{OpInput, ident};
use crate::model::{self, DType, DTypeRef, Storage, Tensor};

fn var_field(var: &str) -> Ident {
    ident(&model::snake_ident(var).to_ascii_lowercase())
}

pub fn emit(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let vars: Vec<Ident> = float_type_vars(op)
        .iter()
        .map(|v| format_ident!("{}", v))
        .collect();
    let bounds = quote!(#(#vars: rt::Float),*);
    let dtype_checks = float_type_vars(op).into_iter().map(|var| {
        let field = var_field(var);
        let allowed: Vec<Ident> = op
            .type_var(var)
            .map(|t| t.allowed.iter().map(|d| format_ident!("{}", d.runtime_variant())).collect())
            .unwrap_or_default();
        let names: Vec<&str> = op.type_var(var).map(|t| t.allowed.iter().map(|d| onnx(*d)).collect()).unwrap_or_default();
        let rule = format!("type variable `{var}` must be one of {}", names.join(", "));
        let roles: Vec<&str> = op.inputs.iter().filter(|t| t.dtype == DTypeRef::Var(var.to_owned())).map(|t| t.role.as_str()).collect();
        let roles = roles.join(", ");
        quote! {
            if !matches!(dtypes.#field, #(rt::DType::#allowed)|*) {
                return Err(rt::OpError::Input { op: OP_NAME, input: #roles.into(), rule: format!("{}, got {}", #rule, dtypes.#field) });
            }
        }
    });
    let rank_checks = op.inputs.iter().filter_map(|t| {
        let rank = t.rank? as usize;
        let role = ident(&t.role);
        let text = &t.role;
        Some(quote! {
            if shapes.#role.len() != #rank {
                return Err(rt::OpError::Input { op: OP_NAME, input: #text.into(), rule: format!("the manifest declares rank {}, got shape {:?}", #rank, shapes.#role) });
            }
        })
    });
    let host_check_call = |views: TokenStream| match &input.host_check {
        Some(check) => quote!(#check(&#views, attrs)?;),
        None => quote!(),
    };

    // Typed path.
    let typed_views = op.inputs.iter().map(|t| {
        let role = ident(&t.role);
        let text = &t.role;
        let values = if t.storage == Storage::U32Checked { quote!(inputs.#role.values()) } else { quote!(None) };
        quote!(rt::registry::ArgView { role: #text, shape: inputs.#role.shape(), index_values: #values })
    });
    let typed_host_check = host_check_call(quote!([#(#typed_views),*]));
    let output_allocs = op.outputs.iter().enumerate().map(|(i, t)| {
        let role = ident(&t.role);
        let ty = output_type(t);
        quote!(let mut #role = #ty::zeros(ctx, &plan.outputs[#i].shape)?;)
    });
    let output_checks = op.outputs.iter().enumerate().map(|(i, t)| {
        let role = ident(&t.role);
        quote!(rt::support::check_output(OP_NAME, &plan.outputs[#i], outputs.#role.shape())?;)
    });
    let args = op
        .inputs
        .iter()
        .map(|t| {
            let role = ident(&t.role);
            let text = &t.role;
            if t.in_place {
                quote!(rt::Arg::read_write(#text, inputs.#role.binding()))
            } else {
                quote!(rt::Arg::read(#text, inputs.#role.binding()))
            }
        })
        .chain(op.outputs.iter().map(|t| {
            let role = ident(&t.role);
            let text = &t.role;
            quote!(rt::Arg::write(#text, outputs.#role.binding()))
        }));
    let out_roles: Vec<Ident> = op.outputs.iter().map(|t| ident(&t.role)).collect();

    // Untyped path.
    let input_idents: Vec<Ident> = op.inputs.iter().map(|t| ident(&t.role)).collect();
    let role_list = op
        .inputs
        .iter()
        .map(|t| t.role.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let input_count = op.inputs.len();
    let kind_checks = op.inputs.iter().map(|t| {
        let role = ident(&t.role);
        let text = &t.role;
        if t.storage == Storage::U32Checked {
            quote!(rt::support::expect_index(OP_NAME, #text, #role)?;)
        } else {
            quote!(rt::support::expect_float(OP_NAME, #text, #role)?;)
        }
    });
    let dyn_dtypes = float_type_vars(op).into_iter().map(|var| {
        let field = var_field(var);
        let members = op
            .inputs
            .iter()
            .filter(|t: &&Tensor| t.dtype == DTypeRef::Var(var.to_owned()))
            .map(|t| {
                let role = ident(&t.role);
                let text = &t.role;
                quote!((#text, #role.dtype()))
            });
        quote!(#field: rt::support::unify_dtype(OP_NAME, #var, &[#(#members),*])?,)
    });
    let dyn_shapes = op.inputs.iter().map(|t| {
        let role = ident(&t.role);
        quote!(#role: #role.shape(),)
    });
    let dyn_views = op.inputs.iter().map(|t| {
        let role = ident(&t.role);
        let text = &t.role;
        quote!(rt::registry::ArgView::of(#text, #role))
    });
    let dyn_host_check = host_check_call(quote!([#(#dyn_views),*]));

    quote! {
        /// Compiles, ahead of the first call, every shader of this op the device can run: the
        /// whole pipeline where one serves all shapes, the shader module where pipelines take
        /// shape-dependent overrides. Returns the number of shaders prepared.
        pub fn precompile(ctx: &rt::Context) -> Result<usize, rt::OpError> {
            rt::support::precompile(ctx, ENTRY.shaders)
        }

        /// Chooses the variant and computes everything about the dispatch, without a GPU:
        /// passes, shaders, overrides, uniform bytes, dispatch sizes, intermediates, outputs.
        pub fn plan(caps: &rt::DeviceCaps, shapes: &Shapes<'_>, dtypes: &DTypes, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
            attrs.validate()?;
            #(#dtype_checks)*
            #(#rank_checks)*
            let env = Env::new(shapes, *dtypes, attrs, caps)?;
            let (variant, plan_variant) = select(&env)?;
            plan_variant(&env).map_err(|error| rt::OpError::Plan { op: OP_NAME, variant, error })
        }

        /// [`plan`] for these inputs on the context's device, with the op's host checks.
        fn checked_plan<#bounds>(ctx: &rt::Context, inputs: &Inputs<'_, #(#vars),*>, attrs: &Attrs) -> Result<rt::Plan, rt::OpError> {
            let plan = plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), attrs)?;
            #typed_host_check
            Ok(plan)
        }

        /// Records `plan`; `reuse` keeps the bind groups for the caller's next call with the
        /// same tensors (see [`rt::Context::record_plan_reusing`]).
        fn encode<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, plan: &rt::Plan, inputs: &Inputs<'_, #(#vars),*>, outputs: &OutputsMut<'_, #(#vars),*>, reuse: bool) -> Result<(), rt::OpError> {
            let args = [#(#args),*];
            if reuse {
                ctx.record_plan_reusing(encoder, plan, &args)?;
            } else {
                ctx.record_plan(encoder, plan, &args)?;
            }
            Ok(())
        }

        /// Records the op into `encoder` with new outputs, so several ops can share one
        /// submission. The outputs are valid once the encoder has been submitted.
        pub fn record<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &Inputs<'_, #(#vars),*>, attrs: &Attrs) -> Result<Outputs<#(#vars),*>, rt::OpError> {
            let plan = checked_plan(ctx, inputs, attrs)?;
            #(#output_allocs)*
            encode(ctx, encoder, &plan, inputs, &OutputsMut { #(#out_roles: &mut #out_roles),* }, false)?;
            Ok(Outputs { #(#out_roles),* })
        }

        /// Records the op into `encoder`, writing into outputs the caller provides (tensors
        /// of its own or views of its buffers), so a loop allocates nothing per step and an
        /// output can be the next op's input. Bind groups are kept for the next call with the
        /// same tensors (see [`rt::Context::record_plan_reusing`]). A provided output of the wrong shape is
        /// [`rt::OpError::Output`]; one that shares bytes with another argument is
        /// [`rt::RuntimeError::Alias`].
        pub fn record_into<#bounds>(ctx: &rt::Context, encoder: &mut rt::wgpu::CommandEncoder, inputs: &Inputs<'_, #(#vars),*>, outputs: OutputsMut<'_, #(#vars),*>, attrs: &Attrs) -> Result<(), rt::OpError> {
            let plan = checked_plan(ctx, inputs, attrs)?;
            #(#output_checks)*
            encode(ctx, encoder, &plan, inputs, &outputs, true)
        }

        /// Runs the op with new outputs and waits for the GPU.
        pub fn run<#bounds>(ctx: &rt::Context, inputs: &Inputs<'_, #(#vars),*>, attrs: &Attrs) -> Result<Outputs<#(#vars),*>, rt::OpError> {
            ctx.record_and_submit(|encoder| record(ctx, encoder, inputs, attrs))
        }

        /// [`record_into`] in an encoder of its own, submitted; waits for the GPU natively.
        pub fn run_into<#bounds>(ctx: &rt::Context, inputs: &Inputs<'_, #(#vars),*>, outputs: OutputsMut<'_, #(#vars),*>, attrs: &Attrs) -> Result<(), rt::OpError> {
            ctx.record_and_submit(|encoder| record_into(ctx, encoder, inputs, outputs, attrs))
        }

        fn plan_dyn(ctx: &rt::Context, inputs: &[&rt::AnyTensor], raw: &[(::std::string::String, rt::support::AttrValue)]) -> Result<rt::Plan, rt::OpError> {
            let attrs = Attrs::from_raw(raw)?;
            let attrs = &attrs;
            let [#(#input_idents),*] = inputs else {
                return Err(rt::OpError::Input { op: OP_NAME, input: #role_list.into(), rule: format!("expected {} inputs ({}), got {}", #input_count, #role_list, inputs.len()) });
            };
            #(#kind_checks)*
            let dtypes = DTypes { #(#dyn_dtypes)* };
            let plan = plan(ctx.caps(), &Shapes { #(#dyn_shapes)* }, &dtypes, attrs)?;
            #dyn_host_check
            Ok(plan)
        }
    }
}

/// The Rust type of a newly allocated output.
fn output_type(t: &Tensor) -> TokenStream {
    match &t.dtype {
        DTypeRef::Var(var) => {
            let g = format_ident!("{}", var);
            quote!(rt::Tensor::<#g>)
        }
        DTypeRef::Fixed(DType::F16) => quote!(rt::Tensor::<rt::half::f16>),
        DTypeRef::Fixed(_) => quote!(rt::Tensor::<f32>),
    }
}

fn onnx(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float32",
        DType::F16 => "float16",
        DType::U32 => "uint32",
        DType::I64 => "int64",
    }
}
