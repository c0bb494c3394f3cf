//! `com.xenova.Rope1d` from the corpus: split-half rotary embedding in place,
//! `(x0, x1) → (x0·c − x1·s, x1·c + x0·s)` per head and position, in the fast and the
//! exact-order variants, against a float64 reference.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn rotates_every_head_in_place() {
    if !corpus::skip_without_corpus("rotates_every_head_in_place") {
        #[cfg(corpus)]
        gpu::rotates_every_head_in_place();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::kernels::rope1d as op;
    use corpus::runtime::Tensor;

    pub fn rotates_every_head_in_place() {
        let ctx = corpus::context();
        let (seq, heads, head_dim) = (7usize, 3usize, 160usize);
        let half = head_dim / 2;
        let x0 = corpus::data(seq * heads * head_dim, 9);
        let angles: Vec<f64> = (0..seq * half)
            .map(|i| (i / half) as f64 * 0.1 * (1.0 + (i % half) as f64 / half as f64))
            .collect();
        let cos: Vec<f32> = angles.iter().map(|a| a.cos() as f32).collect();
        let sin: Vec<f32> = angles.iter().map(|a| a.sin() as f32).collect();
        let cos_t = Tensor::from_slice(&ctx, &[seq, half], &cos).unwrap();
        let sin_t = Tensor::from_slice(&ctx, &[seq, half], &sin).unwrap();
        let mut want = vec![0.0f64; x0.len()];
        for t in 0..seq {
            for h in 0..heads {
                let base = (t * heads + h) * head_dim;
                for k in 0..half {
                    let (c, s) = (f64::from(cos[t * half + k]), f64::from(sin[t * half + k]));
                    let (a, b) = (f64::from(x0[base + k]), f64::from(x0[base + k + half]));
                    want[base + k] = a * c - b * s;
                    want[base + k + half] = b * c + a * s;
                }
            }
        }
        for (exact, variant) in [(None, "split_half"), (Some(1), "split_half_exact")] {
            let mut x = Tensor::from_slice(&ctx, &[seq, heads, head_dim], &x0).unwrap();
            let mut attrs = op::Attrs::new(op::RequiredAttrs {
                seq: seq as u32,
                heads: heads as u32,
                head_dim: head_dim as u32,
            });
            attrs.exact = exact;
            let inputs = op::Inputs {
                cos: &cos_t,
                sin: &sin_t,
            };
            let outputs = op::OutputsMut { x: &mut x };
            let plan = op::plan(
                ctx.caps(),
                &op::shapes(&inputs, &outputs),
                &op::DTypes::of::<f32>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, variant);
            op::run_into(&ctx, &inputs, outputs, &attrs).unwrap();
            let got = x.to_vec(&ctx).unwrap();
            corpus::assert_close(&got, &want, 1e-5, variant);
        }
    }
}
