//! Contract tests of `kernels::gated_relative_position_bias`: each test violates one clause of
//! SEMANTICS.md §3.3 (or the device's dispatch limit) and checks the typed error; attribute parsing
//! and the untyped entry point too. The GPU results against the float64 reference are tested
//! in `gated_relative_position_bias.rs`.

#![allow(clippy::unwrap_used)]

#[path = "common/gated_bias.rs"]
mod common;

use common::{
    ALL_VARIANTS, Case, CaseShapes, ROW, assert_all, context_without, ctx, expect_rejection, sizes,
};
use half::f16;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, DType, DeviceCaps, OpError};
use kernels::gated_relative_position_bias::{self as op, Attrs, RequiredAttrs};
use kernels_tools::reference::gated_relative_position_bias::Sizes;

// ---- Contract clauses of SEMANTICS.md §3.3: each test violates one and checks the typed error ---

/// Valid shapes `(B, S, N, H, D) = (2, 3, 2, 4, 4)` to violate one clause at a time.
const BASE: Sizes = Sizes {
    batch: 2,
    seq: 3,
    heads: 2,
    head_size: 4,
    proj: 4,
};

fn run_shapes(shapes: CaseShapes, num_heads: i64) -> Result<(&'static str, Vec<f64>), OpError> {
    Case::with_shapes(130, shapes, num_heads).run::<f32>(ctx())
}

fn expect_input_error<T: std::fmt::Debug>(result: Result<T, OpError>, input: &str, rule: &str) {
    match result {
        Err(OpError::Input {
            input: got,
            rule: got_rule,
            ..
        }) => {
            assert_eq!(got, input, "{got_rule}");
            assert!(got_rule.contains(rule), "`{rule}` not in: {got_rule}");
        }
        other => panic!("expected OpError::Input for `{input}` ({rule}), got {other:?}"),
    }
}

#[test]
fn the_base_case_of_the_contract_tests_is_accepted() {
    let case = Case::with_shapes(130, CaseShapes::valid(BASE), 2);
    case.check::<f32>(ctx(), "contract base", ROW).unwrap();
}

#[test]
fn rejects_missing_or_malformed_num_heads() {
    let expect_attribute =
        |raw: &[(String, AttrValue)], name: &str, rule: &str| match Attrs::from_raw(raw) {
            Err(OpError::Attribute {
                attribute,
                rule: got,
                ..
            }) => {
                assert_eq!(attribute, name, "{got}");
                assert!(got.contains(rule), "`{rule}` not in: {got}");
            }
            other => panic!("{raw:?}: expected OpError::Attribute for `{name}`, got {other:?}"),
        };
    expect_attribute(&[], "num_heads", "required");
    expect_attribute(
        &[("num_heads".into(), AttrValue::Float(2.0))],
        "num_heads",
        "integer",
    );
    expect_attribute(
        &[
            ("num_heads".into(), AttrValue::Int(2)),
            ("num_head".into(), AttrValue::Int(2)),
        ],
        "num_head",
        "",
    );
    // The untyped entry point reports the same missing attribute before touching the GPU.
    let case = Case::random(131, BASE);
    let up = |shape: &[usize], v: &[f64]| AnyTensor::from_f64(ctx(), DType::F32, shape, v).unwrap();
    let inputs = [
        up(&case.shapes.query_layer, &case.query),
        up(&case.shapes.query_bias, &case.query_bias),
        up(&case.shapes.rel_pos, &case.rel_pos),
        up(&case.shapes.weight, &case.weight),
        up(&case.shapes.bias, &case.bias),
        up(&case.shapes.eco_a, &case.eco_a),
    ];
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    match op::ENTRY.run(ctx(), &refs, &[]) {
        Err(OpError::Attribute { attribute, .. }) => assert_eq!(attribute, "num_heads"),
        Err(e) => panic!("expected a missing-attribute error, got {e:?}"),
        Ok(r) => panic!("accepted without num_heads: variant {}", r.variant),
    }
}

#[test]
fn rejects_num_heads_zero_or_negative() {
    for num_heads in [0, -2] {
        // `from_raw` has no value rule for num_heads; the contract is where it fails.
        let attrs = Attrs::from_raw(&[("num_heads".into(), AttrValue::Int(num_heads))]).unwrap();
        assert_eq!(attrs.num_heads, num_heads);
        let cond = expect_rejection(
            run_shapes(CaseShapes::valid(BASE), num_heads),
            "attrs.num_heads > 0",
        );
        assert_eq!(cond, "contract › queryContract › attrs.num_heads > 0");
    }
}

#[test]
fn rejects_hidden_not_divisible_by_num_heads_or_empty() {
    let shapes = |hidden: usize| CaseShapes {
        query_layer: vec![2, 3, hidden],
        query_bias: vec![hidden],
        ..CaseShapes::valid(BASE)
    };
    let cond = expect_rejection(run_shapes(shapes(10), 3), "hidden % attrs.num_heads == 0");
    assert_eq!(
        cond,
        "contract › queryContract › hidden % attrs.num_heads == 0"
    );
    expect_rejection(run_shapes(shapes(0), 2), "queryContract › hidden > 0");
}

#[test]
fn rejects_query_bias_of_the_wrong_length_or_rank() {
    for query_bias in [vec![9], vec![7]] {
        let shapes = CaseShapes {
            query_bias,
            ..CaseShapes::valid(BASE)
        };
        expect_rejection(
            run_shapes(shapes, 2),
            "queryContract › sameShape(shapes.query_bias, [hidden])",
        );
    }
    let shapes = CaseShapes {
        query_bias: vec![2, 4],
        ..CaseShapes::valid(BASE)
    };
    expect_input_error(run_shapes(shapes, 2), "query_bias", "rank 1");
}

#[test]
fn rejects_rel_pos_not_shaped_1_n_s_s() {
    for rel_pos in [
        vec![2, 2, 3, 3], // one per batch: ORT and the spec require a single batch
        vec![1, 3, 3, 3], // wrong N
        vec![1, 2, 4, 4], // wrong S
        vec![1, 2, 3, 4], // S × (S + 1)
    ] {
        let shapes = CaseShapes {
            rel_pos,
            ..CaseShapes::valid(BASE)
        };
        let cond = expect_rejection(run_shapes(shapes, 2), "relPosContract");
        assert_eq!(
            cond,
            "contract › relPosContract › sameShape(shapes.rel_pos, [1, attrs.num_heads, seqLen, seqLen])"
        );
    }
    let shapes = CaseShapes {
        rel_pos: vec![2, 3, 3],
        ..CaseShapes::valid(BASE)
    };
    expect_input_error(run_shapes(shapes, 2), "rel_pos", "rank 4");
}

#[test]
fn rejects_weight_rows_other_than_the_head_size() {
    for weight in [vec![5, 4], vec![8, 4]] {
        let shapes = CaseShapes {
            weight,
            ..CaseShapes::valid(BASE)
        };
        expect_rejection(
            run_shapes(shapes, 2),
            "weightContract › dim(shapes.weight, 0) == headSize",
        );
    }
    let shapes = CaseShapes {
        weight: vec![16],
        ..CaseShapes::valid(BASE)
    };
    expect_input_error(run_shapes(shapes, 2), "weight", "rank 2");
}

#[test]
fn rejects_odd_zero_or_oversized_projection() {
    for (proj, clause) in [
        (3, "projDim % 2 == 0"),
        (33, "projDim % 2 == 0"),
        (0, "projDim >= 2"),
        (34, "projDim <= 32"),
    ] {
        let shapes = CaseShapes {
            weight: vec![4, proj],
            bias: vec![proj],
            ..CaseShapes::valid(BASE)
        };
        let cond = expect_rejection(run_shapes(shapes, 2), clause);
        assert_eq!(
            cond,
            format!("contract › weightContract › {clause}"),
            "D = {proj}"
        );
    }
}

#[test]
fn rejects_bias_not_of_length_d() {
    for bias in [vec![2], vec![6], vec![1, 4]] {
        let result = run_shapes(
            CaseShapes {
                bias: bias.clone(),
                ..CaseShapes::valid(BASE)
            },
            2,
        );
        if bias.len() == 1 {
            expect_rejection(result, "biasContract › sameShape(shapes.bias, [projDim])");
        } else {
            expect_input_error(result, "bias", "rank 1");
        }
    }
}

#[test]
fn rejects_eco_a_not_shaped_1_n_1_1() {
    for eco_a in [
        vec![1, 1, 1, 1],
        vec![1, 2, 1, 2],
        vec![2, 1, 1, 1],
        vec![1, 3, 1, 1],
    ] {
        let shapes = CaseShapes {
            eco_a,
            ..CaseShapes::valid(BASE)
        };
        expect_rejection(
            run_shapes(shapes, 2),
            "ecoContract › sameShape(shapes.eco_a, [1, attrs.num_heads, 1, 1])",
        );
    }
    let shapes = CaseShapes {
        eco_a: vec![2],
        ..CaseShapes::valid(BASE)
    };
    expect_input_error(run_shapes(shapes, 2), "eco_a", "rank 4");
}

#[test]
fn rejects_the_token_offset_form() {
    // ORT's padding-removed form: a rank-2 query (T, N*H) with a 7th input token_offset (B, S).
    let shapes = CaseShapes {
        query_layer: vec![6, 8],
        ..CaseShapes::valid(BASE)
    };
    expect_input_error(run_shapes(shapes, 2), "query_layer", "rank 3");

    let ctx = ctx();
    let case = Case::random(132, BASE);
    let up = |shape: &[usize], v: &[f64]| AnyTensor::from_f64(ctx, DType::F32, shape, v).unwrap();
    let token_offset = AnyTensor::from_f64(ctx, DType::I64, &[2, 3], &[0.0; 6]).unwrap();
    let inputs = [
        up(&case.shapes.query_layer, &case.query),
        up(&case.shapes.query_bias, &case.query_bias),
        up(&case.shapes.rel_pos, &case.rel_pos),
        up(&case.shapes.weight, &case.weight),
        up(&case.shapes.bias, &case.bias),
        up(&case.shapes.eco_a, &case.eco_a),
        token_offset,
    ];
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    let raw = [("num_heads".to_owned(), AttrValue::Int(2))];
    match op::ENTRY.run(ctx, &refs, &raw) {
        Err(OpError::Input { rule, .. }) => {
            assert!(
                rule.contains("expected 6 inputs") && rule.contains("got 7"),
                "{rule}"
            );
        }
        Err(e) => panic!("expected OpError::Input for a 7th input, got {e:?}"),
        Ok(r) => panic!("a 7th input was accepted: variant {}", r.variant),
    }
    // The same six inputs without token_offset run.
    let run = op::ENTRY.run(ctx, &refs[..6], &raw).unwrap();
    assert_eq!(run.variant, ROW);
    assert_eq!(run.outputs[0].shape(), [2, 2, 3, 3]);
}

#[test]
fn rejects_f16_on_a_device_without_shader_f16() {
    let no_f16 = context_without(&["shader-f16"]);
    assert!(!no_f16.caps().shader_f16);
    let mut failures = Vec::new();
    for s in [BASE, sizes(2, 8, 2, 32, 8)] {
        let case = Case::random(133, s);
        let cond = expect_rejection(case.run::<f16>(&no_f16), "f16Ok(dtypes.T)");
        assert_eq!(cond, "contract › f16Ok(dtypes.T)");
        // f32 still runs, on the variant the device's other features allow.
        failures.extend(
            case.check_expected::<f32>(&no_f16, "f32 without shader-f16")
                .err(),
        );
    }
    assert_all(failures);
}

#[test]
fn every_variant_is_listed_in_rejections() {
    // A guard for `expect_rejection`: the manifest's variants, in priority order.
    assert_eq!(op::ENTRY.variants, ALL_VARIANTS);
}

// ---- Dispatch split over x and y -----------------------------------------------------------

#[test]
fn rejects_more_rows_than_a_two_dimensional_dispatch_holds() {
    // N * S = 65536 * 65536 rel_pos rows (and as many output rows, B = 1) > 65535²: planned
    // only, nothing is allocated.
    let s = sizes(1, 65536, 65536, 2, 2);
    let case = Case {
        shapes: CaseShapes::valid(s),
        query: vec![],
        query_bias: vec![],
        rel_pos: vec![],
        weight: vec![],
        bias: vec![],
        eco_a: vec![],
        attrs: Attrs::new(RequiredAttrs { num_heads: 65536 }),
    };
    let cond = expect_rejection(case.plan::<f32>(&DeviceCaps::portable()), "dispatchOk");
    assert!(cond.starts_with("dispatchOk › ceilDiv("), "{cond}");
}

#[test]
fn the_untyped_entry_refuses_tensors_of_one_type_that_disagree() {
    let ctx = ctx();
    let case = Case::random(133, BASE);
    let up = |dtype: DType, shape: &[usize], v: &[f64]| {
        AnyTensor::from_f64(ctx, dtype, shape, v).unwrap()
    };
    let inputs = [
        up(DType::F32, &case.shapes.query_layer, &case.query),
        up(DType::F16, &case.shapes.query_bias, &case.query_bias),
        up(DType::F32, &case.shapes.rel_pos, &case.rel_pos),
        up(DType::F32, &case.shapes.weight, &case.weight),
        up(DType::F32, &case.shapes.bias, &case.bias),
        up(DType::F32, &case.shapes.eco_a, &case.eco_a),
    ];
    let refs: Vec<&AnyTensor> = inputs.iter().collect();
    let raw = [("num_heads".to_owned(), AttrValue::Int(2))];
    expect_input_error(
        op::ENTRY.run(ctx, &refs, &raw),
        "query_bias",
        "is float16 but `query_layer` is float32; both have type `T`",
    );
}
