//! The command on a package folder: generate, check fresh, check stale, and bad arguments;
//! `--write-suggested-hints` on a package whose template needs a value's domain (written
//! without an output folder, nothing written by `--check`, a failure to write them printed
//! after the generator's own errors); a package with a corner that does not validate (a
//! warning, or with `--strict` an error).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn command(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernels-codegen"))
        .args(args)
        .output()
        .expect("the command runs")
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A package copied from the codegen error fixtures, and an output folder beside it.
fn scratch(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("kernels-codegen-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let package = dir.join("test.Scale");
    fs::create_dir_all(&package).expect("package folder");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-codegen/tests/errors/seeds/scale");
    for file in ["manifest.json", "scale.wgsl.jinja"] {
        fs::copy(fixture.join(file), package.join(file)).expect("copy");
    }
    (dir.clone(), dir.join("out"))
}

#[test]
fn generates_then_checks() {
    let (dir, out) = scratch("cycle");
    let package = dir.join("test.Scale");
    let (package, out) = (
        package.to_str().expect("utf-8"),
        out.to_str().expect("utf-8"),
    );
    let generated = command(&["--packages", package, "--out", out]);
    assert!(generated.status.success(), "{}", text(&generated));
    assert!(
        text(&generated).contains("1 packages"),
        "{}",
        text(&generated)
    );
    let fresh = command(&["--packages", package, "--out", out, "--check"]);
    assert!(fresh.status.success(), "{}", text(&fresh));

    fs::write(Path::new(out).join("scale.rs"), "// edited\n").expect("edit");
    let stale = command(&["--packages", package, "--out", out, "--check"]);
    assert!(!stale.status.success());
    assert!(
        text(&stale).contains("stale:    scale.rs"),
        "{}",
        text(&stale)
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_folder_of_packages_and_bad_arguments() {
    let (dir, out) = scratch("args");
    let (root, out) = (dir.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let generated = command(&["--packages", root, "--out", out]);
    assert!(generated.status.success(), "{}", text(&generated));

    let bad = command(&[
        "--packages",
        root,
        "--out",
        out,
        "--host-check",
        "no-equals",
    ]);
    assert!(!bad.status.success());
    assert!(text(&bad).contains("expected OP=PATH"), "{}", text(&bad));
    let unknown = command(&[
        "--packages",
        root,
        "--out",
        out,
        "--host-check",
        "test.Nope=crate::check",
    ]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown).contains("a host check is registered for `test.Nope`"),
        "{}",
        text(&unknown)
    );
    let _ = fs::remove_dir_all(&dir);
}

/// A folder laid out as a Hub repository (`build/webgpu/manifest.json`) is one package, named
/// directly or inside a folder of packages.
#[test]
fn a_hub_repository_folder_is_a_package() {
    let dir = std::env::temp_dir().join(format!("kernels-codegen-hub-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let repo = dir.join("repos").join("ai.onnx.Add");
    let build = repo.join("build").join("webgpu");
    fs::create_dir_all(&build).expect("repository folder");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-codegen/tests/errors/seeds/hub-add");
    for file in ["manifest.json", "add.wgsl.jinja"] {
        fs::copy(fixture.join(file), build.join(file)).expect("copy");
    }
    let out = dir.join("out");
    let out = out.to_str().expect("utf-8");
    for packages in [repo.clone(), dir.join("repos")] {
        let generated = command(&[
            "--packages",
            packages.to_str().expect("utf-8"),
            "--out",
            out,
        ]);
        assert!(generated.status.success(), "{}", text(&generated));
        assert!(
            text(&generated).contains("1 packages"),
            "{}",
            text(&generated)
        );
        assert!(Path::new(out).join("add.rs").is_file());
    }
    let _ = fs::remove_dir_all(&dir);
}

/// The error fixtures' `row-sum` seed (its template sizes an array by `args.cols`, which has
/// no finite domain) as `com.example.RowSum`, with `domain` replaced by `domain`.
fn row_sum(name: &str, domain: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!(
        "kernels-codegen-hints-{name}-{}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    let package = dir.join("packages/com.example.RowSum");
    fs::create_dir_all(&package).expect("package folder");
    let seed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernel-codegen/tests/errors/seeds/row-sum");
    let manifest = fs::read_to_string(seed.join("manifest.json")).expect("read");
    let manifest = manifest.replace("\"com.example\"", &format!("\"{domain}\""));
    fs::write(package.join("manifest.json"), manifest).expect("write");
    fs::copy(
        seed.join("row-sum.wgsl.jinja"),
        package.join("row-sum.wgsl.jinja"),
    )
    .expect("copy");
    let package = package.to_str().expect("utf-8").to_owned();
    (dir, package)
}

#[test]
fn suggested_hints_need_no_output_folder_and_make_the_package_generate() {
    let (dir, package) = row_sum("no-out", "com.example");
    let hints = dir.join("hints");
    let hints = hints.to_str().expect("utf-8");
    let first = command(&["--packages", &package, "--write-suggested-hints", hints]);
    assert!(!first.status.success());
    assert!(text(&first).contains("wrote"), "{}", text(&first));
    assert!(
        Path::new(hints)
            .join("com.example.RowSum.hints.json")
            .is_file()
    );
    let again = command(&[
        "--packages",
        &package,
        "--hints",
        hints,
        "--write-suggested-hints",
        hints,
    ]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        text(&again).contains("nothing written (no --out)"),
        "{}",
        text(&again)
    );
    let no_out = command(&["--packages", &package]);
    assert!(!no_out.status.success());
    assert!(text(&no_out).contains("--out"), "{}", text(&no_out));
    let _ = fs::remove_dir_all(&dir);
}

/// FUZZ F-8: `--check` writes nothing, and says in one line what it would have written.
#[test]
fn check_writes_no_hints_and_says_which() {
    let (dir, package) = row_sum("check", "com.example");
    let (hints, out) = (dir.join("hints"), dir.join("out"));
    let (hints, out) = (hints.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let checked = command(&[
        "--packages",
        &package,
        "--out",
        out,
        "--check",
        "--write-suggested-hints",
        hints,
    ]);
    assert!(!checked.status.success());
    assert!(!Path::new(hints).exists(), "nothing written");
    let said = (text(&checked).lines())
        .filter(|l| l.contains("would write"))
        .count();
    assert_eq!(said, 1, "{}", text(&checked));
    assert!(
        text(&checked).contains(&format!(
            "would write {hints}/com.example.RowSum.hints.json"
        )),
        "{}",
        text(&checked)
    );
    let _ = fs::remove_dir_all(&dir);
}

/// FUZZ F-7: a hints folder that is a file: the generator's errors (why there are
/// suggestions) are printed, then the failure, naming the folder.
#[test]
fn a_write_failure_comes_after_the_errors() {
    let (dir, package) = row_sum("file", "com.example");
    let hints = dir.join("hints");
    fs::write(&hints, "a file").expect("write");
    let hints = hints.to_str().expect("utf-8");
    let failed = command(&["--packages", &package, "--write-suggested-hints", hints]);
    assert!(!failed.status.success());
    let shown = text(&failed);
    let diagnostic = shown
        .find("row-sum.wgsl.jinja")
        .unwrap_or_else(|| panic!("{shown}"));
    let failure = shown
        .find(&format!("error: {hints}: not a folder"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(diagnostic < failure, "{shown}");
    let _ = fs::remove_dir_all(&dir);
}

/// FUZZ F-5: a `domain` that would put the hints file outside the folder is refused at the
/// manifest's `domain`, and nothing is written (`config::write_suggested_hints` refuses such a
/// file name too: `tests/suggested_hints.rs` in kernel-codegen).
#[test]
fn a_domain_that_leaves_the_hints_folder_is_refused() {
    let (dir, package) = row_sum("escape", "../../escape");
    let hints = dir.join("a/b/hints");
    let hints = hints.to_str().expect("utf-8");
    let refused = command(&["--packages", &package, "--write-suggested-hints", hints]);
    assert!(!refused.status.success());
    let shown = text(&refused);
    assert!(
        shown.contains("manifest.json: domain: the domain \"../../escape\""),
        "{shown}"
    );
    assert!(!dir.join("a").exists(), "{shown}");
    assert!(!dir.join("escape.RowSum.hints.json").exists(), "{shown}");
    let _ = fs::remove_dir_all(&dir);
}

/// A package one corner of whose combinations does not validate builds with one warning,
/// and `--strict` makes it an error at the template line.
#[test]
fn a_corner_that_does_not_validate_warns_and_strict_refuses_it() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/dialect/packages/com.example.PartialCorner");
    let package = package.to_str().expect("utf-8");
    let (dir, out) = scratch("corner");
    let out = out.to_str().expect("utf-8");
    let built = command(&["--packages", package, "--out", out]);
    assert!(built.status.success(), "{}", text(&built));
    let printed = text(&built);
    let warnings: Vec<&str> = (printed.lines())
        .filter(|l| l.starts_with("warning: "))
        .collect();
    let [warning] = warnings[..] else {
        panic!("one warning: {}", text(&built))
    };
    assert!(
        warning.contains("2 of the pass's 6 static combinations are not built"),
        "{warning}"
    );
    let strict = command(&["--packages", package, "--out", out, "--check", "--strict"]);
    assert!(!strict.status.success());
    assert!(
        text(&strict).contains("partial-corner.wgsl.jinja: line 22, column 3"),
        "{}",
        text(&strict)
    );
    let _ = fs::remove_dir_all(&dir);
}
