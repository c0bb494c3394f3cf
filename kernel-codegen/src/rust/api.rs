//! The public half of a generated op module: attribute and dtype types (with `DTypes::of`),
//! the tensor types the structs of a call hold, and the registry entry.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{OpInput, ident};
use crate::model::{
    AttrRepr, AttrValue, Attribute, DType, DTypeRef, IntWidth, Op, Storage, Tensor,
};

/// Type variables that become generic parameters: every one but an `int64` variable, whose
/// tensors are index tensors (`rt::IndexTensor`) of that one dtype.
pub fn generic_type_vars(op: &Op) -> Vec<&str> {
    op.type_vars
        .iter()
        .filter(|t| !t.allowed.contains(&DType::I64))
        .map(|t| t.name.as_str())
        .collect()
}

/// The trait bound of a type variable's generic parameter: `rt::Float` when it allows only
/// floats, `rt::Integer` when only integers, `rt::Element` for a mix. A bound admits every
/// element type of its kind; `plan` checks each call against the dtypes the variable allows.
fn var_bound(op: &Op, var: &str) -> TokenStream {
    let allowed = op.type_var(var).map_or(&[][..], |t| t.allowed.as_slice());
    if allowed.iter().all(|d| d.is_float()) {
        quote!(rt::Float)
    } else if allowed.iter().all(|d| d.is_integer()) {
        quote!(rt::Integer)
    } else {
        quote!(rt::Element)
    }
}

/// The default of a type variable's generic parameter on the `Op` type: `f32` for a variable
/// that allows floats (what most calls use), else its first dtype's element type (a default
/// must satisfy the bound, and `f32` is no `rt::Integer`).
pub fn var_default(op: &Op, var: &str) -> TokenStream {
    let allowed = op.type_var(var).map_or(&[][..], |t| t.allowed.as_slice());
    match allowed.first() {
        Some(first) if !allowed.iter().any(|d| d.is_float()) => element_type(*first),
        _ => quote!(f32),
    }
}

/// The Rust element type of a dtype (`u32` for `int64`, which index tensors store as `u32`).
pub fn element_type(dtype: DType) -> TokenStream {
    match dtype {
        DType::F32 => quote!(f32),
        DType::F16 => quote!(rt::half::f16),
        DType::U32 | DType::I64 => quote!(u32),
        DType::I32 => quote!(i32),
        DType::I8 => quote!(i8),
        DType::U8 => quote!(u8),
        DType::I16 => quote!(i16),
    }
}

pub fn generic_ident(var: &str) -> proc_macro2::Ident {
    format_ident!("{}", var)
}

/// The Rust type of a tensor in `Inputs`/`Outputs`.
pub fn tensor_type(tensor: &Tensor) -> TokenStream {
    match (&tensor.storage, &tensor.dtype) {
        (Storage::U32Checked, _) => quote!(rt::IndexTensor),
        (_, DTypeRef::Var(var)) => {
            let g = generic_ident(var);
            quote!(rt::Tensor<#g>)
        }
        (_, DTypeRef::Fixed(d)) => {
            let element = element_type(*d);
            quote!(rt::Tensor<#element>)
        }
    }
}

/// The Rust type of an attribute's value (an optional scalar arg holds an `Option` of it).
pub fn attr_value_type(attribute: &Attribute) -> TokenStream {
    match (attribute.repr, attribute.int_width) {
        (AttrRepr::Bool | AttrRepr::Truth, _) => quote!(bool),
        (AttrRepr::I64, IntWidth::U32) => quote!(u32),
        (AttrRepr::I64, IntWidth::I32) => quote!(i32),
        (AttrRepr::I64, IntWidth::I64) => quote!(i64),
        (AttrRepr::F32, _) => quote!(f32),
        (AttrRepr::IntList, _) => quote!(::std::vec::Vec<i64>),
        (AttrRepr::Str, _) => quote!(::std::string::String),
    }
}

/// The Rust type of an attribute's field.
pub fn attr_rust_type(attribute: &Attribute) -> TokenStream {
    let ty = attr_value_type(attribute);
    if attribute.is_optional() {
        quote!(::core::option::Option<#ty>)
    } else {
        ty
    }
}

/// The field of an attribute: its name in snake_case (`from_raw` reads the manifest's name).
pub fn attr_field(attribute: &Attribute) -> proc_macro2::Ident {
    ident(&crate::model::snake_ident(&attribute.name))
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
        // An `f32` field's default reads as one, `1.0`, though the manifest writes `1`.
        AttrValue::Int(v) if attribute.repr == AttrRepr::F32 => format!("{:?}", *v as f64),
        AttrValue::Int(v) => v.to_string(),
        AttrValue::Float(v) => v.to_string(),
        AttrValue::Ints(v) => format!("{v:?}"),
        AttrValue::Str(s) => format!("{s:?}"),
    })
}

fn attr_doc(attribute: &Attribute) -> String {
    let mut notes = String::new();
    match default_text(attribute) {
        Some(default) => notes.push_str(&format!("Default: `{default}`.")),
        None if attribute.is_optional() => {
            notes.push_str(
                "Optional: `None` leaves it out (undefined in the manifest's expressions).",
            );
        }
        None if attribute.description.contains("Required") => {}
        None => notes.push_str("Required."),
    }
    if let Some(allowed) = &attribute.allowed {
        notes.push_str(&format!(" Allowed manifest values: `{allowed:?}`."));
    }
    if attribute.repr == AttrRepr::Bool {
        notes.push_str(" The manifest's integer flag (`true` = 1).");
    }
    match (attribute.description.is_empty(), notes.trim().is_empty()) {
        (true, _) => format!(" {}", notes.trim()),
        (false, true) => format!(" {}", attribute.description),
        (false, false) => format!(" {}\n\n {}", attribute.description, notes.trim()),
    }
}

pub fn types(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let qualified = op.qualified_name();
    let attrs = attrs_struct(op);
    let dtypes = dtypes_struct(op);
    quote! {
        /// The op's qualified name.
        pub const OP_NAME: &str = #qualified;
        #attrs
        #dtypes
    }
}

fn attrs_struct(op: &Op) -> TokenStream {
    let fields = op.attributes.iter().map(|a| {
        let name = attr_field(a);
        let ty = attr_rust_type(a);
        let doc = super::doc_lines(&attr_doc(a));
        quote!(#(#[doc = #doc])* pub #name: #ty,)
    });
    let required: Vec<&Attribute> = op.attributes.iter().filter(|a| a.required).collect();
    let required_fields = required.iter().map(|a| {
        let name = attr_field(a);
        let ty = attr_rust_type(a);
        let doc = super::doc_lines(&attr_doc(a));
        quote!(#(#[doc = #doc])* pub #name: #ty,)
    });
    let inits = op.attributes.iter().map(|a| {
        let name = attr_field(a);
        match default_tokens(a) {
            Some(value) if !a.required => quote!(#name: #value,),
            _ if a.is_optional() => quote!(#name: None,),
            _ => quote!(#name,),
        }
    });
    let known: Vec<&str> = op.attributes.iter().map(|a| a.name.as_str()).collect();
    let raw_reads = op.attributes.iter().map(|a| {
        let name = attr_field(a);
        let text = &a.name;
        let read = match (a.repr, &a.allowed) {
            // A flag with an allowed set is read as the integer it is, so that `2` is
            // rejected instead of reading as `true`.
            (AttrRepr::Bool, Some(allowed)) => quote!(raw.flag_in(#text, &[#(#allowed),*])?),
            (AttrRepr::Bool, None) => quote!(raw.flag(#text)?),
            (AttrRepr::Truth, _) => quote!(raw.boolean(#text)?),
            (AttrRepr::I64, _) => match a.int_width {
                IntWidth::U32 => quote!(raw.uint32(#text)?),
                IntWidth::I32 => quote!(raw.int32(#text)?),
                IntWidth::I64 => quote!(raw.int(#text)?),
            },
            (AttrRepr::F32, _) => quote!(raw.float(#text)?),
            (AttrRepr::IntList, _) => quote!(raw.ints(#text)?),
            (AttrRepr::Str, _) => quote!(raw.string(#text)?),
        };
        if a.required {
            quote!(let #name = #read.ok_or_else(|| raw.missing(#text))?;)
        } else if a.is_optional() {
            quote!(attrs.#name = #read;)
        } else {
            quote!(if let Some(value) = #read { attrs.#name = value; })
        }
    });
    let required_reads: Vec<TokenStream> = raw_reads
        .clone()
        .zip(&op.attributes)
        .filter(|(_, a)| a.required)
        .map(|(r, _)| r)
        .collect();
    let optional_sets: Vec<TokenStream> = raw_reads
        .zip(&op.attributes)
        .filter(|(_, a)| !a.required)
        .map(|(r, _)| r)
        .collect();
    let required_names = required.iter().map(|a| attr_field(a));
    let attrs_binding = if op.attributes.iter().any(|a| !a.required) {
        quote!(mut attrs)
    } else {
        quote!(attrs)
    };
    let checks = op.attributes.iter().filter_map(|a| {
        let allowed = a.allowed.as_ref()?;
        let name = attr_field(a);
        let text = &a.name;
        let value = if a.repr == AttrRepr::Bool {
            quote!(i64::from(self.#name))
        } else {
            quote!(self.#name)
        };
        Some(quote!(rt::support::check_allowed(OP_NAME, #text, #value, &[#(#allowed),*])?;))
    });
    let required_names: Vec<_> = required_names.collect();
    // Required attributes are given by name, in a struct of their own, so that two of the
    // same type cannot be swapped; the others start at the manifest's defaults.
    let (new_fn, required_struct, from_raw_new) = if required.is_empty() {
        (
            quote! {
                /// Attributes with the manifest's defaults.
                pub fn new() -> Self {
                    Attrs { #(#inits)* }
                }
            },
            quote! {
                impl ::std::default::Default for Attrs {
                    fn default() -> Self { Self::new() }
                }
            },
            quote!(Attrs::new()),
        )
    } else {
        (
            quote! {
                /// The required attributes as given, the others at the manifest's defaults.
                pub fn new(required: RequiredAttrs) -> Self {
                    let RequiredAttrs { #(#required_names),* } = required;
                    Attrs { #(#inits)* }
                }
            },
            quote! {
                /// The attributes the op requires, by name: `Attrs::new(RequiredAttrs { … })`.
                #[derive(Clone, Debug, PartialEq)]
                pub struct RequiredAttrs { #(#required_fields)* }

                impl ::core::convert::From<RequiredAttrs> for Attrs {
                    fn from(required: RequiredAttrs) -> Self { Attrs::new(required) }
                }
            },
            quote!(Attrs::new(RequiredAttrs { #(#required_names),* })),
        )
    };
    // An op without attributes only checks that none is given.
    let raw_binding = if op.attributes.is_empty() {
        quote!(_)
    } else {
        quote!(raw)
    };
    quote! {
        /// Attributes of the op.
        #[derive(Clone, Debug, PartialEq)]
        pub struct Attrs { #(#fields)* }

        #required_struct

        impl Attrs {
            #new_fn

            /// Builds attributes from name/value pairs, as tools receive them: unknown names,
            /// wrong kinds and missing required attributes are errors.
            pub fn from_raw(values: &[(::std::string::String, rt::AttrValue)]) -> Result<Self, rt::OpError> {
                let #raw_binding = rt::support::RawAttrs::new(OP_NAME, values, &[#(#known),*])?;
                #( #required_reads )*
                let #attrs_binding = #from_raw_new;
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
    }
}

fn dtypes_struct(op: &Op) -> TokenStream {
    let vars = generic_type_vars(op);
    let fields = vars.iter().map(|v| {
        let name = ident(&crate::model::snake_ident(v).to_ascii_lowercase());
        let doc = super::doc_lines(&format!(" The element type bound to type variable `{v}`."));
        quote!(#(#[doc = #doc])* pub #name: rt::DType,)
    });
    let lookups = vars.iter().map(|v| {
        let name = ident(&crate::model::snake_ident(v).to_ascii_lowercase());
        quote!(#name: get(#v),)
    });
    let unused = vars.is_empty().then(|| quote!(let _ = get;));
    // From the type parameters, for a plan made before any tensor exists; an op without type
    // variables has only `DTypes {}`.
    let of = (!vars.is_empty()).then(|| {
        let params = generic_params(op, &vars);
        let names: Vec<String> = vars.iter().map(|v| format!("`{v}`")).collect();
        let which = if names.len() == 1 {
            format!("parameter {}", names[0])
        } else {
            format!("parameters {}", names.join(", "))
        };
        let doc = super::doc_lines(&format!(
            " The element types of the type {which}: `plan`'s argument before any\n \
             tensor exists (the free `dtypes` reads the same from a call's tensors)."
        ));
        let inits = vars.iter().map(|v| {
            let name = ident(&crate::model::snake_ident(v).to_ascii_lowercase());
            let g = generic_ident(v);
            quote!(#name: <#g as rt::Element>::DTYPE,)
        });
        quote! {
            #(#[doc = #doc])*
            pub fn of<#params>() -> Self {
                DTypes { #(#inits)* }
            }
        }
    });
    quote! {
        /// The element types bound to the op's type variables.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct DTypes { #(#fields)* }

        impl DTypes {
            #of

            /// The element types by type variable name (`OpHooks::dtypes_from`).
            fn from_lookup(get: &dyn Fn(&str) -> rt::DType) -> Self {
                #unused
                DTypes { #(#lookups)* }
            }
        }
    }
}

/// The type variables a set of tensors uses, in the op's order: a struct's generic parameters.
pub fn vars_of<'a>(op: &'a Op, tensors: &[&Tensor]) -> Vec<&'a str> {
    generic_type_vars(op)
        .into_iter()
        .filter(|var| {
            tensors.iter().any(|t| {
                t.storage != Storage::U32Checked && t.dtype == DTypeRef::Var((*var).to_owned())
            })
        })
        .collect()
}

/// `<A: rt::Float, B: rt::Integer>`-style parameters (without the angle brackets).
pub fn generic_params(op: &Op, vars: &[&str]) -> TokenStream {
    let params = vars.iter().map(|v| {
        let ident = generic_ident(v);
        let bound = var_bound(op, v);
        quote!(#ident: #bound)
    });
    quote!(#(#params),*)
}

/// `<A: rt::Float = f32, …>`-style parameters with defaults, for the `Op` type.
pub fn generic_params_with_defaults(op: &Op, vars: &[&str]) -> TokenStream {
    let params = vars.iter().map(|v| {
        let ident = generic_ident(v);
        let bound = var_bound(op, v);
        let default = var_default(op, v);
        quote!(#ident: #bound = #default)
    });
    quote!(#(#params),*)
}

/// `A, B`: the arguments for [`generic_params`].
pub fn generic_args(vars: &[&str]) -> TokenStream {
    let idents = vars.iter().map(|v| generic_ident(v));
    quote!(#(#idents),*)
}

/// The shape of a tensor whose shape `plan` takes: `&[usize]`, or an `Option` when optional.
pub fn shape_type(t: &Tensor) -> TokenStream {
    if t.optional {
        quote!(::core::option::Option<&'a [usize]>)
    } else {
        quote!(&'a [usize])
    }
}

/// The tensors whose shapes `plan` takes: inputs (in place or not), then outputs the caller
/// provides or may leave out (an optional output's shape says whether it is given).
pub fn shaped_tensors(op: &Op) -> Vec<&Tensor> {
    op.inputs
        .iter()
        .chain(op.outputs.iter().filter(|t| t.provided || t.optional))
        .collect()
}

/// The op's entry in the registry of untyped entry points: its roles, attributes, variants
/// and shaders, as data.
pub fn registry_entry(input: &OpInput<'_>) -> TokenStream {
    let op = input.op;
    let qualified = op.qualified_name();
    let role_info = |t: &Tensor| {
        let role = &t.role;
        let description = &t.description;
        // Tools accept a tensor by its ONNX name too.
        let onnx = t.onnx.as_ref().map(|name| quote!(.with_onnx(#name)));
        let info = match (&t.storage, &t.dtype) {
            (Storage::U32Checked, _) => quote!(rt::registry::RoleInfo::index(#role, #description)),
            (_, DTypeRef::Var(var)) => {
                let allowed = op.type_var(var).map_or(&[][..], |t| t.allowed.as_slice());
                if allowed.iter().all(|d| d.is_float()) {
                    quote!(rt::registry::RoleInfo::float(#role, #var, #description))
                } else {
                    // A variable that allows integer dtypes lists them: an untyped call is
                    // checked against them before it is planned.
                    let allowed = allowed
                        .iter()
                        .map(|d| format_ident!("{}", d.variant_name()));
                    quote!(rt::registry::RoleInfo::type_var(#role, #var, &[#(rt::DType::#allowed),*], #description))
                }
            }
            (_, DTypeRef::Fixed(d)) => {
                let d = format_ident!("{}", d.variant_name());
                quote!(rt::registry::RoleInfo::fixed(#role, rt::DType::#d, #description))
            }
        };
        quote!(#info #onnx)
    };
    let inputs = op.inputs.iter().map(role_info);
    let outputs = op.outputs.iter().map(role_info);
    let attributes = op.attributes.iter().map(|a| {
        let name = &a.name;
        // The field's type as a reader writes it (`u32`, `Option<f32>`, `Vec<i64>`).
        let value_type = attr_value_type(a)
            .to_string()
            .replace(' ', "")
            .replace("::std::vec::", "")
            .replace("::std::string::", "");
        let rust_type = if a.is_optional() {
            format!("Option<{value_type}>")
        } else {
            value_type
        };
        let default = match default_text(a) {
            Some(text) => quote!(Some(#text)),
            None => quote!(None),
        };
        let description = &a.description;
        quote!(rt::registry::AttrInfo::new(#name, #rust_type, #default, #description))
    });
    let name = &op.name;
    let description = &op.description;
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
            shaders: &SHADERS,
            untyped: UNTYPED,
        };
    }
}
