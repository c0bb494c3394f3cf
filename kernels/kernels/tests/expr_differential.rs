//! Three-way differential test of the manifest expression language (DESIGN.md §3.1).
//!
//! Every `derive` and `when` expression of the seed manifests is evaluated on 10,000 random
//! environments per manifest (shapes, ranks, dtypes, attributes, device limits and features)
//! by the interpreter (`codegen::expr::eval_traced` over the validated op model), by
//! minijinja's own expression evaluator, and, for the generated op (MRotaryEmbedding) on
//! environments its typed API can represent, by the generated Rust (`derived_value`,
//! `accepts`). Outside that domain, and for ops not generated yet, the comparison is two-way.
//! Every other expression of the manifests (constants, dispatch sizes, struct fields, …) is
//! compared two-way as well.
//!
//! The interpreter and the generated code must agree exactly, errors and messages included.
//! minijinja must agree with the interpreter except where the language documents a difference
//! (`common/minijinja_side.rs`); those comparisons are counted, and the test asserts that they
//! are few and that every variant is accepted often enough for the comparison to mean
//! something. A self-check shows that the comparison catches deliberate faults.

#[path = "common/generators.rs"]
mod generators;
#[path = "common/harness.rs"]
mod harness;
#[path = "common/minijinja_side.rs"]
mod minijinja_side;
#[path = "common/random_env.rs"]
mod random_env;

use codegen::expr::{EvalError, Value};
use codegen::model::Op;
use harness::{Generated, Mutation, Tally};
use kernel_runtime::DType;
use kernel_runtime::support::ExprValue;
use kernels::mrotary_embedding as mrope;
use random_env::{RandomEnv, Traced};

/// Environments per manifest. MRotaryEmbedding draws a quarter more, so that at least
/// 10,000 of them fall in the generated code's typed domain.
const ENVS: usize = 10_000;
const MROPE_ENVS: usize = 12_500;

const MROPE_FILE: &str = "manifests/com.microsoft.MRotaryEmbedding.manifest.json";
const MROPE_TEXT: &str =
    include_str!("../../../manifests/com.microsoft.MRotaryEmbedding.manifest.json");
const BIAS_FILE: &str = "manifests/com.microsoft.BiasSoftmax.manifest.json";
const BIAS_TEXT: &str = include_str!("../../../manifests/com.microsoft.BiasSoftmax.manifest.json");

fn load(file: &str, text: &str) -> Op {
    let manifest =
        codegen::manifest::parse(text).unwrap_or_else(|(path, e)| panic!("{file}: {path}: {e}"));
    codegen::model::build_op(file, &manifest).unwrap_or_else(|d| panic!("{file}: {d}"))
}

/// The generated `Env` inputs for `env`, or `None` outside the typed domain: every attribute
/// given with a representable value, dims non-negative (they come from `usize`), `T` a float
/// type, the manifest's tunables (the generated code has them inlined).
fn mrope_typed(
    env: &RandomEnv,
    tunables: &[(String, i64)],
) -> Option<(mrope::EnvShapes, mrope::DTypes, mrope::Attrs)> {
    if env.tunables.iter().ne(tunables.iter().map(|(k, v)| (k, v)))
        || env.attrs.len() != mrope::ENTRY.attributes.len()
    {
        return None;
    }
    let shape = |role: &str| {
        env.shapes
            .get(role)
            .filter(|s| s.iter().all(|d| *d >= 0))
            .cloned()
    };
    let shapes = mrope::EnvShapes {
        input: shape("input")?,
        position_ids: shape("position_ids")?,
        cos_cache: shape("cos_cache")?,
        sin_cache: shape("sin_cache")?,
        output: shape("output")?,
    };
    let t = match env.dtypes.get("T").map(String::as_str) {
        Some("f32") => DType::F32,
        Some("f16") => DType::F16,
        _ => return None,
    };
    let flag = |name: &str| match env.attrs.get(name) {
        Some(Value::Int(0)) => Some(false),
        Some(Value::Int(1)) => Some(true),
        _ => None,
    };
    let int = |name: &str| match env.attrs.get(name) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    };
    let scale = match env.attrs.get("scale")? {
        Value::Float(f) if f64::from(*f as f32) == *f => *f as f32,
        Value::Int(i) if (*i as f32) as i64 == *i => *i as f32,
        _ => return None,
    };
    let Value::List(section) = env.attrs.get("mrope_section")? else {
        return None;
    };
    let attrs = mrope::Attrs {
        interleaved: flag("interleaved")?,
        is_packed_batching: flag("is_packed_batching")?,
        mrope_layout: flag("mrope_layout")?,
        mrope_section: section.clone(),
        num_heads: int("num_heads")?,
        rotary_embedding_dim: int("rotary_embedding_dim")?,
        scale,
    };
    Some((shapes, mrope::DTypes { t }, attrs))
}

/// Every derived value and variant acceptance of the generated MRotaryEmbedding code.
fn mrope_generated(env: &RandomEnv, tunables: &[(String, i64)]) -> Option<Generated> {
    let (shapes, dtypes, attrs) = mrope_typed(env, tunables)?;
    let genv = mrope::Env {
        shapes,
        dtypes,
        attrs: &attrs,
        caps: &env.caps,
    };
    let derived = mrope::DERIVED_NAMES
        .iter()
        .map(|name| {
            let value = mrope::derived_value(name, &genv).unwrap_or_else(|| {
                Err(kernel_runtime::EvalError::new(
                    "derived_value: unknown name",
                ))
            });
            ((*name).to_owned(), value)
        })
        .collect();
    let accepted = mrope::VARIANT_IDS
        .iter()
        .map(|id| {
            let result = match mrope::accepts(id, &genv) {
                Some(Ok(())) => Ok(()),
                Some(Err(f)) => Err(f.error.map(|e| e.message)),
                None => Err(Some("accepts: unknown variant".to_owned())),
            };
            ((*id).to_owned(), result)
        })
        .collect();
    Some(Generated { derived, accepted })
}

fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// A one-paragraph account of a run, printed and used in assertion messages.
fn summary(name: &str, t: &Tally) -> String {
    let line = |what: &str, c: &harness::Counts| {
        format!(
            "\n  {what:<7} exact {:>7}, loose (inexact division) {:>6}, ours-only error {:>5}",
            c.exact, c.loose, c.ours_only
        )
    };
    format!(
        "{name}: {} environments ({} three-way), {} exact comparisons with the generated code \
         ({} of them failures on both sides), accepted {:?} (three-way {:?}), {} failures{}{}{}{}",
        t.envs,
        t.three_way_envs,
        t.generated,
        t.generated_errors,
        t.accepted,
        t.accepted_three_way,
        t.failure_count,
        line("derive", &t.derive),
        line("when", &t.when),
        line("accept", &t.accept),
        line("other", &t.other),
    )
}

/// The assertions every run shares: no disagreement, most comparisons exact, and every
/// `derive` / `when` compared exactly often and (for conditions) seen both true and false.
fn check_common(name: &str, t: &Tally) {
    let report = summary(name, t);
    println!("{report}");
    // Per expression (with --nocapture): how often it was compared exactly, and what it gave.
    for (label, s) in &t.labels {
        println!(
            "    {label:<60} exact {:>6}  true {:>6}  false {:>6}  error {:>6}",
            s.exact, s.trues, s.falses, s.errors
        );
    }
    assert!(
        t.failures.is_empty(),
        "{report}\n\nfirst disagreements:\n{}",
        t.failures.join("\n\n")
    );
    for c in [&t.derive, &t.when, &t.accept] {
        assert!(
            c.exact >= 5 * (c.loose + c.ours_only) && c.exact >= t.envs,
            "too few exact comparisons\n{report}"
        );
    }
    for (label, s) in &t.labels {
        if label.starts_with("derive.") || label.contains(".when[") {
            assert!(
                s.exact >= t.envs / 2,
                "{label}: only {} exact comparisons\n{report}",
                s.exact
            );
            assert!(
                !s.is_bool || (s.trues > 0 && s.falses > 0),
                "{label}: never both true and false ({s:?})\n{report}"
            );
        }
    }
}

#[test]
fn mrotary_embedding_three_way() {
    let op = load(MROPE_FILE, MROPE_TEXT);
    // The name-keyed entry points cover the model's derives and variants, in the same order.
    let derives: Vec<&str> = op.derives.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(mrope::DERIVED_NAMES, derives.as_slice());
    let variants: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(mrope::VARIANT_IDS, variants.as_slice());

    let tunables = op.tunables.clone();
    let t = harness::run(
        &op,
        0x6d72_6f70_6533_0001,
        MROPE_ENVS,
        &|rng| generators::mrope(rng, &tunables),
        &|env| mrope_generated(env, &tunables),
        &Mutation::default(),
    );
    check_common("MRotaryEmbedding", &t);
    let report = summary("MRotaryEmbedding", &t);
    assert!(
        t.three_way_envs >= ENVS && t.envs - t.three_way_envs >= t.envs / 10,
        "the typed / untyped split is off\n{report}"
    );
    for id in ["rank3", "rank4"] {
        let accepted = t.accepted_three_way.get(id).copied().unwrap_or(0);
        assert!(
            percent(accepted, t.three_way_envs) >= 5.0,
            "`{id}` accepted in only {accepted} three-way environments\n{report}"
        );
    }
    // Derives and acceptance of every three-way environment were compared with the generated
    // code.
    assert_eq!(
        t.generated,
        t.three_way_envs * (derives.len() + variants.len())
    );
}

#[test]
fn bias_softmax_two_way() {
    let op = load(BIAS_FILE, BIAS_TEXT);
    let tunables = op.tunables.clone();
    let t = harness::run(
        &op,
        0x6269_6173_736d_0001,
        ENVS,
        &|rng| generators::bias_softmax(rng, &tunables),
        &|_| None,
        &Mutation::default(),
    );
    check_common("BiasSoftmax", &t);
    let report = summary("BiasSoftmax", &t);
    for id in ["longrow_split", "packed_rows", "adaptive_row"] {
        let accepted = t.accepted.get(id).copied().unwrap_or(0);
        assert!(
            accepted >= 100,
            "`{id}` accepted in only {accepted} environments\n{report}"
        );
    }
}

/// A test that cannot fail is worthless: the comparison functions reject wrong values, and a
/// deliberately broken expression or generated entry point makes a run report failures.
#[test]
fn comparison_detects_deliberate_faults() {
    use minijinja::value::Value as Mj;
    use minijinja_side::{Verdict, compare};
    let exact = |v: Value| Traced {
        value: Ok(v),
        inexact: false,
    };
    let int = |v: i64| Ok(Mj::from(v));
    assert_eq!(compare(&exact(Value::Int(6)), &int(6)), Verdict::Agree);
    assert_eq!(
        compare(&exact(Value::Int(6)), &Ok(Mj::from(6.0))),
        Verdict::Agree
    );
    assert_eq!(compare(&exact(Value::Int(6)), &int(7)), Verdict::Disagree);
    assert_eq!(
        compare(&exact(Value::Bool(true)), &int(1)),
        Verdict::Disagree
    );
    assert_eq!(
        compare(
            &exact(Value::List(vec![2, 3])),
            &Ok(Mj::from(vec![2i64, 4]))
        ),
        Verdict::Disagree
    );
    let failed = Traced {
        value: Err(EvalError::new(
            "dim(): axis 3 is out of range for a rank-2 shape",
        )),
        inexact: false,
    };
    assert_eq!(compare(&failed, &int(0)), Verdict::Disagree);
    assert_eq!(
        compare(
            &Traced {
                inexact: true,
                ..exact(Value::Int(2))
            },
            &Ok(Mj::from(2.5))
        ),
        Verdict::Loose
    );
    assert!(!harness::same_generated(
        &Ok(Value::Int(3)),
        &Ok(ExprValue::Int(4))
    ));
    assert!(!harness::same_generated(
        &Err(EvalError::new("a")),
        &Err(kernel_runtime::EvalError::new("b"))
    ));

    let mrope_op = load(MROPE_FILE, MROPE_TEXT);
    let bias_op = load(BIAS_FILE, BIAS_TEXT);
    let faults: [(&Op, Mutation, &str); 4] = [
        (
            &mrope_op,
            Mutation {
                minijinja: Some((
                    "derive.pairCount".into(),
                    "(numel(shapes.input) / max(1, headSize)) * tasksPerHead + 1".into(),
                )),
                generated: None,
            },
            "derive.pairCount",
        ),
        (
            &mrope_op,
            Mutation {
                minijinja: Some(("rank4.when[0]".into(), "rank3Contract".into())),
                generated: None,
            },
            "rank4",
        ),
        (
            &mrope_op,
            Mutation {
                minijinja: None,
                generated: Some(("rank3Contract".into(), "rank4Contract".into())),
            },
            "derive.rank3Contract",
        ),
        (
            &bias_op,
            Mutation {
                minijinja: Some((
                    "derive.axisNorm".into(),
                    "attrs.axis if attrs.axis > 0 else attrs.axis + ranks.data".into(),
                )),
                generated: None,
            },
            "derive.axisNorm",
        ),
    ];
    for (op, mutation, needle) in &faults {
        let tunables = op.tunables.clone();
        let is_mrope = op.name == "MRotaryEmbedding";
        let t = harness::run(
            op,
            0x5e1f_c4ec_0000_0001,
            500,
            &|rng| {
                if is_mrope {
                    generators::mrope(rng, &tunables)
                } else {
                    generators::bias_softmax(rng, &tunables)
                }
            },
            &|env| is_mrope.then(|| mrope_generated(env, &tunables)).flatten(),
            mutation,
        );
        assert!(
            t.failure_count > 0 && t.failures.iter().any(|f| f.contains(needle)),
            "the fault in `{needle}` went unnoticed\n{}",
            summary(&op.name, &t)
        );
    }
}
