//! `Config` as a build script runs it, in a child process whose standard output is read as
//! cargo reads it: a run that fails prints its error before the `cargo:rerun-if-changed`
//! lines (cargo shows a failed build script's output as one block, and a hundred rerun lines
//! before the error would bury it), and still prints one for every file it read.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use kernel_codegen::Config;

/// Set in the child: the folder of the package it generates.
const CHILD: &str = "CODEGEN_BUILD_SCRIPT_CHILD";

/// A package whose template does not parse, with enough shared templates to make many rerun
/// lines.
fn broken_package(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codegen-build-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors/seeds/scale");
    let package = dir.join("packages/test.Scale");
    fs::create_dir_all(&package).expect("package folder");
    fs::copy(seed.join("manifest.json"), package.join("manifest.json")).expect("copy");
    let template = fs::read_to_string(seed.join("scale.wgsl.jinja")).expect("read");
    fs::write(package.join("scale.wgsl.jinja"), template + "{% if %}\n").expect("break it");
    let shared = dir.join("shared");
    fs::create_dir_all(&shared).expect("shared folder");
    for i in 0..120 {
        fs::write(
            shared.join(format!("unused{i:03}.wgsl.jinja")),
            "// unused\n",
        )
        .expect("write");
    }
    dir
}

/// The child's side: generates as a build script does (rerun lines on), and fails.
#[test]
fn child_generates_as_a_build_script() {
    let Some(dir) = std::env::var_os(CHILD) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let result = Config::new()
        .root(&dir)
        .packages_in("packages")
        .include_root("shared")
        .out_dir("out")
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
    assert!(stdout.contains("cargo:rerun-if-changed="), "{stdout}");
    let _ = fs::remove_dir_all(&dir);
}
