//! The manifest names that become Rust names in the generated module, checked where the
//! manifest gives them: each must be an identifier once mapped (attributes, tensor roles and
//! type variables in snake_case, variant ids and `derive` entries behind a prefix), and no
//! two may map to the same name. A name that passed here never makes the Rust emitter fail.
//! The names the shader prelude declares (bindings, the uniform struct, its fields) are
//! checked as WGSL names the same way.

use std::collections::BTreeMap;

use crate::diag::{Diagnostic, Diagnostics};
use crate::manifest::Manifest;
use crate::model::{Op, snake_ident};

/// Names the generated module defines or uses unqualified, which a type variable (a generic
/// parameter there) would shadow.
const RESERVED_TYPE_NAMES: &[&str] = &[
    "Attrs",
    "DTypes",
    "Env",
    "EnvShapes",
    "Inputs",
    "Outputs",
    "OutputsMut",
    "Shapes",
    "VariantPlan",
    "EvalError",
    "Option",
    "Result",
    "Vec",
    "String",
    "Box",
    "Some",
    "None",
    "Ok",
    "Err",
    "Default",
    "Clone",
    "Copy",
    "Debug",
    "PartialEq",
    "Send",
    "Sync",
    "Sized",
];

/// Variant ids whose `plan_<id>` function would be one the module already has.
const RESERVED_VARIANT_IDS: &[&str] = &["dyn"];

/// The longest op module name: the module is also the name of two generated files, and file
/// systems take 255 bytes.
const MAX_MODULE_LEN: usize = 200;

/// Why an op module name cannot be the name of its files (`<module>.rs`, `<module>.shaders`)
/// in the output folder: the root module's own file, or a device name Windows reserves
/// whatever the extension (a generated tree is committed, and checked out there too).
fn reserved_module(module: &str) -> Option<String> {
    if module == "mod" {
        return Some(
            "`mod` collides with the root module: the op's file would be `mod.rs`, the root module's; rename the op".to_owned(),
        );
    }
    let device = matches!(module, "con" | "prn" | "aux" | "nul")
        || (module.len() == 4
            && (module.starts_with("com") || module.starts_with("lpt"))
            && module.ends_with(|c: char| ('1'..='9').contains(&c)));
    device.then(|| {
        format!("`{module}` is a device name Windows reserves: its files `{module}.rs` and `{module}.shaders` cannot be written or checked out there; rename the op")
    })
}

const NOT_A_RUST_IDENTIFIER: &str =
    "is not a Rust identifier (letters, digits and `_`, not starting with a digit)";

/// Why `name` cannot be a Rust identifier (a keyword that has a raw form is fine).
/// Why `domain` is not a domain: names of ASCII letters, digits, `_` and `-` joined by `.`
/// (`com.microsoft`, `ai.onnx`).
fn not_a_domain(domain: &str) -> Option<&'static str> {
    let fine = |part: &str| {
        !part.is_empty()
            && (part.chars()).all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    (!domain.split('.').all(fine))
        .then_some("is not names of ASCII letters, digits, `_` and `-` joined by `.`")
}

fn not_an_identifier(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("is empty");
    }
    if matches!(name, "self" | "Self" | "super" | "crate" | "_") {
        return Some("is a Rust keyword that no identifier, raw or not, can be");
    }
    // The emitter writes a keyword in raw form itself; a name already raw (`r#x`) is not one.
    if name.contains('#') {
        return Some(NOT_A_RUST_IDENTIFIER);
    }
    // syn's parser skips white space and comments around a token, so a parsed identifier
    // is only this name when it prints back as it.
    let parses_as =
        |text: &str| syn::parse_str::<syn::Ident>(text).is_ok_and(|ident| ident == text);
    if parses_as(name) || parses_as(&format!("r#{name}")) {
        None
    } else {
        Some(NOT_A_RUST_IDENTIFIER)
    }
}

/// One namespace of generated names: the first manifest place that gave each.
struct Namespace<'a> {
    what: &'a str,
    seen: BTreeMap<String, (String, String)>,
}

impl<'a> Namespace<'a> {
    fn new(what: &'a str) -> Self {
        Namespace {
            what,
            seen: BTreeMap::new(),
        }
    }

    /// Records `rust` as given by `name` at `path`; reports it if it is not an identifier or
    /// another name already maps to it; `false` when it reported.
    fn add(
        &mut self,
        file: &str,
        path: &str,
        name: &str,
        rust: String,
        out: &mut Diagnostics,
    ) -> bool {
        if let Some(why) = not_an_identifier(&rust) {
            let shown = if rust == name {
                String::new()
            } else {
                format!(" (as `{rust}`)")
            };
            out.push(Diagnostic::new(
                file,
                path,
                format!(
                    "{} `{name}`{shown} {why}: the generated Rust names it",
                    self.what
                ),
            ));
            return false;
        }
        self.add_key(file, path, name, rust, out)
    }

    /// Records `key` as given by `name` at `path`, reporting it if another name already has
    /// it; `false` when it reported.
    fn add_key(
        &mut self,
        file: &str,
        path: &str,
        name: &str,
        key: String,
        out: &mut Diagnostics,
    ) -> bool {
        match self.seen.get(&key) {
            Some((other_path, other)) if other == name => out.push(Diagnostic::new(
                file,
                path,
                format!("{} `{name}` is given twice (first at {other_path})", self.what),
            )),
            Some((other_path, other)) => out.push(Diagnostic::new(
                file,
                path,
                format!(
                    "{} `{name}` and `{other}` (at {other_path}) both become `{key}` in the generated Rust",
                    self.what
                ),
            )),
            None => {
                self.seen.insert(key, (path.to_owned(), name.to_owned()));
                return true;
            }
        }
        false
    }
}

/// Why `name` cannot name a WGSL declaration (the generated prelude declares bindings, the
/// uniform struct and its fields by their manifest names).
fn not_a_wgsl_identifier(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_alphanumeric() || c == '_') || name == "_" {
        return Some(
            "is not a WGSL identifier (letters, digits and `_`, not starting with a digit)",
        );
    }
    if name.starts_with("__") {
        return Some("starts with `__`, which WGSL keeps for itself");
    }
    if naga::keywords::wgsl::RESERVED.contains(&name) {
        return Some("is a WGSL keyword or reserved word");
    }
    None
}

/// Whether two binding lists declare the same names.
fn same_names(a: &[crate::manifest::BindingDecl], b: &[crate::manifest::BindingDecl]) -> bool {
    let names = |list: &[crate::manifest::BindingDecl]| -> Vec<String> {
        list.iter()
            .flat_map(|b| {
                let fields = b
                    .struct_
                    .iter()
                    .flat_map(|s| std::iter::once(&s.name).chain(s.fields.iter().map(|f| &f.name)));
                std::iter::once(&b.name)
                    .chain(fields)
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    names(a) == names(b)
}

/// The WGSL names the prelude declares: each binding list's names, and its uniform struct's
/// name and field names, each an identifier and none repeated.
fn check_wgsl_names(file: &str, manifest: &Manifest, out: &mut Diagnostics) {
    let mut lists: Vec<(String, &[crate::manifest::BindingDecl])> = manifest
        .binding_sets
        .iter()
        .map(|(name, list)| (format!("bindingSets.{name}"), list.as_slice()))
        .collect();
    for (v, variant) in manifest.variants.iter().enumerate() {
        for (p, pass) in variant.passes.iter().enumerate() {
            // Hints copy a set into the pass to change it; such a copy was checked as the set.
            if let crate::manifest::BindingsRef::Inline(list) = &pass.bindings
                && !manifest
                    .binding_sets
                    .values()
                    .any(|set| same_names(set, list))
            {
                lists.push((
                    format!("variants[{v}].passes[{p}].bindings"),
                    list.as_slice(),
                ));
            }
        }
    }
    let mut check = |path: String, what: &str, name: &str, seen: &mut BTreeMap<String, String>| {
        if let Some(why) = not_a_wgsl_identifier(name) {
            out.push(Diagnostic::new(
                file,
                &path,
                format!("{what} `{name}` {why}: the shader declares it"),
            ));
        } else if let Some(first) = seen.get(name) {
            out.push(Diagnostic::new(
                file,
                &path,
                format!("{what} `{name}` is given twice (first at {first})"),
            ));
        } else {
            seen.insert(name.to_owned(), path);
        }
    };
    for (base, list) in lists {
        let mut names = BTreeMap::new();
        for (i, binding) in list.iter().enumerate() {
            check(
                format!("{base}[{i}].name"),
                "binding",
                &binding.name,
                &mut names,
            );
            if let Some(decl) = &binding.struct_ {
                let at = format!("{base}[{i}].struct");
                check(format!("{at}.name"), "struct", &decl.name, &mut names);
                let mut fields = BTreeMap::new();
                for (f, field) in decl.fields.iter().enumerate() {
                    check(
                        format!("{at}.fields[{f}].name"),
                        "struct field",
                        &field.name,
                        &mut fields,
                    );
                }
            }
        }
    }
}

/// Reports every manifest name the generated module could not use.
pub fn check(file: &str, manifest: &Manifest, op: &Op, out: &mut Diagnostics) {
    check_wgsl_names(file, manifest, out);
    if op.module.len() > MAX_MODULE_LEN {
        out.push(Diagnostic::new(
            file,
            "name",
            format!(
                "the op name gives a module name of {} bytes; at most {MAX_MODULE_LEN} fit the generated file names",
                op.module.len()
            ),
        ));
    } else if let Some(why) =
        (not_an_identifier(&op.module).map(str::to_owned)).or_else(|| reserved_module(&op.module))
    {
        out.push(Diagnostic::new(
            file,
            "name",
            format!("the op's module name {why}"),
        ));
    } else if !op.module.is_ascii() {
        out.push(Diagnostic::new(
            file,
            "name",
            format!(
                "the op's module name `{}` is not ASCII: it names the op's module and files, and rustc warns of a non-ASCII module name (file systems may also store it differently from how `include!` spells it); spell the op with ASCII letters and digits",
                op.module
            ),
        ));
    }
    if let Some(why) = not_a_domain(&op.domain) {
        out.push(Diagnostic::new(
            file,
            "domain",
            format!(
                "the domain {} {why}: with the name it makes the op's qualified name, which names its hints file and is written in the generated docs and registry",
                serde_json::Value::from(op.domain.as_str())
            ),
        ));
    }

    let mut attributes = Namespace::new("attribute");
    for attribute in &op.attributes {
        let name = &attribute.name;
        let path = if manifest.dialect.is_jinja() && manifest.scalars.contains_key(name) {
            format!("args.{name}")
        } else if manifest.attributes.contains_key(name) {
            format!("attributes.{name}")
        } else if manifest.attribute_constraints.contains_key(name) {
            format!("attributeConstraints.{name}")
        } else {
            format!("attributeDescriptions.{name}")
        };
        attributes.add(file, &path, name, snake_ident(name), out);
    }

    // Inputs and outputs share the typed structs' fields; an output repeating an input's
    // role is that input, written in place.
    let mut roles = Namespace::new("tensor role");
    for (i, decl) in manifest.inputs.iter().enumerate() {
        let path = format!("inputs[{i}].role");
        roles.add(file, &path, &decl.role, snake_ident(&decl.role), out);
    }
    let mut outputs = Namespace::new("output role");
    for (i, decl) in manifest.outputs.iter().enumerate() {
        let path = format!("outputs[{i}].role");
        let fine = outputs.add(file, &path, &decl.role, snake_ident(&decl.role), out);
        if fine && !manifest.inputs.iter().any(|input| input.role == decl.role) {
            roles.add(file, &path, &decl.role, snake_ident(&decl.role), out);
        }
    }

    let mut type_vars = Namespace::new("type variable");
    for name in manifest.type_constraints.keys() {
        let path = format!("typeConstraints.{name}");
        let generic = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
            && name.chars().all(|c| c.is_ascii_alphanumeric());
        if !generic {
            out.push(Diagnostic::new(
                file,
                &path,
                format!("type variable `{name}` must be an ASCII name that starts with a capital letter (it is a generic parameter of the generated Rust)"),
            ));
        } else if RESERVED_TYPE_NAMES.contains(&name.as_str()) {
            out.push(Diagnostic::new(
                file,
                &path,
                format!("type variable `{name}` would shadow the generated module's own `{name}`"),
            ));
        } else {
            type_vars.add(
                file,
                &path,
                name,
                snake_ident(name).to_ascii_lowercase(),
                out,
            );
        }
    }

    let mut derives = Namespace::new("derive entry");
    for name in manifest.derive.keys() {
        let rust = format!("derive_{}", snake_ident(name));
        derives.add(file, &format!("derive.{name}"), name, rust, out);
    }

    let mut variants = Namespace::new("variant id");
    for (v, variant) in manifest.variants.iter().enumerate() {
        let path = format!("variants[{v}].id");
        let snake = snake_ident(&variant.id);
        if RESERVED_VARIANT_IDS.contains(&snake.as_str()) {
            out.push(Diagnostic::new(
                file,
                &path,
                format!("variant id `{}` would name the generated `plan_{snake}`, which the module already has", variant.id),
            ));
            continue;
        }
        variants.add(file, &path, &variant.id, format!("plan_{snake}"), out);
        let mut passes = Namespace::new("pass id");
        for (p, pass) in variant.passes.iter().enumerate() {
            let path = format!("variants[{v}].passes[{p}].id");
            // Pass ids key the shader table rather than naming Rust items: only repeats matter.
            passes.add_key(file, &path, &pass.id, pass.id.clone(), out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_keywords() {
        for good in ["x", "num_heads", "type", "fn", "é", "_x", "r1"] {
            assert_eq!(not_an_identifier(good), None, "{good}");
        }
        for bad in [
            "",
            "self",
            "Self",
            "_",
            "crate",
            "1x",
            "a-b",
            "a b",
            "r#x",
            "a ",
            " a",
            "\t",
            "a\n",
            "a\u{a0}",
            "a\u{3000}",
            "a/*c*/",
            "a//c",
            "plan_a ",
        ] {
            assert!(not_an_identifier(bad).is_some(), "{bad}");
        }
    }
}
