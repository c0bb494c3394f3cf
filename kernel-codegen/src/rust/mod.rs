//! Rust emitter: one module per op (typed API, compiled expressions, static dispatcher) and the
//! root module listing them, built with `quote` and formatted with prettyplease.

mod api;
mod call;
mod compiled;
mod entry;
mod eval;
mod fold;
mod plan;
mod shared_clauses;
mod table;
mod when;

pub use table::shader_table;

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::model::Op;
use crate::shader::{LeftOut, Shader};

/// Why the Rust emitter could not write a module. Each is a defect of the generator or a
/// package corner it does not support, reported at the op's manifest.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The tokens written for `source` are not Rust (a generator defect).
    #[error("generated code for {origin} does not parse: {message}\n{tokens}")]
    DoesNotParse {
        origin: String,
        message: String,
        tokens: String,
    },
    /// A static value that selects a shader is a list, which a shader key cannot hold.
    #[error(
        "static value `{name}` = {value} cannot select a shader (only booleans, numbers, strings and dtypes can)"
    )]
    UnkeyableValue { name: String, value: String },
    /// A pass's shader key has more combinations than a `u64` numbers.
    #[error(
        "variant `{variant}`, pass `{pass}`: its shader key has more combinations than 64 bits can number"
    )]
    KeyTooWide { variant: String, pass: String },
}

/// What the emitter needs to know about one op besides its model.
pub struct OpInput<'a> {
    pub op: &'a Op,
    pub shaders: &'a [Shader],
    /// The combinations not built, which the table lists with the reason.
    pub left_out: &'a [LeftOut],
    /// The hand-written host-side check registered for the op: `plan` calls it with the
    /// inputs' views and the attributes before dispatch.
    pub host_check: Option<syn::Path>,
    /// The runtime crate's path, imported as `rt`.
    pub runtime: syn::Path,
}

/// The generated module of one op, formatted.
pub fn op_module(input: &OpInput<'_>) -> Result<String, EmitError> {
    let op = input.op;
    let types = api::types(input);
    let call = call::io_structs(op);
    let entry = entry::emit(input);
    let registry_entry = api::registry_entry(input);
    let eval = compiled::emit(input);
    let table = table::table_static(input)?;
    let runtime = &input.runtime;
    let functions = &entry.api;
    let entry_tables = &entry.tables;
    // A reader meets the API first: the types of a call and the functions that take them.
    // The tables those functions walk follow, after a comment that says so. No inner
    // attributes: the root module `include!`s this file into `pub mod <op> { … }`, which
    // carries the op's docs.
    let api = quote! {
        use #runtime::abi as rt;
        use rt::expr::EvalError;
        use rt::tables::*;
        #types
        #call
        #functions
    };
    let tables = quote! {
        #registry_entry
        #entry_tables
        #eval
        #table
    };
    Ok(format!(
        "{}\n{TABLES_COMMENT}\n{}",
        format(api, &op.file)?,
        unparse(tables, &op.file)?
    ))
}

/// What separates a generated op module's API from the tables it walks.
const TABLES_COMMENT: &str = "\
// The tables the functions above walk, as data for `kernel_runtime`: the registry entry, the
// environment the manifest's expressions read, the compiled `derive` entries and `when`
// clauses, each variant's plan, and the shader table (WGSL in the `.shaders` file beside this
// one).
";

/// `mod.rs`: one `pub mod <op> { include!("<op>.rs"); }` per op, with the op's docs, and the
/// registry tools use. Only outer items and relative `include!`s, so the file works both as a
/// module of a crate (`mod generated;`) and `include!`d from a build script's `OUT_DIR`.
pub fn root_module(ops: &[&Op], runtime: &syn::Path) -> Result<String, EmitError> {
    let modules = ops.iter().map(|op| {
        let module = ident(&op.module);
        let file = format!("{}.rs", op.module);
        let surface = surface(op);
        let doc = doc_lines(&format!(
            " `{}` (since version {}).\n\n {}\n\n {surface}",
            op.qualified_name(),
            op.since_version,
            op.description
        ));
        quote! {
            #(#[doc = #doc])*
            pub mod #module { include!(#file); }
        }
    });
    let entries: Vec<Ident> = ops.iter().map(|op| ident(&op.module)).collect();
    let names = ops.iter().map(|op| op.module.as_str());
    let version = kernel_abi::ABI_VERSION;
    let mismatch = format!(
        "these kernels were generated for version {version} of kernel-runtime's generated-code \
         ABI, which this kernel-runtime does not have: generate them again with the codegen \
         release that matches it"
    );
    let tokens = quote! {
        const _: () = assert!(#runtime::abi::VERSION == #version, #mismatch);
        #(#modules)*
        /// Every generated op, for tools that choose an op by name.
        pub static OPS: &[#runtime::abi::registry::OpEntry] = &[ #( #entries::ENTRY ),* ];
        /// `visitor` with the type of the op whose module is named `module` (`None` for
        /// another name), for tests and tools that reach an op's hooks by name.
        #[doc(hidden)]
        #[allow(unused_variables)]
        pub fn visit_op<V: #runtime::abi::OpVisitor>(module: &str, visitor: V) -> Option<V::Output> {
            match module {
                #( #names => Some(visitor.visit::<#entries::Op>()), )*
                _ => None,
            }
        }
    };
    format(tokens, "the packages")
}

/// The root module's line on an op's entry points: how `plan` gets its arguments, and whether
/// the op allocates its outputs (`record`, `run`) or why not.
fn surface(op: &Op) -> String {
    let layout = call::Layout::of(op);
    let mut sources = vec!["`shapes` and `dtypes` from a call's tensors"];
    if layout.inputs_suffice(op) {
        sources.push("`inputs.shapes()` and `inputs.dtypes()` from the inputs alone");
    } else if layout.inputs_give_shapes() {
        sources.push("`inputs.shapes()` from the inputs alone");
    }
    if !api::generic_type_vars(op).is_empty() {
        sources.push("`DTypes::of` from the type parameters");
    }
    let plan = format!(
        "`plan` (without a GPU; its arguments: {})",
        sources.join(", ")
    );
    match layout.why_no_allocation(op) {
        None => {
            let in_place = if layout.in_place.is_empty() {
                String::new()
            } else {
                let roles: Vec<String> = layout
                    .in_place
                    .iter()
                    .map(|t| format!("`{}`", t.role))
                    .collect();
                format!(
                    "; the tensors it writes in place, {}, passed as `InPlace`",
                    roles.join(", ")
                )
            };
            format!(
                "{plan}, `record_into` and `run_into` (into outputs you provide), `record` and \
                 `run` (allocating the outputs, whose shapes follow from the inputs{in_place}) \
                 and `precompile`; `Op` implements `kernel_runtime::Op` and `AllocatingOp` with \
                 them."
            )
        }
        Some(reason) => format!(
            "{plan}, `record_into` and `run_into` (into outputs you provide) and `precompile`; \
             no allocating `record`/`run`, since {reason}. `Op` implements `kernel_runtime::Op` \
             with them."
        ),
    }
}

/// `tokens` as a generated file: the `@generated` header, then the code.
fn format(tokens: TokenStream, source: &str) -> Result<String, EmitError> {
    Ok(format!(
        "// {mark} from {source}.\n// Do not edit: change the package (manifest, templates) or its hints and generate again.\n\n{}",
        unparse(tokens, source)?,
        mark = crate::GENERATED_MARK,
    ))
}

/// `tokens` formatted by prettyplease.
fn unparse(tokens: TokenStream, source: &str) -> Result<String, EmitError> {
    let file: syn::File = syn::parse2(tokens.clone()).map_err(|e| EmitError::DoesNotParse {
        origin: source.to_owned(),
        message: e.to_string(),
        tokens: tokens.to_string(),
    })?;
    Ok(prettyplease::unparse(&file))
}

/// Rustdoc text as one `#[doc]` line each, so prettyplease prints `///` comments. Every
/// line starts with a space, as `///` comments do. A carriage return of the manifest's text
/// ends a line too: rustc refuses one inside a doc comment. A `<` outside code spans is
/// escaped: a manifest's `vec4<f16>` is text, not an unclosed HTML tag, which rustdoc
/// reports (an error in a crate that denies warnings).
pub fn doc_lines(text: &str) -> Vec<String> {
    escape_tags(&text.replace("\r\n", "\n").replace('\r', "\n"))
        .trim_end()
        .lines()
        .map(|line| format!(" {}", line.trim_start()))
        .collect()
}

/// `text` with `\<` for each `<` outside Markdown code spans (a run of backticks up to the
/// next run of as many).
fn escape_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['<', '`']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix('<') {
            out.push_str("\\<");
            rest = after;
            continue;
        }
        let fence = rest.len() - rest.trim_start_matches('`').len();
        let span = closing_run(&rest[fence..], fence).map_or(fence, |end| fence + end + fence);
        out.push_str(&rest[..span]);
        rest = &rest[span..];
    }
    out.push_str(rest);
    out
}

/// Where the first run of exactly `len` backticks in `text` starts.
fn closing_run(text: &str, len: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let start = i;
        while bytes.get(i) == Some(&b'`') {
            i += 1;
        }
        if i - start == len {
            return Some(start);
        }
    }
    None
}

/// An identifier, raw if it is a Rust keyword.
pub fn ident(name: &str) -> Ident {
    if syn::parse_str::<Ident>(name).is_ok() {
        Ident::new(name, Span::call_site())
    } else {
        Ident::new_raw(name, Span::call_site())
    }
}

/// The field of a tensor in the typed structs and the expression environment: its role in
/// snake_case.
pub fn tensor_field(tensor: &crate::model::Tensor) -> Ident {
    ident(&crate::model::snake_ident(&tensor.role))
}

/// The field of the tensor a manifest name (role, arg or semantic) refers to.
pub fn tensor_field_of(op: &Op, name: &str) -> Ident {
    match op.tensor(name) {
        Some(tensor) => tensor_field(tensor),
        None => ident(&crate::model::snake_ident(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::doc_lines;

    #[test]
    fn doc_lines_escape_tags_outside_code_spans() {
        assert_eq!(
            doc_lines("staged as vec4<f16>, or `array<f16>`;\r\n ``a `<b>` c`` then <x>"),
            [
                " staged as vec4\\<f16>, or `array<f16>`;",
                " ``a `<b>` c`` then \\<x>",
            ]
        );
        // An unclosed run of backticks is text, and the rest is escaped.
        assert_eq!(doc_lines("a `b<c"), [" a `b\\<c"]);
    }
}
