//! The third-party packages of `../shared/corpus` (or `$KERNEL_CORPUS_DIR`), read as a kernel
//! author's packages would be. Skips, saying so, when the corpus is absent; CI has it.

use std::fs;
use std::path::PathBuf;

/// The corpus folder, when present.
fn corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("KERNEL_CORPUS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no package corpus at {} (set KERNEL_CORPUS_DIR)",
            dir.display()
        );
        None
    }
}

/// Every package folder (holding a `manifest.json`) of every collection in the corpus.
fn packages(corpus: &PathBuf) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for collection in fs::read_dir(corpus).expect("corpus is readable").flatten() {
        let Ok(entries) = fs::read_dir(collection.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("manifest.json").is_file() {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_corpus_manifest_parses_strictly_in_its_dialect() {
    let Some(corpus) = corpus() else { return };
    let packages = packages(&corpus);
    assert!(
        packages.len() >= 20,
        "only {} packages found",
        packages.len()
    );
    let mut failures = Vec::new();
    for package in &packages {
        let path = package.join("manifest.json");
        let text = fs::read_to_string(&path).expect("manifest is readable");
        match kernel_codegen::manifest::read(&text) {
            Ok(declared) if declared.dialect == kernel_codegen::manifest::Dialect::V1 => {}
            Ok(_) => failures.push(format!("{}: read as the seed dialect", path.display())),
            Err(problems) => {
                failures.extend(problems.iter().map(|(json_path, message)| {
                    format!("{}: {json_path}: {message}", path.display())
                }))
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "{} corpus manifests parse as schemaVersion 1",
        packages.len()
    );
}

/// The project's hints for corpus packages whose shader text depends on a value the manifest
/// leaves unbounded (a head or hidden size sizing a function-scope array).
fn corpus_hints() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/corpus/hints")
}

/// Runs packages through the generator together, with the hints in `hints`; all the
/// diagnostics when they do not come through.
fn diagnostics(
    packages: &[&PathBuf],
    shared: &std::path::Path,
    hints: Option<&std::path::Path>,
) -> Result<(), kernel_codegen::Diagnostics> {
    let mut config = kernel_codegen::Config::new();
    for package in packages {
        config.package(package);
    }
    config
        .emit_rerun_if_changed(false)
        .out_dir(std::env::temp_dir().join("corpus-unused"));
    if shared.is_dir() {
        config.include_root(shared);
    }
    if let Some(hints) = hints {
        config.hints_dir(hints);
    }
    let (inputs, _) = config.read_inputs().expect("corpus is readable");
    kernel_codegen::generate(&inputs).map(|_| ())
}

/// Runs packages through the generator together; the first diagnostic when they do not come
/// through.
fn generate(packages: &[&PathBuf], shared: &std::path::Path, hints: bool) -> Result<(), String> {
    let hints = hints.then(corpus_hints);
    diagnostics(packages, shared, hints.as_deref()).map_err(|diagnostics| {
        let first = diagnostics
            .0
            .first()
            .map(ToString::to_string)
            .unwrap_or_default();
        format!(
            "{} diagnostics, first: {}",
            diagnostics.0.len(),
            first.lines().next().unwrap_or("")
        )
    })
}

/// Every corpus package through the generator, one at a time: manifest checked, every shader
/// rendered and validated by naga, Rust emitted. Without hints every package but those that
/// need a declared specialisation set comes through; with the project's hints all do. The
/// emitted Rust is compiled, and run on an adapter, by the `corpus` crate
/// (`examples/corpus`) for the packages it builds.
#[test]
fn corpus_packages_through_the_generator() {
    let Some(corpus) = corpus() else { return };
    let shared = corpus.join("gemma-4/_shared_assets");
    let packages = packages(&corpus);
    let needs_hints = [
        "com.xenova.gemma4.Attention",
        "com.xenova.gemma4.QatEmbedGather",
    ];
    let mut generated = 0;
    let mut failures = Vec::new();
    let mut hinted = Vec::new();
    for package in &packages {
        let name = package.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        match generate(&[package], &shared, false) {
            Ok(()) => generated += 1,
            Err(first) if needs_hints.contains(&name) => {
                eprintln!("{name} (without hints): {first}");
                hinted.push(package);
            }
            Err(first) => failures.push(format!("{name}: {first}")),
        }
    }
    // The project's hints declare what those need; so do the hints their errors print.
    if !hinted.is_empty()
        && let Err(first) = generate(&hinted, &shared, true)
    {
        failures.push(format!("with hints: {first}"));
    }
    for package in &hinted {
        if let Err(problem) = builds_with_printed_hints(package, &shared) {
            failures.push(problem);
        }
    }
    eprintln!(
        "{generated} of {} corpus packages come through the generator without hints, {} with",
        packages.len(),
        if failures.is_empty() {
            packages.len()
        } else {
            generated
        }
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(generated >= packages.len() - needs_hints.len());
}

/// Generates `package` with the hints files its errors print, written to a folder of their
/// own.
fn builds_with_printed_hints(package: &PathBuf, shared: &std::path::Path) -> Result<(), String> {
    let name = package.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    let Err(errors) = diagnostics(&[package], shared, None) else {
        return Ok(());
    };
    let unsuggested: Vec<String> = errors
        .0
        .iter()
        .filter(|d| d.suggestion.is_none())
        .map(ToString::to_string)
        .collect();
    if !unsuggested.is_empty() {
        return Err(format!(
            "{name}: errors without a hints entry:\n{}",
            unsuggested.join("\n")
        ));
    }
    let dir = std::env::temp_dir().join(format!("printed-hints-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for (file, text) in errors.suggested_hints() {
        fs::write(dir.join(&file), &text).map_err(|e| e.to_string())?;
        eprintln!("{name}: printed hints {file}: {}", text.replace('\n', " "));
    }
    let result = diagnostics(&[package], shared, Some(&dir))
        .map_err(|still| format!("{name} with its printed hints: {still}"));
    let _ = fs::remove_dir_all(&dir);
    result
}
