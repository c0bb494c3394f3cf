//! Compiles `webgpu-kernels` manifests and Jinja WGSL templates into a typed Rust crate with
//! pre-rendered, naga-validated shaders.
//!
//! Pure: [`generate`] takes file contents in memory and returns files; `xtask` does all IO.
//! Pipeline: `manifest` (serde, strict) → `model` (validated op, typed expressions) →
//! `wgsl` (render, validate, reflect) and `rust` (quote → syn → prettyplease).

pub mod diag;
pub mod expr;
pub mod hints;
pub mod manifest;
pub mod model;
pub mod rust;
pub mod webgpu;
pub mod wgsl;

use std::collections::{BTreeMap, BTreeSet};

pub use diag::{Diagnostic, Diagnostics};

/// Where the generated files live, relative to the project root.
pub const GENERATED_DIR: &str = "kernels/kernels/src/generated";

/// Everything codegen reads.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Manifest path relative to the project root (`manifests/x.manifest.json`) → contents.
    pub manifests: BTreeMap<String, String>,
    /// Template name relative to `templates/` (`x.wgsl.jinja`, `macros/y.jinja`) → contents.
    pub templates: BTreeMap<String, String>,
    /// Implementation hints (`manifests/<op>.hints.json`) → contents; see [`hints`].
    pub hints: BTreeMap<String, String>,
    /// Op modules (`mrotary_embedding`) that have hand-written host-side checks in
    /// `kernels/kernels/src/host_checks/<module>.rs`; the generated code calls them.
    pub host_checks: BTreeSet<String>,
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the project root.
    pub path: String,
    pub contents: String,
}

/// The result of a successful run.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Every generated file, sorted by path.
    pub files: Vec<GeneratedFile>,
    /// Things worth telling the user that are not errors (ops skipped for lack of templates).
    pub notes: Vec<String>,
    /// Number of shaders rendered and validated.
    pub shader_count: usize,
    /// Every distinct shader written, with what validators beyond naga need (the text a
    /// browser compiles, features, overrides, bind group) and naga's translations.
    pub shaders: Vec<GeneratedShader>,
}

/// One shader file of [`Output::files`] and how it was built.
#[derive(Debug, Clone)]
pub struct GeneratedShader {
    /// The op's qualified name (`com.microsoft.BiasSoftmax`).
    pub op: String,
    /// The file's path, as in [`Output::files`].
    pub path: String,
    pub shader: wgsl::Shader,
}

/// Runs the whole pipeline. Errors from every manifest and template are collected.
pub fn generate(inputs: &Inputs) -> Result<Output, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let mut hints = Vec::new();
    for (path, text) in &inputs.hints {
        match hints::parse(path, text) {
            Ok(parsed) => hints.push((path.as_str(), parsed, false)),
            Err(diagnostic) => diagnostics.push(diagnostic),
        }
    }
    let mut ops = Vec::new();
    for (path, text) in &inputs.manifests {
        let mut manifest = match manifest::parse(text) {
            Ok(manifest) => manifest,
            Err((json_path, message)) => {
                diagnostics.push(Diagnostic::new(path, json_path, message));
                continue;
            }
        };
        let qualified = format!("{}.{}", manifest.domain, manifest.name);
        for (hints_path, op_hints, used) in hints.iter_mut().filter(|(_, h, _)| h.op == qualified) {
            hints::apply(hints_path, op_hints, &mut manifest, &mut diagnostics);
            *used = true;
        }
        match model::build_op(path, &manifest) {
            Ok(op) => ops.push(op),
            Err(errors) => diagnostics.extend(errors),
        }
    }
    for (path, op_hints, used) in &hints {
        if !used {
            diagnostics.push(Diagnostic::new(
                path,
                "op",
                format!("no manifest defines `{}`", op_hints.op),
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for op in &ops {
        if !seen.insert(op.module.clone()) {
            diagnostics.push(Diagnostic::new(
                &op.file,
                "name",
                format!("another manifest also generates module `{}`", op.module),
            ));
        }
    }

    let (env, template_errors) = wgsl::environment(&inputs.templates);
    diagnostics.0.extend(template_errors);
    let mut output = Output::default();
    let mut generated_ops = Vec::new();
    for op in &ops {
        let templates: BTreeSet<&str> = op
            .variants
            .iter()
            .flat_map(|v| &v.passes)
            .map(|p| p.template.as_str())
            .collect();
        if !templates.is_empty() && templates.iter().all(|t| !inputs.templates.contains_key(*t)) {
            output.notes.push(format!(
                "{}: skipped, none of its templates exist yet ({}); the manifest parses and type-checks",
                op.file,
                templates.iter().copied().collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        let shaders = match wgsl::shaders(op, &env, &inputs.templates) {
            Ok(shaders) => shaders,
            Err(errors) => {
                diagnostics.extend(errors);
                continue;
            }
        };
        let input = rust::OpInput {
            op,
            shaders: &shaders,
            host_check: inputs.host_checks.contains(&op.module),
        };
        match rust::op_module(&input) {
            Ok(module) => {
                output.files.push(GeneratedFile {
                    path: format!("{GENERATED_DIR}/{}.rs", op.module),
                    contents: module,
                });
            }
            Err(message) => diagnostics.push(Diagnostic::new(&op.file, "", message)),
        }
        output.shader_count += shaders.iter().filter(|s| s.same_as.is_none()).count();
        for shader in shaders.iter().filter(|s| s.same_as.is_none()) {
            let path = format!("{GENERATED_DIR}/{}/{}", op.module, shader.file_name);
            output.files.push(GeneratedFile {
                path: path.clone(),
                contents: shader.text.clone(),
            });
            output.shaders.push(GeneratedShader {
                op: format!("{}.{}", op.domain, op.name),
                path,
                shader: shader.clone(),
            });
        }
        generated_ops.push(op);
    }
    match rust::root_module(&generated_ops) {
        Ok(root) => output.files.push(GeneratedFile {
            path: format!("{GENERATED_DIR}/mod.rs"),
            contents: root,
        }),
        Err(message) => diagnostics.push(Diagnostic::new("manifests/", "", message)),
    }
    output.files.sort_by(|a, b| a.path.cmp(&b.path));
    diagnostics.into_result(output)
}
