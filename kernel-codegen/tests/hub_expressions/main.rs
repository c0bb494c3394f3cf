//! Differential test over every expression of the Hub's three manifests
//! (`ai.onnx.{Add,Softmax,MatMul}.manifest.json` in `../shared/hub`, or `$KERNEL_HUB_DIR`,
//! with the templates of `examples/hub/packages`; skipped, saying so, when they are absent).
//!
//! Each op's model comes from the codegen library (`kernel_codegen::models`), and its
//! expressions (output shapes and ranks, the manifest's derives, every variant's `when`,
//! derives, `demoteWhen` and intermediates' shapes, every pass's derives, uniform fields and
//! dispatch sizes) are evaluated on random environments by the interpreter
//! (`kernel_codegen::expr::eval_traced`, on the model's IR, where the variant's and the pass's
//! derives are inlined and tunables are literals) and by minijinja on the manifest's own text,
//! in a scope laid out as the Hub's runtime lays it out (`jinja.rs`: derives by bare name and
//! under `derive`, `DISPATCH_FOLD_WIDTH`, variant tunables merged after `when`, a derive's whole
//! Float reused as an Int, the Hub's helpers). The generated module's side of the comparison is
//! `examples/corpus/tests/expressions` (the seed packages and the corpus).
//!
//! Environments are steered towards each variant in turn (`env.rs`); the test asserts that the
//! two agree, that every expression was compared on values both computed (not only on
//! failures), and a self-check shows that a wrong minijinja source is caught.

mod compare;
mod env;
mod jinja;

use std::path::PathBuf;
use std::sync::OnceLock;

use compare::{Fault, Tally};
use kernel_codegen::model::Op;

/// The Hub's ops that have templates in `examples/hub/packages`.
const OPS: &[&str] = &["ai.onnx.Add", "ai.onnx.Softmax", "ai.onnx.MatMul"];

/// Environments per variant of each op.
const ENVS_PER_VARIANT: usize = 24;

/// An op's model and its manifest's derives in the file's order.
struct Package {
    op: Op,
    manifest_order: Vec<String>,
}

/// The folder of the Hub's manifests, when present.
fn hub_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KERNEL_HUB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/hub"),
    };
    let present = OPS
        .iter()
        .all(|op| dir.join(format!("{op}.manifest.json")).is_file());
    if present {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no Hub manifests at {} (set KERNEL_HUB_DIR)",
            dir.display()
        );
        None
    }
}

/// The models of the Hub's ops as the `hub` crate's build script builds them, once.
fn packages() -> Option<&'static [Package]> {
    static PACKAGES: OnceLock<Option<Vec<Package>>> = OnceLock::new();
    PACKAGES
        .get_or_init(|| {
            let dir = hub_dir()?;
            let templates =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/hub/packages");
            let mut config = kernel_codegen::Config::new();
            config.emit_rerun_if_changed(false);
            let mut orders = Vec::new();
            for op in OPS {
                let manifest = dir.join(format!("{op}.manifest.json"));
                config.package_apart(&manifest, templates.join(op));
                let text = std::fs::read_to_string(&manifest).expect("the manifest is readable");
                let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                let order: Vec<String> = (json.get("derive").and_then(|d| d.as_object()))
                    .map(|d| d.keys().cloned().collect())
                    .unwrap_or_default();
                orders.push(((*op).to_owned(), order));
            }
            let (inputs, _) = config
                .read_inputs()
                .unwrap_or_else(|e| panic!("reading the Hub's packages: {e}"));
            let ops =
                kernel_codegen::models(&inputs).unwrap_or_else(|d| panic!("the Hub's models: {d}"));
            let packages = ops
                .into_iter()
                .map(|op| {
                    let name = op.qualified_name();
                    let manifest_order = (orders.iter())
                        .find(|(n, _)| *n == name)
                        .map(|(_, o)| o.clone())
                        .unwrap_or_default();
                    Package { op, manifest_order }
                })
                .collect();
            Some(packages)
        })
        .as_deref()
}

#[test]
fn every_hub_expression_agrees_with_minijinja() {
    let Some(packages) = packages() else { return };
    assert_eq!(packages.len(), OPS.len());
    let mut report = String::new();
    let mut failures = Vec::new();
    let mut total = Tally::default();
    for (i, package) in packages.iter().enumerate() {
        let op = &package.op;
        let envs = ENVS_PER_VARIANT * op.variants.len().max(1);
        let seed = 0x4855_4200 + i as u64;
        let tally = compare::run(op, &package.manifest_order, seed, envs, &Fault::None);
        report.push_str(&tally.summary(op));
        failures.extend(tally.problems(op));
        total.absorb(&tally);
    }
    eprintln!(
        "{report}total: {} envs, {} values, {} both failed, {} loose, {} disagreements",
        total.envs, total.values, total.both_failed, total.loose, total.disagreements
    );
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The comparison is not vacuous: a minijinja source that differs from the manifest's is
/// reported.
#[test]
fn a_wrong_source_is_caught() {
    let Some(packages) = packages() else { return };
    let add = packages
        .iter()
        .find(|p| p.op.name == "Add")
        .expect("the Add op");
    let fault = Fault::Source("min(ceilDiv(numel(shapes.c), 64), DISPATCH_FOLD_WIDTH) + 1".into());
    let tally = compare::run(&add.op, &add.manifest_order, 7, 200, &fault);
    assert!(
        tally.disagreements > 0,
        "a wrong minijinja source went unnoticed:\n{}",
        tally.summary(&add.op)
    );
}
