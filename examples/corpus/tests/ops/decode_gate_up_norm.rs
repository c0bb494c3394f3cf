//! `com.xenova.gemma4.DecodeGateUpNorm` from the corpus: the fused MLP gate/up half,
//! `out[m, o] = gelu_tanh(g) * u` with `g`, `u` the 2- or 4-bit QAT projections of the
//! (already normalized) `hidden` row, through the `staged` GEMV and the `gemm_staged` tile,
//! their `presrq` forms (`presrq`, `gemm`: row sums given), the gate's GELU table and the
//! int8-code output, against a float64 reference; every output element is written (the output
//! is poisoned first) and a second run gives the same bits.

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
fn output_grids_and_the_gelu_table() {
    if !corpus::skip_without_corpus("output_grids_and_the_gelu_table") {
        #[cfg(corpus)]
        gpu::output_grids_and_the_gelu_table();
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
    use corpus::kernels::decode_gate_up_norm as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_unwritten};

    #[derive(Clone, Copy, Debug)]
    struct Case {
        m: usize,
        h: usize,
        inter: usize,
        bits: usize,
        /// Gives `SumA`, the activation row sums (the `presrq` contract).
        presrq: bool,
        gate_out_scale: Option<f32>,
        out_quant_scale: Option<f32>,
        emit_codes: bool,
    }

    const fn case(m: usize, h: usize, inter: usize, bits: usize) -> Case {
        Case {
            m,
            h,
            inter,
            bits,
            presrq: false,
            gate_out_scale: None,
            out_quant_scale: None,
            emit_codes: false,
        }
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Packs row-major `q[o, k]` LSB first.
    fn pack(q: &[u32], rows: usize, k: usize, bits: usize) -> Vec<u32> {
        let per_word = 32 / bits;
        let mut packed = vec![0u32; rows * k / per_word];
        for (i, &code) in q.iter().enumerate() {
            let (o, kk) = (i / k, i % k);
            packed[o * (k / per_word) + kk / per_word] |= code << ((kk % per_word) * bits);
        }
        packed
    }

    fn zero_point(bits: usize) -> u32 {
        if bits == 4 { 8 } else { 2 }
    }

    pub(crate) use ops::gelu_tanh as gelu;

    /// The rounded values of `x` on the int8 grid of step `s` within float error of `x`: one
    /// value, or both neighbours next to a rounding boundary.
    fn grid(x: f64, s: f64) -> Vec<f64> {
        if s == 0.0 {
            return vec![x];
        }
        let slack = 1e-4 * (1.0 + x.abs());
        let mut out = vec![ops::srq(x - slack, s), ops::srq(x + slack, s)];
        out.dedup();
        out
    }

    /// The host table the package expects: `gelu(k * s)` for `k` in `-128..=127`.
    pub(crate) fn gelu_table(s: f64) -> Vec<f32> {
        (-128..128).map(|k| gelu(f64::from(k) * s) as f32).collect()
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

    /// Runs `c` on seeded data into a poisoned output, twice; checks the variant, that every
    /// element is written, the reference within `tol` (relative to `1 + |want|`, either
    /// neighbour where a grid rounds) and that both runs agree bit for bit.
    fn check<T: Float, O: Poison>(ctx: &Context, c: Case, variant: &str, tol: f64) {
        let what = format!(
            "{variant} {c:?} {}->{}",
            T::DTYPE.wgsl_name(),
            O::DTYPE.wgsl_name()
        );
        let Case {
            m, h, inter, bits, ..
        } = c;
        let hidden: Vec<T> = corpus::data(m * h, 1 + h as u64)
            .into_iter()
            .map(|v| T::from_f64(f64::from(v)))
            .collect();
        let qg = corpus::codes(inter * h, bits, 2 + inter as u64);
        let qu = corpus::codes(inter * h, bits, 3 + inter as u64);
        let scale = |seed| -> Vec<f32> {
            corpus::data(inter, seed)
                .into_iter()
                .map(|v| 0.02 + 0.01 * v)
                .collect()
        };
        let (gs, us) = (scale(4), scale(5));
        let sum_a: Vec<f32> = (0..m)
            .map(|mi| {
                hidden[mi * h..(mi + 1) * h]
                    .iter()
                    .map(|v| v.to_f64())
                    .sum::<f64>() as f32
            })
            .collect();
        let g_step = f64::from(c.gate_out_scale.unwrap_or(0.0));
        let lut = gelu_table(if g_step == 0.0 { 1.0 / 16.0 } else { g_step });
        let words = [inter, h * bits / 32];
        let hidden_t = Tensor::from_slice(ctx, &[m, h], &hidden).unwrap();
        let gate_bits_t = Tensor::from_slice(ctx, &words, &pack(&qg, inter, h, bits)).unwrap();
        let up_bits_t = Tensor::from_slice(ctx, &words, &pack(&qu, inter, h, bits)).unwrap();
        let gs_t = Tensor::from_slice(ctx, &[inter], &gs).unwrap();
        let us_t = Tensor::from_slice(ctx, &[inter], &us).unwrap();
        let sum_a_t = Tensor::from_slice(ctx, &[m], &sum_a).unwrap();
        let lut_t = Tensor::from_slice(ctx, &[256], &lut).unwrap();
        let inputs = op::Inputs {
            hidden: &hidden_t,
            gate_bits: &gate_bits_t,
            gate_scale: &gs_t,
            up_bits: &up_bits_t,
            up_scale: &us_t,
            sum_a: c.presrq.then_some(&sum_a_t),
            gelu_lut: &lut_t,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: h as u32,
            out_features: inter as u32,
            bits: bits as u32,
            zero_point: zero_point(bits),
            mask: (1 << bits) - 1,
        });
        attrs.gate_out_scale = c.gate_out_scale;
        attrs.out_quant_scale = c.out_quant_scale;
        attrs.emit_codes = c.emit_codes.then_some(1);
        let plan = op::plan(
            ctx.caps(),
            &inputs.shapes(),
            &op::DTypes::of::<T, O>(),
            &attrs,
        )
        .unwrap();
        assert_eq!(plan.variant, variant, "{what}: variant");
        let run = || {
            let mut out =
                Tensor::from_slice(ctx, &[m, inter], &vec![O::POISON; m * inter]).unwrap();
            op::run_into(ctx, &inputs, op::OutputsMut { out: &mut out }, &attrs).unwrap();
            out.to_vec(ctx).unwrap()
        };
        let got = run();
        assert_written(&got, &what);

        // `scale[o] · Σ_k (q[o, k] − zeroPoint) · hidden[m, k]`, as the `presrq` forms compute
        // it from the row sum.
        let zp = f64::from(zero_point(bits));
        let (gate, up) = (
            ops::Codes::new(h, zp, &gs, &qg),
            ops::Codes::new(h, zp, &us, &qu),
        );
        let [gate, up] = [gate, up].map(|w| {
            (0..m)
                .map(|mi| {
                    let row: Vec<f64> = hidden[mi * h..][..h].iter().map(|v| v.to_f64()).collect();
                    ops::projection_presrq(&w, &row, row.iter().sum())
                })
                .collect::<Vec<_>>()
        });
        let q_step = f64::from(c.out_quant_scale.unwrap_or(0.0));
        for (i, v) in got.iter().enumerate() {
            let (mi, o) = (i / inter, i % inter);
            let u = up[mi][o];
            let mut wants = Vec::new();
            for g in grid(gate[mi][o], g_step) {
                let act = if g_step == 0.0 {
                    gelu(g)
                } else {
                    f64::from(lut[((g / g_step).round() + 128.0) as usize])
                };
                for y in grid(act * u, q_step) {
                    wants.push(if c.emit_codes && q_step != 0.0 {
                        y / q_step
                    } else {
                        y
                    });
                }
            }
            let g = v.to_f64();
            let err = wants
                .iter()
                .map(|w| (g - w).abs() / (1.0 + w.abs()))
                .fold(f64::INFINITY, f64::min);
            assert!(
                err <= tol,
                "{what}: element {i} (m {mi}, o {o}): {g} against {wants:?} (relative error {err:e})"
            );
        }
        assert_same_bits(&got, &run(), &what);
    }

    pub fn every_reachable_variant_matches_the_reference() {
        let ctx = context();
        let presrq = |c: Case| Case { presrq: true, ..c };
        let cases = [
            // Decode, and a tile of two token rows with a partial row group.
            (case(1, 64, 10, 4), "staged"),
            (case(3, 64, 7, 2), "staged"),
            (presrq(case(1, 64, 10, 4)), "presrq"),
            (presrq(case(3, 32, 9, 2)), "presrq"),
            // 16 token rows or more take the register-blocked tile (32 x 32 for 4 bits,
            // 16 x 32 for 2), here partial in both directions.
            (case(16, 32, 40, 4), "gemm_staged"),
            (case(17, 32, 20, 2), "gemm_staged"),
            (presrq(case(16, 32, 40, 4)), "gemm"),
            (presrq(case(33, 32, 20, 2)), "gemm"),
        ];
        for (c, variant) in cases {
            check::<f32, f32>(&ctx, c, variant, 1e-5);
        }
    }

    pub fn output_grids_and_the_gelu_table() {
        let ctx = context();
        let gated = |c: Case| Case {
            gate_out_scale: Some(1.0 / 32.0),
            ..c
        };
        let quantized = |c: Case| Case {
            out_quant_scale: Some(1.0 / 64.0),
            ..c
        };
        let codes = |c: Case| Case {
            emit_codes: true,
            presrq: true,
            ..quantized(c)
        };
        let cases = [
            // A gate on its grid reads the GELU table instead of evaluating tanh.
            (gated(case(1, 64, 10, 4)), "staged"),
            (gated(case(16, 32, 40, 4)), "gemm_staged"),
            (
                gated(Case {
                    presrq: true,
                    ..case(1, 64, 10, 4)
                }),
                "presrq",
            ),
            // The down projection's input grid applied to the output, as values or as codes.
            (
                quantized(Case {
                    presrq: true,
                    ..case(1, 64, 10, 4)
                }),
                "presrq",
            ),
            (codes(case(1, 64, 10, 4)), "presrq"),
            (codes(case(16, 32, 40, 2)), "gemm"),
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
        // The staged GEMV dots in f16 (f32 accumulator): looser than the f32 paths.
        check::<f16, f32>(&ctx, case(1, 64, 10, 4), "staged", 1e-2);
        check::<f16, f16>(
            &ctx,
            Case {
                presrq: true,
                ..case(1, 64, 10, 4)
            },
            "presrq",
            1e-3,
        );
        check::<f32, f16>(&ctx, case(16, 32, 40, 4), "gemm_staged", 1e-3);
    }

    pub fn subgroup_matrix_variant_is_not_planned() {
        let ctx = context();
        eprintln!(
            "subgroup_matrix_variant_is_not_planned: `gemm_sgmat` needs \
             f16 → f32 8×8×8 subgroup matrices (its shaders' shape), which only some devices offer: \
             not covered here"
        );
        // A shape `gemm_sgmat` accepts (M >= 64, K % 32, N % 64, an input scale) falls through
        // to the staged tile.
        let (m, h, inter) = (64usize, 32usize, 64usize);
        let hidden = Tensor::from_slice(&ctx, &[m, h], &corpus::data(m * h, 1)).unwrap();
        let bits = Tensor::from_slice(&ctx, &[inter, h / 8], &vec![0u32; inter * h / 8]).unwrap();
        let scale = Tensor::from_slice(&ctx, &[inter], &vec![0.01f32; inter]).unwrap();
        let lut = Tensor::from_slice(&ctx, &[256], &gelu_table(1.0 / 16.0)).unwrap();
        let inputs = op::Inputs {
            hidden: &hidden,
            gate_bits: &bits,
            gate_scale: &scale,
            up_bits: &bits,
            up_scale: &scale,
            sum_a: None,
            gelu_lut: &lut,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: h as u32,
            out_features: inter as u32,
            bits: 4,
            zero_point: 8,
            mask: 15,
        });
        attrs.in_scale = Some(1.0 / 64.0);
        let plan = op::plan(
            ctx.caps(),
            &inputs.shapes(),
            &op::DTypes::of::<f32, f32>(),
            &attrs,
        )
        .unwrap();
        assert_eq!(plan.variant, "gemm_staged");
    }
}
