//! GPU conformance tests of `kernels::bias_softmax` on a real adapter (Mesa lavapipe in CI): every
//! variant, dtype and broadcast mode against the float64 reference of SEMANTICS.md §2.2 (B1–B6)
//! with the tolerances of SEMANTICS.md §5, variant boundaries, attention masks, subgroups, axes,
//! masking, empty tensors, split dispatches and several ops in one submit. GPU-free planning and
//! the contract clauses are tested in `bias_softmax_contract.rs`.

#![allow(clippy::unwrap_used)]

#[path = "common/bias_softmax.rs"]
mod common;

use common::{
    ADAPTIVE, Case, LONGROW, PACKED, VariantShape, adaptive_workgroups, add_then_softmax,
    assert_all, attrs, check_against_add_softmax, context_without, ctx, exact_zeros, masked_case,
    masking_shapes, padding_case, rows_sum_to_one, sum_tolerance, variant_shapes,
};
use half::f16;
use kernel_runtime::{Dispatch, Float, IndexTensor, Tensor};
use kernels::bias_softmax::{self as op, Attrs, RequiredAttrs};
use kernels::mrotary_embedding as mrope;
use kernels_tools::data::{self, DataRng, Tolerance, compare};
use kernels_tools::reference::bias_softmax::{
    WORKED_B1_OUTPUT, WORKED_B2_OUTPUT, WORKED_BIAS, WORKED_DATA,
};
use kernels_tools::reference::mrotary_embedding::mrotary_embedding;

// ---- Every variant, dtype and broadcast mode ------------------------------------------

fn each_variant<T: Float>(seed: u64) {
    let ctx = ctx();
    let mut failures = Vec::new();
    for VariantShape {
        variant,
        shape,
        axis,
        inner_bias,
        outer_bias,
    } in variant_shapes()
    {
        let inner = Case::random(seed, &shape, &inner_bias, axis, true).with_peaks();
        let outer = Case::random(seed + 1, &shape, &outer_bias, axis, false).with_peaks();
        for case in [&inner, &outer] {
            failures.extend(case.check::<T>(ctx, variant, variant).err());
        }
        // The two modes must really differ on these layouts, or the test would not see a
        // kernel that applies the wrong one.
        let swapped = inner.with_inner(false);
        let diff = compare(
            &inner.reference::<T>(),
            &swapped.reference::<T>(),
            Tolerance::bias_softmax(T::DTYPE),
        );
        assert!(
            !diff.passed(),
            "{variant}: inner and outer agree on {shape:?}"
        );
    }
    assert_all(failures);
}

#[test]
fn each_variant_inner_and_outer_f32() {
    each_variant::<f32>(100);
}

#[test]
fn each_variant_inner_and_outer_f16() {
    each_variant::<f16>(200);
}

#[test]
fn worked_examples_b1_b2_on_the_gpu() {
    let b1 = Case {
        shape: vec![2, 2, 3],
        data: WORKED_DATA.to_vec(),
        bias_shape: vec![2, 1, 3],
        bias: WORKED_BIAS.to_vec(),
        attrs: attrs(2, true),
    };
    let b1_want = WORKED_B1_OUTPUT;
    let b2 = Case {
        bias_shape: vec![2, 3],
        attrs: attrs(-1, false),
        ..b1.clone()
    };
    let b2_want = WORKED_B2_OUTPUT;
    let mut failures = Vec::new();
    for (name, case, want) in [("B1", &b1, b1_want), ("B2", &b2, b2_want)] {
        let (v32, got32) = case.run::<f32>(ctx()).unwrap();
        let (v16, got16) = case.run::<f16>(ctx()).unwrap();
        assert_eq!((v32, v16), (ADAPTIVE, ADAPTIVE), "{name}");
        failures.extend(case.compare_with::<f32>(name, &got32, &want).err());
        failures.extend(case.compare_with::<f16>(name, &got16, &want).err());
        failures.extend(exact_zeros(name, &got32, &want));
        failures.extend(exact_zeros(name, &got16, &want));
    }
    assert_all(failures);
}

// ---- Variant boundaries ----------------------------------------------------------------

#[test]
fn row_length_8_and_9_with_64_rows() {
    let ctx = ctx();
    let mut failures = Vec::new();
    for (cols, variant) in [(8, PACKED), (9, ADAPTIVE)] {
        let inner = Case::random(cols as u64, &[2, 32, cols], &[2, 1, cols], 2, true);
        let outer = Case::random(cols as u64 + 10, &[64, cols], &[4, cols], 1, false);
        for case in [&inner, &outer] {
            let label = format!("C = {cols}, Rw = 64");
            failures.extend(case.check::<f32>(ctx, &label, variant).err());
            failures.extend(case.check::<f16>(ctx, &label, variant).err());
        }
    }
    assert_all(failures);
}

#[test]
fn row_count_63_and_64_at_short_rows() {
    let ctx = ctx();
    let mut failures = Vec::new();
    // Row lengths 8 (the packed maximum), 5 and 1 (every output exactly 1).
    for cols in [8, 5, 1] {
        for (rows, variant) in [(63, ADAPTIVE), (64, PACKED)] {
            let label = format!("Rw = {rows}, C = {cols}");
            // 9 bias rows divide 63 data rows, 8 divide 64.
            let k = if rows == 63 { 9 } else { 8 };
            let inner = Case::random(rows as u64, &[rows, cols], &[k, cols], 1, true);
            let outer = inner.with_inner(false);
            for case in [&inner, &outer] {
                failures.extend(case.check::<f32>(ctx, &label, variant).err());
                failures.extend(case.check::<f16>(ctx, &label, variant).err());
            }
            if cols == 1 {
                let (_, got) = inner.run::<f32>(ctx).unwrap();
                assert!(got.iter().all(|&v| v == 1.0), "{label}: {got:?}");
            }
        }
    }
    assert_all(failures);
}

#[test]
fn row_length_65535_65536_and_65538_with_two_rows() {
    let ctx = ctx();
    let mut failures = Vec::new();
    // 65538 is not a multiple of 4: long rows read element by element.
    for (cols, variant) in [(65_535, ADAPTIVE), (65_536, LONGROW), (65_538, LONGROW)] {
        let label = format!("C = {cols}");
        // A full bias (K = Rw) and a single bias row (K = 1), one in each mode.
        let full = Case::random(cols as u64, &[2, cols], &[2, cols], -1, true).with_peaks();
        let single = Case::random(cols as u64 + 1, &[2, cols], &[1, cols], 1, false).with_peaks();
        for case in [&full, &single] {
            failures.extend(case.check::<f32>(ctx, &label, variant).err());
            failures.extend(case.check::<f16>(ctx, &label, variant).err());
        }
    }
    assert_all(failures);
}

#[test]
fn long_row_with_more_blocks_than_lanes() {
    // 600000 columns = 293 blocks of 2048: the row-statistics pass folds more blocks than
    // its 256 lanes, so each lane loops.
    let ctx = ctx();
    let case = Case::random(5, &[1, 600_000], &[1, 600_000], -1, true).with_peaks();
    let mut failures = Vec::new();
    failures.extend(case.check::<f32>(ctx, "293 blocks", LONGROW).err());
    failures.extend(case.check::<f16>(ctx, "293 blocks", LONGROW).err());
    assert_all(failures);
}

// ---- Attention masks equal Add + Softmax -------------------------------------------------

#[test]
fn attention_padding_mask_inner_equals_add_then_softmax() {
    let mut failures = Vec::new();
    // S = 8: Rw = 64 rows of 8 (packed); S = 12: Rw = 96 rows of 12 (adaptive).
    for (s, valid, variant) in [(8, [5, 8], PACKED), (12, [12, 7], ADAPTIVE)] {
        let case = padding_case(s as u64, 2, 4, s, &valid);
        let label = format!("(2,4,{s},{s}) + (2,1,1,{s}) inner");
        failures.extend(check_against_add_softmax::<f32>(&case, &label, variant));
        failures.extend(check_against_add_softmax::<f16>(&case, &label, variant));
    }
    assert_all(failures);
}

#[test]
fn attention_masks_outer_equal_add_then_softmax() {
    let (b, n) = (2, 3);
    let mut failures = Vec::new();
    // S = 8: Rw = 48 < 64 rows; S = 12 and 16: rows longer than 8. All adaptive.
    for (s, variant) in [(8, ADAPTIVE), (12, ADAPTIVE), (16, ADAPTIVE)] {
        let shape = [b, n, s, s];
        for mask_shape in [
            vec![1, n, s, s],
            vec![n, s, s],
            vec![1, 1, s, s],
            vec![s, s],
        ] {
            let mut case = Case::random(s as u64, &shape, &mask_shape, -1, false);
            // A causal mask on top of the random values: key j > query i is masked.
            for (k, v) in case.bias.iter_mut().enumerate() {
                let (i, j) = ((k / s) % s, k % s);
                if j > i {
                    *v = -10000.0;
                }
            }
            let label = format!("{shape:?} + {mask_shape:?} outer");
            failures.extend(check_against_add_softmax::<f32>(&case, &label, variant));
            failures.extend(check_against_add_softmax::<f16>(&case, &label, variant));
        }
    }
    // Rw = 2 * 4 * 8 = 64 rows of 8: the packed variant with a (1,N,S,S) mask.
    let case = Case::random(9, &[2, 4, 8, 8], &[1, 4, 8, 8], 3, false);
    failures.extend(check_against_add_softmax::<f32>(
        &case,
        "(2,4,8,8) + (1,4,8,8)",
        PACKED,
    ));
    failures.extend(check_against_add_softmax::<f16>(
        &case,
        "(2,4,8,8) + (1,4,8,8)",
        PACKED,
    ));
    assert_all(failures);
}

#[test]
fn mask_b_1_s_s_follows_the_flat_row_rule_not_numpy() {
    // SEMANTICS.md §2.3: (B,1,S,S) is accepted and computes the flat-row result, which is not
    // numpy's broadcast for N > 1; the kernel must follow the flat rule in both modes.
    let (b, n, s) = (2, 3, 8);
    for inner in [true, false] {
        let case = Case::random(30, &[b, n, s, s], &[b, 1, s, s], -1, inner);
        let got = case.check::<f32>(ctx(), "(B,1,S,S)", ADAPTIVE).unwrap();
        let numpy = add_then_softmax(&case.data, &case.shape, &case.bias, &case.bias_shape);
        let cmp = compare(&got, &numpy, Tolerance::BIAS_SOFTMAX_F32);
        assert!(
            !cmp.passed(),
            "inner {inner}: (B,1,S,S) unexpectedly equals numpy"
        );
    }
}

// ---- Adaptive row with and without subgroups ------------------------------------------

#[test]
fn adaptive_row_with_and_without_subgroups() {
    let with = ctx();
    assert!(
        with.caps().subgroups,
        "the default device should have subgroups (lavapipe does): {with:?}"
    );
    let without = context_without("subgroups");
    let mut failures = Vec::new();
    // C = 37 leaves most lanes idle; C = 1000 spreads the row over every lane and subgroup;
    // C = 128 is a row of vec4 words a subgroup can hold (the hints' rowPerSubgroup) and
    // C = 4100 one that a workgroup cannot keep in registers.
    for (cols, rows) in [(37, 6), (128, 10), (300, 4), (1000, 4), (4100, 4)] {
        for inner in [true, false] {
            let case = Case::random(cols as u64, &[rows, cols], &[2, cols], 1, inner);
            let sub = case.plan::<f32>(with.caps()).unwrap();
            let tree = case.plan::<f32>(without.caps()).unwrap();
            assert_eq!((sub.variant, tree.variant), (ADAPTIVE, ADAPTIVE));
            let (ks, kt) = (sub.passes[0].kernel, tree.passes[0].kernel);
            assert_eq!(ks.label, kt.label, "the same pass of the same variant");
            assert_ne!(
                ks.digest, kt.digest,
                "subgroup and tree shaders must differ"
            );
            assert!(ks.source.contains("subgroupMax"), "{}", ks.source);
            assert!(!kt.source.contains("subgroupMax"), "{}", kt.source);
            for ctx in [with, &without] {
                let label = format!("subgroups {}", ctx.caps().subgroups);
                failures.extend(case.check::<f32>(ctx, &label, ADAPTIVE).err());
                failures.extend(case.check::<f16>(ctx, &label, ADAPTIVE).err());
            }
        }
    }
    // With subgroups, packed rows of whole words take a word per lane and shuffle (the hints'
    // wordLanes), and long rows of whole words reduce each statistics block in a subgroup
    // (blockPerSubgroup, on lavapipe's single subgroup size); other packed rows never use
    // subgroups: same shaders. Each runs on both devices.
    for v in variant_shapes().into_iter().skip(1) {
        let case = Case::random(1, &v.shape, &v.inner_bias, v.axis, true);
        let (a, b) = (
            case.plan::<f32>(with.caps()).unwrap(),
            case.plan::<f32>(without.caps()).unwrap(),
        );
        let words = v.shape.last().is_some_and(|c| c % 4 == 0);
        if words {
            let (ks, kt) = (a.passes[0].kernel, b.passes[0].kernel);
            let op = if v.variant == PACKED {
                "subgroupShuffleXor"
            } else {
                "subgroupMax"
            };
            assert!(ks.source.contains(op), "{}", ks.source);
            assert!(!kt.source.contains(op), "{}", kt.source);
        } else {
            assert_eq!(a, b, "{}", a.variant);
        }
        for ctx in [with, &without] {
            let label = format!("subgroups {}", ctx.caps().subgroups);
            failures.extend(case.check::<f32>(ctx, &label, v.variant).err());
        }
    }
    for shape in [[64, 4], [64, 8]] {
        for inner in [true, false] {
            let case = Case::random(shape[1] as u64, &shape, &[8, shape[1]], 1, inner);
            for ctx in [with, &without] {
                let label = format!("packed words, subgroups {}", ctx.caps().subgroups);
                failures.extend(case.check::<f32>(ctx, &label, PACKED).err());
                failures.extend(case.check::<f16>(ctx, &label, PACKED).err());
            }
        }
    }
    assert_all(failures);
}

// ---- Axis handling ---------------------------------------------------------------------

#[test]
fn negative_and_middle_axes() {
    let ctx = ctx();
    let shape = [2, 3, 4, 5];
    let mut failures = Vec::new();
    // axis 1 and -3: Rw = 2, C = 60; axis 0 and -4: Rw = 1, C = 120; axis 2 and -2: Rw = 6,
    // C = 20; axis 3 and -1: Rw = 24, C = 5 (too few rows for packed_rows).
    for (axis, twin, rows, cols) in [
        (1, -3, 2, 60),
        (0, -4, 1, 120),
        (2, -2, 6, 20),
        (3, -1, 24, 5),
    ] {
        for (k, inner) in [(1, true), (rows, false)] {
            let case = Case::random(axis as u64 + 40, &shape, &[k, cols], axis, inner);
            let label = format!("axis {axis}");
            let got = case.check::<f32>(ctx, &label, ADAPTIVE);
            let plan = case.plan::<f32>(ctx.caps()).unwrap();
            let expected = adaptive_workgroups(ctx.caps(), rows as u64, cols as u64);
            assert_eq!(plan.passes[0].dispatch, Dispatch::Workgroups(expected));
            let mut negative = case.clone();
            negative.attrs.axis = twin;
            let twin_got = negative.check::<f32>(ctx, &format!("axis {twin}"), ADAPTIVE);
            match (got, twin_got) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "axis {axis} and {twin} must agree bit for bit"),
                (a, b) => failures.extend(a.err().into_iter().chain(b.err())),
            }
            failures.extend(case.check::<f16>(ctx, &label, ADAPTIVE).err());
        }
    }
    // The default axis is 1.
    let mut case = Case::random(47, &shape, &[1, 60], 1, true);
    case.attrs = Attrs::new(RequiredAttrs {
        is_inner_broadcast: true,
    });
    failures.extend(case.check::<f32>(ctx, "default axis", ADAPTIVE).err());
    assert_all(failures);
}

// ---- Masking: -inf gives NaN rows, -10000 gives exact zeros ----------------------------

fn fully_masked_rows<T: Float>() -> Vec<String> {
    let mut failures = Vec::new();
    for (variant, shape, bias_shape, inner) in masking_shapes() {
        let case = masked_case(50, &shape, &bias_shape, inner, f64::NEG_INFINITY, true);
        let label = format!("-inf masks, {variant}");
        let got = match case.check::<T>(ctx(), &label, variant) {
            Ok(got) => got,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let cols = *shape.last().unwrap();
        let rows = got.len() / cols;
        for r in [1, rows - 1] {
            let row = &got[r * cols..(r + 1) * cols];
            if let Some(bad) = row.iter().find(|v| !v.is_nan()) {
                failures.push(format!(
                    "{}: fully masked row {r} must be NaN, has {bad}",
                    case.describe::<T>(&label)
                ));
            }
        }
        let nan_rows = got
            .chunks(cols)
            .filter(|r| r.iter().any(|v| v.is_nan()))
            .count();
        if nan_rows != 2 {
            failures.push(format!(
                "{}: {nan_rows} rows have NaN, expected 2",
                case.describe::<T>(&label)
            ));
        }
        failures.extend(exact_zeros(
            &case.describe::<T>(&label),
            &got,
            &case.reference::<T>(),
        ));
        failures.extend(rows_sum_to_one(&label, &got, cols, sum_tolerance::<T>()));
    }
    failures
}

#[test]
fn fully_masked_rows_give_nan_in_every_variant() {
    let mut failures = fully_masked_rows::<f32>();
    failures.extend(fully_masked_rows::<f16>());
    assert_all(failures);
}

fn large_finite_masks<T: Float>() -> Vec<String> {
    let mut failures = Vec::new();
    for (variant, shape, bias_shape, inner) in masking_shapes() {
        // No row is masked as a whole here: with every logit near -10000, f32 addition
        // itself is only accurate to about 5e-4 and the spec tolerance would not apply.
        let case = masked_case(60, &shape, &bias_shape, inner, -10000.0, false);
        let label = format!("-10000 masks, {variant}");
        let got = match case.check::<T>(ctx(), &label, variant) {
            Ok(got) => got,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        let want = case.reference::<T>();
        assert!(want.contains(&0.0), "{label}: the case masks nothing");
        failures.extend(exact_zeros(&case.describe::<T>(&label), &got, &want));
        let cols = *shape.last().unwrap();
        if got[2 * cols - 1] != 1.0 {
            failures.push(format!(
                "{}: the only unmasked key of row 1 has probability {}, not 1",
                case.describe::<T>(&label),
                got[2 * cols - 1]
            ));
        }
        failures.extend(rows_sum_to_one(&label, &got, cols, sum_tolerance::<T>()));
    }
    failures
}

#[test]
fn large_finite_masks_give_exact_zeros_in_every_variant() {
    let mut failures = large_finite_masks::<f32>();
    failures.extend(large_finite_masks::<f16>());
    assert_all(failures);
}

// ---- Empty tensors, split dispatches, several ops in one submit ------------------------

#[test]
fn empty_tensors_give_empty_outputs() {
    let ctx = ctx();
    let cases: [(&[usize], &[usize], i64); 6] = [
        (&[0, 5], &[0, 5], 1),
        // C = 0: 3 rows of nothing, still dispatched as 3 workgroups.
        (&[3, 0], &[0], 1),
        (&[70, 0], &[0, 0], -1),
        (&[2, 0, 4], &[0, 4], -1),
        (&[0], &[0], 0),
        // Would be a long row, but there are no rows.
        (&[0, 70_000], &[0, 70_000], 1),
    ];
    for (shape, bias_shape, axis) in cases {
        for inner in [true, false] {
            let case = Case::random(70, shape, bias_shape, axis, inner);
            let label = format!("empty {shape:?} + {bias_shape:?}");
            let got = case.check::<f32>(ctx, &label, ADAPTIVE).unwrap();
            assert!(got.is_empty(), "{label}");
            let got = case.check::<f16>(ctx, &label, ADAPTIVE).unwrap();
            assert!(got.is_empty(), "{label}");
        }
    }
}

#[test]
fn rows_split_over_x_and_y_dispatch() {
    // At most 4 workgroups per dimension. adaptive_row runs one workgroup per row without
    // subgroups: 10 rows become a 4 x 3 grid, so the shader must linearise x/y and skip the 2
    // extra workgroups. packed_rows is a grid-stride loop: 2000 rows need 8 workgroups of
    // 256, clamped to 4, so every invocation handles two rows.
    let mut ctx = context_without("subgroups");
    ctx.set_dispatch_limit_for_testing(Some(4));
    let mut failures = Vec::new();
    let shapes = [
        (ADAPTIVE, vec![10, 37], vec![2, 37], vec![5, 37], [4, 3, 1]),
        (
            ADAPTIVE,
            vec![2, 5, 300],
            vec![2, 1, 300],
            vec![5, 300],
            [4, 3, 1],
        ),
        (PACKED, vec![2000, 4], vec![8, 4], vec![40, 4], [4, 1, 1]),
    ];
    for (variant, shape, inner_bias, outer_bias, grid) in shapes {
        for (bias, inner) in [(inner_bias, true), (outer_bias, false)] {
            let case = Case::random(80, &shape, &bias, -1, inner);
            let plan = case.plan::<f32>(ctx.caps()).unwrap();
            assert_eq!(
                plan.passes[0].dispatch.workgroups(4).unwrap(),
                grid,
                "{shape:?}"
            );
            let label = format!("split dispatch {shape:?}");
            failures.extend(case.check::<f32>(&ctx, &label, variant).err());
            failures.extend(case.check::<f16>(&ctx, &label, variant).err());
        }
    }
    assert_all(failures);
}

#[test]
fn bias_softmax_and_mrope_recorded_into_one_submit() {
    // Two long-row ops of the same shape (f32, then f16) need intermediates of the same sizes,
    // so the second takes the first one's buffers from the pool while both sit in one
    // encoder; a packed-rows op and an MRotaryEmbedding run in between and after.
    let ctx = ctx();
    let long_a = Case::random(90, &[2, 65_536], &[2, 65_536], -1, true).with_peaks();
    let long_b = Case::random(91, &[2, 65_536], &[1, 65_536], -1, false).with_peaks();
    let packed = Case::random(92, &[96, 6], &[12, 6], 1, false);
    let up_a = long_a.upload::<f32>(ctx).unwrap();
    let up_b = long_b.upload::<f16>(ctx).unwrap();
    let up_p = packed.upload::<f32>(ctx).unwrap();

    // MRotaryEmbedding (1, 3, 2 * 8): 2 heads of 8, sections [2, 1, 1], 4 cache rows.
    let mut rng = DataRng::new(93);
    let rope_shape = [1, 3, 16];
    let x = rng.uniform(48, -2.0, 2.0);
    let positions = rng.indices(9, 4);
    let (cos, sin) = (rng.uniform(16, -1.0, 1.0), rng.uniform(16, -1.0, 1.0));
    let mut rope_attrs = mrope::Attrs::new(mrope::RequiredAttrs {
        mrope_section: vec![2, 1, 1],
    });
    rope_attrs.num_heads = 2;
    let input = Tensor::from_slice(ctx, &rope_shape, &data::to_elem::<f32>(&x)).unwrap();
    let position_ids = IndexTensor::from_i64(ctx, &[3, 1, 3], &positions).unwrap();
    let cos_cache = Tensor::from_slice(ctx, &[4, 4], &data::to_elem::<f32>(&cos)).unwrap();
    let sin_cache = Tensor::from_slice(ctx, &[4, 4], &data::to_elem::<f32>(&sin)).unwrap();
    let rope_inputs = mrope::Inputs {
        input: &input,
        position_ids: &position_ids,
        cos_cache: &cos_cache,
        sin_cache: &sin_cache,
    };

    let mut encoder = ctx.create_encoder();
    let out_a = op::record(ctx, &mut encoder, &up_a.inputs(), &long_a.attrs).unwrap();
    let out_r = mrope::record(ctx, &mut encoder, &rope_inputs, &rope_attrs).unwrap();
    let out_b = op::record(ctx, &mut encoder, &up_b.inputs(), &long_b.attrs).unwrap();
    let out_p = op::record(ctx, &mut encoder, &up_p.inputs(), &packed.attrs).unwrap();
    ctx.submit(encoder).unwrap();

    let got_a = data::from_elem(&out_a.output.to_vec(ctx).unwrap());
    let got_b = data::from_elem(&out_b.output.to_vec(ctx).unwrap());
    let got_p = data::from_elem(&out_p.output.to_vec(ctx).unwrap());
    let got_r = data::from_elem(&out_r.output.to_vec(ctx).unwrap());
    let want_r = mrotary_embedding(
        &data::round_to::<f32>(&x),
        &rope_shape,
        &positions,
        &data::round_to::<f32>(&cos),
        &data::round_to::<f32>(&sin),
        4,
        &rope_attrs,
    )
    .unwrap();
    let rope_cmp = compare(&got_r, &want_r, Tolerance::MROPE_F32);
    let mut failures: Vec<String> = [
        long_a.compare_with::<f32>("recorded long row", &got_a, &long_a.reference::<f32>()),
        long_b.compare_with::<f16>("recorded long row", &got_b, &long_b.reference::<f16>()),
        packed.compare_with::<f32>("recorded packed", &got_p, &packed.reference::<f32>()),
    ]
    .into_iter()
    .filter_map(Result::err)
    .collect();
    if !rope_cmp.passed() {
        failures.push(format!("MRotaryEmbedding recorded in between: {rope_cmp}"));
    }
    assert_all(failures);
}
