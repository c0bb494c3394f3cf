//! What the generated conformance tests call (`build.rs` writes one test per case of every
//! `packages/<op>/test.json`, of the Hub's suites beside their manifests and of the suites
//! written for the Hub's ops in `examples/hub/packages/<op>/test.json`): [`case`] runs one case through the op's registry entry on each
//! context of [`contexts`] and checks it against the case's data or the op's float64 reference
//! ([`reference()`], from `examples::reference`); [`every_variant_is_reached`] plans every case
//! that runs on GPUs and asserts that each variant the device can build is selected by one.
//!
//! The helpers panic with the failure's report: they are the body of a test.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use kernel_runtime::Context;
use kernel_runtime::registry::OpEntry;
use kernel_runtime::support::AttrValue;
use test_support::conformance::{self, Case, Suite};
use test_support::conformance_run::{self, CaseReport, Checked, RefInput, Reference};

/// A float64 reference as a plain function, so the table below is data.
type ReferenceFn = fn(&[RefInput<'_>], &[(String, AttrValue)]) -> Result<Vec<Vec<f64>>, String>;

/// The float64 reference of each op that has one, by qualified name. Each op has one output,
/// which `examples::reference::by_op` computes from the inputs by role.
const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("com.microsoft.BiasSoftmax", |inputs, attrs| {
        by_op("com.microsoft.BiasSoftmax", inputs, attrs)
    }),
    (
        "com.microsoft.GatedRelativePositionBias",
        |inputs, attrs| by_op("com.microsoft.GatedRelativePositionBias", inputs, attrs),
    ),
    ("com.microsoft.MRotaryEmbedding", |inputs, attrs| {
        by_op("com.microsoft.MRotaryEmbedding", inputs, attrs)
    }),
    ("ai.onnx.Add", |inputs, attrs| {
        by_op("ai.onnx.Add", inputs, attrs)
    }),
    ("ai.onnx.Softmax", |inputs, attrs| {
        by_op("ai.onnx.Softmax", inputs, attrs)
    }),
    ("ai.onnx.MatMul", |inputs, attrs| {
        by_op("ai.onnx.MatMul", inputs, attrs)
    }),
];

/// `examples::reference::by_op` for `op`, its one output as the only one.
fn by_op(
    op: &str,
    inputs: &[RefInput<'_>],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Vec<f64>>, String> {
    let owned: Vec<(String, Vec<usize>, Vec<f64>)> = inputs
        .iter()
        .map(|input| {
            (
                input.role.to_owned(),
                input.shape.to_vec(),
                input.values.to_vec(),
            )
        })
        .collect();
    examples::reference::by_op(op, &owned, attrs)
        .map(|output| vec![output])
        .map_err(|error| format!("{error:#}"))
}

/// The float64 reference registered for `op`, if any.
pub fn reference(op: &str) -> Option<&'static Reference> {
    REFERENCES
        .iter()
        .find(|(name, _)| *name == op)
        .map(|(_, f)| f as &'static Reference)
}

/// The contexts every case runs on, with a label: the adapter's default device and, where it
/// has `subgroups`, a device on the same adapter without them, so that the variants only a
/// device without subgroups selects (GatedRelativePositionBias's `row_head_tree`, the
/// fallbacks of shaders that combine subgroups) are run and reached too.
pub fn contexts() -> Vec<(&'static str, &'static Context)> {
    static NO_SUBGROUPS: OnceLock<Context> = OnceLock::new();
    let default = test_support::shared();
    let mut contexts = vec![("default device", default)];
    if default.caps().subgroups {
        let without = NO_SUBGROUPS.get_or_init(|| test_support::context_without(&["subgroups"]));
        contexts.push(("device without subgroups", without));
    }
    contexts
}

/// The registry entry of `op` (its qualified name): the seed packages' (`kernels`) or the
/// Hub's (`hub`).
fn entry(op: &str) -> &'static OpEntry {
    let all = || kernels::OPS.iter().chain(hub::ops());
    all()
        .find(|entry| entry.qualified_name == op)
        .unwrap_or_else(|| {
            let known: Vec<&str> = all().map(|e| e.qualified_name).collect();
            panic!(
                "no op `{op}` in the registries (they have {}): generate it (`cargo xtask codegen`, or the Hub manifests beside the repository)",
                known.join(", ")
            )
        })
}

/// The suite at `path`, read as the build script read it.
fn suite(path: &str) -> Suite {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    conformance::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The feature a context lacks to run `case` at all (float16 tensors need `shader-f16`): such a
/// case is reported as not run on that context rather than as a rejection.
fn missing_feature(ctx: &Context, case: &Case) -> Option<&'static str> {
    let dtypes = case
        .inputs
        .iter()
        .map(|t| &t.dtype)
        .chain(case.outputs.iter().map(|o| &o.dtype));
    let f16 = dtypes.into_iter().any(|d| d == "float16");
    (f16 && !ctx.caps().shader_f16).then_some("shader-f16")
}

/// One line on a passed case: the variant, and what each output was checked against.
fn summary(report: &CaseReport) -> String {
    let outputs: Vec<String> = report
        .outputs
        .iter()
        .map(|o| match o.checked {
            Checked::Data => format!("`{}` against the case's data, worst {:e}", o.key, o.worst),
            Checked::Reference => format!("`{}` against the reference, worst {:e}", o.key, o.worst),
            Checked::ShapeOnly => format!("`{}`: shape only, no reference", o.key),
        })
        .collect();
    format!("variant `{}`: {}", report.variant, outputs.join("; "))
}

/// Runs case `name` of the suite at `path` for op `op` on every context of [`contexts`] and
/// fails the calling test with every failure's report.
pub fn case(op: &str, path: &str, name: &str) {
    test_support::bound();
    let entry = entry(op);
    let suite = suite(path);
    let Some(case) = suite.cases.iter().find(|c| c.name == name) else {
        panic!("{path}: no case `{name}`: run the build again (`cargo test` does)");
    };
    let reference = reference(op);
    let mut failures = Vec::new();
    for (label, ctx) in contexts() {
        if let Some(feature) = missing_feature(ctx, case) {
            println!("{label}: not run, the device has no {feature}");
            continue;
        }
        match conformance_run::run_case(ctx, entry, case, reference) {
            Ok(report) => println!("{label}: {}", summary(&report)),
            Err(failure) => failures.push(format!("{label}: {failure}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Plans every case of the suite at `path` that runs on GPUs, on every context of
/// [`contexts`], and fails unless each variant of `op` that one of them can build is selected
/// by some case (or a case fails to plan). The variant ids are the registry entry's.
pub fn every_variant_is_reached(op: &str, path: &str) {
    test_support::bound();
    let entry = entry(op);
    let suite = suite(path);
    let mut buildable: BTreeSet<&str> = BTreeSet::new();
    let mut reached: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    for (label, ctx) in contexts() {
        buildable.extend(conformance_run::buildable_variants(ctx, entry));
        for case in suite.cases.iter().filter(|c| c.skip_gpu.is_none()) {
            if missing_feature(ctx, case).is_some() {
                continue;
            }
            match conformance_run::plan_case(ctx, entry, case) {
                Ok(variant) => reached
                    .entry(variant)
                    .or_default()
                    .push(format!("{} ({label})", case.name)),
                Err(failure) => failures.push(format!("{label}: {failure}")),
            }
        }
    }
    for variant in entry.variants {
        let cases = reached.get(variant).map_or(0, Vec::len);
        let buildable = if buildable.contains(variant) {
            ""
        } else {
            " (no device here builds it)"
        };
        println!("{variant}: {cases} case runs{buildable}");
    }
    let missed: Vec<&str> = entry
        .variants
        .iter()
        .copied()
        .filter(|v| buildable.contains(v) && !reached.contains_key(v))
        .collect();
    if !missed.is_empty() {
        failures.push(format!(
            "no case of {path} selects {} (built here), on any of the contexts",
            missed.join(", ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
