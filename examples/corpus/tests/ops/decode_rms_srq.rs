//! `com.xenova.gemma4.DecodeRmsSrq` from the corpus: `y = srq(rmsnorm(x) · w, inScale)` per row
//! (`srq` rounds to an int8 grid of that step, a no-op without a scale) and `sumA[row] = Σ y`,
//! through its one variant `main`, in f32 and (where the adapter has shader-f16) f16, against
//! a float64 reference; both outputs start poisoned, every element the shader writes is written
//! and nothing past `rows · dim` is, and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn normalizes_quantizes_and_sums_rows() {
    if !corpus::skip_without_corpus("normalizes_quantizes_and_sums_rows") {
        #[cfg(corpus)]
        gpu::normalizes_quantizes_and_sums_rows();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_rms_srq as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_written};

    /// `X` (and so `Y`) is longer than `rows · dim` by this much; the shader must leave it.
    const TAIL: usize = 7;

    fn cast<T: Float>(values: &[f32]) -> Vec<T> {
        values.iter().map(|&v| T::from_f64(f64::from(v))).collect()
    }

    #[derive(Clone, Copy, Debug)]
    struct Case {
        rows: usize,
        dim: usize,
        eps: Option<f32>,
        in_scale: Option<f32>,
    }

    fn check<X: Poison, Y: Poison>(ctx: &Context, case: Case, tol: f64) {
        let Case { rows, dim, .. } = case;
        let what = format!("{:?} -> {:?} {case:?}", X::DTYPE, Y::DTYPE);
        let n = rows * dim;
        let x: Vec<X> = cast(&corpus::data(n + TAIL, 21));
        let w: Vec<f32> = corpus::data(dim, 22);
        let x_t = Tensor::from_slice(ctx, &[n + TAIL], &x).unwrap();
        let w_t = Tensor::from_slice(ctx, &[dim], &w).unwrap();
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            rows: rows as u32,
            dim: dim as u32,
        });
        attrs.eps = case.eps;
        attrs.in_scale = case.in_scale;
        let inputs = op::Inputs { x: &x_t, w: &w_t };
        let plan = op::plan(
            ctx.caps(),
            &inputs.shapes(),
            &op::DTypes::of::<X, Y>(),
            &attrs,
        )
        .unwrap();
        assert_eq!(plan.variant, "main", "{what}: variant");

        let run = || {
            let mut y = Tensor::from_slice(ctx, &[n + TAIL], &vec![Y::POISON; n + TAIL]).unwrap();
            let mut sum_a =
                Tensor::from_slice(ctx, &[rows], &vec![f32::from_bits(0x7fc0_0bad); rows]).unwrap();
            op::run_into(
                ctx,
                &inputs,
                op::OutputsMut {
                    y: &mut y,
                    sum_a: &mut sum_a,
                },
                &attrs,
            )
            .unwrap();
            (y.to_vec(ctx).unwrap(), sum_a.to_vec(ctx).unwrap())
        };
        let (y, sum_a) = run();
        assert_eq!((y.len(), sum_a.len()), (n + TAIL, rows), "{what}: lengths");
        if let Some(at) = first_written(&y[n..]) {
            panic!("{what}: Y element {} past rows · dim was written", n + at);
        }
        let y64: Vec<f64> = y[..n].iter().map(|v| v.to_f64()).collect();
        if let Some(at) = y64.iter().position(|v| !v.is_finite()) {
            panic!("{what}: Y element {at} was not written ({})", y64[at]);
        }
        if let Some(at) = sum_a.iter().position(|v| !v.is_finite()) {
            panic!("{what}: SumA element {at} was not written ({})", sum_a[at]);
        }

        let eps = f64::from(case.eps.unwrap_or(1e-6));
        let s = f64::from(case.in_scale.unwrap_or(0.0));
        let mut worst = (0, 0.0f64, 0.0f64);
        for r in 0..rows {
            let row: Vec<f64> = x[r * dim..(r + 1) * dim]
                .iter()
                .map(|v| v.to_f64())
                .collect();
            let mut unrounded = 0.0;
            for (j, normed) in ops::rms_norm(&row, Some(&w), eps).into_iter().enumerate() {
                unrounded += ops::srq(normed, s);
                // The f32 (or f16) value may sit on either side of a grid boundary the exact
                // one is near: accept both neighbours.
                let slack = tol * (1.0 + normed.abs());
                let g = y64[r * dim + j];
                let (err, want) = [ops::srq(normed - slack, s), ops::srq(normed + slack, s)]
                    .iter()
                    .map(|&want| ((g - want).abs() / (1.0 + want.abs()), want))
                    .fold((f64::INFINITY, 0.0), |b, e| if e.0 < b.0 { e } else { b });
                if err > worst.1 {
                    worst = (r * dim + j, err, want);
                }
            }
            // The shader sums the values as stored, in f32. WGSL lets a compiler add the
            // value before it is narrowed to the output type instead (NVIDIA's does: its sum
            // matches the unnarrowed values to f32 accuracy and differs from the stored ones
            // by up to half an f16 ulp per element), so either sum is accepted, each within
            // f32 summation error: dim · 2⁻²⁴ of the magnitudes, which also covers the few f32
            // roundings of each value.
            let row_y = &y64[r * dim..(r + 1) * dim];
            let want_sum: f64 = row_y.iter().sum();
            let magnitude: f64 = row_y.iter().map(|v| v.abs()).sum();
            let got_sum = f64::from(sum_a[r]);
            let bound = dim as f64 * 2f64.powi(-24) * (1.0 + magnitude);
            assert!(
                (got_sum - want_sum).abs() <= bound || (got_sum - unrounded).abs() <= bound,
                "{what}: SumA[{r}] is {got_sum}, the row of Y sums to {want_sum}, the values before narrowing to {unrounded} (sum of magnitudes {magnitude})"
            );
        }
        let (at, err, want) = worst;
        assert!(
            err <= tol,
            "{what}: Y element {at}: {} against {want} (relative error {err:e})",
            y64[at]
        );

        let (y2, sum_a2) = run();
        assert!(
            y.iter().zip(&y2).all(|(a, b)| a.bits() == b.bits()),
            "{what}: a second run differs in Y"
        );
        assert!(
            sum_a
                .iter()
                .zip(&sum_a2)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: a second run differs in SumA"
        );
    }

    pub fn normalizes_quantizes_and_sums_rows() {
        let ctx = corpus::context();
        let caps = ctx.caps();
        if !(caps.has_feature("subgroups") && caps.subgroup_min_size >= 32) {
            eprintln!(
                "normalizes_quantizes_and_sums_rows: the subgroup reduction of `main` needs \
                 subgroups of at least 32 lanes (this adapter: subgroups {}, sizes {}..{}); \
                 the workgroup-memory tree runs instead",
                caps.subgroups, caps.subgroup_min_size, caps.subgroup_max_size
            );
        }
        let case = |rows, dim, eps, in_scale| Case {
            rows,
            dim,
            eps,
            in_scale,
        };
        // Rows shorter and longer than the 256 threads; without a scale, with a coarse grid,
        // and with a fine one that clamps the largest values at 127 steps.
        let cases = [
            case(1, 200, Some(1e-5), None),
            case(3, 600, None, None),
            case(3, 300, None, Some(1.0 / 32.0)),
            case(2, 520, Some(1e-5), Some(1.0 / 128.0)),
        ];
        for c in cases {
            check::<f32, f32>(&ctx, c, 1e-5);
        }
        if ctx.caps().has_feature("shader-f16") {
            for c in cases {
                check::<f16, f16>(&ctx, c, 2e-3);
                check::<f32, f16>(&ctx, c, 2e-3);
                check::<f16, f32>(&ctx, c, 1e-5);
            }
        } else {
            eprintln!(
                "normalizes_quantizes_and_sums_rows: no shader-f16 on this adapter, f16 not run"
            );
        }
    }
}
