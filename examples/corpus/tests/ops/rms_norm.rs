//! `com.xenova.RMSNorm` from the corpus: `y = x / sqrt(mean(x²) + eps) · w` per row, with and
//! without the optional weight, in the fast and the exact-order variants, against a float64
//! reference; every output element is written (the output is poisoned first) and a second
//! run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn normalizes_rows_in_every_variant() {
    if !corpus::skip_without_corpus("normalizes_rows_in_every_variant") {
        #[cfg(corpus)]
        gpu::normalizes_rows_in_every_variant();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::kernels::rmsnorm as op;
    use corpus::runtime::Tensor;

    pub(crate) fn reference(
        x: &[f32],
        w: Option<&[f32]>,
        rows: usize,
        dim: usize,
        eps: f64,
    ) -> Vec<f64> {
        (0..rows)
            .flat_map(|r| {
                let row: Vec<f64> = x[r * dim..][..dim].iter().map(|&v| v.into()).collect();
                corpus::decode::ops::rms_norm(&row, w, eps)
            })
            .collect()
    }

    pub fn normalizes_rows_in_every_variant() {
        let ctx = corpus::context();
        let (rows, dim) = (5usize, 200usize);
        let x = corpus::data(rows * dim, 7);
        let w = corpus::data(dim, 8);
        let x_t = Tensor::from_slice(&ctx, &[rows, dim], &x).unwrap();
        let w_t = Tensor::from_slice(&ctx, &[dim], &w).unwrap();
        let subgroup32 = ctx.caps().has_feature("subgroups") && ctx.caps().subgroup_min_size >= 32;
        let cases = [
            (
                true,
                None,
                if subgroup32 {
                    "weighted_subgroup_vec4"
                } else {
                    "weighted"
                },
            ),
            (false, None, "unweighted"),
            (true, Some(1), "exact_weighted"),
            (false, Some(1), "exact_unweighted"),
        ];
        for (weighted, exact, variant) in cases {
            let mut attrs = op::Attrs::new(op::RequiredAttrs {
                rows: rows as u32,
                dim: dim as u32,
            });
            attrs.eps = Some(1e-5);
            attrs.exact = exact;
            let inputs = op::Inputs::<f32, f32> {
                x: &x_t,
                w: weighted.then_some(&w_t),
            };
            let dtypes = op::DTypes::of::<f32, f32, f32>();
            let plan = op::plan(ctx.caps(), &inputs.shapes(), &dtypes, &attrs).unwrap();
            assert_eq!(plan.variant, variant);
            let poison = vec![f32::NAN; rows * dim];
            let mut first = Tensor::from_slice(&ctx, &[rows, dim], &poison).unwrap();
            op::run_into(&ctx, &inputs, op::OutputsMut { y: &mut first }, &attrs).unwrap();
            let got = first.to_vec(&ctx).unwrap();
            let want = reference(&x, weighted.then_some(w.as_slice()), rows, dim, 1e-5);
            assert!(
                got.iter().all(|v| v.is_finite()),
                "{variant}: an element was not written"
            );
            corpus::assert_close(&got, &want, 1e-5, variant);
            let again = op::run::<f32, f32, f32>(&ctx, &inputs, &attrs).unwrap();
            let again = again.y.to_vec(&ctx).unwrap();
            assert!(
                got.iter()
                    .zip(&again)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{variant}: a second run differs"
            );
        }
    }
}
