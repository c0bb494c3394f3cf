//! `com.xenova.gemma4.SrqQuantize` from the corpus: `y[i] = clamp(round(x[i] / scale), -128,
//! 127) · scale` for the first `count` elements (`y = x` when `scale` is 0), through its one
//! variant `scalar`, in f32 and (where the adapter has shader-f16) f16, against a float64
//! reference; the output starts poisoned, the first `count` elements are written and the rest
//! are not, and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn rounds_to_the_int8_grid() {
    if !corpus::skip_without_corpus("rounds_to_the_int8_grid") {
        #[cfg(corpus)]
        gpu::rounds_to_the_int8_grid();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::srq_quantize as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Tensor};
    use corpus::{Poison, first_unwritten, first_written};

    /// `count` of `len` elements, with values in `[-3, 3)` so that fine grids clamp.
    fn check<T: Poison>(ctx: &Context, len: usize, count: u32, scale: f32, tol: f64) {
        let what = format!("{:?} len {len} count {count} scale {scale}", T::DTYPE);
        let x: Vec<T> = corpus::data(len, 41)
            .into_iter()
            .map(|v| T::from_f64(3.0 * f64::from(v)))
            .collect();
        let x_t = Tensor::from_slice(ctx, &[len], &x).unwrap();
        let attrs = op::Attrs::new(op::RequiredAttrs { count, scale });
        let inputs = op::Inputs { x: &x_t };
        let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        assert_eq!(plan.variant, "scalar", "{what}: variant");

        let run = || {
            let mut y = Tensor::from_slice(ctx, &[len], &vec![T::POISON; len]).unwrap();
            op::run_into(ctx, &inputs, op::OutputsMut { y: &mut y }, &attrs).unwrap();
            y.to_vec(ctx).unwrap()
        };
        let got = run();
        let count = count as usize;
        assert_eq!(got.len(), len, "{what}: length");
        if let Some(at) = first_unwritten(&got[..count]) {
            panic!("{what}: element {at} was not written");
        }
        if let Some(at) = first_written(&got[count..]) {
            panic!("{what}: element {} past count was written", count + at);
        }
        let s = f64::from(scale);
        let mut worst = (0, 0.0f64, 0.0f64);
        for (i, (g, v)) in got[..count].iter().zip(&x).enumerate() {
            let (g, v) = (g.to_f64(), v.to_f64());
            assert!(g.is_finite(), "{what}: element {i} is not finite ({g})");
            // A grid step that is not a power of two leaves `x / scale` inexact; within a
            // rounding error of a tie either neighbour is right.
            let slack = 1e-6 * (1.0 + v.abs());
            let (err, want) = [ops::srq(v - slack, s), ops::srq(v + slack, s)]
                .iter()
                .map(|&want| ((g - want).abs() / (1.0 + want.abs()), want))
                .fold((f64::INFINITY, 0.0), |b, e| if e.0 < b.0 { e } else { b });
            if err > worst.1 {
                worst = (i, err, want);
            }
        }
        let (at, err, want) = worst;
        assert!(
            err <= tol,
            "{what}: element {at}: {} against {want} (relative error {err:e})",
            got[at].to_f64()
        );

        let again = run();
        assert!(
            got.iter().zip(&again).all(|(a, b)| a.bits() == b.bits()),
            "{what}: a second run differs"
        );
    }

    pub fn rounds_to_the_int8_grid() {
        let ctx = corpus::context();
        // A power-of-two step (exact, clamping past ±2), a step with an inexact reciprocal
        // (no clamping within ±3), and no step at all; `count` a multiple of the 256 threads
        // and not, the whole tensor and part of it.
        let cases = [
            (1024, 1024, 1.0 / 64.0),
            (1500, 1337, 1.0 / 64.0),
            (1000, 999, 0.1),
            (700, 513, 0.0),
        ];
        for (len, count, scale) in cases {
            check::<f32>(&ctx, len, count, scale, 1e-6);
        }
        if ctx.caps().has_feature("shader-f16") {
            // The grid values of these steps are exact in f16 except for the step of 0.1;
            // without a step `y` is `x` exactly.
            for (len, count, scale) in cases {
                check::<f16>(&ctx, len, count, scale, 1e-3);
            }
        } else {
            eprintln!("rounds_to_the_int8_grid: no shader-f16 on this adapter, f16 not run");
        }
    }
}
