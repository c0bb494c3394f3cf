//! Compiles `webgpu-kernels` manifests and Jinja WGSL templates into a typed Rust crate with
//! pre-rendered, naga-validated shaders.
//!
//! Pure: [`generate`] takes file contents in memory and returns files; `xtask` does all IO.
//! Pipeline: `manifest` (serde, strict) → `model` (validated op, typed expressions) →
//! `wgsl` (render, validate, reflect) and `rust` (quote → syn → prettyplease).

pub mod config;
pub mod diag;
pub mod expr;
pub mod hints;
pub mod manifest;
pub mod model;
pub mod rust;
pub mod templates;
pub mod webgpu;
pub mod wgsl;

use std::collections::{BTreeMap, BTreeSet};

pub use config::{Config, ConfigError, Report};
pub use diag::{Diagnostic, Diagnostics};

/// The runtime crate generated code names when [`Inputs::runtime_path`] is empty.
pub const DEFAULT_RUNTIME_PATH: &str = "::kernel_runtime";

/// Everything codegen reads. Paths are display paths (`/`-separated, as the caller wants
/// them shown in diagnostics); nothing is read from disk.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// One entry per op package.
    pub packages: Vec<Package>,
    /// Every template of every package (under the package's folder) and of the include root
    /// (under [`Inputs::include_root`]): display path → contents.
    pub templates: BTreeMap<String, String>,
    /// The folder shared templates are included from (`{% include "ops/_shared/x" %}`).
    pub include_root: Option<String>,
    /// Hand-written host-side checks: qualified op name → path of a Rust function
    /// `fn(&[ArgView], &Attrs) -> Result<(), OpError>` the generated `plan` calls.
    pub host_checks: BTreeMap<String, String>,
    /// The path generated code uses for the runtime crate (`::kernel_runtime` when empty);
    /// wgpu and half are named through its re-exports, so users depend on one crate.
    pub runtime_path: String,
}

/// One op package: a folder with `manifest.json` and the templates it names.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// The package folder's display path; the manifest is `<dir>/manifest.json`.
    pub dir: String,
    /// The text of `manifest.json`.
    pub manifest: String,
    /// Implementation hints kept beside the package (see [`hints`]): display path, text.
    pub hints: Option<(String, String)>,
}

impl Package {
    /// The manifest's display path.
    pub fn manifest_path(&self) -> String {
        if self.dir.is_empty() {
            "manifest.json".to_owned()
        } else {
            format!("{}/manifest.json", self.dir)
        }
    }
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Path relative to the output folder (`mod.rs`, `<op>.rs`, `<op>/<shader>.wgsl`).
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

/// One shader of an op's table (the `<op>.shaders` file of [`Output::files`]) and how it was
/// built.
#[derive(Debug, Clone)]
pub struct GeneratedShader {
    /// The op's qualified name (`com.microsoft.BiasSoftmax`).
    pub op: String,
    /// The table file and the shader's name in it (`bias_softmax.shaders#packed_rows.main…`).
    pub path: String,
    pub shader: wgsl::Shader,
}

/// Removes the variants that require a feature no wgpu device offers, saying so in `notes`.
fn drop_unavailable_variants(op: &mut model::Op, notes: &mut Vec<String>) {
    op.variants.retain(|variant| {
        let missing = variant
            .required_features
            .iter()
            .find(|f| expr::builtins::UNAVAILABLE_FEATURES.contains(&f.as_str()));
        if let Some(feature) = missing {
            notes.push(format!(
                "{}: variant `{}` is not built: it requires `{feature}`, which no wgpu device offers",
                op.file, variant.id
            ));
        }
        missing.is_none()
    });
}

/// What the front end made of the packages: the ops as the emitters see them (templates
/// settled), and the template environments that render them.
struct FrontEnd {
    ops: Vec<model::Op>,
    notes: Vec<String>,
    /// Modules whose template values could not be settled (already reported).
    unsettled: BTreeSet<String>,
    /// Per manifest file, where the expressions its hints added came from, so that errors
    /// found after the model is built point at the hints file too.
    origins: BTreeMap<String, hints::Origins>,
    seed_env: minijinja::Environment<'static>,
    v1_env: Option<minijinja::Environment<'static>>,
}

impl FrontEnd {
    /// Points `diagnostics` about `op` at the hints file where a hint added the expression.
    fn relocate(&self, op: &model::Op, diagnostics: &mut Diagnostics) {
        if let Some(origins) = self.origins.get(&op.file) {
            origins.relocate(&op.file, diagnostics);
        }
    }

    fn env_of(&self, op: &model::Op) -> &minijinja::Environment<'static> {
        match (&op.dialect, &self.v1_env) {
            (manifest::Dialect::V1, Some(env)) => env,
            _ => &self.seed_env,
        }
    }
}

/// Reads every package into its validated op model, applies its hints and settles how its
/// templates use each value; what fails is reported in `diagnostics` and left out.
fn front_end(inputs: &Inputs, diagnostics: &mut Diagnostics) -> FrontEnd {
    let paths = templates::TemplatePaths {
        templates: &inputs.templates,
        include_root: inputs.include_root.as_deref(),
    };
    let mut ops = Vec::new();
    let mut unavailable_notes = Vec::new();
    let mut all_origins = BTreeMap::new();
    for package in &inputs.packages {
        let file = package.manifest_path();
        let mut manifest = match manifest::parse_any(&package.manifest) {
            Ok(manifest::AnyManifest::Seed(manifest)) => *manifest,
            Ok(manifest::AnyManifest::V1(manifest)) => match manifest.into_common() {
                Ok(common) => common,
                Err(problems) => {
                    for (json_path, message) in problems {
                        diagnostics.push(Diagnostic::new(&file, json_path, message));
                    }
                    continue;
                }
            },
            Err((json_path, message)) => {
                diagnostics.push(Diagnostic::new(&file, json_path, message));
                continue;
            }
        };
        let qualified = format!("{}.{}", manifest.domain, manifest.name);
        let mut origins = hints::Origins::default();
        if let Some((hints_path, text)) = &package.hints {
            // An op whose hints fail is not built further: without them its templates
            // would fail too, and those errors would only repeat the hints'.
            let before = diagnostics.0.len();
            match hints::parse(hints_path, text) {
                Ok(op_hints) if op_hints.op == qualified => {
                    origins = hints::apply(hints_path, &op_hints, &mut manifest, diagnostics);
                }
                Ok(op_hints) => diagnostics.push(Diagnostic::new(
                    hints_path,
                    "op",
                    format!(
                        "these hints are for `{}` but sit beside the package of `{qualified}`",
                        op_hints.op
                    ),
                )),
                Err(diagnostic) => diagnostics.push(diagnostic),
            }
            if diagnostics.0.len() > before {
                continue;
            }
        }
        for variant in &mut manifest.variants {
            for pass in &mut variant.passes {
                pass.source.shader = paths.resolve_shader(&package.dir, &pass.source.shader);
            }
        }
        match model::build_op(&file, &manifest) {
            Ok(mut op) => {
                drop_unavailable_variants(&mut op, &mut unavailable_notes);
                ops.push(op);
            }
            Err(mut errors) => {
                origins.relocate(&file, &mut errors);
                diagnostics.extend(errors);
            }
        }
        all_origins.insert(file, origins);
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
    let include_root = inputs.include_root.as_deref();
    let (seed_env, template_errors) =
        wgsl::environment(&inputs.templates, include_root, manifest::Dialect::Seed);
    diagnostics.0.extend(template_errors);
    // The same templates, parsed once more only when an op of the other dialect renders them
    // (their syntax errors are reported once, above).
    let v1_env = ops
        .iter()
        .any(|op| op.dialect == manifest::Dialect::V1)
        .then(|| wgsl::environment(&inputs.templates, include_root, manifest::Dialect::V1).0);
    let mut front = FrontEnd {
        ops,
        notes: unavailable_notes,
        unsettled: BTreeSet::new(),
        origins: all_origins,
        seed_env,
        v1_env,
    };
    let mut ops = std::mem::take(&mut front.ops);
    for op in &mut ops {
        let mut problems = wgsl::settle(op, front.env_of(op), &paths);
        front.relocate(op, &mut problems);
        if !problems.is_empty() {
            front.unsettled.insert(op.module.clone());
            diagnostics.extend(problems);
        }
    }
    front.ops = ops;
    front
}

/// The op models of `inputs` as the emitters see them: manifests read in either dialect, hints
/// applied, template values settled. For tools and tests that evaluate a package's
/// expressions themselves; [`generate`] is this followed by the emitters.
pub fn models(inputs: &Inputs) -> Result<Vec<model::Op>, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let front = front_end(inputs, &mut diagnostics);
    diagnostics.into_result(front.ops)
}

/// Runs the whole pipeline. Errors from every manifest and template are collected.
pub fn generate(inputs: &Inputs) -> Result<Output, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let paths = templates::TemplatePaths {
        templates: &inputs.templates,
        include_root: inputs.include_root.as_deref(),
    };
    let front = front_end(inputs, &mut diagnostics);
    let ops = &front.ops;
    let known: BTreeSet<String> = ops.iter().map(|op| op.qualified_name()).collect();
    for op_name in inputs.host_checks.keys().filter(|n| !known.contains(*n)) {
        diagnostics.push(Diagnostic::new(
            "host checks",
            op_name.as_str(),
            format!("a host check is registered for `{op_name}`, which no package defines"),
        ));
    }
    let runtime_path = if inputs.runtime_path.is_empty() {
        DEFAULT_RUNTIME_PATH
    } else {
        inputs.runtime_path.as_str()
    };
    let runtime: syn::Path = match syn::parse_str(runtime_path) {
        Ok(path) => path,
        Err(err) => {
            diagnostics.push(Diagnostic::new(
                "runtime path",
                "",
                format!("`{runtime_path}` is not a Rust path: {err}"),
            ));
            return Err(diagnostics);
        }
    };
    let mut host_checks = BTreeMap::new();
    for (op_name, path) in &inputs.host_checks {
        match syn::parse_str::<syn::Path>(path) {
            Ok(parsed) => {
                host_checks.insert(op_name.as_str(), parsed);
            }
            Err(err) => diagnostics.push(Diagnostic::new(
                "host checks",
                op_name.as_str(),
                format!("`{path}` is not a Rust path: {err}"),
            )),
        }
    }

    let mut output = Output {
        notes: front.notes.clone(),
        ..Output::default()
    };
    let mut generated_ops = Vec::new();
    let unsettled = &front.unsettled;
    let env_of = |op: &model::Op| front.env_of(op);
    for op in ops.iter().filter(|op| !unsettled.contains(&op.module)) {
        let templates: BTreeSet<&str> = op
            .variants
            .iter()
            .flat_map(|v| &v.passes)
            .map(|p| p.template.as_str())
            .collect();
        if !templates.is_empty() && templates.iter().all(|t| !paths.exists(t)) {
            output.notes.push(format!(
                "{}: skipped, none of its templates exist yet ({}); the manifest parses and type-checks",
                op.file,
                templates.iter().copied().collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        let shaders = match wgsl::shaders(op, env_of(op), &paths, &mut output.notes) {
            Ok(shaders) => shaders,
            Err(mut errors) => {
                front.relocate(op, &mut errors);
                diagnostics.extend(errors);
                continue;
            }
        };
        let input = rust::OpInput {
            op,
            shaders: &shaders,
            host_check: host_checks.get(op.qualified_name().as_str()).cloned(),
            runtime: runtime.clone(),
        };
        match rust::op_module(&input) {
            Ok(module) => {
                output.files.push(GeneratedFile {
                    path: format!("{}.rs", op.module),
                    contents: module,
                });
            }
            Err(message) => diagnostics.push(Diagnostic::new(&op.file, "", message)),
        }
        match rust::shader_table(op, &shaders) {
            Ok(table) => output.files.push(GeneratedFile {
                path: format!("{}.shaders", op.module),
                contents: table,
            }),
            Err(message) => diagnostics.push(Diagnostic::new(&op.file, "", message)),
        }
        output.shader_count += shaders.iter().filter(|s| s.same_as.is_none()).count();
        for shader in shaders.iter().filter(|s| s.same_as.is_none()) {
            let path = format!("{}.shaders#{}", op.module, shader.file_name);
            output.shaders.push(GeneratedShader {
                op: op.qualified_name(),
                path,
                shader: shader.clone(),
            });
        }
        generated_ops.push(op);
    }
    match rust::root_module(&generated_ops, &runtime) {
        Ok(root) => output.files.push(GeneratedFile {
            path: "mod.rs".to_owned(),
            contents: root,
        }),
        Err(message) => diagnostics.push(Diagnostic::new("mod.rs", "", message)),
    }
    output.files.sort_by(|a, b| a.path.cmp(&b.path));
    diagnostics.into_result(output)
}
