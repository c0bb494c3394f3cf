//! `com.xenova.AddInPlace` from the corpus: `y[i] += x[i]` for the first `count` elements,
//! in place, against a float64 reference; the rest of `y` is left as it was.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn adds_in_place_and_leaves_the_tail() {
    if !corpus::skip_without_corpus("adds_in_place_and_leaves_the_tail") {
        #[cfg(corpus)]
        gpu::adds_in_place_and_leaves_the_tail();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::kernels::add_in_place as op;
    use corpus::runtime::Tensor;

    pub fn adds_in_place_and_leaves_the_tail() {
        let ctx = corpus::context();
        // More than one row of workgroups: 64 × 1024 per row of the dispatch.
        for (len, count) in [(1000usize, 1000u32), (70_000, 69_999)] {
            let y0 = corpus::data(len, 1);
            let x = corpus::data(len, 2);
            let mut y = Tensor::from_slice(&ctx, &[len], &y0).unwrap();
            let x_t = Tensor::from_slice(&ctx, &[len], &x).unwrap();
            let attrs = op::Attrs::new(op::RequiredAttrs { count });
            let plan = op::plan(
                ctx.caps(),
                &op::Shapes {
                    y: &[len],
                    x: &[len],
                },
                &op::DTypes::of::<f32, f32>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, "scalar");
            op::run_into(
                &ctx,
                &op::Inputs { x: &x_t },
                op::OutputsMut { y: &mut y },
                &attrs,
            )
            .unwrap();
            let got = y.to_vec(&ctx).unwrap();
            let want: Vec<f64> = (0..len)
                .map(|i| {
                    if i < count as usize {
                        f64::from(y0[i]) + f64::from(x[i])
                    } else {
                        f64::from(y0[i])
                    }
                })
                .collect();
            corpus::assert_close(&got, &want, 1e-6, &format!("len {len}"));
        }
    }
}
