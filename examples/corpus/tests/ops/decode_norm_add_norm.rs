//! `com.xenova.gemma4.DecodeNormAddNorm` from the corpus: per row, `hidden = (hidden +
//! rmsnorm(src) · w1) · scale[0]` in place, then `y2 = srq(rmsnorm(hidden) · w2, inScale)` over
//! the updated row (`srq` rounds to an int8 grid of that step, a no-op without a scale) and
//! `sum2[row] = Σ y2`, through its one variant `main`, in f32 and (where the adapter has
//! shader-f16) f16, against a float64 reference; `y2` and `sum2` start poisoned, every element
//! the shader writes is written and nothing past `rows · dim` (or `rows`) is, a second run from
//! the same input gives the same bits, and rows past 8192 elements have no variant.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn updates_the_residual_and_quantizes_its_norm() {
    if !corpus::skip_without_corpus("updates_the_residual_and_quantizes_its_norm") {
        #[cfg(corpus)]
        gpu::updates_the_residual_and_quantizes_its_norm();
    }
}

#[test]
fn rows_longer_than_8192_have_no_variant() {
    if !corpus::skip_without_corpus("rows_longer_than_8192_have_no_variant") {
        #[cfg(corpus)]
        gpu::rows_longer_than_8192_have_no_variant();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_norm_add_norm as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_unwritten, first_written};

    /// Every tensor the op writes is longer than the op's range by this much; the shader
    /// must leave those elements.
    const TAIL: usize = 5;

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

    struct Run<T, Y> {
        hidden: Vec<T>,
        y2: Vec<Y>,
        sum2: Vec<f32>,
    }

    fn check<T: Poison, Y: Poison>(ctx: &Context, case: Case, tol: f64) {
        let Case { rows, dim, .. } = case;
        let what = format!("{:?} -> {:?} {case:?}", T::DTYPE, Y::DTYPE);
        let n = rows * dim;
        let mut hidden0: Vec<T> = cast(&corpus::data(n, 31));
        hidden0.extend(std::iter::repeat_n(T::POISON, TAIL));
        let src: Vec<T> = cast(&corpus::data(n, 32));
        let w1 = corpus::data(dim, 33);
        let w2 = corpus::data(dim, 34);
        // Not 1, so that every element of `hidden` visibly changes.
        let scale = [0.75f32];
        let src_t = Tensor::from_slice(ctx, &[rows, dim], &src).unwrap();
        let w1_t = Tensor::from_slice(ctx, &[dim], &w1).unwrap();
        let w2_t = Tensor::from_slice(ctx, &[dim], &w2).unwrap();
        let scale_t = Tensor::from_slice(ctx, &[1], &scale).unwrap();
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            rows: rows as u32,
            dim: dim as u32,
        });
        attrs.eps = case.eps;
        attrs.in_scale = case.in_scale;
        let inputs = op::Inputs {
            src: &src_t,
            w1: &w1_t,
            scale: &scale_t,
            w2: &w2_t,
        };
        let shapes = op::Shapes {
            hidden: &[n + TAIL],
            src: &[rows, dim],
            w1: &[dim],
            scale: &[1],
            w2: &[dim],
            y2: &[n + TAIL],
            sum2: &[rows + TAIL],
        };
        let plan = op::plan(ctx.caps(), &shapes, &op::DTypes::of::<T, Y>(), &attrs).unwrap();
        assert_eq!(plan.variant, "main", "{what}: variant");

        let run = || {
            let mut hidden = Tensor::from_slice(ctx, &[n + TAIL], &hidden0).unwrap();
            let mut y2 = Tensor::from_slice(ctx, &[n + TAIL], &vec![Y::POISON; n + TAIL]).unwrap();
            let mut sum2 = Tensor::from_slice(
                ctx,
                &[rows + TAIL],
                &vec![f32::from_bits(0x7fc0_0bad); rows + TAIL],
            )
            .unwrap();
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
            Run {
                hidden: hidden.to_vec(ctx).unwrap(),
                y2: y2.to_vec(ctx).unwrap(),
                sum2: sum2.to_vec(ctx).unwrap(),
            }
        };
        let got = run();
        assert_eq!(
            (got.hidden.len(), got.y2.len(), got.sum2.len()),
            (n + TAIL, n + TAIL, rows + TAIL),
            "{what}: lengths"
        );
        assert!(
            first_written(&got.hidden[n..]).is_none(),
            "{what}: Hidden was written past rows · dim"
        );
        assert!(
            first_written(&got.y2[n..]).is_none(),
            "{what}: Y2 was written past rows · dim"
        );
        assert!(
            got.sum2[rows..].iter().all(|v| v.to_bits() == 0x7fc0_0bad),
            "{what}: Sum2 was written past rows"
        );
        if let Some(at) = first_unwritten(&got.y2[..n]) {
            panic!("{what}: Y2 element {at} was not written");
        }
        if let Some(at) = got.sum2[..rows].iter().position(|v| !v.is_finite()) {
            panic!(
                "{what}: Sum2 element {at} was not written ({})",
                got.sum2[at]
            );
        }
        let hidden: Vec<f64> = got.hidden[..n].iter().map(|v| v.to_f64()).collect();
        let y2: Vec<f64> = got.y2[..n].iter().map(|v| v.to_f64()).collect();
        if let Some(at) = hidden.iter().chain(&y2).position(|v| !v.is_finite()) {
            panic!("{what}: element {at} of Hidden, then Y2, is not finite");
        }

        let eps = f64::from(case.eps.unwrap_or(1e-6));
        let s = f64::from(case.in_scale.unwrap_or(0.0));
        let mut want_hidden = Vec::with_capacity(n);
        let mut worst = (0, 0.0f64, 0.0f64);
        for r in 0..rows {
            let src_row: Vec<f64> = src[r * dim..(r + 1) * dim]
                .iter()
                .map(|v| v.to_f64())
                .collect();
            let start: Vec<f64> = hidden0[r * dim..(r + 1) * dim]
                .iter()
                .map(|v| v.to_f64())
                .collect();
            want_hidden.extend(ops::norm_add(
                &start,
                &src_row,
                &w1,
                f64::from(scale[0]),
                eps,
            ));
            // The second norm is of the row as the GPU stored it, so that the check of `y2`
            // does not also carry the error of `hidden`.
            let row = &hidden[r * dim..(r + 1) * dim];
            let mut unrounded = 0.0;
            for (j, normed) in ops::rms_norm(row, Some(&w2), eps).into_iter().enumerate() {
                unrounded += ops::srq(normed, s);
                // The f32 (or f16) value may sit on either side of a grid boundary the exact
                // one is near: accept both neighbours.
                let slack = tol * (1.0 + normed.abs());
                let g = y2[r * dim + j];
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
            let row_y = &y2[r * dim..(r + 1) * dim];
            let want_sum: f64 = row_y.iter().sum();
            let magnitude: f64 = row_y.iter().map(|v| v.abs()).sum();
            let got_sum = f64::from(got.sum2[r]);
            let bound = dim as f64 * 2f64.powi(-24) * (1.0 + magnitude);
            assert!(
                (got_sum - want_sum).abs() <= bound || (got_sum - unrounded).abs() <= bound,
                "{what}: Sum2[{r}] is {got_sum}, the row of Y2 sums to {want_sum}, the values before narrowing to {unrounded} (sum of magnitudes {magnitude})"
            );
        }
        let (at, err, want) = worst;
        assert!(
            err <= tol,
            "{what}: Y2 element {at}: {} against {want} (relative error {err:e})",
            y2[at]
        );

        let again = run();
        assert!(
            got.hidden
                .iter()
                .zip(&again.hidden)
                .all(|(a, b)| a.bits() == b.bits()),
            "{what}: a second run differs in Hidden"
        );
        assert!(
            got.y2
                .iter()
                .zip(&again.y2)
                .all(|(a, b)| a.bits() == b.bits()),
            "{what}: a second run differs in Y2"
        );
        assert!(
            got.sum2
                .iter()
                .zip(&again.sum2)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: a second run differs in Sum2"
        );
    }

    pub fn updates_the_residual_and_quantizes_its_norm() {
        let ctx = corpus::context();
        let caps = ctx.caps();
        if !(caps.has_feature("subgroups") && caps.subgroup_min_size >= 32) {
            eprintln!(
                "updates_the_residual_and_quantizes_its_norm: the subgroup reduction of `main` \
                 needs subgroups of at least 32 lanes (this adapter: subgroups {}, sizes \
                 {}..{}); the workgroup-memory tree runs instead",
                caps.subgroups, caps.subgroup_min_size, caps.subgroup_max_size
            );
        }
        let case = |rows, dim, eps, in_scale| Case {
            rows,
            dim,
            eps,
            in_scale,
        };
        // Rows shorter and longer than the 256 threads (one to three values kept per thread);
        // without a scale, with a coarse grid, and with a fine one that clamps at 127 steps.
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
                check::<f16, f32>(&ctx, c, 2e-3);
            }
        } else {
            eprintln!(
                "updates_the_residual_and_quantizes_its_norm: no shader-f16 on this adapter, \
                 f16 not run"
            );
        }
    }

    pub fn rows_longer_than_8192_have_no_variant() {
        let ctx = corpus::context();
        let dim = 8193;
        // The shader keeps ceil(dim / 256) values per thread in registers, sized for 8192.
        let shapes = op::Shapes {
            hidden: &[dim],
            src: &[dim],
            w1: &[dim],
            scale: &[1],
            w2: &[dim],
            y2: &[dim],
            sum2: &[1],
        };
        let err = op::plan(
            ctx.caps(),
            &shapes,
            &op::DTypes::of::<f32, f32>(),
            &op::Attrs::new(op::RequiredAttrs {
                rows: 1,
                dim: dim as u32,
            }),
        )
        .unwrap_err();
        assert!(
            matches!(err, corpus::runtime::OpError::NoVariant { .. }),
            "{err}"
        );
    }
}
