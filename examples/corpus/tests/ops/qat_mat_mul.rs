//! `com.xenova.gemma4.QatMatMul` from the corpus: `out[m, o] = scale[o] * sum_k (q[o, k] -
//! zeroPoint) * a[m, k]` over 2- and 4-bit packed weights (row-major, or block-major for the
//! `fast` family), through every variant lavapipe can select — the scalar GEMV, the register-
//! blocked GEMM, split-K, the block-major GEMV and their `presrq` forms (row sum given), and the
//! argmax-candidate epilogue — against a float64 reference; every output element is written
//! (outputs are poisoned first) and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn every_reachable_variant_matches_the_reference() {
    if !corpus::skip_without_corpus("every_reachable_variant_matches_the_reference") {
        #[cfg(corpus)]
        gpu::every_reachable_variant_matches_the_reference();
    }
}

#[test]
fn half_precision_activations_and_outputs() {
    if !corpus::skip_without_corpus("half_precision_activations_and_outputs") {
        #[cfg(corpus)]
        gpu::half_precision_activations_and_outputs();
    }
}

#[test]
fn subgroup_matrix_variant_is_not_planned() {
    if !corpus::skip_without_corpus("subgroup_matrix_variant_is_not_planned") {
        #[cfg(corpus)]
        gpu::subgroup_matrix_variant_is_not_planned();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::qat_mat_mul as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_unwritten};

    const POISON_F32: f32 = f32::from_bits(0x7fc0_0bad);
    const POISON_U32: u32 = 0xDEAD_BEEF;

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Case {
        pub(crate) m: usize,
        pub(crate) k: usize,
        pub(crate) n: usize,
        pub(crate) bits: usize,
        /// The `fast` family's repacked layout.
        pub(crate) block_major: bool,
        /// Gives `SumA`, the activation row sums (the `presrq` contract).
        pub(crate) presrq: bool,
        /// Asks for the per-128-column argmax candidates.
        pub(crate) argmax: bool,
    }

    pub(crate) const fn case(m: usize, k: usize, n: usize, bits: usize) -> Case {
        Case {
            m,
            k,
            n,
            bits,
            block_major: false,
            presrq: false,
            argmax: false,
        }
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Packs `q[o, k]` LSB first: row-major words, or block-major, where the 4-word block `b`
    /// of every output row is contiguous (`[block][row][4]`).
    pub(crate) fn pack(q: &[u32], c: &Case) -> Vec<u32> {
        let per_word = 32 / c.bits;
        let words_per_row = c.k / per_word;
        let mut packed = vec![0u32; c.n * words_per_row];
        for o in 0..c.n {
            for kk in 0..c.k {
                let word = if c.block_major {
                    let per_block = 4 * per_word;
                    ((kk / per_block) * c.n + o) * 4 + (kk % per_block) / per_word
                } else {
                    o * words_per_row + kk / per_word
                };
                packed[word] |= q[o * c.k + kk] << ((kk % per_word) * c.bits);
            }
        }
        packed
    }

    pub(crate) fn zero_point(bits: usize) -> u32 {
        if bits == 4 { 8 } else { 2 }
    }

    fn assert_written<T: Poison>(got: &[T], what: &str) {
        if let Some(at) = first_unwritten(got) {
            panic!("{what}: element {at} was not written");
        }
        if let Some(at) = got.iter().position(|v| !v.to_f64().is_finite()) {
            panic!("{what}: element {at} is not finite ({:?})", got[at]);
        }
    }

    fn assert_same_bits<T: Poison>(first: &[T], again: &[T], what: &str) {
        assert_eq!(first.len(), again.len(), "{what}: lengths differ");
        if let Some(at) = (0..first.len()).find(|&i| first[i].bits() != again[i].bits()) {
            panic!(
                "{what}: a second run differs at element {at}: {:?} then {:?}",
                first[at], again[at]
            );
        }
    }

    struct Run<O> {
        out: Vec<O>,
        cand_val: Vec<f32>,
        cand_idx: Vec<u32>,
    }

    /// Runs `c` on seeded data into poisoned outputs, twice; checks the variant, that every
    /// output element is written, the reference within `tol` (relative to `1 + |want|`), the
    /// argmax candidates against the output, and that both runs agree bit for bit.
    fn check<T: Float, O: Poison>(ctx: &Context, c: Case, variant: &str, tol: f64) {
        let what = format!(
            "{variant} {c:?} {}->{}",
            T::DTYPE.wgsl_name(),
            O::DTYPE.wgsl_name()
        );
        let Case { m, k, n, bits, .. } = c;
        let a: Vec<T> = corpus::data(m * k, 1 + k as u64)
            .into_iter()
            .map(|v| T::from_f64(f64::from(v)))
            .collect();
        let q = corpus::codes(n * k, bits, 2 + n as u64);
        let scale: Vec<f32> = corpus::data(n, 3)
            .into_iter()
            .map(|v| 0.02 + 0.01 * v)
            .collect();
        let sum_a: Vec<f32> = (0..m)
            .map(|mi| {
                a[mi * k..(mi + 1) * k]
                    .iter()
                    .map(|v| v.to_f64())
                    .sum::<f64>() as f32
            })
            .collect();
        let a_t = Tensor::from_slice(ctx, &[m, k], &a).unwrap();
        let bits_t = Tensor::from_slice(ctx, &[n, k * bits / 32], &pack(&q, &c)).unwrap();
        let scale_t = Tensor::from_slice(ctx, &[n], &scale).unwrap();
        let sum_a_t = Tensor::from_slice(ctx, &[m], &sum_a).unwrap();
        let inputs = op::Inputs {
            a: &a_t,
            bits: &bits_t,
            scale: &scale_t,
            sum_a: c.presrq.then_some(&sum_a_t),
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: k as u32,
            out_features: n as u32,
            bits: bits as u32,
            zero_point: zero_point(bits),
            mask: (1 << bits) - 1,
        });
        attrs.block_major = c.block_major.then_some(1);
        attrs.emit_argmax = c.argmax.then_some(1);
        let groups = n.div_ceil(128);
        let run = || {
            let mut out = Tensor::from_slice(ctx, &[m, n], &vec![O::POISON; m * n]).unwrap();
            let mut cand_val =
                Tensor::from_slice(ctx, &[groups], &vec![POISON_F32; groups]).unwrap();
            let mut cand_idx =
                Tensor::from_slice(ctx, &[groups], &vec![POISON_U32; groups]).unwrap();
            let outputs = op::OutputsMut {
                out: &mut out,
                cand_val: c.argmax.then_some(&mut cand_val),
                cand_idx: c.argmax.then_some(&mut cand_idx),
            };
            let plan = op::plan(
                ctx.caps(),
                &op::shapes(&inputs, &outputs),
                &op::DTypes::of::<T, O>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, variant, "{what}: variant");
            op::run_into(ctx, &inputs, outputs, &attrs).unwrap();
            Run {
                out: out.to_vec(ctx).unwrap(),
                cand_val: cand_val.to_vec(ctx).unwrap(),
                cand_idx: cand_idx.to_vec(ctx).unwrap(),
            }
        };
        let first = run();
        assert_written(&first.out, &what);

        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let want = reference(&c, &q, &a64, &scale);
        let got: Vec<f32> = first.out.iter().map(|v| v.to_f64() as f32).collect();
        corpus::assert_close(&got, &want, tol, &what);

        if c.argmax {
            assert_written(&first.cand_val, &format!("{what}: CandVal"));
            for g in 0..groups {
                let range = g * 128..n.min((g + 1) * 128);
                // The first index of the largest stored value, as the epilogue's strict `>`.
                let group: Vec<f64> = got[range.clone()].iter().map(|&v| v.into()).collect();
                let best = range.start + ops::first_max(&group);
                assert_eq!(
                    first.cand_idx[g], best as u32,
                    "{what}: CandIdx of group {g}"
                );
                assert_eq!(
                    first.cand_val[g].to_bits(),
                    got[best].to_bits(),
                    "{what}: CandVal of group {g}"
                );
            }
        }

        let again = run();
        assert_same_bits(&first.out, &again.out, &what);
        if c.argmax {
            assert_same_bits(
                &first.cand_val,
                &again.cand_val,
                &format!("{what}: CandVal"),
            );
            assert_eq!(first.cand_idx, again.cand_idx, "{what}: CandIdx differs");
        }
    }

    /// `out[m, o] = scale[o] * sum_k (q[o, k] - zeroPoint) * a[m, k]` in float64, as the
    /// `presrq` forms compute it from the row sum.
    pub(crate) fn reference(c: &Case, q: &[u32], a: &[f64], scale: &[f32]) -> Vec<f64> {
        let Case { m, k, n, bits, .. } = *c;
        let w = ops::Codes::new(k, f64::from(zero_point(bits)), &scale[..n], q);
        (0..m)
            .flat_map(|mi| {
                let row = &a[mi * k..][..k];
                ops::projection_presrq(&w, row, row.iter().sum())
            })
            .collect()
    }

    pub fn every_reachable_variant_matches_the_reference() {
        let ctx = context();
        let presrq = |c: Case| Case { presrq: true, ..c };
        let block_major = |c: Case| Case {
            block_major: true,
            ..c
        };
        let cases = [
            // Decode (one row), and a partial tile of two token rows.
            (case(1, 64, 10, 4), "scalar"),
            (case(3, 48, 7, 2), "scalar"),
            (presrq(case(1, 64, 10, 4)), "scalar_presrq"),
            (presrq(case(3, 32, 9, 4)), "scalar_presrq"),
            // 64 token rows or more: 32 x 32 tiles, a partial one in the output direction.
            (case(64, 32, 40, 4), "gemm"),
            (presrq(case(65, 32, 33, 2)), "gemm_presrq"),
            // 2-bit decode with K >= 8192 splits K in four.
            (case(1, 8192, 3, 2), "splitk"),
            // Block-major decode: 128 columns a workgroup, the second partly past the end.
            (block_major(case(1, 32, 130, 4)), "fast"),
            (block_major(case(1, 64, 5, 2)), "fast"),
            (presrq(block_major(case(1, 32, 130, 4))), "fast_presrq"),
            (
                Case {
                    argmax: true,
                    ..presrq(block_major(case(1, 64, 200, 4)))
                },
                "fast_presrq_argmax",
            ),
        ];
        for (c, variant) in cases {
            check::<f32, f32>(&ctx, c, variant, 1e-5);
        }
    }

    pub fn half_precision_activations_and_outputs() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!(
                "half_precision_activations_and_outputs: skipped, the adapter has no shader-f16"
            );
            return;
        }
        // f16 activations are exact in the reference; an f16 output rounds.
        check::<f16, f32>(&ctx, case(2, 64, 12, 4), "scalar", 1e-5);
        check::<f32, f16>(&ctx, case(64, 32, 32, 4), "gemm", 1e-3);
        check::<f16, f16>(
            &ctx,
            Case {
                block_major: true,
                ..case(1, 32, 20, 4)
            },
            "fast",
            1e-3,
        );
    }

    pub fn subgroup_matrix_variant_is_not_planned() {
        let ctx = context();
        eprintln!(
            "subgroup_matrix_variant_is_not_planned: `gemm_sgmat` needs \
             f16 → f32 8×8×8 subgroup matrices (its shaders' shape), which only some devices offer: \
             not covered here"
        );
        // A shape `gemm_sgmat` accepts (M >= 64, K % 32, N % 64, an input scale) falls through
        // to the register-blocked GEMM.
        let (m, k, n) = (64usize, 32usize, 64usize);
        let a = Tensor::from_slice(&ctx, &[m, k], &corpus::data(m * k, 1)).unwrap();
        let bits = Tensor::from_slice(&ctx, &[n, k * 4 / 32], &vec![0u32; n * k / 8]).unwrap();
        let scale = Tensor::from_slice(&ctx, &[n], &vec![0.01f32; n]).unwrap();
        let inputs = op::Inputs {
            a: &a,
            bits: &bits,
            scale: &scale,
            sum_a: None,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: k as u32,
            out_features: n as u32,
            bits: 4,
            zero_point: 8,
            mask: 15,
        });
        attrs.input_scale = Some(1.0 / 64.0);
        let mut out = Tensor::<f32>::zeros(&ctx, &[m, n]).unwrap();
        let outputs = op::OutputsMut {
            out: &mut out,
            cand_val: None,
            cand_idx: None,
        };
        let plan = op::plan(
            ctx.caps(),
            &op::shapes(&inputs, &outputs),
            &op::DTypes::of::<f32, f32>(),
            &attrs,
        )
        .unwrap();
        assert_eq!(plan.variant, "gemm");
    }
}
