//! The namespaces a `schemaVersion: 1` template reads besides its constants: the loader hands
//! templates `args`, `attrs`, `present`, `ranks` and `device` too (and the Hub runtime the
//! manifest's derives by bare name). Each member a pass's
//! templates read (`args.hidden`, `present.maskT`, `device.limits.maxComputeWorkgroupSizeX`,
//! found by minijinja's own analysis of every template the pass reaches) becomes a pass input
//! of that name, so it is settled like any other template value: a literal where it has a
//! finite domain, an override where it is only printed, classes where it is only tested.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::Op;
use crate::templates::{TemplatePaths, usage};

/// The namespaces whose members become template values; `shapes` holds lists, which neither a
/// literal per value nor an override can carry.
const NAMESPACES: [&str; 6] = [
    "args.",
    "attrs.",
    "present.",
    "ranks.",
    "device.limits.",
    "device.adapterInfo.",
];

/// Adds the namespace members each pass's templates read to the pass's inputs; reports the
/// reads of `shapes`.
pub fn add_namespace_values(
    op: &mut Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    if !op.templates.loader_context {
        return diagnostics;
    }
    // Passes share templates (and includes): each is analysed once.
    let mut names_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for v in 0..op.variants.len() {
        for p in 0..op.variants[v].passes.len() {
            let pass = &op.variants[v].passes[p];
            let reached = usage::usage(paths, &pass.template, &BTreeSet::new()).templates;
            let mut read = BTreeSet::new();
            for name in &reached {
                if !names_of.contains_key(name) {
                    let Ok(template) = env.get_template(name) else {
                        continue;
                    };
                    let names: BTreeSet<String> =
                        template.undeclared_variables(true).into_iter().collect();
                    let shapes = names
                        .iter()
                        .find(|n| *n == "shapes" || n.starts_with("shapes."));
                    if let Some(first) = shapes {
                        diagnostics.push(Diagnostic::new(
                            name,
                            "",
                            format!("the template reads `{first}`: a tensor's shape is a list known only per call, which neither a shader per value nor a pipeline override can carry; give the template what it needs as a variant constant (`\"ROWS\": \"shapes.xT[0]\"`) and read that"),
                        ));
                    }
                    names_of.insert(name.clone(), names);
                }
                read.extend(names_of.get(name).into_iter().flatten().cloned());
            }
            let variant = &op.variants[v];
            // The Hub runtime spreads the manifest's derives into the context too; the
            // variant's and the pass's values of the same name shadow them.
            let derive_read = |name: &String| {
                op.templates.derives_visible
                    && op.derives.iter().any(|d| &d.name == name)
                    && !variant.constants.iter().any(|c| &c.name == name)
            };
            let members = read.into_iter().filter(|name| {
                derive_read(name)
                    || NAMESPACES
                        .iter()
                        .any(|ns| name.strip_prefix(ns).is_some_and(|m| !m.contains('.')))
            });
            let values: Vec<_> = members
                .filter(|name| !pass.inputs.iter().any(|input| &input.name == name))
                .filter_map(|name| super::lower::namespace_value(op, &name))
                .collect();
            op.variants[v].passes[p].inputs.extend(values);
        }
    }
    diagnostics
}
