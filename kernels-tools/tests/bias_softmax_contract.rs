//! Contract tests of `kernels::bias_softmax`: GPU-free planning (the variant, dispatch and
//! intermediates of each shape, and the device-limit and shader-f16 clauses that reject a
//! variant), then one test per violated contract clause (bias layout, axis, rank, shader-f16)
//! checking the typed error, and attribute parsing. The GPU results against the float64
//! reference are tested in `bias_softmax.rs`.

#![allow(clippy::unwrap_used)]

#[path = "common/bias_softmax.rs"]
mod common;

use common::{
    ADAPTIVE, ALL_VARIANTS, Case, LONGROW, PACKED, attrs, context_without, ctx, expect_rejection,
    variant_shapes,
};
use half::f16;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{DType, DeviceCaps, Dispatch, OpError, OpHooks};
use kernels::bias_softmax::{self as op, Attrs, DTypes};

// ---- GPU-free planning ------------------------------------------------------------------

#[test]
fn plans_without_a_gpu() {
    let caps = DeviceCaps::portable();
    let plan = |shape: &[usize], bias: &[usize], inner: bool| {
        Case::random(1, shape, bias, -1, inner)
            .plan::<f32>(&caps)
            .unwrap()
    };
    let overrides = |p: &kernel_runtime::Plan| p.passes[0].overrides.clone();

    let adaptive = plan(&[3, 4, 300], &[3, 1, 300], true);
    assert_eq!(adaptive.variant, ADAPTIVE);
    assert_eq!(adaptive.passes[0].dispatch, Dispatch::Workgroups(12));
    // K = 3 bias rows, each repeated for 4 data rows.
    assert_eq!(
        overrides(&adaptive),
        [
            ("blockSize", 300.0),
            ("biasBlockCount", 3.0),
            ("innerRepeat", 4.0)
        ]
    );
    assert!(!adaptive.passes[0].kernel.source.contains("subgroupMax"));

    let packed = plan(&[4, 32, 7], &[32, 7], false);
    assert_eq!(packed.variant, PACKED);
    assert_eq!(
        packed.passes[0].dispatch,
        Dispatch::GridStride {
            items: 128,
            workgroup_size: 256
        }
    );

    let long = plan(&[4, 70_000], &[2, 70_000], true);
    assert_eq!(long.variant, LONGROW);
    let ids: Vec<_> = long.passes.iter().map(|p| p.id).collect();
    assert_eq!(ids, ["block_stats", "row_stats", "normalize"]);
    assert_eq!(
        long.passes[0].dispatch,
        Dispatch::Grid { x: 35, y: 4, z: 1 }
    );
    assert_eq!(long.passes[1].dispatch, Dispatch::Grid { x: 4, y: 1, z: 1 });
    // The normalize pass writes two blocks per workgroup (the hints' spanBlocks).
    assert_eq!(
        long.passes[2].dispatch,
        Dispatch::Grid { x: 18, y: 4, z: 1 }
    );
    let lens: Vec<_> = long.intermediates.iter().map(|i| (i.id, i.len)).collect();
    assert_eq!(
        lens,
        [
            ("blockMax", 140),
            ("blockSum", 140),
            ("rowMax", 4),
            ("rowSum", 4)
        ]
    );
    assert_eq!(long.outputs[0].shape, [4, 70_000]);

    // Long rows fall back to one workgroup per row when the block grid would not fit the
    // device: too many rows for y, or too many blocks for x.
    let mut small = caps.clone();
    small.limits.max_compute_workgroups_per_dimension = 16;
    for (shape, clause) in [
        (
            [17, 65_536],
            "batchCount <= device.limits.maxComputeWorkgroupsPerDimension",
        ),
        // 33 blocks of 2048 along x.
        (
            [1, 65_537],
            "ceilDiv(blockSize, tunables.BLOCK_COLS) <= device.limits",
        ),
    ] {
        let case = Case::random(1, &shape, &shape, -1, true);
        assert_eq!(
            case.plan::<f32>(&caps).unwrap().variant,
            LONGROW,
            "{shape:?}"
        );
        let fallback = case.plan::<f32>(&small).unwrap();
        assert_eq!(fallback.variant, ADAPTIVE, "{shape:?}");
        assert_eq!(
            fallback.passes[0].dispatch,
            Dispatch::Workgroups(shape[0] as u64)
        );
        type Op = op::Op<f32>;
        let env = <Op as OpHooks>::env(
            &case.shapes(),
            DTypes { t: DType::F32 },
            &case.attrs,
            &small,
        );
        let why = <Op as OpHooks>::accepts(LONGROW, &env.unwrap())
            .unwrap()
            .unwrap_err();
        let why = why.into_rejection(LONGROW);
        assert!(why.condition.starts_with(clause), "{shape:?}: {why}");
    }

    // The portable device has no shader-f16: every variant refuses f16.
    let case = Case::random(1, &[64, 8], &[1, 8], -1, true);
    expect_rejection(
        case.plan::<f16>(&caps),
        &[PACKED, ADAPTIVE],
        "f16Ok(dtypes.T)",
    );
}

// ---- Contract clauses: each test violates one and checks the typed error ---------------

/// The text the rejection of a bias layout quotes: `biasContract` is one disjunction, so every
/// variant is rejected by it as a whole.
const BIAS_CONTRACT: &str = "biasContract › ";

fn bias_rejection(shape: &[usize], bias_shape: &[usize], clause: &str) {
    let case = Case::random(3, shape, bias_shape, -1, true);
    for conditions in [
        expect_rejection(case.run::<f32>(ctx()), &ALL_VARIANTS, clause),
        expect_rejection(
            case.with_inner(false).run::<f16>(ctx()),
            &ALL_VARIANTS,
            clause,
        ),
    ] {
        for c in conditions {
            assert!(c.starts_with(BIAS_CONTRACT), "{c}");
        }
    }
    // The reference refuses the same layout.
    assert!(
        kernels_tools::reference::bias_softmax::Rows::new(shape, case.bias.len(), -1).is_err(),
        "the reference accepts {shape:?} + {bias_shape:?}"
    );
}

#[test]
fn rejects_bias_not_a_multiple_of_the_row_length() {
    // 4 elements against rows of 3.
    bias_rejection(&[4, 3], &[4], "numel(shapes.bias) % blockSize == 0");
}

#[test]
fn rejects_bias_rows_not_dividing_data_rows() {
    // K = 3 bias rows for Rw = 4 data rows.
    bias_rejection(&[4, 3], &[3, 3], "batchCount % biasBlockCount == 0");
}

#[test]
fn rejects_more_bias_rows_than_data_rows() {
    // K = 4 bias rows for Rw = 2 data rows (the numpy-style (1,C) bias of an empty data is
    // the Rw = 0 case of the same clause).
    bias_rejection(&[2, 3], &[4, 3], "biasBlockCount <= batchCount");
    bias_rejection(&[0, 3], &[1, 3], "biasBlockCount <= batchCount");
}

#[test]
fn rejects_bias_smaller_than_one_row() {
    // K = 0: an empty bias with non-empty data.
    bias_rejection(&[4, 3], &[0, 3], "biasBlockCount > 0");
}

#[test]
fn rejects_axis_out_of_range_on_both_sides() {
    let case = Case::random(4, &[2, 3, 4], &[1, 4], 3, true);
    expect_rejection(
        case.run::<f32>(ctx()),
        &ALL_VARIANTS,
        "attrs.axis < ranks.data",
    );
    let mut case = case;
    case.attrs.axis = -4;
    expect_rejection(
        case.run::<f32>(ctx()),
        &ALL_VARIANTS,
        "attrs.axis + ranks.data >= 0",
    );
    // The edges themselves are valid: axis 2 gives rows of 4, axis -3 one row of 24.
    for (axis, bias) in [(2, [2, 4]), (-3, [1, 24])] {
        let c = Case::random(5, &[2, 3, 4], &bias, axis, true);
        c.check::<f32>(ctx(), &format!("axis {axis}"), ADAPTIVE)
            .unwrap();
    }
}

#[test]
fn rejects_rank_0_data() {
    let case = Case::random(6, &[], &[1], 0, true);
    expect_rejection(case.run::<f32>(ctx()), &ALL_VARIANTS, "ranks.data >= 1");
    let mut case = case;
    case.attrs.axis = -1;
    expect_rejection(case.run::<f16>(ctx()), &ALL_VARIANTS, "ranks.data >= 1");
}

#[test]
fn attributes_from_raw() {
    let axis = ("axis".to_owned(), AttrValue::Int(-1));
    match Attrs::from_raw(std::slice::from_ref(&axis)) {
        Err(OpError::Attribute {
            attribute, rule, ..
        }) => {
            assert_eq!(attribute, "is_inner_broadcast");
            assert!(rule.contains("required"), "{rule}");
        }
        other => panic!("expected a missing-attribute error, got {other:?}"),
    }
    // ORT reads the flag as `!= 0`; axis keeps its default of 1 when not given.
    let flag = |v: AttrValue| ("is_inner_broadcast".to_owned(), v);
    let a = Attrs::from_raw(&[flag(AttrValue::Int(2))]).unwrap();
    assert_eq!(a, attrs(1, true));
    let a = Attrs::from_raw(&[axis.clone(), flag(AttrValue::Int(0))]).unwrap();
    assert_eq!(a, attrs(-1, false));
    match Attrs::from_raw(&[flag(AttrValue::Float(1.0))]) {
        Err(OpError::Attribute { attribute, .. }) => assert_eq!(attribute, "is_inner_broadcast"),
        other => panic!("expected a wrong-kind error, got {other:?}"),
    }
    // `broadcast_axis` is only mentioned by the schema text; the attribute no longer exists.
    let unknown = Attrs::from_raw(&[
        flag(AttrValue::Int(1)),
        ("broadcast_axis".to_owned(), AttrValue::Int(1)),
    ]);
    match unknown {
        Err(OpError::Attribute { attribute, .. }) => assert_eq!(attribute, "broadcast_axis"),
        other => panic!("expected an unknown-attribute error, got {other:?}"),
    }
}

#[test]
fn rejects_f16_on_a_device_without_shader_f16() {
    let no_f16 = context_without("shader-f16");
    for v in variant_shapes() {
        let case = Case::random(7, &v.shape, &v.inner_bias, v.axis, true);
        let result = case.run::<f16>(&no_f16);
        let conditions = expect_rejection(result, &[v.variant], "f16Ok(dtypes.T)");
        assert!(conditions[0].ends_with("f16Ok(dtypes.T)"), "{conditions:?}");
    }
    // f32 still runs on that device.
    let case = Case::random(8, &[5, 33], &[5, 33], 1, false);
    case.check::<f32>(&no_f16, "f32 without shader-f16", ADAPTIVE)
        .unwrap();
}
