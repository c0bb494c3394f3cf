//! Data-driven fixtures of calls through the generated typed API and what they give: the
//! variant and dispatch sizes of the plan, or the error, as a caller sees it (`OpError`'s
//! message, naming the op, the argument or tensor, and the rule). One file per subject under
//! `tests/calls/`; a case is
//!
//! ```text
//! # What the case shows.
//! call <module> arg.<name>=<value> shape.<role>=[2, 8] shape.<role>=absent dtype.<var>=f16
//!      device=shader-f16,subgroups,subgroups=32..64,maxWorkgroups=1
//! => ok: <variant>, dispatch [x, y, z] …
//! ```
//!
//! (the call on one line; an error of several lines continues on lines indented by two
//! spaces). Values are read as `run-op --attr` reads them. Run with
//! `UPDATE_EXPECT=1` to rewrite the `=>` lines from what the calls give.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kernel_runtime::AttrValue;
use kernel_runtime::{DType, DeviceCaps, Dispatch};

use super::generated::{self, Call};

/// One case: the comment and call lines as written, and the expectation.
struct Case {
    text: String,
    call: String,
    expected: String,
}

fn parse_file(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut block = String::new();
    let mut call = None;
    for line in text.lines() {
        if let Some(expected) = line.strip_prefix("=> ") {
            cases.push(Case {
                text: std::mem::take(&mut block),
                call: call.take().unwrap_or_default(),
                expected: expected.to_owned(),
            });
            continue;
        }
        // An indented line after `=>` continues the expectation (one line per variant of a
        // "no variant accepts" error).
        if let (Some(last), true) = (cases.last_mut(), line.starts_with("  ") && block.is_empty()) {
            last.expected.push('\n');
            last.expected.push_str(line);
            continue;
        }
        if line.starts_with("call ") {
            call = Some(line.to_owned());
        }
        if !(line.is_empty() && block.is_empty()) {
            block.push_str(line);
            block.push('\n');
        }
    }
    cases
}

fn render_file(cases: &[Case], results: &[String]) -> String {
    let mut out = String::new();
    for (i, (case, result)) in cases.iter().zip(results).enumerate() {
        if i > 0 && !case.text.starts_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{}=> {result}", case.text);
    }
    out
}

/// A dtype as the calls spell it: a WGSL scalar (`f32`, `i32`), or the ONNX name for the
/// dtypes no scalar names alone (`int8`, `uint8`).
fn dtype(name: &str) -> Result<DType, String> {
    DType::parse(name).ok_or_else(|| format!("unknown dtype `{name}`"))
}

fn device(spec: &str) -> Result<DeviceCaps, String> {
    let mut caps = DeviceCaps::portable();
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            None if item == "shader-f16" => caps.shader_f16 = true,
            None if item == "subgroups" => caps.subgroups = true,
            Some(("subgroups", range)) => {
                let (lo, hi) = range.split_once("..").ok_or("subgroups=<min>..<max>")?;
                caps.subgroup_min_size = lo.parse().map_err(|_| "bad subgroup size")?;
                caps.subgroup_max_size = hi.parse().map_err(|_| "bad subgroup size")?;
            }
            Some(("maxWorkgroups", n)) => {
                caps.limits.max_compute_workgroups_per_dimension =
                    n.parse().map_err(|_| "bad maxWorkgroups")?;
            }
            _ => return Err(format!("unknown device item `{item}`")),
        }
    }
    Ok(caps)
}

/// Reads `call <module> items…` into the module name and the call.
fn parse_call(line: &str) -> Result<(String, Call), String> {
    let mut words = line.split_whitespace().skip(1);
    let module = words.next().ok_or("no module")?.to_owned();
    let mut call = Call {
        attrs: Vec::new(),
        shapes: Vec::new(),
        dtypes: Vec::new(),
        caps: DeviceCaps::portable(),
    };
    for word in words {
        let (key, value) = word
            .split_once('=')
            .ok_or_else(|| format!("`{word}`: no `=`"))?;
        if let Some(name) = key.strip_prefix("arg.") {
            call.attrs.push((name.to_owned(), AttrValue::parse(value)));
        } else if let Some(role) = key.strip_prefix("shape.") {
            let shape = if value == "absent" {
                None
            } else {
                let inner = value.trim_start_matches('[').trim_end_matches(']');
                let dims: Result<Vec<usize>, _> = inner
                    .split(',')
                    .filter(|d| !d.is_empty())
                    .map(str::parse)
                    .collect();
                Some(dims.map_err(|_| format!("`{word}`: bad shape"))?)
            };
            call.shapes.push((role.to_owned(), shape));
        } else if let Some(var) = key.strip_prefix("dtype.") {
            call.dtypes.push((var.to_owned(), dtype(value)?));
        } else if key == "device" {
            call.caps = device(value)?;
        } else {
            return Err(format!(
                "`{word}`: expected arg., shape., dtype. or device="
            ));
        }
    }
    Ok((module, call))
}

/// What a call gives, as the `=>` line says it.
fn outcome(line: &str) -> String {
    let (module, call) = match parse_call(line) {
        Ok(parsed) => parsed,
        Err(e) => return format!("bad case: {e}"),
    };
    match generated::plan_call(&module, &call) {
        None => format!("bad case: no module `{module}`"),
        Some(Err(e)) => format!("error: {e}"),
        Some(Ok(plan)) => {
            let passes: Vec<String> = plan
                .passes
                .iter()
                .map(|p| match p.dispatch {
                    Dispatch::Grid { x, y, z } => format!("{} [{x}, {y}, {z}]", p.id),
                    ref other => format!("{} {other:?}", p.id),
                })
                .collect();
            format!("ok: {}, dispatch {}", plan.variant, passes.join(", "))
        }
    }
}

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/calls")
}

/// Runs every fixture file (`UPDATE_EXPECT=1` rewrites the expectations).
pub fn check_fixtures() {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", fixture_dir().display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "test"))
        .collect();
    entries.sort();
    let (mut total, mut bad) = (0, Vec::new());
    for path in entries {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let cases = parse_file(&text);
        let results: Vec<String> = cases.iter().map(|c| outcome(&c.call)).collect();
        total += cases.len();
        for (case, got) in cases.iter().zip(&results) {
            if got.starts_with("bad case") {
                bad.push(format!("{}: {}: {got}", path.display(), case.call));
            }
        }
        // The file rendered with the outcomes the calls give now: equal to the file exactly
        // when every expectation holds.
        expect_test::expect_file![&path].assert_eq(&render_file(&cases, &results));
    }
    assert!(total > 0, "no cases under {}", fixture_dir().display());
    assert!(bad.is_empty(), "malformed cases:\n{}", bad.join("\n"));
}
