//! `com.xenova.gemma4.DecodePleProjNorm` from the corpus: the fused decode PLE projection
//! `proj = srq(W · srq(a, projInScale), projOutScale)` (dense weights in `fused`, packed u8
//! codes with a row scale in `fused_codes`), then `hidden = (hidden + RMSNorm(proj) · w1) · sc`
//! in place and `y2 = srq(RMSNorm(hidden) · w2, inScale)` with `sum2 = sum y2`, in f32 and
//! f16, against a float64 reference; every element the op writes is written (outputs are
//! poisoned first), the rest of each buffer is left alone, and a second run gives the same
//! bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn dense_projection_normalizes() {
    if !corpus::skip_without_corpus("dense_projection_normalizes") {
        #[cfg(corpus)]
        gpu::dense_projection_normalizes();
    }
}

#[test]
fn packed_codes_projection_normalizes() {
    if !corpus::skip_without_corpus("packed_codes_projection_normalizes") {
        #[cfg(corpus)]
        gpu::packed_codes_projection_normalizes();
    }
}

#[test]
fn half_precision_tensors() {
    if !corpus::skip_without_corpus("half_precision_tensors") {
        #[cfg(corpus)]
        gpu::half_precision_tensors();
    }
}

#[test]
fn activation_scales_round_to_the_grid() {
    if !corpus::skip_without_corpus("activation_scales_round_to_the_grid") {
        #[cfg(corpus)]
        gpu::activation_scales_round_to_the_grid();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::Poison;
    use corpus::decode::ops;
    use corpus::kernels::decode_ple_proj_norm as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};

    const EPS: f64 = 1e-6;

    /// Elements past the op's range in each buffer, which it must leave alone.
    const TAIL: usize = 3;

    fn context() -> Context {
        corpus::context()
    }

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Case {
        k: usize,
        n: usize,
        codes: bool,
        proj_in_scale: Option<f32>,
        proj_out_scale: Option<f32>,
        in_scale: Option<f32>,
    }

    pub(crate) const fn case(k: usize, n: usize, codes: bool) -> Case {
        Case {
            k,
            n,
            codes,
            proj_in_scale: None,
            proj_out_scale: None,
            in_scale: None,
        }
    }

    pub(crate) struct Data<T, Wt> {
        pub(crate) a: Vec<T>,
        pub(crate) w: Vec<Wt>,
        pub(crate) codes: Vec<u32>,
        pub(crate) row_scale: Vec<f32>,
        pub(crate) hidden: Vec<f32>,
        pub(crate) w12s: Vec<f32>,
    }

    pub(crate) fn data<T: Float, Wt: Float>(case: Case) -> Data<T, Wt> {
        let Case { k, n, .. } = case;
        let mut w12s: Vec<f32> = corpus::data(2 * n, 65)
            .iter()
            .map(|v| 1.0 + 0.5 * v)
            .collect();
        // The residual scale `sc`.
        w12s.push(0.75);
        Data {
            a: corpus::data(k, 61)
                .iter()
                .map(|&v| T::from_f64(v.into()))
                .collect(),
            w: corpus::data(n * k, 62)
                .iter()
                .map(|&v| Wt::from_f64(f64::from(v) * 0.25))
                .collect(),
            // Arbitrary bytes: every code 0..=255 is a valid weight `code - 128`.
            codes: corpus::data(n * k / 4, 63)
                .iter()
                .map(|v| v.to_bits().wrapping_mul(2_654_435_761))
                .collect(),
            row_scale: corpus::data(n, 64)
                .iter()
                .map(|v| 0.01 * (1.5 + v))
                .collect(),
            hidden: corpus::data(n + TAIL, 66),
            w12s,
        }
    }

    /// `(hidden, y2, sum2)` in f64, rounding where the shader stores to `H` and `Y`.
    pub(crate) fn reference<T: Float, Wt: Float, H: Float, Y: Float>(
        case: Case,
        d: &Data<T, Wt>,
    ) -> (Vec<f64>, Vec<f64>, f64) {
        let Case { k, n, .. } = case;
        let proj_in_scale = f64::from(case.proj_in_scale.unwrap_or(0.0));
        let a: Vec<f64> =
            d.a.iter()
                .map(|v| ops::srq(v.to_f64(), proj_in_scale))
                .collect();
        let product = if case.codes {
            ops::linear(&ops::Codes::packed(k, 8, 128.0, &d.row_scale, &d.codes), &a)
        } else {
            let values = d.w.iter().map(|v| v.to_f64()).collect();
            ops::linear(
                &ops::Dense {
                    rows: n,
                    cols: k,
                    values,
                },
                &a,
            )
        };
        let proj_out_scale = f64::from(case.proj_out_scale.unwrap_or(0.0));
        let proj: Vec<f64> = product
            .into_iter()
            .map(|v| ops::srq(v, proj_out_scale))
            .collect();
        let round_h = |v: f64| H::from_f64(v).to_f64();
        let start: Vec<f64> = d.hidden[..n].iter().map(|&v| round_h(v.into())).collect();
        let sc = f64::from(d.w12s[2 * n]);
        let hidden: Vec<f64> = ops::norm_add(&start, &proj, &d.w12s[..n], sc, EPS)
            .into_iter()
            .map(round_h)
            .collect();
        let in_scale = f64::from(case.in_scale.unwrap_or(0.0));
        let y2: Vec<f64> = ops::rms_norm(&hidden, Some(&d.w12s[n..2 * n]), EPS)
            .into_iter()
            .map(|y| Y::from_f64(ops::srq(Y::from_f64(y).to_f64(), in_scale)).to_f64())
            .collect();
        let sum2 = y2.iter().sum();
        (hidden, y2, sum2)
    }

    /// Runs `case` twice, each time on freshly seeded `hidden` and poisoned `y2` and `sum2`,
    /// checks the written ranges and the untouched tails, that both runs agree bit for bit,
    /// and compares the first with the reference within `tol`.
    fn check<T: Float, Wt: Float, H: Poison, Y: Poison>(ctx: &Context, case: Case, tol: f64) {
        let Case { k, n, .. } = case;
        let d = data::<T, Wt>(case);
        let a_t = Tensor::from_slice(ctx, &[1, k], &d.a).unwrap();
        let w_t = Tensor::from_slice(ctx, &[n, k], &d.w).unwrap();
        let codes_t = Tensor::from_slice(ctx, &[n, k / 4], &d.codes).unwrap();
        let scale_t = Tensor::from_slice(ctx, &[n], &d.row_scale).unwrap();
        let w12s_t = Tensor::from_slice(ctx, &[2 * n + 1], &d.w12s).unwrap();
        let inputs = op::Inputs {
            a: &a_t,
            wt: (!case.codes).then_some(&w_t),
            codes: case.codes.then_some(&codes_t),
            row_scale: case.codes.then_some(&scale_t),
            w12s: &w12s_t,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            in_features: k as u32,
            out_features: n as u32,
        });
        attrs.codes = case.codes.then_some(1);
        attrs.eps = Some(EPS as f32);
        attrs.proj_in_scale = case.proj_in_scale;
        attrs.proj_out_scale = case.proj_out_scale;
        attrs.in_scale = case.in_scale;
        let variant = if case.codes { "fused_codes" } else { "fused" };
        let hidden0: Vec<H> = d.hidden.iter().map(|&v| H::from_f64(v.into())).collect();
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut hidden = Tensor::from_slice(ctx, &[n + TAIL], &hidden0).unwrap();
            let mut y2 = Tensor::from_slice(ctx, &[n + TAIL], &vec![Y::POISON; n + TAIL]).unwrap();
            let mut sum2 = Tensor::from_slice(ctx, &[1 + TAIL], &[f32::POISON; 1 + TAIL]).unwrap();
            {
                let outputs = op::OutputsMut {
                    hidden: &mut hidden,
                    y2: &mut y2,
                    sum2: &mut sum2,
                };
                let plan = op::plan(
                    ctx.caps(),
                    &op::shapes(&inputs, &outputs),
                    &op::DTypes::of::<T, Wt, H, Y>(),
                    &attrs,
                )
                .unwrap();
                assert_eq!(plan.variant, variant, "{case:?}");
            }
            op::run_into(
                ctx,
                &inputs,
                op::OutputsMut {
                    hidden: &mut hidden,
                    y2: &mut y2,
                    sum2: &mut sum2,
                },
                &attrs,
            )
            .unwrap();
            let hidden = hidden.to_vec(ctx).unwrap();
            let y2 = y2.to_vec(ctx).unwrap();
            let sum2 = sum2.to_vec(ctx).unwrap();
            for j in 0..n {
                // The residual scale is not 1, so a written element differs from the seed.
                assert!(
                    hidden[j].bits() != hidden0[j].bits(),
                    "{case:?}: hidden[{j}] was not written"
                );
                assert!(
                    hidden[j].to_f64().is_finite(),
                    "{case:?}: hidden[{j}] is {:?}",
                    hidden[j]
                );
                assert!(
                    y2[j].bits() != Y::POISON.bits(),
                    "{case:?}: y2[{j}] was not written"
                );
                assert!(
                    y2[j].to_f64().is_finite(),
                    "{case:?}: y2[{j}] is {:?}",
                    y2[j]
                );
            }
            assert!(
                sum2[0].bits() != f32::POISON.bits(),
                "{case:?}: sum2 was not written"
            );
            assert!(sum2[0].is_finite(), "{case:?}: sum2 is {}", sum2[0]);
            for t in 0..TAIL {
                assert_eq!(
                    hidden[n + t].bits(),
                    hidden0[n + t].bits(),
                    "{case:?}: hidden[{}] changed",
                    n + t
                );
                assert_eq!(
                    y2[n + t].bits(),
                    Y::POISON.bits(),
                    "{case:?}: y2[{}] was written",
                    n + t
                );
                assert_eq!(
                    sum2[1 + t].bits(),
                    f32::POISON.bits(),
                    "{case:?}: sum2[{}] was written",
                    1 + t
                );
            }
            runs.push((hidden, y2, sum2));
        }
        let bits = |r: &(Vec<H>, Vec<Y>, Vec<f32>)| -> Vec<u32> {
            r.0.iter()
                .map(|v| v.bits())
                .chain(r.1.iter().map(|v| v.bits()))
                .chain(r.2.iter().map(|v| v.bits()))
                .collect()
        };
        assert_eq!(
            bits(&runs[0]),
            bits(&runs[1]),
            "{case:?}: a second run differs"
        );

        let (hidden, y2, sum2) = reference::<T, Wt, H, Y>(case, &d);
        let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        let (got_h, got_y, got_s) = &runs[0];
        let got_h: Vec<f64> = got_h[..n].iter().map(|v| v.to_f64()).collect();
        let got_y: Vec<f64> = got_y[..n].iter().map(|v| v.to_f64()).collect();
        corpus::assert_close(&f32s(&got_h), &hidden, tol, &format!("{case:?}: hidden"));
        corpus::assert_close(&f32s(&got_y), &y2, tol, &format!("{case:?}: y2"));
        // The sum of n rounded terms: its error grows with n.
        corpus::assert_close(
            &got_s[..1],
            &[sum2],
            tol * n as f64,
            &format!("{case:?}: sum2"),
        );
    }

    pub fn dense_projection_normalizes() {
        let ctx = context();
        // 16 rows a workgroup, the last one partial; 300 outputs give each thread two
        // elements of the norm tail; 136 inputs are 34 vec4s, past the 32 lanes' stride.
        for c in [
            case(64, 40, false),
            case(136, 9, false),
            case(8, 300, false),
        ] {
            check::<f32, f32, f32, f32>(&ctx, c, 1e-4);
        }
    }

    pub fn packed_codes_projection_normalizes() {
        let ctx = context();
        // 260 inputs hoist three vec4s a lane (the last partly past the end).
        for c in [case(64, 40, true), case(260, 17, true), case(8, 300, true)] {
            check::<f32, f32, f32, f32>(&ctx, c, 1e-4);
        }
    }

    pub fn half_precision_tensors() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("half_precision_tensors: skipped, the adapter has no shader-f16");
            return;
        }
        check::<f16, f16, f32, f32>(&ctx, case(64, 40, false), 1e-4);
        check::<f32, f32, f16, f16>(&ctx, case(64, 40, false), 3e-3);
        check::<f16, f32, f16, f32>(&ctx, case(32, 24, false), 3e-3);
        check::<f32, f32, f16, f16>(&ctx, case(64, 40, true), 3e-3);
    }

    pub fn activation_scales_round_to_the_grid() {
        let ctx = context();
        // Power-of-two steps; a value near a rounding boundary may land on either side, so
        // the tolerance is one step of the coarsest grid.
        for codes in [false, true] {
            let c = Case {
                proj_in_scale: Some(1.0 / 128.0),
                proj_out_scale: Some(1.0 / 64.0),
                in_scale: Some(1.0 / 32.0),
                ..case(64, 40, codes)
            };
            check::<f32, f32, f32, f32>(&ctx, c, 1.0 / 32.0);
        }
    }
}
