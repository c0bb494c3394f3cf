//! `com.xenova.gemma4.DecodeQkvProj` from the corpus: the fused decode q/k/v projection
//! `out[o] = srq(scale[o] · (sum_k code[o, k] · a[k] − zeroPoint · sumA), outScale)` over
//! packed 4- and 2-bit codes (its one variant, `presrq`), against a float64 reference; every
//! element of the three outputs is written (they are poisoned first) and a second run gives
//! the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn projects_packed_codes() {
    if !corpus::skip_without_corpus("projects_packed_codes") {
        #[cfg(corpus)]
        gpu::projects_packed_codes();
    }
}

#[test]
fn output_scales_round_to_the_grid() {
    if !corpus::skip_without_corpus("output_scales_round_to_the_grid") {
        #[cfg(corpus)]
        gpu::output_scales_round_to_the_grid();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_qkv_proj as op;
    use corpus::runtime::{Context, Tensor};

    const POISON: f32 = f32::from_bits(0x7fc0_0bad);

    #[derive(Clone, Copy, Debug)]
    struct Case {
        k: usize,
        q_out: usize,
        kv_out: usize,
        bits: u32,
        out_scales: [Option<f32>; 3],
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Seeded packed words: every bit pattern is a valid run of codes.
    pub(crate) fn words(len: usize, seed: u64) -> Vec<u32> {
        corpus::data(len, seed)
            .iter()
            .map(|v| v.to_bits().wrapping_mul(2_654_435_761))
            .collect()
    }

    /// Runs `case` twice into poisoned outputs and returns `[q, k, v]` of the first run after
    /// checking both runs wrote every element and agree bit for bit.
    fn check(ctx: &Context, case: Case) -> ([Vec<f32>; 3], [Vec<f64>; 3]) {
        let Case {
            k,
            q_out,
            kv_out,
            bits,
            out_scales,
        } = case;
        let wpr = k * bits as usize / 32;
        let a = corpus::data(k, 41);
        let sum_a: f32 = a.iter().sum();
        let weights = [
            words(q_out * wpr, 42),
            words(kv_out * wpr, 43),
            words(kv_out * wpr, 44),
        ];
        let scales: Vec<f32> = corpus::data(q_out + 2 * kv_out, 45)
            .iter()
            .map(|v| 0.05 * (1.5 + v))
            .collect();
        let a_t = Tensor::from_slice(ctx, &[1, k], &a).unwrap();
        let w_t: Vec<_> = weights
            .iter()
            .zip([q_out, kv_out, kv_out])
            .map(|(w, n)| Tensor::from_slice(ctx, &[n, wpr], w).unwrap())
            .collect();
        let scales_t = Tensor::from_slice(ctx, &[scales.len()], &scales).unwrap();
        let sum_t = Tensor::from_slice(ctx, &[1], &[sum_a]).unwrap();
        let inputs = op::Inputs {
            a: &a_t,
            qbits: &w_t[0],
            kbits: &w_t[1],
            vbits: &w_t[2],
            scales: &scales_t,
            sum_a: &sum_t,
        };
        let zero_point = 1u32 << (bits - 1);
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            in_features: k as u32,
            q_out: q_out as u32,
            kv_out: kv_out as u32,
            bits,
            zero_point,
            mask: (1 << bits) - 1,
        });
        [attrs.q_out_scale, attrs.k_out_scale, attrs.v_out_scale] = out_scales;
        let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        assert_eq!(plan.variant, "presrq", "{case:?}");

        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut outs: Vec<Tensor<f32>> = [q_out, kv_out, kv_out]
                .iter()
                .map(|&n| Tensor::from_slice(ctx, &[1, n], &vec![POISON; n]).unwrap())
                .collect();
            let [q, kk, v] = outs.as_mut_slice() else {
                unreachable!()
            };
            op::run_into(ctx, &inputs, op::OutputsMut { q, k: kk, v }, &attrs).unwrap();
            let got: Vec<Vec<f32>> = outs.iter().map(|t| t.to_vec(ctx).unwrap()).collect();
            for (name, out) in ["q", "k", "v"].iter().zip(&got) {
                if let Some(at) = out.iter().position(|v| v.to_bits() == POISON.to_bits()) {
                    panic!("{case:?}: {name}[{at}] was not written");
                }
                if let Some(at) = out.iter().position(|v| !v.is_finite()) {
                    panic!("{case:?}: {name}[{at}] is {}", out[at]);
                }
            }
            runs.push(got);
        }
        assert!(
            runs[0]
                .iter()
                .flatten()
                .zip(runs[1].iter().flatten())
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{case:?}: a second run differs"
        );

        let want = reference(k, bits, &a, &weights, [q_out, kv_out, kv_out], &scales);
        let got = runs.swap_remove(0);
        (got.try_into().unwrap(), want.try_into().unwrap())
    }

    /// `[q, k, v]` in f64 from the `[rows]` rows of `weights`' packed codes, `scales` running
    /// over all three: the unscaled products; the caller applies the output grid.
    pub(crate) fn reference(
        k: usize,
        bits: u32,
        a: &[f32],
        weights: &[Vec<u32>],
        rows: [usize; 3],
        scales: &[f32],
    ) -> Vec<Vec<f64>> {
        let zero_point = f64::from(1u32 << (bits - 1));
        let sum_a: f32 = a.iter().sum();
        let a: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
        let mut offset = 0;
        weights
            .iter()
            .zip(rows)
            .map(|(w, n)| {
                let scale = &scales[offset..][..n];
                offset += n;
                let codes = ops::Codes::packed(k, bits as usize, zero_point, scale, w);
                ops::projection_presrq(&codes, &a, f64::from(sum_a))
            })
            .collect()
    }

    pub fn projects_packed_codes() {
        let ctx = context();
        // Odd row counts leave the second row of a workgroup's pair past the end; 320 4-bit
        // inputs are 40 words a row, past the 32 lanes' stride.
        for case in [
            Case {
                k: 64,
                q_out: 6,
                kv_out: 3,
                bits: 4,
                out_scales: [None; 3],
            },
            Case {
                k: 320,
                q_out: 5,
                kv_out: 2,
                bits: 4,
                out_scales: [None; 3],
            },
            Case {
                k: 48,
                q_out: 4,
                kv_out: 1,
                bits: 2,
                out_scales: [None; 3],
            },
        ] {
            let (got, want) = check(&ctx, case);
            for (name, (g, w)) in ["q", "k", "v"].iter().zip(got.iter().zip(&want)) {
                corpus::assert_close(g, w, 1e-5, &format!("{case:?}: {name}"));
            }
        }
    }

    pub fn output_scales_round_to_the_grid() {
        let ctx = context();
        let steps = [0.125f32, 0.25, 0.0625];
        let case = Case {
            k: 64,
            q_out: 4,
            kv_out: 3,
            bits: 4,
            out_scales: steps.map(Some),
        };
        let (got, want) = check(&ctx, case);
        for (name, ((g, w), s)) in ["q", "k", "v"].iter().zip(got.iter().zip(&want).zip(steps)) {
            let s = f64::from(s);
            for (o, (&g, &w)) in g.iter().zip(w).enumerate() {
                let g = f64::from(g);
                let steps = g / s;
                assert!(
                    steps.fract() == 0.0 && (-128.0..=127.0).contains(&steps),
                    "{name}[{o}]: {g} is not on the grid of {s}"
                );
                // Near a rounding boundary the f32 sum may land on either side.
                let clamped = w.clamp(-128.0 * s, 127.0 * s);
                assert!(
                    (g - clamped).abs() <= s * 0.5 + 1e-4 * (1.0 + w.abs()),
                    "{name}[{o}]: {g} against {w}"
                );
            }
        }
    }
}
