//! The front end: every package read into the op model the emitters see. Its manifest is
//! read in its dialect ([`manifest`]), its hints applied ([`hints`]), the model built
//! ([`lower`]), variants no wgpu device can run dropped, and then four passes
//! settle how the templates use each value: namespace values the templates read
//! ([`namespace_values`]), which values are static and which reach the shader as overrides
//! ([`settle`]), the WGSL types of those overrides ([`override_types`]), and the hints that
//! would make an unsettled value settle ([`suggest`]).

pub(crate) mod hints;
mod lower;
pub mod manifest;
mod namespace_values;
mod override_types;
pub(crate) mod settle;
mod suggest;

use std::collections::{BTreeMap, BTreeSet};

use crate::templates::render::Flavour;
use crate::{Diagnostic, Diagnostics, Inputs, expr, model, templates};

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
pub(crate) struct FrontEnd {
    pub(crate) ops: Vec<model::Op>,
    pub(crate) notes: Vec<String>,
    /// Modules whose template values could not be settled (already reported).
    pub(crate) unsettled: BTreeSet<String>,
    /// Per manifest file, where the expressions its hints added came from, so that errors
    /// found after the model is built point at the hints file too.
    pub(crate) origins: BTreeMap<String, hints::Origins>,
    /// Per manifest file, where its declaration's paths are written in it.
    pub(crate) source_paths: BTreeMap<String, Vec<(String, String)>>,
    /// The templates with undefined names an error and minijinja's filters, and in each
    /// other flavour an op needs (undefined names falsy in conditions, the Hub engine's
    /// filters).
    pub(crate) strict_env: minijinja::Environment<'static>,
    pub(crate) other_envs: Vec<(Flavour, minijinja::Environment<'static>)>,
}

impl FrontEnd {
    /// Points `diagnostics` about `op` at the hints file where a hint added the expression.
    pub(crate) fn relocate(&self, op: &model::Op, diagnostics: &mut Diagnostics) {
        if let Some(origins) = self.origins.get(&op.file) {
            origins.relocate(&op.file, diagnostics);
        }
        if let Some(paths) = self.source_paths.get(&op.file) {
            diagnostics.rewrite_paths(&op.file, paths);
        }
    }

    pub(crate) fn env_of(&self, op: &model::Op) -> &minijinja::Environment<'static> {
        let flavour = Flavour::of(&op.templates);
        (self.other_envs.iter())
            .find(|(f, _)| *f == flavour)
            .map_or(&self.strict_env, |(_, env)| env)
    }
}

/// Reads every package into its validated op model, applies its hints and settles how its
/// templates use each value; what fails is reported in `diagnostics` and left out.
pub(crate) fn front_end(inputs: &Inputs, diagnostics: &mut Diagnostics) -> FrontEnd {
    let paths = templates::TemplatePaths {
        templates: &inputs.templates,
        include_root: inputs.include_root.as_deref(),
    };
    let mut ops = Vec::new();
    let mut unavailable_notes = Vec::new();
    let mut all_origins = BTreeMap::new();
    let mut all_source_paths = BTreeMap::new();
    for package in &inputs.packages {
        let file = package.manifest_path();
        let mut manifest = match manifest::read(&package.manifest) {
            Ok(manifest) => manifest,
            Err(problems) => {
                for (json_path, message) in problems {
                    diagnostics.push(Diagnostic::new(&file, json_path, message));
                }
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
        match lower::build_op(&file, &manifest) {
            Ok(mut op) => {
                drop_unavailable_variants(&mut op, &mut unavailable_notes);
                op.hint_sources = origins.hint_sources();
                for (id, reason) in &origins.left_out {
                    op.variants.retain(|v| v.id != *id);
                    let hints_path = package.hints.as_ref().map_or("", |(path, _)| path.as_str());
                    unavailable_notes.push(format!(
                        "{file}: variant `{id}` is left out by {hints_path}: {reason}"
                    ));
                }
                ops.push(op);
            }
            Err(mut errors) => {
                origins.relocate(&file, &mut errors);
                errors.rewrite_paths(&file, &manifest.source_paths);
                diagnostics.extend(errors);
            }
        }
        all_origins.insert(file.clone(), origins);
        all_source_paths.insert(file, std::mem::take(&mut manifest.source_paths));
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
    let (strict_env, template_errors) =
        templates::render::environment(&inputs.templates, include_root, Flavour::STRICT);
    diagnostics.0.extend(template_errors);
    // The same templates, parsed once more for each other flavour an op needs (their syntax
    // errors are reported once, above).
    let mut other_envs: Vec<(Flavour, minijinja::Environment<'static>)> = Vec::new();
    for op in &ops {
        let flavour = Flavour::of(&op.templates);
        if flavour != Flavour::STRICT && other_envs.iter().all(|(f, _)| *f != flavour) {
            let env = templates::render::environment(&inputs.templates, include_root, flavour);
            other_envs.push((flavour, env.0));
        }
    }
    let mut front = FrontEnd {
        ops,
        notes: unavailable_notes,
        unsettled: BTreeSet::new(),
        origins: all_origins,
        source_paths: all_source_paths,
        strict_env,
        other_envs,
    };
    let mut ops = std::mem::take(&mut front.ops);
    for op in &mut ops {
        let mut problems = namespace_values::add_namespace_values(op, front.env_of(op), &paths);
        problems.extend(templates::javascript::unsupported_constructs(op, &paths));
        problems.extend(settle::settle(op, front.env_of(op), &paths));
        override_types::settle_override_types(op, front.env_of(op));
        suggest::try_suggestions(op, front.env_of(op), &paths, &mut problems);
        front.relocate(op, &mut problems);
        if !problems.is_empty() {
            front.unsettled.insert(op.module.clone());
            diagnostics.extend(problems);
        }
    }
    front.ops = ops;
    front
}
