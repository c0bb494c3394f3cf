//! How an op's tensors split into the typed structs of a call (`Layout`: `Shapes`, `Inputs`,
//! `InPlace`, `Outputs`, `OutputsMut`), whether the op allocates its outputs or why not, and
//! the functions that give `plan` its arguments from those structs. Every module has the free
//! `shapes(inputs, outputs)` and `dtypes(inputs, outputs)`, so generic code and docs name one
//! form for every op; where the inputs alone give the shapes (the op allocates its outputs and
//! writes nothing in place), `Inputs::shapes` and `Inputs::dtypes` plan before the outputs
//! exist.

use proc_macro2::TokenStream;
use quote::quote;

use super::api::{
    generic_args, generic_params, generic_type_vars, shape_type, shaped_tensors, tensor_type,
    vars_of,
};
use crate::model::{Op, Tensor};

/// How the typed structs split an op's tensors.
pub struct Layout<'a> {
    /// Tensors only read: `Inputs`.
    pub read: Vec<&'a Tensor>,
    /// Inputs written in place: `InPlace` where the op allocates its outputs.
    pub in_place: Vec<&'a Tensor>,
    /// Tensors written: in-place inputs, then outputs (`OutputsMut`).
    pub written: Vec<&'a Tensor>,
    /// Whether the op can allocate its outputs (`record`, `run`): it has outputs, and every
    /// one has a shape expression and is always produced.
    pub allocates: bool,
}

impl<'a> Layout<'a> {
    pub fn of(op: &'a Op) -> Self {
        let read = op.inputs.iter().filter(|t| !t.in_place).collect();
        let in_place: Vec<&Tensor> = op.inputs.iter().filter(|t| t.in_place).collect();
        let written = in_place.iter().copied().chain(&op.outputs).collect();
        let allocates =
            !op.outputs.is_empty() && op.outputs.iter().all(|t| !t.provided && !t.optional);
        Layout {
            read,
            in_place,
            written,
            allocates,
        }
    }

    /// Whether `Inputs` alone gives every shape `plan` takes (`Inputs::shapes`): the op
    /// allocates its outputs and writes nothing in place.
    pub fn inputs_give_shapes(&self) -> bool {
        self.allocates && self.in_place.is_empty()
    }

    /// Whether `Inputs` alone gives every shape and type variable `plan` needs.
    pub fn inputs_suffice(&self, op: &Op) -> bool {
        self.inputs_give_shapes() && vars_of(op, &self.read).len() == generic_type_vars(op).len()
    }

    /// Why the op has no allocating `record`/`run`, as the end of a sentence (`None` when it
    /// has them): no output to allocate, or outputs whose shapes the inputs do not give.
    pub fn why_no_allocation(&self, op: &Op) -> Option<String> {
        if self.allocates {
            return None;
        }
        let roles = |tensors: &[&Tensor]| {
            let named: Vec<String> = tensors.iter().map(|t| format!("`{}`", t.role)).collect();
            match named.split_last() {
                Some((last, [])) => last.clone(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
                None => String::new(),
            }
        };
        if op.outputs.is_empty() {
            return Some(if self.in_place.is_empty() {
                "the op has no output to allocate".to_owned()
            } else {
                format!(
                    "the op has no output to allocate: it writes only {}, in place",
                    roles(&self.in_place)
                )
            });
        }
        let provided: Vec<&Tensor> = op.outputs.iter().filter(|t| t.provided).collect();
        let optional: Vec<&Tensor> = op
            .outputs
            .iter()
            .filter(|t| t.optional && !t.provided)
            .collect();
        let mut reasons = Vec::new();
        if !provided.is_empty() {
            let (what, have, whose) = if provided.len() == 1 {
                ("output", "has", "its shape is")
            } else {
                ("outputs", "have", "their shapes are")
            };
            reasons.push(format!(
                "{what} {} {have} no shape expression ({whose} the caller's choice)",
                roles(&provided)
            ));
        }
        if !optional.is_empty() {
            let (what, are) = if optional.len() == 1 {
                ("output", "is")
            } else {
                ("outputs", "are")
            };
            reasons.push(format!(
                "{what} {} {are} optional (the caller provides or leaves out each)",
                roles(&optional)
            ));
        }
        Some(reasons.join("; "))
    }
}

pub fn io_structs(op: &Op) -> TokenStream {
    let layout = Layout::of(op);
    let shapes = shapes_struct(op);
    let structs = tensor_structs(op, &layout);
    let arguments = plan_arguments(op, &layout);
    quote! {
        #shapes
        #structs
        #arguments
    }
}

fn shapes_struct(op: &Op) -> TokenStream {
    let shape_fields = shaped_tensors(op).into_iter().map(|t| {
        let name = super::tensor_field(t);
        let ty = shape_type(t);
        let doc = super::doc_lines(&format!(" Shape of `{}`.", t.role));
        quote!(#(#[doc = #doc])* pub #name: #ty,)
    });
    let shape_lookups = shaped_tensors(op).into_iter().map(|t| {
        let name = super::tensor_field(t);
        let role = &t.role;
        if t.optional {
            quote!(#name: get(#role),)
        } else {
            quote!(#name: get(#role).unwrap_or_default(),)
        }
    });
    let unused_lookup = shaped_tensors(op).is_empty().then(|| quote!(let _ = get;));
    quote! {
        /// The shapes `plan` takes: inputs, tensors written in place, outputs the caller
        /// provides.
        #[derive(Clone, Copy, Debug)]
        pub struct Shapes<'a> { #(#shape_fields)* }

        impl<'a> Shapes<'a> {
            /// The shapes by tensor role, an absent required one empty (`OpHooks::shapes_from`).
            fn from_lookup(get: &dyn Fn(&str) -> ::core::option::Option<&'a [usize]>) -> Self {
                #unused_lookup
                Shapes { #(#shape_lookups)* }
            }
        }
    }
}

/// A field of a struct of tensors: `&'a T`, `&'a mut T`, or an `Option` of it when optional.
fn tensor_field(t: &Tensor, note: &str, mutable: bool) -> TokenStream {
    let name = super::tensor_field(t);
    let ty = tensor_type(t);
    let doc = super::doc_lines(&format!(" {}{note}", t.description));
    let reference = if mutable {
        quote!(&'a mut #ty)
    } else {
        quote!(&'a #ty)
    };
    if t.optional {
        quote!(#(#[doc = #doc])* pub #name: ::core::option::Option<#reference>,)
    } else {
        quote!(#(#[doc = #doc])* pub #name: #reference,)
    }
}

fn tensor_structs(op: &Op, layout: &Layout<'_>) -> TokenStream {
    let read_params = generic_params(op, &vars_of(op, &layout.read));
    let written_params = generic_params(op, &vars_of(op, &layout.written));
    let inputs_struct = if layout.read.is_empty() {
        quote! {
            /// Input tensors: this op reads none that it does not also write.
            #[derive(Clone, Copy, Debug)]
            pub struct Inputs;
        }
    } else {
        let fields = layout.read.iter().map(|t| tensor_field(t, "", false));
        quote! {
            /// Input tensors.
            #[derive(Clone, Copy, Debug)]
            pub struct Inputs<'a, #read_params> { #(#fields)* }
        }
    };
    let allocated = (layout.allocates).then(|| {
        let params = generic_params(op, &vars_of(op, &op.outputs.iter().collect::<Vec<_>>()));
        let fields = op.outputs.iter().map(|t| {
            let name = super::tensor_field(t);
            let ty = tensor_type(t);
            let doc = super::doc_lines(&format!(" {}", t.description));
            quote!(#(#[doc = #doc])* pub #name: #ty,)
        });
        let in_place = (!layout.in_place.is_empty()).then(|| {
            let params = generic_params(op, &vars_of(op, &layout.in_place));
            let fields = layout
                .in_place
                .iter()
                .map(|t| tensor_field(t, " Read and written in place.", true));
            quote! {
                /// The tensors the op writes in place, which `record` and `run` take beside the
                /// inputs: the caller owns them, and the op allocates only its outputs.
                #[derive(Debug)]
                pub struct InPlace<'a, #params> { #(#fields)* }
            }
        });
        quote! {
            /// Output tensors, allocated and shaped by the op.
            #[derive(Debug)]
            pub struct Outputs<#params> { #(#fields)* }

            #in_place
        }
    });
    let written_fields = layout.written.iter().map(|t| {
        let note = if t.in_place {
            " Read and written in place."
        } else if t.provided {
            " Its shape is the caller's choice."
        } else {
            ""
        };
        tensor_field(t, note, true)
    });
    quote! {
        #inputs_struct

        #allocated

        /// Tensors the op writes that the caller provides (`record_into`, `run_into`): each
        /// must have the shape the op produces, and none may share bytes with another
        /// argument.
        #[derive(Debug)]
        pub struct OutputsMut<'a, #written_params> { #(#written_fields)* }
    }
}

/// The `Shapes` fields of a call: inputs the op only reads from `inputs`, the others (written
/// in place, or outputs the caller provides) from `written`.
pub fn shape_inits(op: &Op, inputs: &TokenStream, written: &TokenStream) -> Vec<TokenStream> {
    shaped_tensors(op)
        .into_iter()
        .map(|t| {
            let from = if t.in_place || op.outputs.iter().any(|o| o.role == t.role) {
                written
            } else {
                inputs
            };
            let name = super::tensor_field(t);
            if t.optional {
                quote!(#name: #from.#name.as_ref().map(|t| t.shape()),)
            } else {
                quote!(#name: #from.#name.shape(),)
            }
        })
        .collect()
}

/// `DTypes::of::<A, B>()`, or `DTypes {}` for an op without type variables.
pub fn dtypes_of(op: &Op) -> TokenStream {
    let vars = generic_type_vars(op);
    if vars.is_empty() {
        quote!(DTypes {})
    } else {
        let args = generic_args(&vars);
        quote!(DTypes::of::<#args>())
    }
}

/// The free `shapes` and `dtypes` every module has, and `Inputs::shapes`/`Inputs::dtypes`
/// where the inputs alone give them.
fn plan_arguments(op: &Op, layout: &Layout<'_>) -> TokenStream {
    let read_vars = vars_of(op, &layout.read);
    let read_params = generic_params(op, &read_vars);
    let read_args = generic_args(&read_vars);
    let written_args = generic_args(&vars_of(op, &layout.written));
    let tensors: Vec<&Tensor> = op.inputs.iter().chain(&op.outputs).collect();
    let tensor_params = generic_params(op, &vars_of(op, &tensors));
    let all_params = generic_params(op, &generic_type_vars(op));
    let inputs_ty = if layout.read.is_empty() {
        quote!(Inputs)
    } else {
        quote!(Inputs<'_, #read_args>)
    };
    let dtypes_of = dtypes_of(op);
    let inputs_methods = layout.inputs_give_shapes().then(|| {
        let inits = shape_inits(op, &quote!(self), &quote!(self));
        let dtypes = layout.inputs_suffice(op).then(|| {
            quote! {
                /// The element types `plan` takes, from the inputs alone: with
                /// [`Inputs::shapes`], a plan before the outputs exist.
                pub fn dtypes(&self) -> DTypes {
                    #dtypes_of
                }
            }
        });
        quote! {
            impl<'a, #read_params> Inputs<'a, #read_args> {
                /// The shapes `plan` takes, from the inputs alone: the outputs' shapes follow
                /// from them, so a plan can be made before the outputs exist ([`shapes`] gives
                /// the same from a call's tensors).
                pub fn shapes(&self) -> Shapes<'a> {
                    Shapes { #(#inits)* }
                }

                #dtypes
            }
        }
    });
    let shapes_body = if layout.inputs_give_shapes() {
        quote! {
            let _ = outputs;
            inputs.shapes()
        }
    } else {
        let inits = shape_inits(op, &quote!(inputs), &quote!(outputs));
        let unused = layout.read.is_empty().then(|| quote!(let _ = inputs;));
        quote! {
            #unused
            Shapes { #(#inits)* }
        }
    };
    quote! {
        #inputs_methods

        /// The shapes `plan` takes, from a call's tensors: the form every op module has, for
        /// code that plans any op alike and for calls into outputs the caller provides.
        pub fn shapes<'a, #tensor_params>(inputs: &'a #inputs_ty, outputs: &'a OutputsMut<'_, #written_args>) -> Shapes<'a> {
            #shapes_body
        }

        /// The element types `plan` takes, read from a call's tensors (their element types),
        /// as [`shapes`] reads their shapes.
        pub fn dtypes<#all_params>(inputs: &#inputs_ty, outputs: &OutputsMut<'_, #written_args>) -> DTypes {
            let _ = (inputs, outputs);
            #dtypes_of
        }
    }
}
