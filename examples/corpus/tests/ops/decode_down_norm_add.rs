//! `com.xenova.gemma4.DecodeDownNormAdd` from the corpus: the decode down projection with the
//! post-FFN residual norm-add, `d[o] = scale[o] * sum_k (q[o, k] - zeroPoint) * a[k]`, then
//! `hidden += RMSNorm(d) * w` in place, through the `splitk` pair of passes and the single
//! `fused` dispatch (reached on lavapipe through int8-code activations), against a float64
//! reference; every element of `hidden` the op owns is rewritten, the elements past
//! `outFeatures` are left alone, and a second run from the same `hidden` gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn splitk_variant_matches_the_reference() {
    if !corpus::skip_without_corpus("splitk_variant_matches_the_reference") {
        #[cfg(corpus)]
        gpu::splitk_variant_matches_the_reference();
    }
}

#[test]
fn fused_variant_matches_the_reference() {
    if !corpus::skip_without_corpus("fused_variant_matches_the_reference") {
        #[cfg(corpus)]
        gpu::fused_variant_matches_the_reference();
    }
}

#[test]
fn half_precision_activations_and_hidden() {
    if !corpus::skip_without_corpus("half_precision_activations_and_hidden") {
        #[cfg(corpus)]
        gpu::half_precision_activations_and_hidden();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::Poison;
    use corpus::decode::ops;
    use corpus::kernels::decode_down_norm_add as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};

    /// Elements of `hidden` past `outFeatures`: the op must not touch them.
    const TAIL: usize = 5;

    #[derive(Clone, Copy, Debug)]
    struct Case {
        k: usize,
        n: usize,
        bits: usize,
        /// `a` holds int8 codes on the grid of this input scale.
        codes: bool,
        input_scale: Option<f32>,
        eps: Option<f32>,
    }

    const fn case(k: usize, n: usize, bits: usize) -> Case {
        Case {
            k,
            n,
            bits,
            codes: false,
            input_scale: None,
            eps: None,
        }
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Whether this adapter takes the `fused` variant without int8 codes.
    fn fused_without_codes(ctx: &Context) -> bool {
        ctx.caps().has_feature("subgroups") && ctx.caps().subgroup_min_size >= 32
    }

    /// Packs row-major `q[o, k]` LSB first.
    fn pack(q: &[u32], k: usize, bits: usize) -> Vec<u32> {
        let per_word = 32 / bits;
        let mut packed = vec![0u32; q.len() / per_word];
        for (i, &code) in q.iter().enumerate() {
            let (o, kk) = (i / k, i % k);
            packed[o * (k / per_word) + kk / per_word] |= code << ((kk % per_word) * bits);
        }
        packed
    }

    fn zero_point(bits: usize) -> u32 {
        if bits == 4 { 8 } else { 2 }
    }

    /// Runs `c` from seeded `hidden` twice; checks the variant, that `hidden[..n]` changed to
    /// finite values within `tol` of the reference, that the tail kept its bits, and that both
    /// runs agree bit for bit.
    fn check<T: Float, H: Poison>(ctx: &Context, c: Case, variant: &str, tol: f64) {
        let what = format!(
            "{variant} {c:?} {}/{}",
            T::DTYPE.wgsl_name(),
            H::DTYPE.wgsl_name()
        );
        let Case { k, n, bits, .. } = c;
        let a: Vec<T> = corpus::data(k, 1 + k as u64)
            .into_iter()
            .map(|v| {
                let v = f64::from(v);
                // Codes are what the producer stores: integers of the int8 grid.
                T::from_f64(if c.codes { (v * 100.0).round() } else { v })
            })
            .collect();
        let q = corpus::codes(n * k, bits, 2 + n as u64);
        let scale: Vec<f32> = corpus::data(n, 3)
            .into_iter()
            .map(|v| 0.02 + 0.01 * v)
            .collect();
        let w = corpus::data(n, 4);
        let start: Vec<H> = corpus::data(n + TAIL, 5)
            .into_iter()
            .map(|v| H::from_f64(f64::from(v)))
            .collect();
        let a_t = Tensor::from_slice(ctx, &[k], &a).unwrap();
        let bits_t = Tensor::from_slice(ctx, &[n, k * bits / 32], &pack(&q, k, bits)).unwrap();
        let scale_t = Tensor::from_slice(ctx, &[n], &scale).unwrap();
        let w_t = Tensor::from_slice(ctx, &[n], &w).unwrap();
        let inputs = op::Inputs {
            a: &a_t,
            bits: &bits_t,
            scale: &scale_t,
            w: &w_t,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: 1,
            in_features: k as u32,
            out_features: n as u32,
            bits: bits as u32,
            zero_point: zero_point(bits),
            mask: (1 << bits) - 1,
        });
        attrs.codes = c.codes.then_some(1);
        attrs.input_scale = c.input_scale;
        attrs.eps = c.eps;
        let run = || {
            let mut hidden = Tensor::from_slice(ctx, &[n + TAIL], &start).unwrap();
            let outputs = op::OutputsMut {
                hidden: &mut hidden,
            };
            let plan = op::plan(
                ctx.caps(),
                &op::shapes(&inputs, &outputs),
                &op::DTypes::of::<T, H>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, variant, "{what}: variant");
            op::run_into(ctx, &inputs, outputs, &attrs).unwrap();
            hidden.to_vec(ctx).unwrap()
        };
        let got = run();

        // Codes carry the grid step separately; plain activations are used as given (no input
        // scale in these cases).
        let in_scale = f64::from(c.input_scale.unwrap_or(0.0));
        let a64: Vec<f64> = a
            .iter()
            .map(|v| v.to_f64() * if c.codes { in_scale } else { 1.0 })
            .collect();
        let weights = ops::Codes::new(k, f64::from(zero_point(bits)), &scale, &q);
        let d = ops::linear(&weights, &a64);
        let eps = c.eps.map_or(1e-6, f64::from);
        let start64: Vec<f64> = start[..n].iter().map(|v| v.to_f64()).collect();
        let want = ops::norm_add(&start64, &d, &w, 1.0, eps);

        for o in 0..n {
            let v = got[o].to_f64();
            assert!(v.is_finite(), "{what}: element {o} is not finite ({v})");
            // Seeded data make an unchanged element a sign the op skipped it.
            assert!(
                got[o].bits() != start[o].bits() || d[o] * f64::from(w[o]) == 0.0,
                "{what}: element {o} was not written"
            );
        }
        for o in n..n + TAIL {
            assert_eq!(
                got[o].bits(),
                start[o].bits(),
                "{what}: element {o}, past outFeatures, changed"
            );
        }
        let got32: Vec<f32> = got[..n].iter().map(|v| v.to_f64() as f32).collect();
        corpus::assert_close(&got32, &want, tol, &what);

        let again = run();
        if let Some(at) = (0..got.len()).find(|&i| got[i].bits() != again[i].bits()) {
            panic!(
                "{what}: a second run differs at element {at}: {:?} then {:?}",
                got[at], again[at]
            );
        }
    }

    pub fn splitk_variant_matches_the_reference() {
        let ctx = context();
        if fused_without_codes(&ctx) {
            eprintln!(
                "splitk_variant_matches_the_reference: skipped, this adapter's 32-lane \
                 subgroups select `fused` instead"
            );
            return;
        }
        // K split in four chunks of whole vec4 words; output rows in pairs, one left over; an
        // output longer than the merge's 128 threads.
        for (c, tol) in [
            (case(32, 8, 4), 1e-5),
            (case(64, 7, 2), 1e-5),
            (
                Case {
                    eps: Some(1e-3),
                    ..case(96, 300, 4)
                },
                1e-5,
            ),
        ] {
            check::<f32, f32>(&ctx, c, "splitk", tol);
        }
    }

    pub fn fused_variant_matches_the_reference() {
        let ctx = context();
        // Four output rows per workgroup, the last partly past the end; the last workgroup to
        // arrive runs the norm-add over every row.
        let coded = |c: Case| Case {
            codes: true,
            input_scale: Some(1.0 / 128.0),
            ..c
        };
        for c in [
            coded(case(32, 8, 4)),
            coded(case(64, 7, 2)),
            coded(case(96, 300, 4)),
        ] {
            check::<f32, f32>(&ctx, c, "fused", 1e-5);
        }
    }

    pub fn half_precision_activations_and_hidden() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!(
                "half_precision_activations_and_hidden: skipped, the adapter has no shader-f16"
            );
            return;
        }
        let splitk = if fused_without_codes(&ctx) {
            "fused"
        } else {
            "splitk"
        };
        // f16 inputs are exact in the reference; an f16 hidden rounds.
        check::<f16, f32>(&ctx, case(64, 10, 4), splitk, 1e-5);
        check::<f32, f16>(&ctx, case(64, 10, 4), splitk, 1e-3);
        check::<f16, f16>(
            &ctx,
            Case {
                codes: true,
                input_scale: Some(1.0 / 128.0),
                ..case(64, 10, 4)
            },
            "fused",
            1e-3,
        );
    }
}
