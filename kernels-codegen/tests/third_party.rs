//! `kernels-codegen check` on the third-party packages beside the repository (the Hub's,
//! `$KERNEL_HUB_DIR` or `../shared/hub`, and the corpus, `$KERNEL_CORPUS_DIR` or
//! `../shared/corpus`), where they are: each op's summary line (calls drawn, valid calls,
//! findings by kind) against `tests/third_party/*.txt`, so that a change to the checker that
//! finds more or less in real packages shows in review. `UPDATE_EXPECT=1` rewrites them.
//! The findings themselves are printed by the command; they are the packages' defects, not
//! this project's, so they are not denied.

use std::path::{Path, PathBuf};
use std::process::Command;

fn beside_repository(variable: &str, folder: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(variable).map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(folder)
        },
        PathBuf::from,
    );
    dir.is_dir().then_some(dir)
}

/// The summary lines of `kernels-codegen check ARGS…`.
fn summary(args: &[String]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_kernels-codegen"))
        .arg("check")
        .args(args)
        .output()
        .expect("the command runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter(|line| line.contains(" calls, ") && line.contains(" valid: "))
        .map(|line| format!("{line}\n"))
        .collect()
}

fn repository(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
        .display()
        .to_string()
}

#[test]
fn hub_packages() {
    let Some(hub) = beside_repository("KERNEL_HUB_DIR", "shared/hub") else {
        eprintln!("hub_packages: skipped, no Hub manifests (set KERNEL_HUB_DIR)");
        return;
    };
    let mut args = Vec::new();
    for op in ["Add", "Softmax", "MatMul"] {
        let manifest = hub.join(format!("ai.onnx.{op}.manifest.json"));
        let templates = repository(&format!("examples/hub/packages/ai.onnx.{op}"));
        args.push("--apart".to_owned());
        args.push(format!("{}={templates}", manifest.display()));
    }
    expect_test::expect_file!["third_party/hub.txt"].assert_eq(&summary(&args));
}

#[test]
fn corpus_packages() {
    let Some(corpus) = beside_repository("KERNEL_CORPUS_DIR", "shared/corpus") else {
        eprintln!("corpus_packages: skipped, no package corpus (set KERNEL_CORPUS_DIR)");
        return;
    };
    let collection = corpus.join("gemma-4");
    let args = [
        collection.display().to_string(),
        "--include-root".to_owned(),
        collection.join("_shared_assets").display().to_string(),
        "--hints".to_owned(),
        repository("examples/corpus/hints"),
    ];
    expect_test::expect_file!["third_party/corpus.txt"].assert_eq(&summary(&args));
}
