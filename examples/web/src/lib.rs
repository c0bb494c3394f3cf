//! The browser page's work: every case of [`kernels_tools::cases`] on the page's WebGPU adapter,
//! through the same generated crate as native code, checked against the float64 reference in
//! the page, then the Hub's conformance suites ([`conformance`]). The runner is plain async
//! Rust (it runs natively too); `page` is the wasm32 entry point that draws the tables and
//! hands the report to whoever opened the page.

use std::collections::BTreeSet;

use kernel_runtime::registry::OpEntry;
use kernel_runtime::{AnyTensor, Context};
use kernels_tools::cases::Case;
use kernels_tools::data::{compare, median};
use serde::Serialize;

pub mod conformance;
#[cfg(target_arch = "wasm32")]
mod page;

/// Timed repetitions per case where the adapter has timestamp queries (median reported).
pub const REPEATS: usize = 5;

/// How one case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Ran, and matched the reference within its tolerance.
    Ok,
    /// Ran, and did not match.
    Mismatch,
    /// The op or the device returned an error.
    Error,
    /// The adapter lacks what the case needs.
    Skipped,
}

/// One row of the page's table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub op: String,
    pub case: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    /// The variant the op selected (empty when it did not run).
    pub variant: String,
    pub adapter: String,
    /// Largest absolute difference from the reference.
    pub max_error: Option<f64>,
    /// Median GPU time in microseconds, when the adapter has timestamp queries.
    pub gpu_us: Option<f64>,
    pub status: Status,
    /// What went wrong, or why the case was skipped.
    pub detail: String,
}

/// A variant no case on the page, demo or conformance, selected on this adapter.
#[derive(Debug, Clone, Serialize)]
pub struct Unreached {
    pub op: String,
    pub variant: String,
}

/// Everything the page found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub adapter: String,
    pub features: Vec<&'static str>,
    /// How many cases there are: every one must have a row.
    pub expected_rows: usize,
    pub rows: Vec<Row>,
    /// Variants of the generated ops that no case on the page selected here, a demo case or a
    /// conformance case (the selection depends on the adapter, e.g. its subgroup sizes).
    pub unreached: Vec<Unreached>,
    /// The Hub's conformance suites, one report each.
    pub conformance: Vec<conformance::SuiteReport>,
}

/// Runs every case on `ctx`, then every conformance case, calling `on_row` and `on_case` as
/// each finishes (the page draws it at once); `adapter` names the adapter in the rows.
pub async fn run_all(
    ctx: &Context,
    adapter: &str,
    on_row: &mut dyn FnMut(&Row),
    on_case: &mut dyn FnMut(&conformance::CaseRow),
) -> Report {
    let mut report = run_cases(ctx, adapter, on_row).await;
    report.conformance = conformance::run_suites(ctx, on_case).await;
    report.unreached = unreached(&report);
    report
}

/// The variants of the generated ops that no row of `report` selected, of the demo cases or of
/// the conformance suites. A variant name is its op's, so a row counts for its own op only.
fn unreached(report: &Report) -> Vec<Unreached> {
    let demo = report
        .rows
        .iter()
        .map(|r| (r.op.as_str(), r.variant.as_str()));
    let suites = report
        .conformance
        .iter()
        .flat_map(|suite| &suite.rows)
        .map(|r| (r.op.as_str(), r.variant.as_str()));
    let selected: BTreeSet<(&str, &str)> = demo.chain(suites).collect();
    kernels_tools::ops()
        .flat_map(|entry| {
            let selected = &selected;
            entry
                .variants
                .iter()
                .filter(move |v| !selected.contains(&(entry.qualified_name, **v)))
                .map(|v| Unreached {
                    op: entry.qualified_name.to_owned(),
                    variant: (*v).to_owned(),
                })
        })
        .collect()
}

/// The report of the cases of [`kernels_tools::all_cases`], without conformance suites (and so
/// without the unreached variants, which count their rows too).
async fn run_cases(ctx: &Context, adapter: &str, on_row: &mut dyn FnMut(&Row)) -> Report {
    let adapter = adapter.to_owned();
    let all = match kernels_tools::all_cases() {
        Ok(all) => all,
        Err(err) => {
            let row = Row {
                op: "-".to_owned(),
                case: "building the cases".to_owned(),
                dtype: String::new(),
                shape: Vec::new(),
                variant: String::new(),
                adapter: adapter.clone(),
                max_error: None,
                gpu_us: None,
                status: Status::Error,
                detail: format!("{err:#}"),
            };
            on_row(&row);
            return Report {
                adapter,
                features: ctx.caps().feature_names(),
                expected_rows: 1,
                rows: vec![row],
                unreached: Vec::new(),
                conformance: Vec::new(),
            };
        }
    };
    let mut rows = Vec::with_capacity(all.len());
    for case in &all {
        let row = match case.entry() {
            Some(entry) => run_case(ctx, entry, case, &adapter).await,
            None => row(
                case,
                &adapter,
                Status::Error,
                "no generated op of this name",
            ),
        };
        on_row(&row);
        rows.push(row);
    }
    Report {
        adapter,
        features: ctx.caps().feature_names(),
        expected_rows: all.len(),
        rows,
        unreached: Vec::new(),
        conformance: Vec::new(),
    }
}

async fn run_case(ctx: &Context, entry: &OpEntry, case: &Case, adapter: &str) -> Row {
    if let Some(reason) = case.unsupported(ctx.caps()) {
        return row(case, adapter, Status::Skipped, &reason);
    }
    let inputs = match case.upload(ctx) {
        Ok(inputs) => inputs,
        Err(err) => return row(case, adapter, Status::Error, &err.to_string()),
    };
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    let result = if ctx.caps().timestamp_query {
        entry.time_async(ctx, &refs, &case.attrs, REPEATS).await
    } else {
        entry.run(ctx, &refs, &case.attrs)
    };
    let result = match result {
        Ok(result) => result,
        Err(err) => return row(case, adapter, Status::Error, &err.to_string()),
    };
    let got = match result.outputs.first() {
        Some(output) => output.read_f64_async(ctx).await,
        None => return row(case, adapter, Status::Error, "the op returned no output"),
    };
    let got = match got {
        Ok(got) => got,
        Err(err) => return row(case, adapter, Status::Error, &err.to_string()),
    };
    let comparison = compare(&got, &case.want, case.tolerance);
    let (status, detail) = if comparison.passed() {
        (Status::Ok, String::new())
    } else {
        (Status::Mismatch, comparison.to_string())
    };
    Row {
        variant: result.variant.to_owned(),
        max_error: Some(comparison.max_abs),
        gpu_us: median(&result.gpu_times).map(|t| t.as_secs_f64() * 1e6),
        ..row(case, adapter, status, &detail)
    }
}

fn row(case: &Case, adapter: &str, status: Status, detail: &str) -> Row {
    Row {
        op: case.op.to_owned(),
        case: case.name.to_owned(),
        dtype: case.dtype.onnx_name().to_owned(),
        shape: case.shape.clone(),
        variant: String::new(),
        adapter: adapter.to_owned(),
        max_error: None,
        gpu_us: None,
        status,
        detail: detail.to_owned(),
    }
}
