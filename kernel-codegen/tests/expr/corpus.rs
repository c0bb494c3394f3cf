//! Every expression of the `schemaVersion: 1` corpus (`../shared/corpus/gemma-4/*/manifest.json`,
//! outside the repository and read-only) parses in the V1 dialect, and type-checks in a scope
//! built from its own manifest: scalar `args` by kind, tensors by arg name (also by semantic and
//! role, as the dialect allows), type variables, tunables, any WebGPU limit and the adapter's
//! subgroup sizes. The tests print a note and pass when the corpus is not there; set
//! `KERNEL_CORPUS_DIR` to read it from elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kernel_codegen::expr::{self, Scope, Symbol, Type, Unresolved, check::Dialect};
use serde_json::Value as Json;

/// The corpus folder (one package folder per op), if it exists.
fn corpus_dir() -> Option<PathBuf> {
    let root = std::env::var_os("KERNEL_CORPUS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"),
        PathBuf::from,
    );
    let dir = root.join("gemma-4");
    dir.is_dir().then_some(dir)
}

/// Every `manifest.json` of the corpus, by package folder name, parsed.
fn manifests(dir: &Path) -> Vec<(String, Json)> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path().join("manifest.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue; // `_shared_assets/` has templates only
        };
        let json =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((entry.file_name().to_string_lossy().into_owned(), json));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn entries(value: Option<&Json>) -> Vec<(&String, &Json)> {
    value
        .and_then(Json::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default()
}

fn items(value: Option<&Json>) -> &[Json] {
    value
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The expression strings of a value that is one expression or a list of them (JSON numbers
/// and booleans are literals, not expressions).
fn strings(value: Option<&Json>, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        Some(Json::String(s)) => out.push((path.to_owned(), s.clone())),
        Some(Json::Array(list)) => {
            for (i, item) in list.iter().enumerate() {
                if let Json::String(s) = item {
                    out.push((format!("{path}[{i}]"), s.clone()));
                }
            }
        }
        _ => {}
    }
}

/// The uniform field `value`s of a binding list.
fn fields(bindings: &[Json], path: &str, out: &mut Vec<(String, String)>) {
    for (i, binding) in bindings.iter().enumerate() {
        for (j, field) in items(binding.pointer("/struct/fields")).iter().enumerate() {
            let at = format!("{path}[{i}].struct.fields[{j}].value");
            strings(field.get("value"), &at, out);
        }
    }
}

/// Every expression string of a V1 manifest with its JSON path: output shapes, `when`
/// clauses, constants, intermediate shapes, source inputs, dispatch sizes and uniform fields.
pub fn expressions(m: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, output) in items(m.get("outputs")).iter().enumerate() {
        strings(
            output.get("shape"),
            &format!("outputs[{i}].shape"),
            &mut out,
        );
    }
    for (name, set) in entries(m.get("bindingSets")) {
        fields(items(Some(set)), &format!("bindingSets.{name}"), &mut out);
    }
    for (v, variant) in items(m.get("variants")).iter().enumerate() {
        let vp = format!("variants[{v}]");
        strings(variant.get("when"), &format!("{vp}.when"), &mut out);
        for (k, c) in entries(variant.get("constants")) {
            strings(Some(c), &format!("{vp}.constants.{k}"), &mut out);
        }
        for (i, inter) in items(variant.get("intermediates")).iter().enumerate() {
            strings(
                inter.get("shape"),
                &format!("{vp}.intermediates[{i}].shape"),
                &mut out,
            );
        }
        for (p, pass) in items(variant.get("passes")).iter().enumerate() {
            let pp = format!("{vp}.passes[{p}]");
            for (k, input) in entries(pass.pointer("/source/inputs")) {
                strings(Some(input), &format!("{pp}.source.inputs.{k}"), &mut out);
            }
            for (k, d) in entries(pass.get("dispatch")) {
                strings(Some(d), &format!("{pp}.dispatch.{k}"), &mut out);
            }
            fields(
                items(pass.get("bindings")),
                &format!("{pp}.bindings"),
                &mut out,
            );
        }
    }
    out
}

/// The names a V1 manifest declares, for checking its expressions.
struct CorpusScope {
    /// Scalar arguments by name, with their types.
    args: BTreeMap<String, Type>,
    /// Tensor arguments by name, semantic and role.
    tensors: Vec<String>,
    type_vars: Vec<String>,
    tunables: Vec<String>,
}

impl CorpusScope {
    fn new(m: &Json) -> Self {
        let mut args = BTreeMap::new();
        let mut tensors = Vec::new();
        for (name, arg) in entries(m.get("args")) {
            let kind = arg.get("kind").and_then(Json::as_str).unwrap_or_default();
            let ty = match kind {
                "tensor" => {
                    tensors.push(name.clone());
                    for key in ["semantic", "role"] {
                        if let Some(alias) = arg.get(key).and_then(Json::as_str) {
                            tensors.push(alias.to_owned());
                        }
                    }
                    continue;
                }
                "f32" => Type::Float,
                "bool" => Type::Bool,
                "string" => Type::Str,
                _ => Type::Int,
            };
            args.insert(name.clone(), ty);
        }
        let keys = |key: &str| {
            entries(m.get(key))
                .into_iter()
                .map(|(k, _)| k.clone())
                .collect()
        };
        Self {
            args,
            tensors,
            type_vars: keys("typeConstraints"),
            tunables: keys("tunables"),
        }
    }
}

impl Scope for CorpusScope {
    fn resolve(&self, sym: &Symbol) -> Result<Type, Unresolved> {
        self.lookup(sym).map_err(Unresolved::Unknown)
    }

    fn dialect(&self) -> Dialect {
        Dialect::V1
    }
}

impl CorpusScope {
    fn lookup(&self, sym: &Symbol) -> Result<Type, String> {
        let tensor = |t: &String, ty| {
            if self.tensors.contains(t) {
                Ok(ty)
            } else {
                Err(format!("unknown tensor `{t}`"))
            }
        };
        let listed = |list: &[String], n: &String| {
            if list.contains(n) {
                Ok(())
            } else {
                Err(format!("unknown name `{sym}`"))
            }
        };
        match sym {
            Symbol::Arg(a) => self
                .args
                .get(a)
                .copied()
                .ok_or_else(|| format!("unknown argument `{a}`")),
            Symbol::Shape(t) => tensor(t, Type::List),
            Symbol::Rank(t) => tensor(t, Type::Int),
            Symbol::Present(t) => tensor(t, Type::Bool),
            Symbol::TensorDtype(t) => tensor(t, Type::Str),
            Symbol::Dtype(v) => listed(&self.type_vars, v).map(|()| Type::Dtype),
            Symbol::Tunable(t) => listed(&self.tunables, t).map(|()| Type::Int),
            Symbol::Limit(_) => Ok(Type::Int),
            Symbol::AdapterInfo(n) if n.starts_with("subgroup") => Ok(Type::Int),
            _ => Err(format!("unknown name `{sym}`")),
        }
    }
}

#[test]
fn every_corpus_expression_parses_and_checks_in_v1() {
    let Some(dir) = corpus_dir() else {
        println!("note: no V1 corpus at ../shared/corpus/gemma-4 (or KERNEL_CORPUS_DIR); skipped");
        return;
    };
    let (mut total, mut parse_failures, mut check_failures) = (0, Vec::new(), Vec::new());
    for (package, manifest) in manifests(&dir) {
        let scope = CorpusScope::new(&manifest);
        for (path, src) in expressions(&manifest) {
            total += 1;
            let ast = match expr::parse_in(&src, Dialect::V1) {
                Ok(ast) => ast,
                Err(e) => {
                    let col = e.column(&src);
                    parse_failures.push(format!("{package}: {path}: column {col}: {e}: {src}"));
                    continue;
                }
            };
            if let Err(errors) = expr::check(&ast, &scope) {
                for e in errors {
                    let col = e.column(&src);
                    check_failures.push(format!("{package}: {path}: column {col}: {e}: {src}"));
                }
            }
        }
    }
    println!("{total} corpus expressions parsed and checked in the V1 dialect");
    assert!(
        parse_failures.is_empty(),
        "{} of {total} expressions do not parse:\n{}",
        parse_failures.len(),
        parse_failures.join("\n")
    );
    assert!(
        check_failures.is_empty(),
        "{} errors checking {total} expressions:\n{}",
        check_failures.len(),
        check_failures.join("\n")
    );
    assert!(total > 700, "only {total} corpus expressions found");
}
