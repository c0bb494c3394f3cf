//! The build-script API on real folders: reading a package tree, writing only what changed,
//! checking, the errors a misplaced file gets, and what a build script prints (in a child
//! process whose standard output is read as cargo reads it: a failed run's error before the
//! `cargo:rerun-if-changed` lines, since cargo shows a failed build script's output as one
//! block and a hundred rerun lines before the error would bury it).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use kernel_codegen::{Config, ConfigError};

/// A fresh folder holding one package with an include root: the error fixtures' `scale` seed
/// with the edits of `includes_ok.test` (a template of its own and a macro under `_shared/`),
/// written out as files.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codegen-config-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors");
    let seed = fixtures.join("seeds/scale");
    let read = |path: PathBuf| fs::read_to_string(&path).expect("fixture is readable");
    let mut inputs = kernel_codegen::Inputs::default();
    inputs.packages.push(kernel_codegen::Package {
        dir: "scale".to_owned(),
        manifest: read(seed.join("manifest.json")),
        hints: None,
        manifest_file: None,
    });
    inputs.templates.insert(
        "scale/scale.wgsl.jinja".to_owned(),
        read(seed.join("scale.wgsl.jinja")),
    );
    let case = read(fixtures.join("includes_ok.test"));
    let head = case
        .split_once("\n---\n")
        .map_or(case.as_str(), |(head, _)| head);
    let inputs = fuzz::mutation::Case::parse(head)
        .and_then(|case| case.apply(&inputs))
        .expect("includes_ok.test applies");
    let packages = dir.join("packages");
    let package = packages.join("test.Scale");
    fs::create_dir_all(&package).expect("package folder");
    fs::write(package.join("manifest.json"), &inputs.packages[0].manifest).expect("write");
    for (name, text) in &inputs.templates {
        let relative = name.strip_prefix("scale/").expect("a template of the seed");
        let path = match relative.strip_prefix("_shared/") {
            Some(shared) => packages.join("_shared").join(shared),
            None => package.join(relative),
        };
        fs::create_dir_all(path.parent().expect("a folder")).expect("folders");
        fs::write(path, text).expect("write");
    }
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

    // Hand edits below the header; a module of an op that is gone, with the header.
    let header = format!("// {}\n", kernel_codegen::GENERATED_MARK);
    fs::write(root.join("out/scale.rs"), format!("{header}// edited\n")).expect("edit");
    fs::write(
        root.join("out/old.rs"),
        format!("{header}// from a removed op\n"),
    )
    .expect("leftover");
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
fn hints_of_another_build_are_a_note_and_a_missing_folder_an_error() {
    let root = scratch("misplaced");
    fs::create_dir_all(root.join("hints")).expect("hints folder");
    fs::write(
        root.join("hints/test.Missing.hints.json"),
        "{\"op\": \"test.Missing\"}",
    )
    .expect("hints");
    // One hints folder may serve several builds: hints for a package of another build are a
    // note, not an error.
    let report = config(&root)
        .hints_dir("hints")
        .generate()
        .expect("hints without a package are no error");
    assert!(
        (report.output.notes.iter()).any(|note| note.contains("hints/test.Missing.hints.json")
            && note.contains("no package folder named `test.Missing` in this build")),
        "{:?}",
        report.output.notes
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
    let files = kernel_codegen::generate(&inputs).expect("generates").files;
    let last = &files.last().expect("files").path;
    let blocker = root.join("out").join(format!(".{last}.partial"));
    fs::create_dir_all(&blocker).expect("blocker");
    let err = config(&root)
        .generate()
        .expect_err("a file cannot be written");
    assert!(
        matches!(err, ConfigError::Layout { .. } | ConfigError::Io { .. }),
        "{err}"
    );
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

/// Every file of `dir`, recursively, with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).expect("read folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), fs::read(&path).expect("read file")));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn an_output_folder_holding_inputs_is_refused_and_nothing_changes() {
    let root = scratch("holds-inputs");
    fs::create_dir_all(root.join("hints")).expect("hints folder");
    let before = snapshot(&root);
    for out in [
        "packages/test.Scale",
        "packages",
        "packages/_shared",
        "hints",
        ".",
    ] {
        let err = config(&root)
            .hints_dir("hints")
            .out_dir(out)
            .generate()
            .expect_err("an output folder holding inputs");
        assert!(
            matches!(&err, ConfigError::OutputHoldsInput { .. }),
            "--out {out}: {err}"
        );
        assert!(
            err.to_string().contains("choose a folder of its own"),
            "{err}"
        );
    }
    // The same folder spelled with `..` is the same folder.
    let err = config(&root)
        .out_dir("packages/_shared/../test.Scale")
        .generate()
        .expect_err("the package folder by another spelling");
    assert!(
        matches!(&err, ConfigError::OutputHoldsInput { .. }),
        "{err}"
    );
    assert_eq!(snapshot(&root), before, "no file was written or removed");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn files_the_generator_did_not_write_are_left_alone() {
    let root = scratch("foreign");
    fs::create_dir_all(root.join("out/notes")).expect("out folder");
    fs::write(root.join("out/notes.txt"), "keep me\n").expect("notes");
    fs::write(root.join("out/main.rs"), "fn main() {}\n").expect("main");
    fs::write(root.join("out/notes/todo.md"), "- keep\n").expect("todo");
    let report = config(&root).generate().expect("generates beside them");
    assert!(report.removed.is_empty(), "{:?}", report.removed);
    assert_eq!(report.foreign, ["main.rs", "notes/todo.md", "notes.txt"]);
    assert_eq!(
        fs::read_to_string(root.join("out/notes.txt")).expect("kept"),
        "keep me\n"
    );
    assert!(root.join("out/main.rs").is_file() && root.join("out/notes/todo.md").is_file());
    config(&root)
        .check()
        .expect("foreign files do not make the output stale");

    // A generated file that is no longer generated is removed; a look-alike without the
    // header is not.
    let header = fs::read_to_string(root.join("out/scale.rs")).expect("generated");
    fs::write(root.join("out/old.rs"), &header).expect("an earlier op's module");
    fs::write(root.join("out/almost.rs"), "// generated by hand\n").expect("look-alike");
    let report = config(&root).generate().expect("generates");
    assert_eq!(report.removed, ["old.rs"]);
    assert!(!root.join("out/old.rs").exists());
    assert!(root.join("out/almost.rs").is_file());

    // A user's file where a generated one goes is an error, and stays as it was.
    fs::write(root.join("out/mod.rs"), "// my own module tree\n").expect("user's mod.rs");
    let err = config(&root).generate().expect_err("mod.rs is the user's");
    assert!(
        matches!(&err, ConfigError::NotGenerated { path } if path.ends_with("mod.rs")),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(root.join("out/mod.rs")).expect("kept"),
        "// my own module tree\n"
    );
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn absolute_paths_work_as_relative_ones() {
    let root = scratch("absolute");
    let absolute = std::path::absolute(&root).expect("absolute");
    let mut config = Config::new();
    config
        .packages_in(absolute.join("packages"))
        .include_root(absolute.join("packages/_shared"))
        .out_dir(absolute.join("out"))
        .emit_rerun_if_changed(false);
    let report = config.generate().expect("absolute paths generate");
    assert_eq!(report.packages, 1);
    assert!(root.join("out/scale.rs").is_file());
    // A single package given by its absolute path, with a `./` include.
    let mut single = Config::new();
    single
        .package(absolute.join("packages/test.Scale"))
        .include_root(absolute.join("packages/_shared"))
        .out_dir(absolute.join("out"))
        .emit_rerun_if_changed(false);
    single.check().expect("the same files");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn a_package_without_a_manifest_is_an_error() {
    let root = scratch("no-manifest");
    let package = root.join("packages/test.Scale");
    fs::remove_file(package.join("manifest.json")).expect("remove manifest");
    let err = config(&root).generate().expect_err("no packages");
    assert!(matches!(&err, ConfigError::NoPackages { .. }), "{err}");
    assert!(err.to_string().contains("no packages"), "{err}");

    fs::create_dir(package.join("manifest.json")).expect("a folder named manifest.json");
    let err = config(&root).generate().expect_err("a folder as manifest");
    assert!(
        err.to_string()
            .contains("manifest.json: not a regular file (a folder)"),
        "{err}"
    );
    let _ = fs::remove_dir_all(&root);
}

#[cfg(unix)]
#[test]
fn special_files_and_links_out_of_the_package_are_refused() {
    let root = scratch("special");
    let package = root.join("packages/test.Scale");
    let template = package.join("body.wgsl.jinja");
    let text = fs::read_to_string(&template).expect("read");

    // A FIFO where a template is: refused without opening it (opening would wait forever).
    fs::remove_file(&template).expect("remove");
    let status = Command::new("mkfifo")
        .arg(&template)
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let err = config(&root).generate().expect_err("a FIFO template");
    assert!(
        err.to_string().contains("not a regular file (a FIFO)"),
        "{err}"
    );

    // A link to a file outside the package folder: refused, naming the target.
    fs::remove_file(&template).expect("remove fifo");
    let outside = root.join("outside.wgsl.jinja");
    fs::write(&outside, &text).expect("outside");
    std::os::unix::fs::symlink(&outside, &template).expect("link");
    let err = config(&root)
        .generate()
        .expect_err("a link out of the package");
    assert!(err.to_string().contains("outside"), "{err}");

    // A link inside the package is followed.
    fs::remove_file(&template).expect("remove link");
    fs::write(package.join("real.wgsl.jinja"), &text).expect("real");
    std::os::unix::fs::symlink("real.wgsl.jinja", &template).expect("link");
    config(&root).generate().expect("a link inside the package");

    // A link to a device: refused.
    fs::remove_file(&template).expect("remove link");
    std::os::unix::fs::symlink("/dev/zero", &template).expect("link");
    let err = config(&root).generate().expect_err("a device template");
    assert!(matches!(&err, ConfigError::Layout { .. }), "{err}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn io_errors_name_their_cause_once() {
    let root = scratch("io-once");
    fs::write(root.join("afile"), "").expect("a file");
    let err = config(&root)
        .packages_in("afile")
        .generate()
        .expect_err("not a folder");
    let shown = format!("{err}");
    assert_eq!(shown.matches("Not a directory").count(), 1, "{shown}");
    assert!(std::error::Error::source(&err).is_none(), "{shown}");
    let _ = fs::remove_dir_all(&root);
}

/// FUZZ F-4: an op whose module would be `mod` (its file the root module's `mod.rs`) is
/// refused at the manifest's `name` before anything is written; the previous output stays as
/// it was, without `.partial` files.
#[test]
fn an_op_named_mod_is_refused_and_the_output_is_left_as_it_was() {
    let root = scratch("op-named-mod");
    config(&root).generate().expect("generates");
    let manifest = root.join("packages/test.Scale/manifest.json");
    let text = fs::read_to_string(&manifest).expect("read");
    for (name, says) in [
        ("Mod", "collides with the root module"),
        ("MOD", "collides with the root module"),
        ("Con", "a device name Windows reserves"),
    ] {
        let before = snapshot(&root.join("out"));
        fs::write(&manifest, text.replace("\"Scale\"", &format!("\"{name}\""))).expect("write");
        let Err(ConfigError::Codegen { diagnostics }) = config(&root).generate() else {
            panic!("an op named {name} is an error");
        };
        let [diagnostic] = &diagnostics.0[..] else {
            panic!("one error: {diagnostics}");
        };
        assert_eq!(diagnostic.file, "packages/test.Scale/manifest.json");
        assert_eq!(diagnostic.path, "name");
        assert!(diagnostic.message.contains(says), "{diagnostic}");
        assert_eq!(
            snapshot(&root.join("out")),
            before,
            "{name}: nothing written"
        );
    }
    let _ = fs::remove_dir_all(&root);
}

/// Set in the child: the folder of the package it generates.
const CHILD: &str = "CODEGEN_BUILD_SCRIPT_CHILD";

/// The scratch package with a template that does not parse, and enough shared templates to
/// make many rerun lines.
fn broken_package(name: &str) -> PathBuf {
    let dir = scratch(name);
    let template = dir.join("packages/test.Scale/scale.wgsl.jinja");
    let text = fs::read_to_string(&template).expect("read");
    fs::write(&template, text + "{% if %}\n").expect("break it");
    for i in 0..120 {
        let shared = dir.join(format!("packages/_shared/unused{i:03}.wgsl.jinja"));
        fs::write(shared, "// unused\n").expect("write");
    }
    dir
}

/// The child's side: generates as a build script does (rerun lines on), and fails.
#[test]
fn child_generates_as_a_build_script() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let result = config(Path::new(&dir))
        .emit_rerun_if_changed(true)
        .generate();
    assert!(result.is_err(), "the package is broken");
}

/// A failed build script's error comes first, then every rerun line.
#[test]
fn a_failed_run_prints_its_error_before_the_rerun_lines() {
    let dir = broken_package("order");
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "child_generates_as_a_build_script",
            "--nocapture",
        ])
        .args(["--test-threads", "1"])
        .env(CHILD, &dir)
        .output()
        .expect("the child runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    let error = (lines.iter())
        .position(|l| l.contains("error: codegen found"))
        .unwrap_or_else(|| panic!("no error printed:\n{stdout}"));
    let reruns: Vec<usize> = (lines.iter().enumerate())
        .filter(|(_, l)| l.starts_with("cargo:rerun-if-changed="))
        .map(|(i, _)| i)
        .collect();
    assert!(reruns.len() > 120, "every file read: {}", reruns.len());
    assert!(
        reruns.iter().all(|&i| i > error),
        "the error first:\n{stdout}"
    );
    assert!(
        (lines[error..reruns[0]].iter()).any(|l| l.contains("scale.wgsl.jinja")),
        "the error names the template before the rerun lines:\n{stdout}"
    );
    let _ = fs::remove_dir_all(&dir);
}
