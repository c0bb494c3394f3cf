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

use std::fs;
use std::path::Path;

use expect_test::expect_file;
use fuzz::mutation::Case;

/// The seed package `name` as the generator's inputs: its folder is the package folder, so
/// diagnostics read `scale/manifest.json`.
fn seed(root: &Path, name: &str) -> kernel_codegen::Inputs {
    let dir = root.join("seeds").join(name);
    let mut inputs = kernel_codegen::Inputs::default();
    let mut package = kernel_codegen::Package {
        dir: name.to_owned(),
        ..kernel_codegen::Package::default()
    };
    let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("seed {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let text = fs::read_to_string(&path).expect("seed file is readable");
        if file == "manifest.json" {
            package.manifest = text;
        } else if file.ends_with(".jinja") {
            inputs.templates.insert(format!("{name}/{file}"), text);
        }
    }
    inputs.packages.push(package);
    inputs
}

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

/// The inputs a case makes of its seed.
fn case_inputs(root: &Path, head: &str) -> Result<kernel_codegen::Inputs, String> {
    let case = Case::parse(head).map_err(|e| e.to_string())?;
    let name = case
        .from
        .as_deref()
        .ok_or("a case starts with `from <seed>`")?;
    let mut inputs = case.apply(&seed(root, name)).map_err(|e| e.to_string())?;
    let shared = format!("{name}/_shared/");
    if inputs.templates.keys().any(|t| t.starts_with(&shared)) {
        inputs.include_root = Some(format!("{name}/_shared"));
    }
    Ok(inputs)
}

/// Every fixture, as (path, the part before `---`).
fn fixtures(root: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut paths: Vec<_> = fs::read_dir(root)
        .expect("tests/errors exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = fs::read_to_string(&path).expect("fixture is readable");
            let head = text
                .split_once("\n---\n")
                .map_or(text.as_str(), |(head, _)| head)
                .to_owned();
            (path, head)
        })
        .collect()
}

#[test]
fn codegen_errors_match_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let fixtures = fixtures(&root);
    for (path, head) in &fixtures {
        let actual = case_inputs(&root, head)
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
        let mut inputs = case_inputs(&root, &head).expect("the case applies");
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
