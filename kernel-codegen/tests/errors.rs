//! Data-driven codegen error tests, in the mutation format of the fuzz regressions
//! (`fuzz::mutation`): every `tests/errors/*.test` file starts `from <seed>`, names one of the
//! small packages under `tests/errors/seeds/` (`scale` in the seed dialect; `row-sum` and
//! `histogram` in `schemaVersion: 1`; `hub-add` in the Hub's dialect), then lists the edits
//! that make the case (JSON edits by pointer, line edits, `create` for a hints file or
//! another template), then a line `---`, then the exact outcome: the diagnostics `generate`
//! reports, or `ok: …` with its notes, warnings, uniform fields, the finite domains run-time values
//! were pinned to and the pipeline overrides. `UPDATE_EXPECT=1` rewrites the outcomes.
//!
//! A seed's templates under `_shared/` (created by a case) make its include root.

mod common;

use std::path::Path;

use common::{case_inputs, fixtures};
use expect_test::expect_file;

/// The outcome of generating `inputs`, as the fixtures write it.
fn outcome(inputs: &kernel_codegen::Inputs) -> String {
    match kernel_codegen::generate(inputs) {
        Ok(output) => {
            let mut text = format!(
                "ok: {} files, {} shaders\n",
                output.files.len(),
                output.shader_count
            );
            for note in &output.notes {
                text.push_str(&format!("note: {note}\n"));
            }
            for warning in &output.warnings {
                text.push_str(&format!("warning: {warning}\n"));
            }
            text.push_str(&settled_values(inputs));
            text
        }
        Err(diagnostics) => format!("{diagnostics}\n"),
    }
}

/// The value of every uniform field, the values each run-time value pinned to a finite domain
/// of its own is built for (one shader text per value, or fewer where values render alike), and
/// the pipeline overrides of every variant, with the WGSL type the shaders' uses settled.
fn settled_values(inputs: &kernel_codegen::Inputs) -> String {
    let mut text = String::new();
    for op in kernel_codegen::models(inputs).unwrap_or_default() {
        for variant in &op.variants {
            let bindings = variant.passes.iter().flat_map(|p| &p.bindings);
            for field in bindings
                .filter_map(|b| b.params.as_ref())
                .flat_map(|p| &p.fields)
            {
                text.push_str(&format!(
                    "uniform: variant `{}`, `{}`: {} = `{}`\n",
                    variant.id, field.name, field.wgsl_type, field.value.source
                ));
            }
            let passes = variant.passes.iter().flat_map(|p| &p.inputs);
            for value in variant.constants.iter().chain(passes) {
                if let Some(domain) = &value.domain {
                    let values: Vec<String> = domain.iter().map(ToString::to_string).collect();
                    text.push_str(&format!(
                        "domain: variant `{}`, `{}` (`{}`): {}\n",
                        variant.id,
                        value.name,
                        value.expr.source,
                        values.join(", ")
                    ));
                }
                if value.class == kernel_codegen::model::Class::Dynamic {
                    text.push_str(&format!(
                        "override: variant `{}`, `{}` (`{}`): {}\n",
                        variant.id,
                        value.name,
                        value.expr.source,
                        value.override_type.wgsl()
                    ));
                }
            }
        }
    }
    text
}

#[test]
fn codegen_errors_match_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let fixtures = fixtures(&root);
    for (path, head) in &fixtures {
        let actual = case_inputs(&root.join("seeds"), head)
            .map(|inputs| outcome(&inputs))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // The whole fixture is the expectation, its outcome recomputed after the edits.
        expect_file![path].assert_eq(&format!("{head}\n---\n{actual}"));
    }
    assert!(fixtures.len() >= 10, "the error fixtures went missing");
}

/// Where every error of a case prints a hints entry, the hints file those entries make
/// (`Diagnostics::suggested_hints`) lets the package generate.
#[test]
fn printed_hints_entries_make_their_packages_generate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let mut tried = Vec::new();
    for (path, head) in fixtures(&root) {
        let mut inputs = case_inputs(&root.join("seeds"), &head).expect("the case applies");
        let Err(diagnostics) = kernel_codegen::generate(&inputs) else {
            continue;
        };
        if !diagnostics.0.iter().all(|d| d.suggestion.is_some()) {
            continue;
        }
        let [(file, text)] = &diagnostics.suggested_hints()[..] else {
            panic!("{}: one op, one hints file", path.display());
        };
        let package = &mut inputs.packages[0];
        package.hints = Some((format!("{}/{file}", package.dir), text.clone()));
        if let Err(still) = kernel_codegen::generate(&inputs) {
            panic!(
                "{} with its printed hints:\n{text}\n{still}",
                path.display()
            );
        }
        tried.push(path);
    }
    assert!(
        tried.len() >= 3,
        "only {tried:?} print hints for every error"
    );
}
