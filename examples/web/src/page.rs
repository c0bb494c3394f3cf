//! The wasm32 entry point: creates the context without blocking, draws a table row per case
//! (and per conformance case) as it finishes, and returns the report as JSON (the page stores
//! it for the browser test).

use wasm_bindgen::prelude::*;
use web_sys::{Document, Element};

use crate::conformance::{CaseRow, Outcome};
use crate::{Row, Status};

/// Runs every case in the page; resolves to the report as JSON. `adapter` names the adapter
/// in the table (from the browser's `GPUAdapterInfo`); empty for wgpu's own summary.
#[wasm_bindgen]
pub async fn run(adapter: String) -> Result<String, JsValue> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or_else(|| JsValue::from_str("no document"))?;
    let status = by_id(&document, "status")?;
    let ctx = kernel_runtime::Context::new_async()
        .await
        .map_err(|e| JsValue::from_str(&format!("no WebGPU context: {e}")))?;
    let adapter = if adapter.trim().is_empty() {
        ctx.adapter_summary()
    } else {
        format!("{} (WebGPU)", adapter.trim())
    };
    status.set_text_content(Some(&format!(
        "running on {adapter} ({})…",
        ctx.caps().feature_names().join(", ")
    )));
    let body = by_id(&document, "rows")?;
    let conformance_body = by_id(&document, "conformance-rows")?;
    // Both callbacks record the first drawing error; a cell holds it as they are two closures.
    let draw_error = std::cell::RefCell::new(None);
    let report = crate::run_all(
        &ctx,
        &adapter,
        &mut |row| {
            if let Err(e) = append_row(&document, &body, row) {
                draw_error.borrow_mut().get_or_insert(e);
            }
        },
        &mut |row| {
            if let Err(e) = append_case_row(&document, &conformance_body, row) {
                draw_error.borrow_mut().get_or_insert(e);
            }
        },
    )
    .await;
    if let Some(e) = draw_error.into_inner() {
        return Err(e);
    }
    let ok = report
        .rows
        .iter()
        .filter(|r| r.status == Status::Ok)
        .count();
    let skipped = report
        .rows
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .count();
    let failed = report.rows.len() - ok - skipped;
    let unreached: Vec<String> = report
        .unreached
        .iter()
        .map(|u| format!("{} {}", u.op, u.variant))
        .collect();
    let suites: Vec<String> = report
        .conformance
        .iter()
        .map(|s| match &s.absent {
            Some(why) => format!("{}: not built in ({why})", s.file),
            None => format!(
                "{}: {} passed, {} failed, {} skipped",
                s.file, s.passed, s.failed, s.skipped
            ),
        })
        .collect();
    status.set_text_content(Some(&format!(
        "done on {}: {ok} ok, {failed} failed, {skipped} skipped. Variants no case on the page (demo or conformance) selected on this adapter: {}. Conformance: {}.",
        report.adapter,
        if unreached.is_empty() {
            "none".to_owned()
        } else {
            unreached.join(", ")
        },
        if suites.is_empty() {
            "no suites".to_owned()
        } else {
            suites.join("; ")
        }
    )));
    serde_json::to_string(&report).map_err(|e| JsValue::from_str(&e.to_string()))
}

fn by_id(document: &Document, id: &str) -> Result<Element, JsValue> {
    document
        .get_element_by_id(id)
        .ok_or_else(|| JsValue::from_str(&format!("the page has no #{id}")))
}

fn append_row(document: &Document, body: &Element, row: &Row) -> Result<(), JsValue> {
    let class = match row.status {
        Status::Ok => "ok",
        Status::Skipped => "skipped",
        Status::Mismatch | Status::Error => "failed",
    };
    let status = match row.status {
        Status::Ok => "ok".to_owned(),
        Status::Skipped => format!("skipped: {}", row.detail),
        Status::Mismatch => format!("MISMATCH: {}", row.detail),
        Status::Error => format!("ERROR: {}", row.detail),
    };
    let cells = [
        row.op.clone(),
        row.case.clone(),
        row.dtype.clone(),
        format!("{:?}", row.shape),
        row.variant.clone(),
        row.adapter.clone(),
        max_error(row.max_error),
        row.gpu_us.map_or_else(String::new, |t| format!("{t:.1}")),
        status,
    ];
    append_tr(document, body, class, &cells)
}

fn append_case_row(document: &Document, body: &Element, row: &CaseRow) -> Result<(), JsValue> {
    let (class, result) = match row.status {
        Outcome::Passed => ("ok", format!("passed: {}", row.detail)),
        Outcome::Skipped => ("skipped", format!("skipped: {}", row.detail)),
        Outcome::Failed => ("failed", format!("FAILED: {}", row.detail)),
    };
    let cells = [
        row.op.clone(),
        row.case.clone(),
        row.variant.clone(),
        max_error(row.max_error),
        result,
    ];
    append_tr(document, body, class, &cells)
}

/// A table's cell for a largest error: empty where nothing was compared.
fn max_error(error: Option<f64>) -> String {
    error.map_or_else(String::new, |e| format!("{e:.2e}"))
}

/// Appends to `body` a row of class `class` (the page's style colours it) with `cells` as text.
fn append_tr(
    document: &Document,
    body: &Element,
    class: &str,
    cells: &[String],
) -> Result<(), JsValue> {
    let tr = document.create_element("tr")?;
    tr.set_class_name(class);
    for text in cells {
        let td = document.create_element("td")?;
        td.set_text_content(Some(text));
        tr.append_child(&td)?;
    }
    body.append_child(&tr)?;
    Ok(())
}
