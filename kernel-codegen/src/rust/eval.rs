//! The expression environment of a generated op module: the `Env` struct, and how the typed
//! API lowers expressions and names `derive` functions over it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::api::generic_type_vars;
use super::ident;
use crate::expr::{self, Ir, LowerScope, Symbol, Type};
use crate::model::{self, AttrRepr, Op};
use kernel_abi::device as webgpu;

/// Lowers symbols to reads of the generated `Env`.
pub(super) struct EnvScope<'a> {
    pub(super) op: &'a Op,
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
                if generic_type_vars(self.op).contains(&var.as_str()) {
                    let field = ident(&model::snake_ident(var).to_ascii_lowercase());
                    quote!(env.dtypes.#field.wgsl_name())
                } else {
                    let single = self
                        .op
                        .type_var(var)
                        .and_then(|t| t.allowed.first())
                        .map_or("", |d| d.wgsl_name());
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
            Symbol::Tunable(name) => match self.op.tunable(name) {
                Some(expr::Value::Float(value)) => quote!(#value),
                Some(expr::Value::Int(value)) => quote!(#value),
                _ => quote!(0i64),
            },
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
                        if generic_type_vars(self.op).contains(&var.as_str()) =>
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
                            .map_or("F32", |d| d.variant_name());
                        let single = format_ident!("{single}");
                        quote!(rt::DType::#single.onnx_name())
                    }
                    Some(model::DTypeRef::Fixed(d)) => {
                        let variant = format_ident!("{}", d.variant_name());
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

    fn feature(&self, name: &str) -> TokenStream {
        quote!(env.caps.has_feature(#name))
    }

    fn runtime(&self) -> TokenStream {
        quote!(rt)
    }
}

/// Lowers `ir` for the typed API (see `fold`).
pub(super) fn lower(ir: &Ir, scope: &EnvScope<'_>) -> TokenStream {
    expr::lower(&super::fold::fold(ir, scope.op), scope)
}

/// A list `ir` names or writes out (a shape, `[a, b]`) as runtime `Dims`, which hold up to
/// eight dimensions without a heap allocation; `None` for a list an expression computes.
pub(super) fn lower_dims(ir: &Ir, scope: &EnvScope<'_>) -> Option<TokenStream> {
    let slice = expr::lower_list_slice(&super::fold::fold(ir, scope.op), scope)?;
    Some(quote!(rt::support::Dims::from_slice(#slice)))
}

/// Lowers `ir` to a `Result` expression for the typed API.
pub(super) fn lower_result(ir: &Ir, scope: &EnvScope<'_>) -> TokenStream {
    expr::lower_result(&super::fold::fold(ir, scope.op), scope)
}

/// The Rust type of an expression value.
pub(super) fn rust_type(ty: Type) -> TokenStream {
    match ty {
        Type::Int => quote!(i64),
        Type::Float => quote!(f64),
        Type::Bool => quote!(bool),
        Type::Str | Type::Dtype => quote!(&'static str),
        Type::List => quote!(::std::vec::Vec<i64>),
    }
}

/// The field of `Env::derived` that keeps a `derive` entry's value once computed: its name
/// prefixed, since an entry's own name may be a keyword no raw identifier can spell (`self`),
/// and unlike its function's, so that a scan for calls of the function does not find it.
pub(super) fn derived_field(name: &str) -> proc_macro2::Ident {
    format_ident!("memo_{}", model::snake_ident(name))
}

pub(super) fn derive_fn(name: &str) -> proc_macro2::Ident {
    format_ident!("derive_{}", model::snake_ident(name))
}

/// `env`, or `_env` for a function whose lowered `body` does not name it (a fixed tensor's
/// dtype, say, lowers to a constant), so that generated code has no unused variable.
pub(super) fn env_param(body: &TokenStream) -> proc_macro2::Ident {
    let names_env =
        |t: &proc_macro2::TokenTree| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "env");
    if any_token(body, &names_env) {
        format_ident!("env")
    } else {
        format_ident!("_env")
    }
}

/// Whether some token of `tokens`, at any depth of groups, satisfies `test`.
pub(super) fn any_token(
    tokens: &TokenStream,
    test: &dyn Fn(&proc_macro2::TokenTree) -> bool,
) -> bool {
    tokens.clone().into_iter().any(|token| match &token {
        proc_macro2::TokenTree::Group(group) => any_token(&group.stream(), test),
        other => test(other),
    })
}

/// The generated `Env`: the shapes, attributes and dtypes expressions read.
pub(super) fn env_struct(op: &Op, scope: &EnvScope<'_>) -> TokenStream {
    let roles: Vec<proc_macro2::Ident> = op.tensors().map(super::tensor_field).collect();
    // Shapes `plan` is given (inputs, provided outputs); an absent optional one is empty.
    let given = super::api::shaped_tensors(op);
    let input_inits = given.iter().filter(|t| !t.is_computed_output()).map(|t| {
        let role = super::tensor_field(t);
        if t.optional {
            quote!(#role: shapes.#role.map(rt::support::Dims::of).unwrap_or_default(),)
        } else {
            quote!(#role: rt::support::Dims::of(shapes.#role),)
        }
    });
    let output_inits = op
        .outputs
        .iter()
        .filter(|t| t.is_computed_output())
        .map(|t| {
            let role = super::tensor_field(t);
            quote!(#role: rt::support::Dims::default(),)
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
                rt::OpError::Output { op: OP_NAME, output: role.into(), rule: format!("shape `{source}` could not be computed: {error}") }
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
        // Held in place: a shape that names a list or writes its items is copied from a borrow,
        // and only a computed one is built as a `Vec` first.
        let shape = match t.shape.as_ref() {
            Some(s) => {
                let folded = super::fold::fold(&s.ir, op);
                match expr::lower_list_slice(&folded, scope) {
                    Some(slice) => quote!(Ok(rt::support::Dims::from_slice(#slice))),
                    None => {
                        let owned = lower_result(&s.ir, scope);
                        quote!(#owned.map(rt::support::Dims::from_vec))
                    }
                }
            }
            None => quote!(Ok(rt::support::Dims::default())),
        };
        let param = env_param(&shape);
        let shape_source = t.shape.as_ref().map_or("", |s| s.source.as_str());
        let shape_doc = super::doc_lines(&format!(" Shape of output `{role_text}`: `{shape_source}`."));
        output_fns.push(quote! {
            #(#[doc = #shape_doc])*
            fn #shape_fn(#param: &Env<'_>) -> Result<rt::support::Dims, EvalError> { #shape }
        });
        let rank_check = t.rank_expr.as_ref().map(|r| {
            let rank_fn = format_ident!("output_rank_{}", model::snake_ident(&t.role));
            let rank = lower_result(&r.ir, scope);
            let param = env_param(&rank);
            let rank_source = &r.source;
            let rank_doc = super::doc_lines(&format!(" Rank of output `{role_text}`: `{rank_source}`."));
            output_fns.push(quote! {
                #(#[doc = #rank_doc])*
                fn #rank_fn(#param: &Env<'_>) -> Result<i64, EvalError> { #rank }
            });
            quote! {
                let rank = #rank_fn(&env).map_err(|e| output_error(#role_text, #rank_source, &e))?;
                if rank != rt::support::rank(&env.shapes.#role) {
                    return Err(rt::OpError::Output {
                        op: OP_NAME,
                        output: #role_text.into(),
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
    let env_value = quote!(Env { shapes: EnvShapes { #(#input_inits)* #(#output_inits)* }, #present_init dtypes, attrs, caps, derived: EnvDerived::default() });
    let derived_fields = op.derives.iter().map(|d| {
        let field = derived_field(&d.name);
        let ty = rust_type(d.expr.ir.ty);
        quote!(pub #field: ::std::cell::OnceCell<Result<#ty, EvalError>>,)
    });
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
        /// Tensor shapes as expression integers, inputs and outputs, held in place.
        #[doc(hidden)]
        #[derive(Clone, Debug, Default)]
        pub struct EnvShapes { #( pub #roles: rt::support::Dims, )* }

        #present_struct

        /// The `derive` entries' values, each computed on first use.
        #[doc(hidden)]
        #[derive(Clone, Debug, Default)]
        pub struct EnvDerived { #(#derived_fields)* }

        /// Everything the manifest's expressions may read.
        #[doc(hidden)]
        #[derive(Clone, Debug)]
        pub struct Env<'a> {
            pub shapes: EnvShapes,
            #present_field
            pub dtypes: DTypes,
            pub attrs: &'a Attrs,
            pub caps: &'a rt::DeviceCaps,
            pub derived: EnvDerived,
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
