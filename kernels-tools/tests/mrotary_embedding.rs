//! GPU conformance tests of `kernels::mrotary_embedding` on a real adapter (Mesa lavapipe in CI),
//! against the float64 reference of SEMANTICS.md §1.3 with the tolerances of SEMANTICS.md §5: every
//! rank, pairing and layout, worked examples, model sizes, GPU-free planning, recording, split
//! dispatches and the shader's position guard. The contract clauses are tested in
//! `mrotary_embedding_contract.rs`.

#![allow(clippy::unwrap_used)]

mod common;

use common::{
    Case, assert_all, attrs, ctx, expect_rejection, run_with_gpu_positions, vl_positions,
    worked_example, worked_examples,
};
use half::f16;
use kernel_runtime::{DeviceCaps, Dispatch, Float};
use kernels::mrotary_embedding::{self as op, Attrs, RequiredAttrs};
use kernels_tools::reference::mrotary_embedding::rope_caches;

/// rank 3/4 × interleaved 0/1 × mrope_layout 0/1 for element type `T`, B = 2: with N = 3
/// heads of 12 (one pair per invocation), and with N = 5 heads of 16, whose pairs come in
/// fours (the hints' four-pair path), which groups heads by four and so leaves a partial group.
fn all_combinations<T: Float>(seed: u64) {
    let ctx = ctx();
    let mut failures = Vec::new();
    for (n, h, sections) in [(3, 12, [2, 2, 2]), (5, 16, [2, 3, 3])] {
        let (b, s, m) = (2, 5, 16);
        for (rank, shape) in [(3, vec![b, s, n * h]), (4, vec![b, n, s, h])] {
            for interleaved in [false, true] {
                for layout in [false, true] {
                    let a = attrs(&sections, n as i64, interleaved, layout);
                    let label = format!(
                        "{n} heads of {h}, rank {rank}, interleaved {interleaved}, layout {layout}"
                    );
                    let case = Case::random(seed + rank, &shape, a, m);
                    failures.extend(case.check::<T>(ctx, &label, &format!("rank{rank}")).err());
                }
            }
        }
    }
    assert_all(failures);
}

#[test]
fn all_combinations_f32() {
    all_combinations::<f32>(100);
}

#[test]
fn all_combinations_f16() {
    all_combinations::<f16>(200);
}

#[test]
fn odd_head_size_with_smaller_rotary_dim_copies_the_tail() {
    let ctx = ctx();
    let mut failures = Vec::new();
    for (interleaved, layout) in [(false, false), (true, true), (false, true), (true, false)] {
        let mut a = attrs(&[1, 0, 1], 2, interleaved, layout);
        a.rotary_embedding_dim = 4;
        let label = format!("H = 7, R = 4, interleaved {interleaved}, layout {layout}");
        let r3 = Case::random(1, &[2, 3, 14], a.clone(), 6);
        let r4 = Case::random(2, &[2, 2, 3, 7], a, 6);
        failures.extend(r3.check::<f32>(ctx, &label, "rank3").err());
        failures.extend(r4.check::<f32>(ctx, &label, "rank4").err());
        failures.extend(r4.check::<f16>(ctx, &label, "rank4").err());
    }
    // R = 2 on H = 9: the tail (7 channels, odd) is longer than the rotary part.
    let mut a = attrs(&[0, 0, 1], 3, true, false);
    a.rotary_embedding_dim = 2;
    let r4 = Case::random(3, &[2, 3, 2, 9], a, 6);
    failures.extend(r4.check::<f32>(ctx, "H = 9, R = 2", "rank4").err());
    assert_all(failures);
}

#[test]
fn scale_multiplies_rotated_channels_only() {
    let ctx = ctx();
    let mut failures = Vec::new();
    for scale in [0.5, -1.75] {
        let mut a = attrs(&[1, 1, 1], 2, false, false);
        a.rotary_embedding_dim = 6;
        a.scale = scale;
        let case = Case::random(3, &[2, 4, 2 * 10], a, 8);
        let (_, got) = case.run::<f32>(ctx).unwrap();
        failures.extend(case.compare::<f32>(&format!("scale {scale}"), &got).err());
        // Channels 6..10 of every head are copied bit for bit, never scaled.
        for (i, (&y, &x)) in got.iter().zip(&case.input).enumerate() {
            if i % 10 >= 6 && y != f64::from(x as f32) {
                failures.push(format!("scale {scale}: tail element {i} is {y}, input {x}"));
            }
        }
    }
    assert_all(failures);
}

#[test]
fn sequence_longer_than_the_cache_is_accepted() {
    // S = 9 tokens, M = 4 cache rows: ORT refuses (NOT_IMPLEMENTED), the project accepts as
    // long as every position is a valid row (SEMANTICS.md §1.4).
    let ctx = ctx();
    let a = attrs(&[1, 2, 1], 2, false, false);
    let r3 = Case::random(4, &[2, 9, 16], a.clone(), 4);
    let r4 = Case::random(5, &[2, 2, 9, 8], a, 4);
    let failures = [
        r3.check::<f32>(ctx, "S > M", "rank3"),
        r4.check::<f32>(ctx, "S > M", "rank4"),
        r4.check::<f16>(ctx, "S > M", "rank4"),
    ];
    assert_all(failures.into_iter().filter_map(Result::err).collect());
}

#[test]
fn rank4_ignores_the_num_heads_attribute() {
    let case = Case::random(6, &[2, 3, 2, 8], attrs(&[2, 1, 1], 5, true, false), 5);
    case.check::<f32>(ctx(), "rank 4, num_heads 5 != dim1 3", "rank4")
        .unwrap();
}

#[test]
fn worked_examples_m1_m2_m3_on_the_gpu() {
    let mut failures = Vec::new();
    for (name, case, variant, want) in &worked_examples() {
        failures.extend(worked_example::<f32>(name, case, variant, want));
        failures.extend(worked_example::<f16>(name, case, variant, want));
    }
    assert_all(failures);
}

#[test]
fn qwen_vl_sizes_head_128() {
    let ctx = ctx();
    let (cos, sin) = rope_caches(16, 64, 10000.0);
    let mut failures = Vec::new();
    // Qwen2-VL: sectioned [16, 24, 24]; Qwen3-VL: interleaved layout [24, 20, 20].
    for (sections, layout) in [([16, 24, 24], false), ([24, 20, 20], true)] {
        for (shape, variant) in [
            (vec![2, 11, 2 * 128], "rank3"),
            (vec![2, 2, 11, 128], "rank4"),
        ] {
            let mut case = Case::random(7, &shape, attrs(&sections, 2, false, layout), 16);
            case.positions = vl_positions(2);
            (case.cos, case.sin) = (cos.clone(), sin.clone());
            let label = format!("Qwen-VL sections {sections:?}, layout {layout}");
            failures.extend(case.check::<f32>(ctx, &label, variant).err());
            failures.extend(case.check::<f16>(ctx, &label, variant).err());
        }
    }
    assert_all(failures);
}

#[test]
fn empty_batch_or_sequence_gives_an_empty_output() {
    let ctx = ctx();
    let a = attrs(&[1, 1, 2], 2, false, false);
    for shape in [
        [0, 3, 16].as_slice(),
        &[2, 0, 16],
        &[0, 2, 3, 8],
        &[2, 2, 0, 8],
    ] {
        let case = Case::random(8, shape, a.clone(), 4);
        let variant = format!("rank{}", shape.len());
        case.check::<f32>(ctx, &format!("empty {shape:?}"), &variant)
            .unwrap();
        let (_, got) = case.run::<f16>(ctx).unwrap();
        assert!(got.is_empty(), "{shape:?}");
    }
}

// ---- GPU-free planning and recording -------------------------------------------------

#[test]
fn plan_works_without_a_gpu() {
    let caps = DeviceCaps::portable();
    let case = Case::random(
        9,
        &[2, 5, 3 * 7],
        {
            let mut a = attrs(&[1, 1, 0], 3, false, false);
            a.rotary_embedding_dim = 4;
            a
        },
        8,
    );
    let plan = case.plan::<f32>(&caps).unwrap();
    assert_eq!(plan.variant, "rank3");
    assert_eq!(plan.passes.len(), 1);
    // One task per rotation pair (tail channels two per task): ceil(7 / 2) per head.
    let threads = 2 * 5 * 3 * 4;
    assert_eq!(
        plan.passes[0].dispatch,
        Dispatch::Threads {
            threads,
            workgroup_size: 256
        }
    );
    assert_eq!(plan.outputs[0].shape, [2, 5, 21]);
    assert_eq!(plan.outputs[0].dtype, kernel_runtime::DType::F32);

    let r4 = Case::random(9, &[2, 3, 5, 8], attrs(&[2, 1, 1], 0, true, true), 8);
    assert_eq!(r4.plan::<f32>(&caps).unwrap().variant, "rank4");
    // The portable device has no shader-f16, so f16 is rejected by the contract.
    expect_rejection(r4.plan::<f16>(&caps), "rank4", "f16Ok(dtypes.T)");
    // Nothing in this op's plan depends on what a real device adds beyond the defaults.
    assert_eq!(
        r4.plan::<f32>(ctx().caps()).unwrap(),
        r4.plan::<f32>(&caps).unwrap()
    );
}

#[test]
fn two_ops_recorded_into_one_encoder_and_one_submit() {
    let ctx = ctx();
    let first = Case::random(10, &[2, 3, 2 * 8], attrs(&[2, 1, 1], 2, false, false), 6);
    let second = Case::random(11, &[2, 2, 3, 6], attrs(&[1, 1, 1], 0, true, true), 6);
    let (up1, up2) = (
        first.upload::<f32>(ctx).unwrap(),
        second.upload::<f32>(ctx).unwrap(),
    );
    let mut encoder = ctx.create_encoder();
    let out1 = op::record(ctx, &mut encoder, &up1.inputs(), &first.attrs).unwrap();
    let out2 = op::record(ctx, &mut encoder, &up2.inputs(), &second.attrs).unwrap();
    ctx.submit(encoder).unwrap();
    let got1 = kernels_tools::data::from_elem(&out1.output.to_vec(ctx).unwrap());
    let got2 = kernels_tools::data::from_elem(&out2.output.to_vec(ctx).unwrap());
    let failures = [
        first.compare::<f32>("first recorded op", &got1),
        second.compare::<f32>("second recorded op", &got2),
    ];
    assert_all(failures.into_iter().filter_map(Result::err).collect());
}

#[test]
fn dispatches_split_over_x_and_y_cover_every_pair() {
    // At most 4 workgroups per dimension: 2560 pair tasks (10 workgroups of 256) run as a
    // 4 × 3 grid, so the shader must linearise workgroup ids and skip the 2 extra workgroups.
    let mut ctx = test_support::context();
    ctx.set_dispatch_limit_for_testing(Some(4));
    let mut failures = Vec::new();
    for (rank, shape) in [(3, vec![2, 40, 4 * 16]), (4, vec![2, 4, 40, 16])] {
        let case = Case::random(20, &shape, attrs(&[3, 3, 2], 4, true, false), 50);
        let label = format!("split dispatch, rank {rank}");
        failures.extend(
            case.check::<f32>(&ctx, &label, &format!("rank{rank}"))
                .err(),
        );
    }
    assert_all(failures);
}

#[test]
fn shader_guard_passes_bad_positions_through_per_element_m4() {
    let case = Case {
        input_shape: vec![1, 1, 1, 6],
        input: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        pos_shape: vec![3, 1, 1],
        positions: vec![0, 0, 0],
        cos_shape: vec![2, 3],
        cos: vec![0.0; 6],
        sin_shape: vec![2, 3],
        sin: vec![1.0; 6],
        attrs: Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 1, 1],
        }),
    };
    let want = [
        [1.0, -5.0, -6.0, 4.0, 2.0, 3.0],
        [-4.0, 2.0, -6.0, 1.0, 5.0, 3.0],
        [-4.0, -5.0, 3.0, 1.0, 2.0, 6.0],
    ];
    let mut failures = Vec::new();
    for (stream, want) in want.iter().enumerate() {
        for bad in [2, u32::MAX] {
            let mut pos = vec![0; 3];
            pos[stream] = bad;
            let got = run_with_gpu_positions(&case, pos);
            let msg = format!("M4 stream {stream} = {bad}: got {got:?}, want {want:?}");
            failures.extend((got != want).then_some(msg));
        }
    }
    assert_all(failures);
}

#[test]
fn shader_guard_passes_bad_positions_through_for_every_pairing_and_layout() {
    // With both pairings and both layouts, a bad position must pass through exactly the pairs
    // whose half-index maps to its stream, and every other pair must still rotate.
    use kernels_tools::reference::mrotary_embedding::mrotary_embedding;
    let input: Vec<f64> = (1..=16).map(f64::from).collect();
    let cos: Vec<f64> = (0..8).map(|i| 0.1 * f64::from(i)).collect();
    let sin: Vec<f64> = (0..8).map(|i| 1.0 - 0.1 * f64::from(i)).collect();
    let mut failures = Vec::new();
    // Sections [4, 0, 0] put the four pairs of a quad in one stream (one cache word each in
    // the four-pair path); [2, 1, 1] mixes streams within it.
    for (interleaved, layout, sections) in [
        (false, false, [2, 1, 1]),
        (false, true, [2, 1, 1]),
        (true, false, [2, 1, 1]),
        (true, true, [2, 1, 1]),
        (false, false, [4, 0, 0]),
        (true, true, [4, 0, 0]),
    ] {
        let mut attrs = Attrs::new(RequiredAttrs {
            mrope_section: sections.to_vec(),
        });
        attrs.interleaved = interleaved;
        attrs.mrope_layout = layout;
        let case = Case {
            input_shape: vec![1, 1, 2, 8],
            input: input.clone(),
            pos_shape: vec![3, 1, 2],
            positions: vec![0; 6],
            cos_shape: vec![2, 4],
            cos: cos.clone(),
            sin_shape: vec![2, 4],
            sin: sin.clone(),
            attrs: attrs.clone(),
        };
        for stream in 0..3 {
            let mut positions = vec![1u32, 0, 1, 0, 0, 1];
            positions[stream * 2 + 1] = 7;
            let got = run_with_gpu_positions(&case, positions.clone());
            let as_i64: Vec<i64> = positions.iter().map(|&p| i64::from(p)).collect();
            let want = mrotary_embedding(&input, &[1, 1, 2, 8], &as_i64, &cos, &sin, 2, &attrs)
                .expect("reference");
            if got
                .iter()
                .zip(&want)
                .any(|(g, w)| (g - w).abs() > 1e-5 * (1.0 + w.abs()))
            {
                failures.push(format!(
                    "interleaved {interleaved}, layout {layout}, sections {sections:?}, bad stream {stream}: got {got:?}, want {want:?}"
                ));
            }
        }
    }
    assert_all(failures);
}

#[test]
fn shader_guard_uses_cache_rows_not_the_padded_buffer_length() {
    // M = 1, half = 1: the 4-byte cache lives in a 16-byte buffer (the runtime's minimum), so
    // a guard derived from arrayLength sees 4 rows. Position 1 must still pass through.
    let case = Case {
        input_shape: vec![1, 1, 1, 2],
        input: vec![3.0, 4.0],
        pos_shape: vec![3, 1, 1],
        positions: vec![0, 0, 0],
        cos_shape: vec![1, 1],
        cos: vec![0.5],
        sin_shape: vec![1, 1],
        sin: vec![0.25],
        attrs: Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 0, 0],
        }),
    };
    let got = run_with_gpu_positions(&case, vec![1, 0, 0]);
    let msg = "position 1 >= M = 1 must be passed through, not rotated with padding";
    assert_eq!(got, [3.0, 4.0], "{msg}");
}
