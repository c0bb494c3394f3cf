//! GPU conformance tests of `kernels::gated_relative_position_bias` on a real adapter (Mesa
//! lavapipe in CI: subgroup size 8/8, `subgroups` and `shader-f16`), against the float64 reference
//! of SEMANTICS.md §3.2 (G1–G5) with the tolerances of SEMANTICS.md §5. Each variant is run in f32
//! and f16 on vec4-aligned and unaligned rows; the card's selection rule, model shapes, broadcasts,
//! empty problems and split dispatches too. The contract clauses of SEMANTICS.md §3.3 are tested in
//! `gated_relative_position_bias_contract.rs`.

#![allow(clippy::unwrap_used)]

#[path = "common/gated_bias.rs"]
mod common;

use common::{
    Case, CaseShapes, ROW, SUBGROUPS, TREE, assert_all, context_without, ctx, expected_variant, g1,
    g1_padded, sizes, tree_ctx,
};
use half::f16;
use kernel_runtime::{Context, DType, DeviceCaps, Float, OpError, RuntimeError};
use kernels_tools::data::{Tolerance, compare};
use kernels_tools::reference::gated_relative_position_bias::{G1_OUTPUT, Sizes};

/// Runs `cases` in f32 and f16 on `ctx`, each expecting `variant`; collects the failures.
fn check_both_dtypes(ctx: &Context, label: &str, cases: &[Case], variant: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        failures.extend(case.check::<f32>(ctx, label, variant).err());
        failures.extend(case.check::<f16>(ctx, label, variant).err());
    }
    failures
}

/// Problems covering both row forms: `S % 4 == 0` (vec4 stream) and not (scalar stream).
fn aligned_and_unaligned(seed: u64, shapes: &[(usize, usize, usize, usize)]) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, &(batch, heads, head_size, proj)) in shapes.iter().enumerate() {
        for seq in [8, 7] {
            let s = sizes(batch, seq, heads, head_size, proj);
            cases.push(Case::random(seed + 10 * i as u64 + seq as u64, s));
        }
    }
    cases
}

// ---- One test per variant: f32/f16 × aligned/unaligned ------------------------------

#[test]
fn row_variant_for_small_heads() {
    // head_size < 4 * D: the D projection lanes work serially, whatever the subgroup size.
    // D = 32 (the largest) fills every slot of the shader's projection array.
    let cases = aligned_and_unaligned(1, &[(2, 3, 4, 4), (2, 2, 8, 4), (1, 2, 16, 32)]);
    let mut failures = check_both_dtypes(ctx(), "row, default context", &cases, ROW);
    failures.extend(check_both_dtypes(
        tree_ctx(),
        "row, no subgroups",
        &cases,
        ROW,
    ));
    assert_all(failures);
}

/// Head-parallel problems: `H >= 4 D` with D = 8, 6 (odd half), 2 (smallest); the last two
/// problems are long (`S >= LONG_ROW`), head-parallel also on adapters without one fixed
/// subgroup size, and longer than a workgroup's stride (256 scalars, 1024 vec4 elements),
/// so every lane loops over the row.
fn head_parallel_cases(seed: u64) -> Vec<Case> {
    let mut cases = aligned_and_unaligned(seed, &[(2, 2, 32, 8), (2, 3, 24, 6), (2, 2, 8, 2)]);
    cases.push(Case::random(seed + 100, sizes(1, 263, 1, 64, 8)));
    cases.push(Case::random(seed + 101, sizes(1, 1028, 1, 64, 8)));
    // 513 words per row: more than the two each lane loads before computing the gates.
    cases.push(Case::random(seed + 102, sizes(1, 2052, 1, 64, 8)));
    cases
}

#[test]
fn batches_beyond_one_workgroup_chunk() {
    // One workgroup serves R rel_pos rows (1 in f32, 4 in f16) for every batch, computing
    // the gates of a chunk of (row, batch) slots at a time (256 lanes: 8 R slots of 32 / R
    // lanes when head-parallel, 256 / D otherwise; 1 / R of the slots per row), so B past a
    // chunk, with a partial last chunk, must loop correctly; the row counts leave partial
    // last workgroups in f16 too. The chunk sizes noted are f16's.
    let mut failures = Vec::new();
    for (s, seed) in [
        (sizes(17, 5, 2, 16, 4), 140), // head-parallel: chunks of 8, 8, 1; 10 rows
        (sizes(9, 6, 2, 16, 32), 141), // row, D = 32: chunks of 2 (8 slots), the last 1
        (sizes(67, 3, 1, 4, 4), 142),  // row, D = 4: chunks of 16, the last 3; 3 rows
        (sizes(45, 4, 1, 6, 6), 143),  // row, D = 6: 42 slots, 10 batches per chunk
    ] {
        let case = Case::random(seed, s);
        for ctx in [ctx(), tree_ctx()] {
            let label = format!("B = {} on {:?}", s.batch, ctx.caps().feature_names());
            failures.extend(case.check_expected::<f32>(ctx, &label).err());
            failures.extend(case.check_expected::<f16>(ctx, &label).err());
        }
    }
    assert_all(failures);
}

/// Runs [`head_parallel_cases`] in f32 and f16 on `ctx`, where they must select `variant`.
fn head_parallel_variant(ctx: &Context, variant: &str, seed: u64) {
    let mut failures = Vec::new();
    for case in &head_parallel_cases(seed) {
        // On an adapter with one subgroup size (lavapipe: 8/8) all of them are head-parallel;
        // elsewhere the short ones run `row`, which says so here instead of passing quietly.
        let expected = expected_variant(ctx.caps(), case.sizes());
        if expected != variant {
            failures.push(format!(
                "{:?}: the card's rule selects `{expected}` on this adapter (subgroup sizes \
                 {}..{}), so `{variant}` is not exercised",
                case.sizes(),
                ctx.caps().subgroup_min_size,
                ctx.caps().subgroup_max_size
            ));
        }
        failures.extend(case.check::<f32>(ctx, variant, expected).err());
        failures.extend(case.check::<f16>(ctx, variant, expected).err());
    }
    assert_all(failures);
}

#[test]
fn row_head_tree_without_subgroups() {
    let ctx = tree_ctx();
    assert!(!ctx.caps().subgroups, "the tree context offers subgroups");
    head_parallel_variant(ctx, TREE, 20);
}

#[test]
fn row_head_subgroups_on_the_default_context() {
    let ctx = ctx();
    let msg = "the default context must offer subgroups (lavapipe does)";
    assert!(ctx.caps().subgroups, "{msg}");
    head_parallel_variant(ctx, SUBGROUPS, 40);
}

#[test]
fn the_two_contexts_plan_different_shaders_for_one_request() {
    let (with, without) = (ctx().caps(), tree_ctx().caps());
    let head = Case::random(60, sizes(2, 8, 2, 32, 8));
    let (a, b) = (
        head.plan::<f32>(with).unwrap(),
        head.plan::<f32>(without).unwrap(),
    );
    assert_eq!((a.variant, b.variant), (SUBGROUPS, TREE));
    let (ka, kb) = (a.passes[0].kernel, b.passes[0].kernel);
    assert_eq!(ka.label, "GatedRelativePositionBias.RowHeadSubgroups");
    assert_eq!(kb.label, "GatedRelativePositionBias.RowHeadTree");
    assert_ne!(ka.digest, kb.digest, "one shader for both variants");
    assert!(ka.source.contains("subgroup") && !kb.source.contains("subgroup"));
    // Same uniforms, dispatch and outputs: only the shader differs.
    assert_eq!(a.passes[0].params, b.passes[0].params);
    assert_eq!(a.passes[0].dispatch, b.passes[0].dispatch);
    assert_eq!(a.outputs, b.outputs);

    // A small head runs `row` on both devices, with the same shader.
    let small = Case::random(61, sizes(2, 8, 2, 4, 4));
    assert_eq!(
        small.plan::<f32>(with).unwrap(),
        small.plan::<f32>(without).unwrap()
    );
    assert_eq!(small.plan::<f32>(with).unwrap().variant, ROW);

    // vec4Rows picks a different shader of the same variant; so does the element type.
    for (case, variant) in [(&head, SUBGROUPS), (&small, ROW)] {
        let mut unaligned = case.sizes();
        unaligned.seq = 7;
        let unaligned = Case::random(62, unaligned);
        let (aligned, scalar) = (
            case.plan::<f32>(with).unwrap(),
            unaligned.plan::<f32>(with).unwrap(),
        );
        let half = case.plan::<f16>(with).unwrap();
        assert_eq!((aligned.variant, scalar.variant), (variant, variant));
        let digests = [&aligned, &scalar, &half].map(|p| p.passes[0].kernel.digest);
        assert!(
            digests[0] != digests[1] && digests[0] != digests[2] && digests[1] != digests[2],
            "{variant}: vec4, scalar and f16 shaders share a digest: {digests:?}"
        );
    }
}

#[test]
fn selection_rule_of_the_card_without_a_gpu() {
    // Synthetic adapters: one subgroup size (8/8), a variable range (4..64) and none reported.
    let base = DeviceCaps {
        subgroups: true,
        shader_f16: true,
        ..DeviceCaps::portable()
    };
    let fixed = DeviceCaps {
        subgroup_min_size: 8,
        subgroup_max_size: 8,
        ..base.clone()
    };
    let variable = DeviceCaps {
        subgroup_min_size: 4,
        subgroup_max_size: 64,
        ..base.clone()
    };
    let unreported = base;
    let fixed_no_subgroups = DeviceCaps {
        subgroups: false,
        ..fixed.clone()
    };
    let devices = [
        ("fixed 8/8", &fixed),
        ("variable 4..64", &variable),
        ("unreported", &unreported),
        ("fixed 8/8 without subgroups", &fixed_no_subgroups),
        ("portable", &DeviceCaps::portable()),
    ];
    // (S, H, D) and the variant on each device above, in order.
    let table: [(usize, usize, usize, [&str; 5]); 8] = [
        (8, 32, 8, [SUBGROUPS, ROW, ROW, TREE, ROW]),
        (8, 28, 8, [ROW, ROW, ROW, ROW, ROW]),
        (256, 64, 8, [SUBGROUPS, SUBGROUPS, SUBGROUPS, TREE, TREE]),
        (252, 64, 8, [SUBGROUPS, ROW, ROW, TREE, ROW]),
        (260, 64, 8, [SUBGROUPS, SUBGROUPS, SUBGROUPS, TREE, TREE]),
        (258, 64, 8, [SUBGROUPS, ROW, ROW, TREE, ROW]),
        (256, 48, 8, [SUBGROUPS, ROW, ROW, TREE, ROW]),
        (256, 16, 2, [SUBGROUPS, SUBGROUPS, SUBGROUPS, TREE, TREE]),
    ];
    let mut failures = Vec::new();
    for (seq, head_size, proj, want) in table {
        let s = sizes(1, seq, 2, head_size, proj);
        let case = Case::with_shapes(63, CaseShapes::valid(s), 2);
        for ((name, caps), want) in devices.iter().zip(want) {
            let got = case.plan::<f32>(caps).map(|p| p.variant);
            if got.as_ref().ok() != Some(&want) {
                failures.push(format!(
                    "{name}, S {seq} H {head_size} D {proj}: {got:?}, want {want}"
                ));
            }
            // The helper the GPU tests use agrees with this table.
            assert_eq!(expected_variant(caps, s), want, "{name} {s:?}");
        }
    }
    assert_all(failures);
}

// ---- Model shapes ----------------------------------------------------------------------

/// WavLM-Large attention: 16 heads × 64, gate projection D = 8.
fn wavlm(batch: usize, seq: usize) -> Sizes {
    sizes(batch, seq, 16, 64, 8)
}

#[test]
fn wavlm_full_length_utterance() {
    // S = 1500 (30 s of audio at 50 frames/s) with B = 1: 36M outputs, vec4 rows longer than
    // one workgroup stride, 512 products per gate. Run in f16 (72 MB per tensor); in f32
    // rel_pos and the output take 144 MB each, more than lavapipe's 128 MiB storage binding
    // limit, so there the upload must fail with a clean error. (f32 runs the WavLM head shape
    // in `wavlm_two_utterances`.)
    let ctx = ctx();
    let case = Case::random(70, wavlm(1, 1500));
    let (variant, got) = case.run::<f16>(ctx).unwrap();
    assert_eq!(variant, SUBGROUPS);
    case.compare_by_rows::<f16>("WavLM S = 1500", &got).unwrap();

    let bytes = 16 * 1500 * 1500 * 4;
    let limit = ctx.caps().limits.max_storage_buffer_binding_size;
    match case.run::<f32>(ctx) {
        Err(OpError::Runtime(RuntimeError::TooLarge { bytes: b, .. })) if bytes > limit => {
            assert_eq!(b, bytes);
        }
        Ok((variant, got)) if bytes <= limit => {
            assert_eq!(variant, SUBGROUPS);
            case.compare_by_rows::<f32>("WavLM S = 1500", &got).unwrap();
        }
        other => panic!("f32 S = 1500 ({bytes} bytes, binding limit {limit}): {other:?}"),
    }
}

#[test]
fn wavlm_two_utterances() {
    let mut failures = Vec::new();
    for (seq, seed) in [(300, 72), (150, 73)] {
        let case = Case::random(seed, wavlm(2, seq));
        let label = format!("WavLM B = 2, S = {seq}");
        // Head-parallel on lavapipe (H = 8 D); elsewhere the card's rule decides.
        failures.extend(case.check_expected::<f32>(ctx(), &label).err());
        failures.extend(case.check_expected::<f16>(ctx(), &label).err());
        failures.extend(case.check_expected::<f32>(tree_ctx(), &label).err());
    }
    assert_all(failures);
}

// ---- SEMANTICS.md §3.4 worked example G1 --------------------------------------------------------

fn worked_example<T: Float>(ctx: &Context, label: &str, case: &Case) -> Vec<String> {
    let mut failures = Vec::new();
    let want_variant = expected_variant(ctx.caps(), case.sizes());
    match case.run::<T>(ctx) {
        Err(e) => failures.push(format!("{label} [{}]: {e}", T::DTYPE)),
        Ok((variant, got)) => {
            if variant != want_variant {
                failures.push(format!("{label} [{}]: variant {variant}", T::DTYPE));
            }
            let cmp = compare(&got, &G1_OUTPUT, Tolerance::gated_bias(T::DTYPE));
            if !cmp.passed() {
                failures.push(format!(
                    "{label} [{}]: {cmp}{}",
                    T::DTYPE,
                    case.worst_at(&cmp)
                ));
            }
        }
    }
    failures
}

#[test]
fn worked_example_g1_on_every_variant() {
    let mut failures = Vec::new();
    for (label, case, ctx, variant) in [
        ("G1", g1(), ctx(), ROW),
        ("G1 padded to H = 16", g1_padded(), ctx(), SUBGROUPS),
        (
            "G1 padded to H = 16, no subgroups",
            g1_padded(),
            tree_ctx(),
            TREE,
        ),
    ] {
        // The expected variant holds on adapters with one subgroup size, as lavapipe has.
        if expected_variant(ctx.caps(), case.sizes()) != variant {
            failures.push(format!("{label}: this adapter would not run {variant}"));
        }
        failures.extend(worked_example::<f32>(ctx, label, &case));
        failures.extend(worked_example::<f16>(ctx, label, &case));
    }
    // The padding really leaves the reference unchanged.
    let padded = g1_padded().problem().output().unwrap();
    let exact = Tolerance {
        abs: 1e-12,
        rel: 0.0,
    };
    assert!(compare(&padded, &G1_OUTPUT, exact).passed());
    assert_all(failures);
}

// ---- Broadcasts: rel_pos over batches, eco_a per head --------------------------------------

/// Per-head transformations of a `(1, N, S, S)` tensor.
fn map_heads(rel: &[f64], s: Sizes, f: impl Fn(usize, usize, usize) -> f64) -> Vec<f64> {
    let mut out = Vec::with_capacity(rel.len());
    for n in 0..s.heads {
        for i in 0..s.seq {
            for j in 0..s.seq {
                out.push(f(n, i, j));
            }
        }
    }
    out
}

/// Outputs a kernel with a wrong broadcast would produce, each from modified inputs: these
/// must all fail the tolerance, or the test data could not catch that mistake.
fn wrong_broadcasts(case: &Case) -> Vec<(&'static str, Vec<f64>)> {
    let c = case.rounded::<f32>();
    let s = c.sizes();
    let at = |n: usize, i: usize, j: usize| c.rel_pos[(n * s.seq + i) * s.seq + j];
    let hidden = s.heads * s.head_size;
    let batch0 = &c.query[..s.seq * hidden];
    let variants: [(&'static str, Case); 5] = [
        (
            "eco_a[0] for every head",
            Case {
                eco_a: vec![c.eco_a[0]; s.heads],
                ..c.clone()
            },
        ),
        (
            "eco_a in reverse head order",
            Case {
                eco_a: c.eco_a.iter().rev().copied().collect(),
                ..c.clone()
            },
        ),
        (
            "rel_pos of head 0 for every head",
            Case {
                rel_pos: map_heads(&c.rel_pos, s, |_, i, j| at(0, i, j)),
                ..c.clone()
            },
        ),
        (
            "rel_pos rows and columns swapped",
            Case {
                rel_pos: map_heads(&c.rel_pos, s, |n, i, j| at(n, j, i)),
                ..c.clone()
            },
        ),
        (
            "batch 0's gates for every batch",
            Case {
                query: batch0.repeat(s.batch),
                ..c.clone()
            },
        ),
    ];
    let mut outputs: Vec<_> = variants
        .into_iter()
        .map(|(what, wrong)| (what, wrong.problem().output().unwrap()))
        .collect();
    // rel_pos indexed as if it were (B, N, S, S): batches past the first read beyond the
    // buffer, which robust buffer access turns into zeros (or other in-bounds values).
    let mut per_batch = c.problem().output().unwrap();
    per_batch[s.heads * s.seq * s.seq..].fill(0.0);
    outputs.push(("rel_pos indexed by batch", per_batch));
    outputs
}

#[test]
fn rel_pos_is_shared_by_batches_and_eco_a_is_per_head() {
    let mut failures = Vec::new();
    // `row` on both contexts, then each head-parallel variant.
    for s in [sizes(3, 6, 4, 4, 4), sizes(3, 5, 4, 16, 4)] {
        let mut case = Case::random(90 + s.head_size as u64, s);
        // Distinct per-head constants, all positive so the relative tolerance applies.
        case.eco_a = vec![0.55, 0.85, 1.15, 1.45];
        let want = case.reference::<f32>();
        for (what, wrong) in wrong_broadcasts(&case) {
            let cmp = compare(&wrong, &want, Tolerance::GATED_BIAS_F16);
            if cmp.passed() {
                failures.push(format!("{s:?}: a kernel using {what} would pass: {cmp}"));
            }
        }
        for ctx in [ctx(), tree_ctx()] {
            let label = format!("B = 3 broadcast on {:?}", ctx.caps().feature_names());
            failures.extend(case.check_expected::<f32>(ctx, &label).err());
            failures.extend(case.check_expected::<f16>(ctx, &label).err());
        }
    }
    assert_all(failures);
}

/// Absolute tolerance for outputs whose gate may cross 0: the relative budget of SEMANTICS.md §5
/// applied to the largest output magnitude, `|g| <= 3` times the largest `|rel_pos|`.
fn signed_eco_tolerance(dtype: DType, rel_pos: &[f64]) -> Tolerance {
    let base = Tolerance::gated_bias(dtype);
    let max_rel = rel_pos.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    Tolerance {
        abs: base.abs + base.rel * 3.0 * max_rel,
        rel: 0.0,
    }
}

fn check_signed<T: Float>(ctx: &Context, case: &Case, label: &str) -> Vec<String> {
    let variant = expected_variant(ctx.caps(), case.sizes());
    let tol = signed_eco_tolerance(T::DTYPE, &case.rel_pos);
    let want = case.reference::<T>();
    let mut failures = Vec::new();
    // The data must tell eco_a from |eco_a|, or a dropped sign would pass.
    let abs_eco = Case {
        eco_a: case.eco_a.iter().map(|e| e.abs()).collect(),
        ..case.rounded::<T>()
    };
    let unsigned = abs_eco.problem().output().unwrap();
    if compare(&unsigned, &want, tol).passed() {
        failures.push(format!("{label}: |eco_a| would pass {tol:?}"));
    }
    match case.run::<T>(ctx) {
        Err(e) => failures.push(format!("{label} [{}]: {e}", T::DTYPE)),
        Ok((got_variant, got)) => {
            if got_variant != variant {
                failures.push(format!("{label}: variant {got_variant}, want {variant}"));
            }
            failures.extend(case.judge::<T>(label, &got, &want, tol).err());
        }
    }
    failures
}

#[test]
fn eco_a_of_both_signs_with_an_absolute_tolerance() {
    let mut failures = Vec::new();
    for s in [sizes(2, 9, 4, 4, 4), sizes(2, 12, 4, 16, 4)] {
        let mut case = Case::random(100 + s.seq as u64, s);
        case.eco_a = vec![-1.5, -0.6, 0.7, 1.4];
        // Shift the half-sums up so that both logistics lean towards 1: with eco_a = -1.5
        // the gate 2 - gate_u * (1 + 1.5 gate_r) then comes close to 0, the region where
        // only an absolute tolerance can judge it.
        case.bias = case.bias.iter().map(|b| b + 0.75).collect();
        let rounded = case.rounded::<f32>();
        let problem = rounded.problem();
        let gates: Vec<f64> = (0..s.batch)
            .flat_map(|b| (0..s.seq).map(move |i| (b, i)))
            .map(|(b, i)| problem.gate(b, 0, i))
            .collect();
        let smallest = gates.iter().fold(f64::INFINITY, |m, g| m.min(g.abs()));
        assert!(
            gates.iter().all(|&g| g < 1.0) && smallest < 0.5,
            "{s:?}: head 0 (eco_a = -1.5) should have gates below 1 and near 0: {gates:?}"
        );
        for ctx in [ctx(), tree_ctx()] {
            let label = format!("signed eco_a {s:?} on {:?}", ctx.caps().feature_names());
            failures.extend(check_signed::<f32>(ctx, &case, &label));
            failures.extend(check_signed::<f16>(ctx, &case, &label));
        }
    }
    assert_all(failures);
}

// ---- Empty batch or sequence ----------------------------------------------------------------

#[test]
fn empty_batch_or_sequence_gives_an_empty_output() {
    let mut failures = Vec::new();
    for s in [
        sizes(0, 5, 2, 4, 4),
        sizes(0, 8, 2, 16, 4),
        sizes(2, 0, 2, 4, 4),
        sizes(2, 0, 2, 16, 4),
    ] {
        let case = Case::random(110, s);
        for ctx in [ctx(), tree_ctx()] {
            let variant = expected_variant(ctx.caps(), s);
            for result in [case.run::<f32>(ctx), case.run::<f16>(ctx)] {
                // `run` asserts the output shape (B, N, S, S).
                match result {
                    Ok((v, got)) if v == variant && got.is_empty() => {}
                    other => failures.push(format!("empty {s:?}: {other:?}, want {variant}")),
                }
            }
        }
        let plan = case.plan::<f32>(ctx().caps()).unwrap();
        assert!(
            plan.is_empty(65535),
            "{s:?}: an empty problem dispatches work"
        );
        assert_eq!(plan.outputs[0].shape, [s.batch, s.heads, s.seq, s.seq]);
    }
    assert_all(failures);
}

// ---- Dispatch split over x and y -----------------------------------------------------------

#[test]
fn rows_split_over_x_and_y_are_all_computed() {
    // At most 7 workgroups per dimension, so every problem's workgroups (one per rel_pos row
    // in f32, per four in f16, the last one partial for 35 rows) run as a 7 × k grid whose
    // overshoot workgroups must return. `dispatchOk` reads the
    // device's limit, which the hook leaves alone, so selection is unchanged.
    const LIMIT: u32 = 7;
    let mut with = test_support::context();
    let mut without = context_without(&["subgroups"]);
    with.set_dispatch_limit_for_testing(Some(LIMIT));
    without.set_dispatch_limit_for_testing(Some(LIMIT));
    let mut failures = Vec::new();
    for (s, seed) in [
        (sizes(2, 9, 4, 4, 4), 120),
        (sizes(2, 8, 6, 4, 4), 121),
        (sizes(2, 12, 4, 32, 8), 122),
        (sizes(3, 7, 5, 16, 4), 123),
    ] {
        let case = Case::random(seed, s);
        for ctx in [&with, &without] {
            let plan = case.plan::<f32>(ctx.caps()).unwrap();
            let grid = plan.passes[0].workgroups(LIMIT).unwrap();
            assert!(grid[1] > 1, "{s:?}: {grid:?} is not split");
            let label = format!("split {grid:?} on {:?}", ctx.caps().feature_names());
            failures.extend(case.check_expected::<f32>(ctx, &label).err());
            failures.extend(case.check_expected::<f16>(ctx, &label).err());
        }
    }
    assert_all(failures);
}
