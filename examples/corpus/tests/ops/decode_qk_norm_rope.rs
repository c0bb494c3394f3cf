//! `com.xenova.gemma4.DecodeQkNormRope` from the corpus: per (token, head) row, the RMS norm
//! `n = x / sqrt(mean(x²) + eps) · w` then split-half RoPE, written at `dstOffset` into a
//! larger buffer, in f32 and f16, against a float64 reference; every element of the written
//! range is written (the output is poisoned first), the rest is left alone, and a second run
//! gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn normalizes_and_rotates_heads() {
    if !corpus::skip_without_corpus("normalizes_and_rotates_heads") {
        #[cfg(corpus)]
        gpu::normalizes_and_rotates_heads();
    }
}

#[test]
fn half_precision_rows() {
    if !corpus::skip_without_corpus("half_precision_rows") {
        #[cfg(corpus)]
        gpu::half_precision_rows();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::Poison;
    use corpus::decode::ops;
    use corpus::kernels::decode_qk_norm_rope as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Tensor};

    fn context() -> Context {
        corpus::context()
    }

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Case {
        pub(crate) seq: usize,
        pub(crate) heads: usize,
        pub(crate) head_dim: usize,
        pub(crate) dst_offset: Option<usize>,
    }

    /// Each token's heads normalized with `w` and rotated by that token's `cos`/`sin` row.
    pub(crate) fn reference(
        case: Case,
        x: &[f64],
        w: &[f32],
        cos: &[f32],
        sin: &[f32],
        eps: f64,
    ) -> Vec<f64> {
        let Case {
            seq,
            heads,
            head_dim,
            ..
        } = case;
        let half = head_dim / 2;
        let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        (0..seq)
            .flat_map(|t| {
                let row = &x[t * heads * head_dim..][..heads * head_dim];
                let (cos, sin) = (&cos[t * half..][..half], &sin[t * half..][..half]);
                ops::norm_rope_heads(row, head_dim, w, &f64s(cos), &f64s(sin), eps)
            })
            .collect()
    }

    fn check<T: Poison>(ctx: &Context, case: Case, tol: f64) {
        let Case {
            seq,
            heads,
            head_dim,
            dst_offset,
        } = case;
        let len = seq * heads * head_dim;
        let offset = dst_offset.unwrap_or(0);
        // Room past the written range on both sides, which must keep the poison.
        let out_len = offset + len + 5;
        let x: Vec<T> = corpus::data(len, 31)
            .into_iter()
            .map(|v| T::from_f64(f64::from(v)))
            .collect();
        let w: Vec<f32> = corpus::data(head_dim, 32)
            .iter()
            .map(|v| 1.0 + 0.5 * v)
            .collect();
        // Unit (cos, sin) pairs, as a rotation table holds.
        let angles = corpus::data(seq * head_dim / 2, 33);
        let cos: Vec<f32> = angles.iter().map(|a| (a * 3.0).cos()).collect();
        let sin: Vec<f32> = angles.iter().map(|a| (a * 3.0).sin()).collect();
        let x_t = Tensor::from_slice(ctx, &[seq, heads, head_dim], &x).unwrap();
        let w_t = Tensor::from_slice(ctx, &[head_dim], &w).unwrap();
        let cos_t = Tensor::from_slice(ctx, &[seq, head_dim / 2], &cos).unwrap();
        let sin_t = Tensor::from_slice(ctx, &[seq, head_dim / 2], &sin).unwrap();
        let inputs = op::Inputs {
            x: &x_t,
            w: &w_t,
            cos: &cos_t,
            sin: &sin_t,
        };
        let eps = 1e-6f32;
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            seq: seq as u32,
            heads: heads as u32,
            head_dim: head_dim as u32,
            eps,
        });
        attrs.dst_offset = dst_offset.map(|o| o as u32);
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut yn = Tensor::from_slice(ctx, &[out_len], &vec![T::POISON; out_len]).unwrap();
            {
                let outputs = op::OutputsMut { yn: &mut yn };
                let plan = op::plan(
                    ctx.caps(),
                    &op::shapes(&inputs, &outputs),
                    &op::DTypes::of::<T>(),
                    &attrs,
                )
                .unwrap();
                assert_eq!(plan.variant, "scalar", "{case:?}");
            }
            op::run_into(ctx, &inputs, op::OutputsMut { yn: &mut yn }, &attrs).unwrap();
            let got = yn.to_vec(ctx).unwrap();
            for (i, v) in got.iter().enumerate() {
                let written = (offset..offset + len).contains(&i);
                if written {
                    assert!(
                        v.bits() != T::POISON.bits(),
                        "{case:?}: element {i} was not written"
                    );
                    assert!(v.to_f64().is_finite(), "{case:?}: element {i} is {v:?}");
                } else {
                    assert_eq!(
                        v.bits(),
                        T::POISON.bits(),
                        "{case:?}: element {i} is outside the written range"
                    );
                }
            }
            runs.push(got);
        }
        assert!(
            runs[0]
                .iter()
                .zip(&runs[1])
                .all(|(a, b)| a.bits() == b.bits()),
            "{case:?}: a second run differs"
        );
        let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
        let want = reference(case, &x64, &w, &cos, &sin, f64::from(eps));
        let got: Vec<f32> = runs[0][offset..offset + len]
            .iter()
            .map(|v| v.to_f64() as f32)
            .collect();
        corpus::assert_close(&got, &want, tol, &format!("{case:?}"));
    }

    pub fn normalizes_and_rotates_heads() {
        let ctx = context();
        // The only variant; half dims below and above the 128 threads' stride.
        for case in [
            Case {
                seq: 3,
                heads: 2,
                head_dim: 64,
                dst_offset: None,
            },
            Case {
                seq: 1,
                heads: 4,
                head_dim: 32,
                dst_offset: Some(96),
            },
            Case {
                seq: 2,
                heads: 1,
                head_dim: 300,
                dst_offset: Some(7),
            },
        ] {
            check::<f32>(&ctx, case, 1e-5);
        }
    }

    pub fn half_precision_rows() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("half_precision_rows: skipped, the adapter has no shader-f16");
            return;
        }
        // The output rounds to f16.
        check::<f16>(
            &ctx,
            Case {
                seq: 2,
                heads: 2,
                head_dim: 64,
                dst_offset: Some(10),
            },
            2e-3,
        );
    }
}
