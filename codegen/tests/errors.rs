//! Data-driven codegen error tests: every folder under `tests/errors/` holds a `manifest.json`,
//! optionally `hints.json`, its templates (`*.jinja`) and `expected.txt`: the exact diagnostics
//! `generate` reports (or `ok: …` when it succeeds). Run with `UPDATE_EXPECT=1` to rewrite the expectations.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

fn run_case(dir: &Path) -> String {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("case");
    let mut inputs = codegen::Inputs::default();
    let mut templates = BTreeMap::new();
    for entry in fs::read_dir(dir).expect("case folder is readable") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if file == "manifest.json" {
            let text = fs::read_to_string(&path).expect("manifest is readable");
            inputs
                .manifests
                .insert(format!("manifests/{name}.manifest.json"), text);
        } else if file == "hints.json" {
            let text = fs::read_to_string(&path).expect("hints are readable");
            inputs
                .hints
                .insert(format!("manifests/{name}.hints.json"), text);
        } else if file.ends_with(".jinja") {
            templates.insert(
                file,
                fs::read_to_string(&path).expect("template is readable"),
            );
        }
    }
    inputs.templates = templates;
    inputs.host_checks = BTreeSet::new();
    match codegen::generate(&inputs) {
        Ok(output) => {
            let mut text = format!(
                "ok: {} files, {} shaders\n",
                output.files.len(),
                output.shader_count
            );
            for note in &output.notes {
                text.push_str(&format!("note: {note}\n"));
            }
            text
        }
        Err(diagnostics) => format!("{diagnostics}\n"),
    }
}

#[test]
fn codegen_errors_match_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .expect("tests/errors exists")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    let mut failures = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        let actual = run_case(dir);
        let expected_path = dir.join("expected.txt");
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if update {
                fs::write(&expected_path, &actual).expect("expected.txt is writable");
            } else {
                failures.push(format!(
                    "--- {}\nexpected:\n{expected}\nactual:\n{actual}",
                    dir.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) differ (UPDATE_EXPECT=1 rewrites):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(dirs.len() >= 10, "the error fixtures went missing");
}
