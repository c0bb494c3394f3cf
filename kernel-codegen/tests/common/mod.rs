//! The mutation-format fixtures shared by the data-driven tests (`errors.rs`, `check.rs`): a
//! case starts `from <seed>`, one of the small packages under `tests/errors/seeds/`, and
//! lists the edits that make it, then `---` and the expected outcome.

use std::fs;
use std::path::Path;

use fuzz::mutation::Case;

/// The seed package `name` (a folder of `seeds`) as the generator's inputs: its folder is the package folder, so
/// diagnostics read `scale/manifest.json`.
pub fn seed(seeds: &Path, name: &str) -> kernel_codegen::Inputs {
    let dir = seeds.join(name);
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

/// The inputs a case makes of its seed.
pub fn case_inputs(seeds: &Path, head: &str) -> Result<kernel_codegen::Inputs, String> {
    let case = Case::parse(head).map_err(|e| e.to_string())?;
    let name = case
        .from
        .as_deref()
        .ok_or("a case starts with `from <seed>`")?;
    let mut inputs = case.apply(&seed(seeds, name)).map_err(|e| e.to_string())?;
    let shared = format!("{name}/_shared/");
    if inputs.templates.keys().any(|t| t.starts_with(&shared)) {
        inputs.include_root = Some(format!("{name}/_shared"));
    }
    Ok(inputs)
}

/// Every fixture, as (path, the part before `---`).
pub fn fixtures(root: &Path) -> Vec<(std::path::PathBuf, String)> {
    let mut paths: Vec<_> = fs::read_dir(root)
        .expect("the fixtures folder exists")
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
