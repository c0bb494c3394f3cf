//! The build-script API on real folders: reading a package tree, writing only what changed,
//! checking, and the errors a misplaced file gets.

use std::fs;
use std::path::{Path, PathBuf};

use codegen::{Config, ConfigError};

/// A fresh folder holding one package copied from the `ok` error fixture, with an include root.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codegen-config-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors/includes_ok");
    let package = dir.join("packages/test.Scale");
    fs::create_dir_all(package.join("..").join("_shared/common")).expect("scratch folders");
    fs::create_dir_all(&package).expect("package folder");
    for file in ["manifest.json", "scale.wgsl.jinja", "body.wgsl.jinja"] {
        fs::copy(fixture.join(file), package.join(file)).expect("copy");
    }
    fs::copy(
        fixture.join("_shared/common/math.wgsl.jinja"),
        dir.join("packages/_shared/common/math.wgsl.jinja"),
    )
    .expect("copy");
    dir
}

fn config(root: &Path) -> Config {
    let mut config = Config::new();
    config
        .root(root)
        .packages_in("packages")
        .include_root("packages/_shared")
        .out_dir("out")
        .emit_rerun_if_changed(false);
    config
}

#[test]
fn generate_writes_then_check_finds_fresh_and_stale_files() {
    let root = scratch("cycle");
    let first = config(&root).generate().expect("generates");
    assert_eq!(first.packages, 1);
    assert!(
        first.written.contains(&"mod.rs".to_owned()),
        "{:?}",
        first.written
    );
    assert!(root.join("out/scale.rs").is_file());
    assert!(first.inputs.iter().any(|p| p.ends_with("math.wgsl.jinja")));

    let again = config(&root).generate().expect("generates again");
    assert!(
        again.written.is_empty(),
        "unchanged files are not rewritten"
    );
    config(&root).check().expect("fresh");

    fs::write(root.join("out/scale.rs"), "// edited\n").expect("edit");
    fs::write(root.join("out/old.rs"), "// from a removed op\n").expect("leftover");
    match config(&root).check() {
        Err(ConfigError::Stale { stale, orphaned }) => {
            assert_eq!(stale, ["scale.rs"]);
            assert_eq!(orphaned, ["old.rs"]);
        }
        other => panic!("expected stale files, got {other:?}"),
    }
    let repaired = config(&root).generate().expect("repairs");
    assert_eq!(repaired.written, ["scale.rs"]);
    assert_eq!(repaired.removed, ["old.rs"]);
    assert!(!root.join("out/old.rs").exists());
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn diagnostics_name_files_relative_to_the_root() {
    let root = scratch("diagnostics");
    let template = root.join("packages/test.Scale/body.wgsl.jinja");
    let text = fs::read_to_string(&template).expect("read");
    fs::write(&template, text.replace("{{ scalar }}(", "{{ scalar }(")).expect("break it");
    match config(&root).generate() {
        Err(ConfigError::Codegen { diagnostics }) => {
            let shown = diagnostics.to_string();
            assert!(
                shown.starts_with("error: packages/test.Scale/body.wgsl.jinja: line 6"),
                "{shown}"
            );
        }
        other => panic!("expected a template error, got {other:?}"),
    }
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn misplaced_inputs_are_errors_naming_the_path() {
    let root = scratch("misplaced");
    fs::create_dir_all(root.join("hints")).expect("hints folder");
    fs::write(
        root.join("hints/test.Missing.hints.json"),
        "{\"op\": \"test.Missing\"}",
    )
    .expect("hints");
    let err = config(&root)
        .hints_dir("hints")
        .generate()
        .expect_err("hints without a package");
    assert!(
        err.to_string()
            .contains("no package folder named `test.Missing`"),
        "{err}"
    );
    let err = config(&root)
        .packages_in("absent")
        .generate()
        .expect_err("a missing folder");
    assert!(
        matches!(&err, ConfigError::Io { path, .. } if path.ends_with("absent")),
        "{err}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_failed_write_leaves_the_previous_files() {
    let root = scratch("all-or-none");
    // The last file in path order cannot be staged: a folder sits where its partial goes.
    let (inputs, _) = config(&root).read_inputs().expect("reads");
    let files = codegen::generate(&inputs).expect("generates").files;
    let last = &files.last().expect("files").path;
    let blocker = root.join("out").join(format!(".{last}.partial"));
    fs::create_dir_all(&blocker).expect("blocker");
    let err = config(&root)
        .generate()
        .expect_err("a file cannot be written");
    assert!(matches!(err, ConfigError::Io { .. }), "{err}");
    let left: Vec<_> = fs::read_dir(root.join("out"))
        .expect("out exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left,
        vec![format!(".{last}.partial")],
        "nothing but the blocker"
    );
    fs::remove_dir_all(&blocker).expect("unblock");
    config(&root).generate().expect("generates");
    config(&root).check().expect("fresh");
}
