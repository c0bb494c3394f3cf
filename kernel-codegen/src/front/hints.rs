//! Implementation hints: project-side additions to a manifest that change how its shaders are
//! written, never what the op computes, kept beside the package (`hints/<domain>.<name>.hints.json`
//! here) so the package stays byte for byte as given.
//!
//! A hint adds `derive` entries, adds static boolean source inputs to a pass, lets some of its
//! storage bindings be seen as `vec4` words where such a boolean is true (the binding field
//! `vec4When`), and may replace the pass's dispatch sizes (a shader that does more work per
//! invocation needs fewer invocations). A variant hint declares the values to build shaders for
//! where the shader text depends on a run-time value with no finite domain (`specialise`).

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::manifest::{BindingsRef, Manifest};

/// One `<op>.hints.json` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hints {
    /// The op's `domain.name`.
    pub op: String,
    /// For the reader of the file: accepted, and not used by the generator.
    #[serde(default, rename = "description")]
    pub _description: String,
    /// `derive` entries added to the manifest's.
    #[serde(default)]
    pub derive: IndexMap<String, String>,
    #[serde(default)]
    pub passes: Vec<PassHint>,
    #[serde(default)]
    pub variants: Vec<VariantHint>,
}

/// Hints for one variant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantHint {
    pub variant: String,
    /// Template value or scalar arg (`args.<name>`) → the values to build shaders for, where
    /// the shader text depends on a value whose domain the manifest leaves open
    /// (`"headDim": [64, 128, 256]`, `"args.hidden": [1536, 2560]`). A call with another value
    /// finds no shader and says so.
    #[serde(default)]
    pub specialise: IndexMap<String, Vec<Value>>,
    /// Why the variant is left out: it is not built and never selected, and generation says
    /// so. For a variant whose templates are not written for this repository (the Hub
    /// publishes manifests, not templates).
    #[serde(default, rename = "leaveOut")]
    pub leave_out: Option<String>,
}

/// Hints for one pass of one variant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PassHint {
    pub variant: String,
    pub pass: String,
    /// Source inputs added to the pass: boolean expressions over the op's names.
    #[serde(default)]
    pub inputs: IndexMap<String, String>,
    /// Binding name → the boolean under which it is seen as `vec4` words.
    #[serde(default)]
    pub vec4_when: IndexMap<String, String>,
    /// Replacement values for keys of the pass's `dispatch` (same form, new expressions).
    #[serde(default)]
    pub dispatch: IndexMap<String, String>,
}

/// Parses a hints file, reporting the JSON path of a structural error.
pub fn parse(file: &str, text: &str) -> Result<Hints, Diagnostic> {
    crate::manifest::parse_strict(text)
        .map_err(|(path, message)| Diagnostic::new(file, path, message))
}

/// Where each expression hints put into a manifest came from: the manifest JSON path the model
/// reports it at, and the hints file's JSON path.
#[derive(Debug, Default)]
pub struct Origins {
    file: String,
    paths: Vec<(String, String)>,
    /// The variants the hints leave out, with why.
    pub left_out: Vec<(String, String)>,
    /// Each set of values the hints declare: variant id, name, JSON path.
    specialise: Vec<(String, String, String)>,
}

impl Origins {
    /// Where each set of values the hints declare is.
    pub fn hint_sources(&self) -> Vec<crate::model::HintSource> {
        (self.specialise.iter())
            .map(|(variant, name, path)| crate::model::HintSource {
                variant: variant.clone(),
                name: name.clone(),
                file: self.file.clone(),
                path: path.clone(),
            })
            .collect()
    }

    fn add(&mut self, manifest_path: String, hints_path: String) {
        self.paths.push((manifest_path, hints_path));
    }

    /// Points the diagnostics about `manifest_file` at an expression the hints added at the
    /// hints file and the expression's JSON path there.
    pub fn relocate(&self, manifest_file: &str, diagnostics: &mut Diagnostics) {
        for diagnostic in diagnostics.0.iter_mut().filter(|d| d.file == manifest_file) {
            let found = self.paths.iter().find(|(at, _)| {
                diagnostic.path == *at
                    || diagnostic
                        .path
                        .strip_prefix(at.as_str())
                        .is_some_and(|rest| rest.starts_with(['.', '[']))
            });
            if let Some((at, hints_path)) = found {
                diagnostic.path = format!("{hints_path}{}", &diagnostic.path[at.len()..]);
                diagnostic.file.clone_from(&self.file);
            }
        }
    }
}

/// Applies `hints` to `manifest`; what cannot be applied is reported against the hints file,
/// and the returned origins let the model's errors about what was applied be reported there too.
pub fn apply(
    file: &str,
    hints: &Hints,
    manifest: &mut Manifest,
    diagnostics: &mut Diagnostics,
) -> Origins {
    let mut origins = Origins {
        file: file.to_owned(),
        ..Origins::default()
    };
    apply_variant_hints(file, hints, manifest, diagnostics, &mut origins);
    for (name, source) in &hints.derive {
        if manifest.derive.contains_key(name) {
            diagnostics.push(Diagnostic::new(
                file,
                format!("derive.{name}"),
                "the manifest already derives this name",
            ));
            continue;
        }
        manifest.derive.insert(name.clone(), source.clone());
        origins.add(format!("derive.{name}"), format!("derive.{name}"));
    }
    for (h, hint) in hints.passes.iter().enumerate() {
        let path = format!("passes[{h}]");
        let Some(v) = manifest.variants.iter().position(|v| v.id == hint.variant) else {
            diagnostics.push(Diagnostic::new(
                file,
                format!("{path}.variant"),
                format!("`{}` has no variant `{}`", hints.op, hint.variant),
            ));
            continue;
        };
        let Some(p) = manifest.variants[v]
            .passes
            .iter()
            .position(|p| p.id == hint.pass)
        else {
            diagnostics.push(Diagnostic::new(
                file,
                format!("{path}.pass"),
                format!("variant `{}` has no pass `{}`", hint.variant, hint.pass),
            ));
            continue;
        };
        // A shared binding set becomes this pass's own list, so other passes keep their views.
        let bindings = match &manifest.variants[v].passes[p].bindings {
            BindingsRef::Inline(list) => Some(list.clone()),
            // An unknown set is reported by the model, with the manifest's own path.
            BindingsRef::Set(name) => manifest.binding_sets.get(name).cloned(),
        };
        let pass = &mut manifest.variants[v].passes[p];
        let at = format!("variants[{v}].passes[{p}]");
        for (key, source) in &hint.dispatch {
            match pass.dispatch.get_mut(key) {
                Some(value) => {
                    let original = std::mem::replace(value, Value::String(source.clone()));
                    pass.replaced_dispatch.insert(key.clone(), original);
                    origins.add(
                        format!("{at}.dispatch.{key}"),
                        format!("{path}.dispatch.{key}"),
                    );
                }
                None => diagnostics.push(Diagnostic::new(
                    file,
                    format!("{path}.dispatch.{key}"),
                    format!("the pass's dispatch has no `{key}` to replace"),
                )),
            }
        }
        for (name, source) in &hint.inputs {
            if pass.source.inputs.contains_key(name) {
                diagnostics.push(Diagnostic::new(
                    file,
                    format!("{path}.inputs.{name}"),
                    "the manifest already defines this source input",
                ));
                continue;
            }
            pass.source
                .inputs
                .insert(name.clone(), Value::String(source.clone()));
            origins.add(
                format!("{at}.source.inputs.{name}"),
                format!("{path}.inputs.{name}"),
            );
        }
        let (Some(mut bindings), false) = (bindings, hint.vec4_when.is_empty()) else {
            continue;
        };
        for (name, predicate) in &hint.vec4_when {
            match bindings.iter_mut().position(|b| &b.name == name) {
                Some(b) => {
                    bindings[b].vec4_when = Some(predicate.clone());
                    origins.add(
                        format!("{at}.bindings[{b}].vec4When"),
                        format!("{path}.vec4When.{name}"),
                    );
                }
                None => diagnostics.push(Diagnostic::new(
                    file,
                    format!("{path}.vec4When.{name}"),
                    format!(
                        "pass `{}` of variant `{}` has no binding `{name}`",
                        hint.pass, hint.variant
                    ),
                )),
            }
        }
        pass.bindings = BindingsRef::Inline(bindings);
    }
    origins
}

/// Checks and records the specialisation sets of `hints.variants`. A set for an argument also
/// becomes a `when` clause of the variant (`args.hidden in [1536, 2560]`): a call with another
/// value is rejected by that clause, as it has no shader.
fn apply_variant_hints(
    file: &str,
    hints: &Hints,
    manifest: &mut Manifest,
    diagnostics: &mut Diagnostics,
    origins: &mut Origins,
) {
    for (h, hint) in hints.variants.iter().enumerate() {
        let path = format!("variants[{h}]");
        let Some(manifest_variant) = manifest.variants.iter().position(|v| v.id == hint.variant)
        else {
            diagnostics.push(Diagnostic::new(
                file,
                format!("{path}.variant"),
                format!("`{}` has no variant `{}`", hints.op, hint.variant),
            ));
            continue;
        };
        if let Some(reason) = &hint.leave_out {
            origins
                .left_out
                .push((hint.variant.clone(), reason.clone()));
        }
        let variant = &mut manifest.variants[manifest_variant];
        for (name, values) in &hint.specialise {
            let value_path = format!("{path}.specialise.{name}");
            origins
                .specialise
                .push((hint.variant.clone(), name.clone(), value_path.clone()));
            // An attribute's set is bounded by a `when` clause, which needs the Jinja
            // dialects' `in`.
            let attr = (name.strip_prefix("attrs."))
                .filter(|_| manifest.dialect.is_jinja())
                .filter(|attr| manifest.attributes.contains_key(*attr));
            let known = match name.strip_prefix("args.") {
                Some(arg) => manifest.scalars.contains_key(arg),
                None if attr.is_some() => true,
                None => {
                    variant.constants.contains_key(name)
                        || variant
                            .passes
                            .iter()
                            .any(|p| p.source.inputs.contains_key(name))
                }
            };
            if !known {
                diagnostics.push(Diagnostic::new(
                    file,
                    &value_path,
                    match name.strip_prefix("args.") {
                        Some(arg) => format!("`{}` has no scalar arg `{arg}`", hints.op),
                        None => format!(
                            "variant `{}` has no constant or pass input `{name}`",
                            hint.variant
                        ),
                    },
                ));
                continue;
            }
            if values.is_empty() {
                diagnostics.push(Diagnostic::new(
                    file,
                    &value_path,
                    "a specialisation set needs at least one value",
                ));
                continue;
            }
            let mut set = Vec::new();
            for (i, value) in values.iter().enumerate() {
                let converted = match value {
                    Value::Bool(b) => Some(crate::expr::Value::Bool(*b)),
                    Value::String(s) => Some(crate::expr::Value::Str(s.clone())),
                    Value::Number(n) => n
                        .as_i64()
                        .map(crate::expr::Value::Int)
                        .or_else(|| n.as_f64().map(crate::expr::Value::Float)),
                    _ => None,
                };
                match converted {
                    Some(v) if set.contains(&v) => diagnostics.push(Diagnostic::new(
                        file,
                        format!("{value_path}[{i}]"),
                        format!("{value} is listed twice"),
                    )),
                    Some(v) => set.push(v),
                    None => diagnostics.push(Diagnostic::new(
                        file,
                        format!("{value_path}[{i}]"),
                        "expected a number, a boolean or a string",
                    )),
                }
            }
            if name.starts_with("args.") || attr.is_some() {
                let listed: Vec<String> = set.iter().map(ToString::to_string).collect();
                variant
                    .when
                    .push(format!("{name} in [{}]", listed.join(", ")));
                let v = manifest_variant;
                origins.add(
                    format!("variants[{v}].when[{}]", variant.when.len() - 1),
                    value_path.clone(),
                );
            }
            variant.specialise.insert(name.clone(), set);
        }
    }
}
