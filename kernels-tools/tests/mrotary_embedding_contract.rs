//! Contract tests of `kernels::mrotary_embedding`: each test violates one clause of the
//! contract (rotary dim, num_heads, caches, sections, position ids, flags, rank, shader-f16)
//! and checks the typed error.
//! The GPU results against the float64 reference are tested in `mrotary_embedding.rs`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Case, attrs, ctx, expect_rejection, rank3, rank4};
use half::f16;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{IndexTensor, OpError, RuntimeError};
use kernels::mrotary_embedding::Attrs;

// ---- Contract clauses: each test violates one and checks the typed error -------------

#[test]
fn rejects_odd_effective_rotary_dim() {
    let c = rank4(7, 3, attrs(&[1, 1, 1], 0, false, false));
    expect_rejection(c.run::<f32>(ctx()), "rank4", "effectiveRotaryDim % 2 == 0");
    let mut a = attrs(&[1, 0, 0], 2, false, false);
    a.rotary_embedding_dim = 3;
    let c = rank3(16, 1, a);
    expect_rejection(c.run::<f32>(ctx()), "rank3", "effectiveRotaryDim % 2 == 0");
}

#[test]
fn rejects_rotary_dim_larger_than_the_head() {
    let mut a = attrs(&[1, 1, 1], 1, false, false);
    a.rotary_embedding_dim = 6;
    let c = rank4(4, 3, a.clone());
    expect_rejection(
        c.run::<f32>(ctx()),
        "rank4",
        "rotary_embedding_dim <= dim(shapes.input, 3)",
    );
    a.num_heads = 2;
    let c = rank3(8, 3, a);
    expect_rejection(
        c.run::<f32>(ctx()),
        "rank3",
        "rotary_embedding_dim <= rank3HeadSize",
    );
}

#[test]
fn rejects_rotary_dim_without_num_heads() {
    let mut a = attrs(&[1, 1, 0], 0, false, false);
    a.rotary_embedding_dim = 4;
    let c = rank4(8, 2, a);
    let cond = expect_rejection(c.run::<f32>(ctx()), "rank4", "attrs.num_heads > 0");
    assert!(cond.starts_with("rank4Contract › commonContract"), "{cond}");
}

#[test]
fn rejects_rank3_without_num_heads() {
    let c = rank3(8, 4, attrs(&[2, 1, 1], 0, false, false));
    expect_rejection(c.run::<f32>(ctx()), "rank3", "attrs.num_heads >= 1");
}

#[test]
fn rejects_hidden_size_not_divisible_by_num_heads() {
    let c = rank3(10, 2, attrs(&[1, 1, 0], 3, false, false));
    expect_rejection(
        c.run::<f32>(ctx()),
        "rank3",
        "dim(shapes.input, 2) % attrs.num_heads == 0",
    );
}

#[test]
fn rejects_cos_and_sin_of_different_shapes() {
    let a = attrs(&[2, 1, 1], 0, false, false);
    let c = Case::with_shapes(14, &[1, 1, 2, 8], &[3, 1, 2], &[4, 4], &[5, 4], a);
    expect_rejection(
        c.run::<f32>(ctx()),
        "rank4",
        "sameShape(shapes.cos_cache, shapes.sin_cache)",
    );
}

#[test]
fn rejects_cos_cache_not_of_rank_2() {
    let a = attrs(&[2, 1, 1], 0, false, false);
    let c = Case::with_shapes(15, &[1, 1, 2, 8], &[3, 1, 2], &[4, 4, 1], &[4, 4, 1], a);
    match c.run::<f32>(ctx()) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "cos_cache");
            assert!(rule.contains("rank 2"), "{rule}");
        }
        other => panic!("expected OpError::Input for cos_cache, got {other:?}"),
    }
}

#[test]
fn rejects_cos_width_other_than_half_the_rotary_dim() {
    // Sections summing to the (wrong) cache width get past sectionsValid to the width rule.
    let c = rank4(8, 3, attrs(&[1, 1, 1], 0, false, false));
    expect_rejection(
        c.run::<f32>(ctx()),
        "rank4",
        "halfRotaryDim * 2 == effectiveRotaryDim",
    );
    let c = rank4(8, 3, attrs(&[2, 1, 1], 0, false, false));
    expect_rejection(c.run::<f32>(ctx()), "rank4", "== halfRotaryDim");
}

#[test]
fn rejects_bad_mrope_sections() {
    let run = |sections: &[i64]| rank4(8, 4, attrs(sections, 0, false, false)).run::<f32>(ctx());
    let sum =
        "attrs.mrope_section[0] + attrs.mrope_section[1] + attrs.mrope_section[2] == halfRotaryDim";
    expect_rejection(run(&[2, 1, 2]), "rank4", sum);
    expect_rejection(
        run(&[3, -1, 2]),
        "rank4",
        "sectionsValid › attrs.mrope_section[1] >= 0",
    );
    expect_rejection(run(&[2, 2]), "rank4", "sectionsDefined");
    expect_rejection(run(&[1, 1, 1, 1]), "rank4", "sectionsDefined");
    match Attrs::from_raw(&[]) {
        Err(OpError::Attribute {
            attribute, rule, ..
        }) => {
            assert_eq!(attribute, "mrope_section");
            assert!(rule.contains("required"), "{rule}");
        }
        other => panic!("expected a missing-attribute error, got {other:?}"),
    }
}

#[test]
fn section_length_rejection_quotes_the_manifest_text() {
    // The failing clause is `sectionsDefined` = `attrs.mrope_section is defined and
    // (attrs.mrope_section | length) == 3`; attributes are always defined in the typed API, so
    // the rejection quotes the length clause, parentheses included.
    let c = rank4(8, 4, attrs(&[2, 2], 0, false, false));
    let cond = expect_rejection(
        c.run::<f32>(ctx()),
        "rank4",
        "sectionsValid › sectionsDefined",
    );
    assert!(
        cond.ends_with("sectionsValid › sectionsDefined › (attrs.mrope_section | length) == 3"),
        "{cond}"
    );
}

#[test]
fn rejects_position_ids_not_shaped_3_b_s() {
    let a = attrs(&[2, 1, 1], 0, false, false);
    let with_pos = |pos: &[usize]| {
        Case::with_shapes(16, &[2, 1, 3, 8], pos, &[4, 4], &[4, 4], a.clone()).run::<f32>(ctx())
    };
    expect_rejection(
        with_pos(&[2, 2, 3]),
        "rank4",
        "dim(shapes.position_ids, 0) == 3",
    );
    expect_rejection(
        with_pos(&[3, 1, 3]),
        "rank4",
        "dim(shapes.position_ids, 1) == dim(shapes.input, 0)",
    );
    expect_rejection(with_pos(&[3, 2, 4]), "rank4", "dim(shapes.position_ids, 2)");
    match with_pos(&[3, 6]) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "position_ids");
            assert!(rule.contains("rank 3"), "{rule}");
        }
        other => panic!("expected OpError::Input for position_ids, got {other:?}"),
    }
}

#[test]
fn rejects_flag_values_outside_the_manifest_sets() {
    let sections = ("mrope_section".to_owned(), AttrValue::Ints(vec![2, 1, 1]));
    for (name, value) in [
        ("interleaved", 2),
        ("mrope_layout", 2),
        ("is_packed_batching", 1),
    ] {
        match Attrs::from_raw(&[sections.clone(), (name.to_owned(), AttrValue::Int(value))]) {
            Err(OpError::Attribute {
                attribute, rule, ..
            }) => {
                assert_eq!(attribute, name);
                assert!(rule.contains("not allowed"), "{name}: {rule}");
            }
            other => panic!("{name} = {value}: expected OpError::Attribute, got {other:?}"),
        }
    }
    let unknown = Attrs::from_raw(&[sections, ("foo".to_owned(), AttrValue::Int(1))]);
    assert!(matches!(unknown, Err(OpError::Attribute { attribute, .. }) if attribute == "foo"));
    // The typed struct can still say `true`; plan/run must refuse packed batching.
    let mut a = attrs(&[2, 1, 1], 0, false, false);
    a.is_packed_batching = true;
    let err = rank4(8, 4, a).run::<f32>(ctx()).unwrap_err();
    assert!(
        matches!(&err, OpError::Attribute { attribute, .. } if attribute == "is_packed_batching"),
        "{err:?}"
    );
}

#[test]
fn rejects_position_ids_past_the_cache_on_the_host() {
    let mut c = Case::random(17, &[2, 3, 16], attrs(&[1, 2, 1], 2, false, false), 4);
    // Stream 1 (height), batch 1, token 2.
    c.positions[(2 + 1) * 3 + 2] = 4;
    match c.run::<f32>(ctx()) {
        Err(OpError::Input { input, rule, .. }) => {
            assert_eq!(input, "position_ids");
            for part in [
                "position id 4",
                "stream 1",
                "height",
                "batch 1",
                "token 2",
                "[0, 4)",
            ] {
                assert!(rule.contains(part), "missing `{part}` in: {rule}");
            }
        }
        other => panic!("expected OpError::Input for position_ids, got {other:?}"),
    }
}

#[test]
fn rejects_negative_or_huge_position_ids_by_checked_narrowing() {
    let ctx = ctx();
    for (value, index) in [(-1i64, 4), (1i64 << 32, 2)] {
        let mut data = vec![0i64; 6];
        data[index] = value;
        assert_eq!(
            IndexTensor::from_i64(ctx, &[3, 1, 2], &data).unwrap_err(),
            RuntimeError::Narrowing { index, value }
        );
    }
    let mut c = Case::random(18, &[1, 1, 2, 8], attrs(&[2, 1, 1], 0, false, false), 4);
    c.positions[3] = -1;
    let err = c.run::<f32>(ctx).unwrap_err();
    assert!(
        matches!(
            err,
            OpError::Runtime(RuntimeError::Narrowing {
                index: 3,
                value: -1
            })
        ),
        "{err:?}"
    );
}

#[test]
fn rejects_f16_on_a_device_without_shader_f16() {
    let no_f16 = test_support::context_without(&["shader-f16"]);
    let c = rank4(8, 4, attrs(&[2, 1, 1], 0, false, false));
    let cond = expect_rejection(c.run::<f16>(&no_f16), "rank4", "f16Ok(dtypes.T)");
    assert!(cond.starts_with("rank4Contract › commonContract"), "{cond}");
    c.check::<f32>(&no_f16, "f32 without shader-f16", "rank4")
        .unwrap();
}

#[test]
fn rejects_input_of_rank_2_or_5() {
    // Position ids (3, 1, 2) agree with B = 1 and S = 2 wherever those dims exist.
    let a = attrs(&[2, 1, 1], 1, false, false);
    for shape in [vec![1, 8], vec![1, 1, 2, 1, 8]] {
        let c = Case::with_shapes(19, &shape, &[3, 1, 2], &[4, 4], &[4, 4], a.clone());
        let err = c.run::<f32>(ctx()).unwrap_err();
        let OpError::NoVariant { rejections, .. } = &err else {
            panic!("{shape:?}: expected NoVariant, got {err:?}");
        };
        let variants: Vec<_> = rejections.iter().map(|r| r.variant).collect();
        assert_eq!(variants, ["rank3", "rank4"], "{err}");
        for r in rejections {
            if shape.len() == 5 {
                assert!(
                    r.condition.ends_with("ranks.input == 3")
                        || r.condition.ends_with("ranks.input == 4"),
                    "{err}"
                );
                // The rejection shows the value that made the condition false.
                assert_eq!(
                    r.values,
                    [("ranks.input".to_owned(), "5".to_owned())],
                    "{err}"
                );
                assert!(err.to_string().contains("(ranks.input = 5)"), "{err}");
            } else {
                // The manifest reads dim(input, 2) before any rank clause, so rank 2 fails
                // as an evaluation error of that conjunct.
                let why = r
                    .error
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                assert!(why.contains("tensor of rank 2"), "{err}");
            }
        }
    }
}
