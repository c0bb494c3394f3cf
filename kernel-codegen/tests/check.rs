//! Data-driven tests of `check` (`kernel_codegen::check`): every `tests/check/*.test` file is
//! a case in the mutation format of `tests/errors/` (`from <seed>`, edits, `---`), whose
//! outcome is the findings `check` reports for the package, each with its witness. A defect
//! has a fixture of its own beside the package without it, which reports nothing.
//! `UPDATE_EXPECT=1` rewrites the outcomes.

mod common;

use std::path::Path;

use common::{case_inputs, fixtures};
use expect_test::expect_file;
use kernel_codegen::check::{Options, check_ops, left_out_findings};

/// The findings for `inputs`, as the fixtures write them.
fn findings(inputs: &kernel_codegen::Inputs) -> String {
    let ops = match kernel_codegen::models(inputs) {
        Ok(ops) => ops,
        Err(diagnostics) => return format!("{diagnostics}\n"),
    };
    let mut reports = check_ops(&ops, Options::default());
    if let Ok(output) = kernel_codegen::generate(inputs) {
        for finding in left_out_findings(&ops, &output.left_out) {
            if let Some(report) = reports.iter_mut().find(|r| r.op == finding.op) {
                report.findings.push(finding);
            }
        }
    }
    let mut text = String::new();
    for report in reports {
        for f in &report.findings {
            let level = if f.kind.is_warning() {
                "warning"
            } else {
                "note"
            };
            text.push_str(&format!(
                "{level}[{}] {} at {}: {}\n",
                f.kind.name(),
                f.op,
                f.path,
                f.message
            ));
            if let Some(w) = &f.witness {
                text.push_str(&format!(
                    "  witness: {w}\n  run: run-op {}\n",
                    w.run_op_args(&f.op)
                ));
            }
        }
        if report.findings.is_empty() {
            text.push_str(&format!("{}: no findings\n", report.op));
        }
    }
    text
}

#[test]
fn findings_match_expectations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let seeds = root.join("errors/seeds");
    let fixtures = fixtures(&root.join("check"));
    for (path, head) in &fixtures {
        let actual = case_inputs(&seeds, head)
            .map(|inputs| findings(&inputs))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        expect_file![path].assert_eq(&format!("{head}\n---\n{actual}"));
    }
    assert!(fixtures.len() >= 5, "the check fixtures went missing");
}
