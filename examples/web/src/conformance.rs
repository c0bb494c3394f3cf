//! The Hub's conformance suites on the page's adapter: each suite `build.rs` embedded is read
//! with `test-support`'s suite reader and every case run with its runner (the one the native
//! `examples/conformance` tests use, awaiting the readback as a browser must), checked against
//! the case's data or the float64 reference of `kernels_tools::reference`. A case is passed, failed
//! or skipped with why (`skipGpu`, or the adapter lacks `shader-f16`).

use kernel_runtime::Context;
use kernel_runtime::registry::OpEntry;
use kernel_runtime::support::AttrValue;
use serde::Serialize;
use test_support::conformance::{self, Case};
use test_support::conformance_run::{self, CaseReport, Checked, RefInput, Reference};

/// A suite as `build.rs` embedded it.
struct Embedded {
    /// The op's qualified name.
    op: &'static str,
    /// The suite's file name, as the report shows it.
    file: &'static str,
    /// The suite's text, or why it was not built in.
    text: Result<&'static str, &'static str>,
}

/// The suites built into the page.
const SUITES: &[Embedded] = include!(concat!(env!("OUT_DIR"), "/suites.rs"));

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Ran, and every output was what the case expects.
    Passed,
    /// Ran (or could not be run) and was not.
    Failed,
    /// Not run here, for the reason the row gives.
    Skipped,
}

/// One case of a suite.
#[derive(Debug, Clone, Serialize)]
pub struct CaseRow {
    /// The op's qualified name.
    pub op: String,
    pub case: String,
    pub status: Outcome,
    /// The variant the op selected (empty when none was).
    pub variant: String,
    /// The largest absolute difference over the outputs checked against values.
    pub max_error: Option<f64>,
    /// What each output was checked against, what was wrong, or why the case was skipped.
    pub detail: String,
}

/// One suite's rows and counts.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    pub op: String,
    /// The suite's file name (`ai.onnx.Add.test.json`).
    pub file: String,
    /// Why the suite was not built into the page (no Hub beside the repository); then it has
    /// no rows.
    pub absent: Option<String>,
    /// How many rows there are: every one must be drawn.
    pub expected_rows: usize,
    pub rows: Vec<CaseRow>,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

/// Runs every embedded suite on `ctx`, calling `on_row` as each case finishes.
pub async fn run_suites(ctx: &Context, on_row: &mut dyn FnMut(&CaseRow)) -> Vec<SuiteReport> {
    let mut reports = Vec::with_capacity(SUITES.len());
    for embedded in SUITES {
        reports.push(run_suite(ctx, embedded, on_row).await);
    }
    reports
}

async fn run_suite(
    ctx: &Context,
    embedded: &Embedded,
    on_row: &mut dyn FnMut(&CaseRow),
) -> SuiteReport {
    let mut rows = Vec::new();
    let mut absent = None;
    match embedded.text {
        Err(why) => absent = Some(why.to_owned()),
        Ok(text) => match conformance::parse(text) {
            Ok(suite) => {
                let entry = kernels_tools::ops().find(|e| e.qualified_name == embedded.op);
                for case in &suite.cases {
                    let row = run_one(ctx, embedded.op, entry, case).await;
                    on_row(&row);
                    rows.push(row);
                }
            }
            Err(error) => {
                let row = CaseRow {
                    op: embedded.op.to_owned(),
                    case: format!("reading {}", embedded.file),
                    status: Outcome::Failed,
                    variant: String::new(),
                    max_error: None,
                    detail: error.to_string(),
                };
                on_row(&row);
                rows.push(row);
            }
        },
    }
    let count = |outcome| rows.iter().filter(|r| r.status == outcome).count();
    SuiteReport {
        op: embedded.op.to_owned(),
        file: embedded.file.to_owned(),
        absent,
        expected_rows: rows.len(),
        passed: count(Outcome::Passed),
        failed: count(Outcome::Failed),
        skipped: count(Outcome::Skipped),
        rows,
    }
}

/// Runs `case`, or says why it is not run on this adapter.
async fn run_one(ctx: &Context, op: &'static str, entry: Option<&OpEntry>, case: &Case) -> CaseRow {
    let row = |status, detail: String| CaseRow {
        op: op.to_owned(),
        case: case.name.clone(),
        status,
        variant: String::new(),
        max_error: None,
        detail,
    };
    if let Some(reason) = &case.skip_gpu {
        return row(Outcome::Skipped, format!("skipGpu: {reason}"));
    }
    let Some(entry) = entry else {
        // The `hub` crate builds the ops whose manifests it finds, or the subset
        // `KERNEL_HUB_OPS` names: a suite without its op is a build's choice, not a failure.
        return row(
            Outcome::Skipped,
            format!("the page was built without {op} (KERNEL_HUB_OPS)"),
        );
    };
    if let Some(feature) = conformance_run::missing_feature(ctx, case) {
        return row(Outcome::Skipped, format!("the adapter has no {feature}"));
    }
    // A `Reference` is a `'static` trait object: the closure holds only the op's `'static` name.
    let reference = move |inputs: &[RefInput<'_>], attrs: &[(String, AttrValue)]| {
        conformance_run::one_output_reference(inputs, attrs, |inputs, attrs| {
            kernels_tools::reference::by_op(op, inputs, attrs)
        })
    };
    match conformance_run::run_case_async(ctx, entry, case, Some(&reference as &Reference)).await {
        Ok(report) => CaseRow {
            variant: report.variant.to_owned(),
            max_error: max_error(&report),
            ..row(Outcome::Passed, summary(&report))
        },
        Err(failure) => CaseRow {
            variant: failure.variant.unwrap_or_default().to_owned(),
            ..row(Outcome::Failed, failure.to_string())
        },
    }
}

/// The largest difference over the outputs held against values (none when every output was
/// checked for its shape only).
fn max_error(report: &CaseReport) -> Option<f64> {
    report
        .outputs
        .iter()
        .filter(|o| o.checked != Checked::ShapeOnly)
        .map(|o| o.worst)
        .reduce(f64::max)
}

/// What each output of a passed case was checked against.
fn summary(report: &CaseReport) -> String {
    let outputs: Vec<String> = report
        .outputs
        .iter()
        .map(|o| match o.checked {
            Checked::Data => format!("`{}` against the case's data", o.key),
            Checked::Reference => format!("`{}` against the float64 reference", o.key),
            Checked::ShapeOnly => format!("`{}`: shape only, no reference", o.key),
        })
        .collect();
    outputs.join("; ")
}
