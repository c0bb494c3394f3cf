//! The public half of a generated op module: attribute, dtype, shape, input and output types,
//! `plan`, `record`, `run`, and the untyped registry entry.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{OpInput, ident};
use crate::model::{AttrRepr, AttrValue, Attribute, DType, DTypeRef, Op, Storage, Tensor};

/// Type variables that become generic parameters: those that allow floating-point types.
pub fn float_type_vars(op: &Op) -> Vec<&str> {
    op.type_vars
        .iter()
        .filter(|t| {
            t.allowed
                .iter()
                .any(|d| matches!(d, DType::F32 | DType::F16))
        })
        .map(|t| t.name.as_str())
        .collect()
}

fn generic_ident(var: &str) -> proc_macro2::Ident {
    format_ident!("{}", var)
}

/// The Rust type of a tensor in `Inputs`/`Outputs`.
fn tensor_type(tensor: &Tensor) -> TokenStream {
    match (&tensor.storage, &tensor.dtype) {
        (Storage::U32Checked, _) => quote!(rt::IndexTensor),
        (_, DTypeRef::Var(var)) => {
            let g = generic_ident(var);
            quote!(rt::Tensor<#g>)
        }
        (_, DTypeRef::Fixed(DType::F16)) => quote!(rt::Tensor<rt::half::f16>),
        (_, DTypeRef::Fixed(_)) => quote!(rt::Tensor<f32>),
    }
}

pub fn attr_rust_type(attribute: &Attribute) -> TokenStream {
    match attribute.repr {
        AttrRepr::Bool | AttrRepr::Truth => quote!(bool),
        AttrRepr::I64 => quote!(i64),
        AttrRepr::F32 => quote!(f32),
        AttrRepr::IntList => quote!(::std::vec::Vec<i64>),
        AttrRepr::Str => quote!(::std::string::String),
    }
}

fn default_tokens(attribute: &Attribute) -> Option<TokenStream> {
    Some(match (attribute.repr, attribute.default.as_ref()?) {
        (AttrRepr::Bool, AttrValue::Int(v)) => {
            let b = *v != 0;
            quote!(#b)
        }
        (AttrRepr::F32, AttrValue::Int(v)) => {
            let f = *v as f32;
            quote!(#f)
        }
        (AttrRepr::F32, AttrValue::Float(v)) => {
            let f = *v as f32;
            quote!(#f)
        }
        (AttrRepr::I64, AttrValue::Int(v)) => quote!(#v),
        (AttrRepr::IntList, AttrValue::Ints(v)) => quote!(::std::vec![#(#v),*]),
        (AttrRepr::Str, AttrValue::Str(s)) => quote!(::std::string::String::from(#s)),
        _ => return None,
    })
}

fn default_text(attribute: &Attribute) -> Option<String> {
    Some(match attribute.default.as_ref()? {
        AttrValue::Int(v) if attribute.repr == AttrRepr::Bool => (*v != 0).to_string(),
        AttrValue::Int(v) => v.to_string(),
        AttrValue::Float(v) => v.to_string(),
        AttrValue::Ints(v) => format!("{v:?}"),
        AttrValue::Str(s) => format!("{s:?}"),
    })
}

fn attr_doc(attribute: &Attribute) -> String {
    let mut doc = format!(" {}", attribute.description);
    match default_text(attribute) {
        Some(default) => doc.push_str(&format!("\n\n Default: `{default}`.")),
        None if attribute.description.contains("Required") => {}
        None => doc.push_str("\n\n Required."),
    }
    if let Some(allowed) = &attribute.allowed {
        doc.push_str(&format!(" Allowed manifest values: {allowed:?}."));
    }
    if attribute.repr == AttrRepr::Bool {
        doc.push_str(" The manifest's integer flag (`true` = 1).");
    }
    doc
}

pub fn emit(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let qualified = format!("{}.{}", op.domain, op.name);
    let attrs = attrs_struct(op);
    let dtypes = dtypes_struct(op);
    let io = io_structs(op);
    let entry = entry(op, &qualified);
    quote! {
        /// The op's qualified name.
        pub const OP_NAME: &str = #qualified;
        #attrs
        #dtypes
        #io
        #entry
    }
}

fn attrs_struct(op: &Op) -> TokenStream {
    let fields = op.attributes.iter().map(|a| {
        let name = ident(&a.name);
        let ty = attr_rust_type(a);
        let doc = super::doc_lines(&attr_doc(a));
        quote!(#(#[doc = #doc])* pub #name: #ty,)
    });
    let required: Vec<&Attribute> = op.attributes.iter().filter(|a| a.required).collect();
    let params = required.iter().map(|a| {
        let name = ident(&a.name);
        let ty = attr_rust_type(a);
        quote!(#name: #ty)
    });
    let inits = op.attributes.iter().map(|a| {
        let name = ident(&a.name);
        match default_tokens(a) {
            Some(value) if !a.required => quote!(#name: #value,),
            _ => quote!(#name,),
        }
    });
    let known: Vec<&str> = op.attributes.iter().map(|a| a.name.as_str()).collect();
    let raw_reads = op.attributes.iter().map(|a| {
        let name = ident(&a.name);
        let text = &a.name;
        let read = match (a.repr, &a.allowed) {
            // A flag with an allowed set is read as the integer it is, so that `2` is
            // rejected instead of reading as `true`.
            (AttrRepr::Bool, Some(allowed)) => quote! {
                match raw.int(#text)? {
                    Some(v) => { rt::support::check_allowed(OP_NAME, #text, v, &[#(#allowed),*])?; Some(v != 0) }
                    None => None,
                }
            },
            (AttrRepr::Bool | AttrRepr::Truth, None) => quote!(raw.flag(#text)?),
            (AttrRepr::Truth, Some(_)) => quote!(raw.flag(#text)?),
            (AttrRepr::I64, _) => quote!(raw.int(#text)?),
            (AttrRepr::F32, _) => quote!(raw.float(#text)?),
            (AttrRepr::IntList, _) => quote!(raw.ints(#text)?),
            (AttrRepr::Str, _) => quote!(raw.string(#text)?),
        };
        if a.required {
            quote!(let #name = #read.ok_or_else(|| raw.missing(#text))?;)
        } else {
            quote!(let #name = #read;)
        }
    });
    let optional_sets = op.attributes.iter().filter(|a| !a.required).map(|a| {
        let name = ident(&a.name);
        quote!(if let Some(value) = #name { attrs.#name = value; })
    });
    let required_names = required.iter().map(|a| ident(&a.name));
    let checks = op.attributes.iter().filter_map(|a| {
        let allowed = a.allowed.as_ref()?;
        let name = ident(&a.name);
        let text = &a.name;
        let value = if a.repr == AttrRepr::Bool {
            quote!(i64::from(self.#name))
        } else {
            quote!(self.#name)
        };
        Some(quote!(rt::support::check_allowed(OP_NAME, #text, #value, &[#(#allowed),*])?;))
    });
    let new_doc = super::doc_lines(&if required.is_empty() {
        " Attributes with the manifest's defaults.".to_owned()
    } else {
        " Attributes with the manifest's defaults; the required ones are the parameters.".to_owned()
    });
    let default_impl = required.is_empty().then(|| {
        quote! {
            impl ::std::default::Default for Attrs {
                fn default() -> Self { Self::new() }
            }
        }
    });
    quote! {
        /// Attributes of the op.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Attrs { #(#fields)* }

        impl Attrs {
            #(#[doc = #new_doc])*
            pub fn new(#(#params),*) -> Self {
                Attrs { #(#inits)* }
            }

            /// Builds attributes from name/value pairs, as tools receive them: unknown names,
            /// wrong kinds and missing required attributes are errors.
            pub fn from_raw(values: &[(::std::string::String, rt::support::AttrValue)]) -> Result<Self, rt::OpError> {
                let raw = rt::support::RawAttrs::new(OP_NAME, values, &[#(#known),*])?;
                #( #raw_reads )*
                #[allow(unused_mut)]
                let mut attrs = Attrs::new(#(#required_names),*);
                #( #optional_sets )*
                attrs.validate()?;
                Ok(attrs)
            }

            /// Checks the manifest's `attributeConstraints.values`.
            pub fn validate(&self) -> Result<(), rt::OpError> {
                #(#checks)*
                Ok(())
            }
        }
        #default_impl
    }
}

fn dtypes_struct(op: &Op) -> TokenStream {
    let vars = float_type_vars(op);
    let fields = vars.iter().map(|v| {
        let name = ident(&crate::model::snake_ident(v).to_ascii_lowercase());
        let doc = super::doc_lines(&format!(" The element type bound to type variable `{v}`."));
        quote!(#(#[doc = #doc])* pub #name: rt::DType,)
    });
    quote! {
        /// The element types bound to the op's type variables.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct DTypes { #(#fields)* }
    }
}

fn io_structs(op: &Op) -> TokenStream {
    let vars: Vec<proc_macro2::Ident> = float_type_vars(op)
        .iter()
        .map(|v| generic_ident(v))
        .collect();
    let shape_fields = op.inputs.iter().map(|t| {
        let name = ident(&t.role);
        let doc = super::doc_lines(&format!(" Shape of `{}`.", t.role));
        quote!(#(#[doc = #doc])* pub #name: &'a [usize],)
    });
    let input_fields = op.inputs.iter().map(|t| {
        let name = ident(&t.role);
        let ty = tensor_type(t);
        let doc = super::doc_lines(&format!(" {}", t.description));
        quote!(#(#[doc = #doc])* pub #name: &'a #ty,)
    });
    let output_fields = op.outputs.iter().map(|t| {
        let name = ident(&t.role);
        let ty = tensor_type(t);
        let doc = super::doc_lines(&format!(" {}", t.description));
        quote!(#(#[doc = #doc])* pub #name: #ty,)
    });
    let output_mut_fields = op.outputs.iter().map(|t| {
        let name = ident(&t.role);
        let ty = tensor_type(t);
        let doc = super::doc_lines(&format!(" {}", t.description));
        quote!(#(#[doc = #doc])* pub #name: &'a mut #ty,)
    });
    let shape_inits = op.inputs.iter().map(|t| {
        let name = ident(&t.role);
        quote!(#name: self.#name.shape(),)
    });
    let dtype_inits = float_type_vars(op).into_iter().map(|v| {
        let name = ident(&crate::model::snake_ident(v).to_ascii_lowercase());
        let g = generic_ident(v);
        quote!(#name: <#g as rt::Element>::DTYPE,)
    });
    let bounds = quote!(#(#vars: rt::Float),*);
    quote! {
        /// Input shapes, for planning without a GPU.
        #[derive(Clone, Copy, Debug)]
        pub struct Shapes<'a> { #(#shape_fields)* }

        /// Input tensors.
        #[derive(Clone, Copy, Debug)]
        pub struct Inputs<'a, #bounds> { #(#input_fields)* }

        /// Output tensors, allocated and shaped by the op.
        #[derive(Debug)]
        pub struct Outputs<#bounds> { #(#output_fields)* }

        /// Output tensors the caller provides (`record_into`, `run_into`): each must have the
        /// shape the op produces, and none may share bytes with another argument.
        #[derive(Debug)]
        pub struct OutputsMut<'a, #bounds> { #(#output_mut_fields)* }

        impl<'a, #bounds> Inputs<'a, #(#vars),*> {
            /// The shapes of these inputs.
            pub fn shapes(&self) -> Shapes<'a> {
                Shapes { #(#shape_inits)* }
            }

            /// The element types of these inputs.
            pub fn dtypes(&self) -> DTypes {
                DTypes { #(#dtype_inits)* }
            }
        }
    }
}

fn entry(op: &Op, qualified: &str) -> TokenStream {
    let role_info = |t: &Tensor| {
        let role = &t.role;
        let description = &t.description;
        let kind = match (&t.storage, &t.dtype) {
            (Storage::U32Checked, _) => quote!(rt::registry::TensorKind::Index),
            (_, DTypeRef::Var(var)) => quote!(rt::registry::TensorKind::Float { type_var: #var }),
            (_, DTypeRef::Fixed(_)) => quote!(rt::registry::TensorKind::Float { type_var: "" }),
        };
        quote!(rt::registry::RoleInfo { role: #role, kind: #kind, description: #description })
    };
    let inputs = op.inputs.iter().map(role_info);
    let outputs = op.outputs.iter().map(role_info);
    let attributes = op.attributes.iter().map(|a| {
        let name = &a.name;
        let rust_type = match a.repr {
            AttrRepr::Bool | AttrRepr::Truth => "bool",
            AttrRepr::I64 => "i64",
            AttrRepr::F32 => "f32",
            AttrRepr::IntList => "Vec<i64>",
            AttrRepr::Str => "String",
        };
        let default = match default_text(a) {
            Some(text) => quote!(Some(#text)),
            None => quote!(None),
        };
        let description = &a.description;
        quote!(rt::registry::AttrInfo { name: #name, rust_type: #rust_type, default: #default, description: #description })
    });
    let name = &op.name;
    let description = &op.description;
    let shader_lists = op.variants.iter().flat_map(|v| {
        v.passes
            .iter()
            .map(move |p| super::upper_ident(&["SHADERS", &v.id, &p.id]))
    });
    quote! {
        /// This op in the registry of untyped entry points.
        pub const ENTRY: rt::registry::OpEntry = rt::registry::OpEntry {
            qualified_name: #qualified,
            name: #name,
            description: #description,
            inputs: &[#(#inputs),*],
            outputs: &[#(#outputs),*],
            attributes: &[#(#attributes),*],
            variants: VARIANT_IDS,
            shaders: &[#(&#shader_lists),*],
            plan: plan_dyn,
        };
    }
}
