//! Data-driven codegen error tests: every folder under `tests/errors/` is a package: a
//! `manifest.json`, optionally `hints.json`, its templates (`*.jinja`), optionally an include
//! root `_shared/`, and `expected.txt`: the exact diagnostics
//! `generate` reports (or `ok: …` when it succeeds). Run with `UPDATE_EXPECT=1` to rewrite the expectations.

use std::fs;
use std::path::Path;

use expect_test::expect_file;

fn run_case(dir: &Path) -> String {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("case");
    let mut inputs = codegen::Inputs::default();
    let mut package = codegen::Package {
        dir: name.to_owned(),
        ..codegen::Package::default()
    };
    for entry in fs::read_dir(dir).expect("case folder is readable") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let text = || fs::read_to_string(&path).expect("case file is readable");
        if file == "manifest.json" {
            package.manifest = text();
        } else if file == "hints.json" {
            package.hints = Some((format!("{name}/hints.json"), text()));
        } else if file.ends_with(".jinja") {
            inputs.templates.insert(format!("{name}/{file}"), text());
        }
    }
    // A `_shared` folder is the case's include root.
    let shared = dir.join("_shared");
    if shared.is_dir() {
        inputs.include_root = Some(format!("{name}/_shared"));
        let mut stack = vec![shared.clone()];
        while let Some(folder) = stack.pop() {
            for entry in fs::read_dir(&folder).expect("shared folder is readable") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let relative = path.strip_prefix(dir).expect("inside the case");
                let shown = relative.to_string_lossy().replace('\\', "/");
                let text = fs::read_to_string(&path).expect("template is readable");
                inputs.templates.insert(format!("{name}/{shown}"), text);
            }
        }
    }
    inputs.packages.push(package);
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
    let mut dirs: Vec<_> = fs::read_dir(&root)
        .expect("tests/errors exists")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        expect_file![dir.join("expected.txt")].assert_eq(&run_case(dir));
    }
    assert!(dirs.len() >= 10, "the error fixtures went missing");
}
