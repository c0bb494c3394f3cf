//! Three-way differential test of the manifest expression language (DESIGN.md §3.1).
//!
//! Every `derive` and `when` expression of the manifests (MRotaryEmbedding, BiasSoftmax,
//! GatedRelativePositionBias) is evaluated on more than 10,000 random environments per
//! manifest (shapes, ranks, dtypes, attributes, device limits, subgroup sizes and features) by
//! the interpreter (`codegen::expr::eval_traced` over the validated op model), by minijinja's
//! own expression evaluator, and, on environments the op's typed API can represent, by the
//! generated Rust (`derived_value`, `accepts`). Outside that domain the comparison is two-way.
//! Every other expression of the manifests (constants, dispatch sizes, struct fields, …) is
//! compared two-way as well.
//!
//! The interpreter and the generated code must agree exactly, errors and messages included.
//! minijinja must agree with the interpreter except where the language documents a difference
//! (`minijinja_side.rs`); those comparisons are counted, and the test asserts that they
//! are few and that every variant is accepted often enough for the comparison to mean
//! something. A self-check shows that the comparison catches deliberate faults.

mod checks;
mod gated_env;
mod generators;
mod harness;
mod minijinja_side;
mod random_env;
mod typed;

use std::cell::RefCell;
use std::collections::BTreeMap;

use checks::{
    BIAS, GATED, MROPE, Manifest, check_common, check_entry_points, check_three_way, percent,
    summary,
};
use codegen::expr::{EvalError, Value};
use harness::{Generated, Mutation};
use kernel_runtime::support::ExprValue;
use kernels::bias_softmax as bias;
use kernels::gated_relative_position_bias as gated;
use kernels::mrotary_embedding as mrope;
use random_env::{RandomEnv, Traced};

/// Environments drawn per manifest: enough that at least [`checks::ENVS`] fall in the generated
/// code's typed domain (about 80% of MRotaryEmbedding's, 93% of the others').
const MROPE_ENVS: usize = 12_500;
const BIAS_ENVS: usize = 11_500;
const GATED_ENVS: usize = 11_500;

fn ignore(_: &RandomEnv, _: &Generated) {}

#[test]
fn mrotary_embedding_three_way() {
    let op = MROPE.load();
    check_entry_points(&op, mrope::DERIVED_NAMES, mrope::VARIANT_IDS);
    let t = MROPE.run(
        &op,
        0x6d72_6f70_6533_0001,
        MROPE_ENVS,
        &Mutation::default(),
        &ignore,
    );
    check_common("MRotaryEmbedding", &t);
    check_three_way("MRotaryEmbedding", &op, &t, t.envs / 10);
    let report = summary("MRotaryEmbedding", &t);
    for id in ["rank3", "rank4"] {
        let accepted = t.accepted_three_way.get(id).copied().unwrap_or(0);
        assert!(
            percent(accepted, t.three_way_envs) >= 5.0,
            "`{id}` accepted in only {accepted} three-way environments\n{report}"
        );
    }
}

#[test]
fn bias_softmax_three_way() {
    let op = BIAS.load();
    check_entry_points(&op, bias::DERIVED_NAMES, bias::VARIANT_IDS);
    let t = BIAS.run(
        &op,
        0x6269_6173_736d_0001,
        BIAS_ENVS,
        &Mutation::default(),
        &ignore,
    );
    check_common("BiasSoftmax", &t);
    check_three_way("BiasSoftmax", &op, &t, t.envs / 50);
    let report = summary("BiasSoftmax", &t);
    for id in ["longrow_split", "packed_rows", "adaptive_row"] {
        let accepted = t.accepted.get(id).copied().unwrap_or(0);
        let three_way = t.accepted_three_way.get(id).copied().unwrap_or(0);
        assert!(
            accepted >= 100 && three_way >= 100,
            "`{id}` accepted in only {accepted} environments ({three_way} three-way)\n{report}"
        );
    }
}

/// What the generated GatedRelativePositionBias code said, per (min, max) subgroup size:
/// how often `headParallel` was true and false, and how often each variant accepted.
#[derive(Debug, Default)]
struct SubgroupSeen {
    head_parallel: [usize; 2],
    accepted: BTreeMap<String, usize>,
}

#[test]
fn gated_relative_position_bias_three_way() {
    let op = GATED.load();
    check_entry_points(&op, gated::DERIVED_NAMES, gated::VARIANT_IDS);
    let seen: RefCell<BTreeMap<(u32, u32), SubgroupSeen>> = RefCell::default();
    let observe = |env: &RandomEnv, g: &Generated| {
        let key = (env.caps.subgroup_min_size, env.caps.subgroup_max_size);
        let mut seen = seen.borrow_mut();
        let entry = seen.entry(key).or_default();
        if let Some(Ok(ExprValue::Bool(b))) = g.derived.get("headParallel") {
            entry.head_parallel[usize::from(*b)] += 1;
        }
        for (id, result) in &g.accepted {
            *entry.accepted.entry(id.clone()).or_default() += usize::from(result.is_ok());
        }
    };
    let t = GATED.run(
        &op,
        0x6772_7062_0000_0001,
        GATED_ENVS,
        &Mutation::default(),
        &observe,
    );
    check_common("GatedRelativePositionBias", &t);
    check_three_way("GatedRelativePositionBias", &op, &t, t.envs / 50);
    let seen = seen.into_inner();
    let mut by_sizes = String::new();
    for ((min, max), s) in &seen {
        by_sizes.push_str(&format!(
            "\n  subgroup sizes {min:>2}..={max:<2}: headParallel true {:>5}, false {:>5}; \
             accepted {:?}",
            s.head_parallel[1], s.head_parallel[0], s.accepted
        ));
    }
    println!("GatedRelativePositionBias, three-way environments by subgroup sizes:{by_sizes}");
    let report = summary("GatedRelativePositionBias", &t) + &by_sizes;
    for id in ["row", "row_head_tree", "row_head_subgroups"] {
        let accepted = t.accepted_three_way.get(id).copied().unwrap_or(0);
        assert!(
            percent(accepted, t.three_way_envs) >= 2.0,
            "`{id}` accepted in only {accepted} three-way environments\n{report}"
        );
    }
    // `headParallel` takes both values, and the head-parallel variants are chosen, on every
    // subgroup size the manifest distinguishes: fixed (8, 32) and variable or unreported.
    for sizes in gated_env::SUBGROUP_SIZES {
        let s = seen.get(&sizes);
        let [falses, trues] = s.map_or([0, 0], |s| s.head_parallel);
        let tree = s.and_then(|s| s.accepted.get("row_head_tree").copied());
        assert!(
            trues >= 50 && falses >= 50 && tree.unwrap_or(0) >= 20,
            "subgroup sizes {sizes:?}: headParallel true {trues}, false {falses}, \
             row_head_tree accepted {tree:?}\n{report}"
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
        &Err(EvalError::new("b"))
    ));

    let pair = |a: &str, b: &str| Some((a.to_owned(), b.to_owned()));
    let on_minijinja = |label: &str, source: &str| Mutation {
        minijinja: pair(label, source),
        ..Mutation::default()
    };
    let on_generated = |ours: &str, theirs: &str| Mutation {
        generated: pair(ours, theirs),
        ..Mutation::default()
    };
    let faults: [(&Manifest, Mutation, &str); 9] = [
        (
            &MROPE,
            on_minijinja(
                "derive.pairCount",
                "(numel(shapes.input) / max(1, headSize)) * tasksPerHead + 1",
            ),
            "derive.pairCount",
        ),
        (
            &MROPE,
            on_minijinja("rank4.when[0]", "rank3Contract"),
            "rank4",
        ),
        (
            &MROPE,
            on_generated("rank3Contract", "rank4Contract"),
            "derive.rank3Contract",
        ),
        (
            &BIAS,
            on_minijinja(
                "derive.axisNorm",
                "attrs.axis if attrs.axis > 0 else attrs.axis + ranks.data",
            ),
            "derive.axisNorm",
        ),
        (
            &BIAS,
            on_generated("biasBlockCount", "batchCount"),
            "derive.biasBlockCount",
        ),
        (
            &GATED,
            on_minijinja(
                "derive.fixedSubgroupSize",
                "device.limits.subgroupMinSize == device.limits.subgroupMaxSize",
            ),
            "derive.fixedSubgroupSize",
        ),
        (
            &GATED,
            on_minijinja(
                "row_head_subgroups.when[2]",
                "device.features.has(\"shader-f16\")",
            ),
            "row_head_subgroups",
        ),
        (
            &GATED,
            on_generated("headParallel", "longAlignedRows"),
            "derive.headParallel",
        ),
        (
            &GATED,
            Mutation {
                generated_accept: pair("row_head_tree", "row"),
                ..Mutation::default()
            },
            "variant `row_head_tree` acceptance",
        ),
    ];
    for (manifest, mutation, needle) in &faults {
        let op = manifest.load();
        let t = manifest.run(&op, 0x5e1f_c4ec_0000_0001, 500, mutation, &ignore);
        assert!(
            t.failure_count > 0 && t.failures.iter().any(|f| f.contains(needle)),
            "the fault in `{needle}` went unnoticed\n{}",
            summary(&op.name, &t)
        );
    }
}
