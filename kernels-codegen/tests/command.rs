//! The command on a package folder: generate, check fresh, check stale, and bad arguments.

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
