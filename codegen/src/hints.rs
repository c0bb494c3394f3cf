//! Implementation hints: project-side additions to a manifest that change how its shaders are
//! written, never what the op computes, kept beside the package (`hints/<domain>.<name>.hints.json`
//! here) so the package stays byte for byte as given.
//!
//! A hint adds `derive` entries, adds static boolean source inputs to a pass, lets some of its
//! storage bindings be seen as `vec4` words where such a boolean is true (the binding field
//! `vec4When`), and may replace the pass's dispatch sizes (a shader that does more work per
//! invocation needs fewer invocations).

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
    #[serde(default)]
    pub description: String,
    /// `derive` entries added to the manifest's.
    #[serde(default)]
    pub derive: IndexMap<String, String>,
    #[serde(default)]
    pub passes: Vec<PassHint>,
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
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        Diagnostic::new(
            file,
            if path == "." { String::new() } else { path },
            err.into_inner().to_string(),
        )
    })
}

/// Applies `hints` to `manifest`; what cannot be applied is reported against the hints file.
pub fn apply(file: &str, hints: &Hints, manifest: &mut Manifest, diagnostics: &mut Diagnostics) {
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
        for (key, source) in &hint.dispatch {
            match pass.dispatch.get_mut(key) {
                Some(value) => *value = Value::String(source.clone()),
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
        }
        let (Some(mut bindings), false) = (bindings, hint.vec4_when.is_empty()) else {
            continue;
        };
        for (name, predicate) in &hint.vec4_when {
            match bindings.iter_mut().find(|b| &b.name == name) {
                Some(binding) => binding.vec4_when = Some(predicate.clone()),
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
}
