//! Every expression of the seed manifests parses and type-checks, in a scope built from the
//! manifest itself (roles, type variables, attributes, tunables, `derive` entries in dependency
//! order).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use kernel_codegen::expr::{self, Ir, Scope, Symbol, Type, Unresolved};
use serde_json::Value as Json;

/// The seed manifests, relative to the project root.
pub const SEEDS: &[&str] = &[
    "packages/com.microsoft.BiasSoftmax/manifest.json",
    "packages/com.microsoft.MRotaryEmbedding/manifest.json",
];

/// Reads a seed manifest.
pub fn load(rel: &str) -> Json {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A JSON scalar as expression source: strings are expressions, numbers and booleans literals.
fn source(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
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

/// The struct field `value`s of a binding list.
fn field_values(bindings: &[Json], path: &str, out: &mut Vec<(String, String)>) {
    for (i, binding) in bindings.iter().enumerate() {
        for (j, field) in items(binding.pointer("/struct/fields")).iter().enumerate() {
            if let Some(src) = field.get("value").and_then(source) {
                out.push((format!("{path}[{i}].struct.fields[{j}].value"), src));
            }
        }
    }
}

/// Every expression of a manifest except `derive` entries, with its JSON path.
pub fn expressions(m: &Json) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, output) in items(m.get("outputs")).iter().enumerate() {
        for key in ["shape", "rank"] {
            if let Some(src) = output.get(key).and_then(source) {
                out.push((format!("outputs[{i}].{key}"), src));
            }
        }
    }
    for (name, set) in entries(m.get("bindingSets")) {
        field_values(items(Some(set)), &format!("bindingSets.{name}"), &mut out);
    }
    for (v, variant) in items(m.get("variants")).iter().enumerate() {
        let vp = format!("variants[{v}]");
        for (i, when) in items(variant.get("when")).iter().enumerate() {
            out.extend(source(when).map(|s| (format!("{vp}.when[{i}]"), s)));
        }
        for (k, c) in entries(variant.get("constants")) {
            out.extend(source(c).map(|s| (format!("{vp}.constants.{k}"), s)));
        }
        for (i, inter) in items(variant.get("intermediates")).iter().enumerate() {
            out.extend(
                inter
                    .get("shape")
                    .and_then(source)
                    .map(|s| (format!("{vp}.intermediates[{i}].shape"), s)),
            );
        }
        for (p, pass) in items(variant.get("passes")).iter().enumerate() {
            let pp = format!("{vp}.passes[{p}]");
            for (k, input) in entries(pass.pointer("/source/inputs")) {
                out.extend(source(input).map(|s| (format!("{pp}.source.inputs.{k}"), s)));
            }
            for (k, d) in entries(pass.get("dispatch")) {
                out.extend(source(d).map(|s| (format!("{pp}.dispatch.{k}"), s)));
            }
            field_values(
                items(pass.get("bindings")),
                &format!("{pp}.bindings"),
                &mut out,
            );
        }
    }
    out
}

/// Names and types declared by a manifest.
pub struct ManifestScope {
    pub roles: BTreeSet<String>,
    pub type_vars: BTreeSet<String>,
    pub attrs: BTreeMap<String, Type>,
    pub tunables: BTreeSet<String>,
    pub derived: BTreeMap<String, Type>,
    /// Checked `derive` entries in dependency order.
    pub derive_order: Vec<(String, Ir)>,
}

impl ManifestScope {
    /// Builds the scope and checks the `derive` entries, panicking on any error.
    pub fn new(m: &Json) -> Self {
        let roles = items(m.get("inputs"))
            .iter()
            .chain(items(m.get("outputs")))
            .filter_map(|t| t.get("role").and_then(Json::as_str).map(str::to_owned))
            .collect();
        let type_vars = entries(m.get("typeConstraints"))
            .into_iter()
            .map(|(k, _)| k.clone())
            .collect();
        let mut attrs = BTreeMap::new();
        for (name, default) in entries(m.get("attributes")) {
            let ty = match default {
                Json::Number(n) if n.is_f64() => Type::Float,
                Json::Bool(_) => Type::Bool,
                Json::Array(_) => Type::List,
                _ => Type::Int,
            };
            attrs.insert(name.clone(), ty);
        }
        for (name, _) in entries(m.get("attributeConstraints")) {
            // A required attribute has no default to infer from; the seeds' only one that is
            // not an Int is the `mrope_section` list.
            let ty = if name == "mrope_section" {
                Type::List
            } else {
                Type::Int
            };
            attrs.entry(name.clone()).or_insert(ty);
        }
        let tunables = entries(m.get("tunables"))
            .into_iter()
            .map(|(k, _)| k.clone())
            .collect();
        let mut scope = Self {
            roles,
            type_vars,
            attrs,
            tunables,
            derived: BTreeMap::new(),
            derive_order: Vec::new(),
        };

        // Check `derive` entries once their references are checked (they may appear in any order).
        let mut pending: Vec<(String, expr::ast::Expr)> = entries(m.get("derive"))
            .into_iter()
            .map(|(name, src)| {
                let src = src
                    .as_str()
                    .unwrap_or_else(|| panic!("derive.{name} is not a string"));
                (
                    name.clone(),
                    expr::parse(src).unwrap_or_else(|e| panic!("derive.{name}: {}", e.message)),
                )
            })
            .collect();
        while !pending.is_empty() {
            let ready = pending
                .iter()
                .position(|(_, ast)| {
                    ast.derived_refs(expr::builtins::namespaces(expr::check::Dialect::Seed))
                        .iter()
                        .all(|r| scope.derived.contains_key(r))
                })
                .unwrap_or_else(|| {
                    panic!(
                        "derive cycle or unknown reference among {:?}",
                        pending.iter().map(|p| &p.0).collect::<Vec<_>>()
                    )
                });
            let (name, ast) = pending.remove(ready);
            let ir = expr::check(&ast, &scope).unwrap_or_else(|e| panic!("derive.{name}: {e:?}"));
            scope.derived.insert(name.clone(), ir.ty);
            scope.derive_order.push((name, ir));
        }
        scope
    }
}

impl Scope for ManifestScope {
    fn resolve(&self, sym: &Symbol) -> Result<Type, Unresolved> {
        self.lookup(sym).map_err(Unresolved::Unknown)
    }
}

#[test]
fn every_seed_expression_parses_and_checks() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for seed in SEEDS {
        let manifest = load(seed);
        let scope = ManifestScope::new(&manifest);
        checked += scope.derive_order.len();
        for (path, src) in expressions(&manifest) {
            checked += 1;
            let result = expr::parse(&src)
                .map_err(|e| vec![e])
                .and_then(|ast| expr::check(&ast, &scope));
            if let Err(errors) = result {
                for e in errors {
                    failures.push(format!(
                        "{seed}: {path}: column {}: {}",
                        e.column(&src),
                        e.message
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 100, "only {checked} seed expressions found");
}

impl ManifestScope {
    fn lookup(&self, sym: &Symbol) -> Result<Type, String> {
        let found = |ok: bool, ty: Type| {
            if ok {
                Ok(ty)
            } else {
                Err(format!("unknown name `{sym}`"))
            }
        };
        match sym {
            Symbol::Shape(r) => found(self.roles.contains(r), Type::List),
            Symbol::Rank(r) => found(self.roles.contains(r), Type::Int),
            Symbol::Dtype(v) => found(self.type_vars.contains(v), Type::Dtype),
            Symbol::Attr(a) => self
                .attrs
                .get(a)
                .copied()
                .ok_or_else(|| format!("unknown name `{sym}`")),
            Symbol::Tunable(t) => found(self.tunables.contains(t), Type::Int),
            Symbol::Limit(l) => found(l == "maxComputeWorkgroupsPerDimension", Type::Int),
            Symbol::Derived(d) => self
                .derived
                .get(d)
                .copied()
                .ok_or_else(|| format!("unknown name `{sym}`")),
            Symbol::Arg(_)
            | Symbol::Present(_)
            | Symbol::TensorDtype(_)
            | Symbol::AdapterInfo(_) => Err(format!("`{sym}` is not a seed name")),
        }
    }
}

#[test]
fn seed_derives_have_the_expected_types() {
    let scope = ManifestScope::new(&load(SEEDS[0]));
    assert_eq!(scope.derived["biasContract"], Type::Bool);
    assert_eq!(scope.derived["blockSize"], Type::Int);
    let scope = ManifestScope::new(&load(SEEDS[1]));
    assert_eq!(scope.derived["rank3Contract"], Type::Bool);
    assert_eq!(scope.derived["pairCount"], Type::Int);
    // `derive` is written in dependency order in neither seed necessarily; ours is.
    let order: Vec<&str> = scope.derive_order.iter().map(|(n, _)| n.as_str()).collect();
    let pos = |n: &str| order.iter().position(|o| *o == n);
    assert!(pos("headSize") > pos("rank3HeadSize"));
}
