//! `com.xenova.gemma4.DecodeAttention` from the corpus: one decode query (`seqQ == 1`) per head,
//! RMS-normalized with `w` and rotated by split-half RoPE (`cos`/`sin`), attending over the
//! cached `K`/`V[keyLen, kvHeads, headDim]` (causal limit, optional sliding window, grouped KV
//! heads) through the `split8_fused` variant — key chunks in parallel, merged by the last
//! workgroup to arrive — against a float64 reference; every output element is written (the
//! output is poisoned first) and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn split8_fused_variant_matches_the_reference() {
    if !corpus::skip_without_corpus("split8_fused_variant_matches_the_reference") {
        #[cfg(corpus)]
        gpu::split8_fused_variant_matches_the_reference();
    }
}

#[test]
fn half_precision_output() {
    if !corpus::skip_without_corpus("half_precision_output") {
        #[cfg(corpus)]
        gpu::half_precision_output();
    }
}

/// The manifest's `when` accepts float16 Q/K/V, but it binds K and V as `vec4<f32>` whatever
/// `T` is, so no shader is built for them: the variant rejects them, naming the dtypes its
/// shaders exist for.
#[test]
fn half_precision_inputs_are_rejected_by_name() {
    if !corpus::skip_without_corpus("half_precision_inputs_are_rejected_by_name") {
        #[cfg(corpus)]
        gpu::half_precision_inputs_are_rejected_by_name();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_attention as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_unwritten};

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Case {
        key_len: usize,
        q_offset: usize,
        q_heads: usize,
        kv_heads: usize,
        head_dim: usize,
        scale: Option<f32>,
        window: Option<u32>,
        out_quant_scale: Option<f32>,
    }

    pub(crate) fn case(
        key_len: usize,
        q_offset: usize,
        heads: (usize, usize),
        head_dim: usize,
    ) -> Case {
        Case {
            key_len,
            q_offset,
            q_heads: heads.0,
            kv_heads: heads.1,
            head_dim,
            scale: Some(1.0 / (head_dim as f32).sqrt()),
            window: None,
            out_quant_scale: None,
        }
    }

    fn context() -> Context {
        corpus::context()
    }

    fn values<T: Float>(len: usize, seed: u64) -> Vec<T> {
        corpus::data(len, seed)
            .into_iter()
            .map(|v| T::from_f64(f64::from(v)))
            .collect()
    }

    /// What the shader computes, in float64: each query head normalized (`eps` 1e-6 after the
    /// mean) and weighted, its halves rotated, then the softmax over keys
    /// `minKj..min(keyLen, qOffset + 1)` of `scale * q . k` weighting the value rows.
    pub(crate) fn reference(
        c: &Case,
        q: &[f64],
        w: &[f32],
        cs: (&[f32], &[f32]),
        kv: (&[f64], &[f64]),
    ) -> Vec<f64> {
        let scale = f64::from(c.scale.unwrap_or(1.0));
        let window = c.window.unwrap_or(0) as usize;
        let max_kj = c.key_len.min(c.q_offset + 1);
        let min_kj = if window > 0 && c.q_offset + 1 > window {
            c.q_offset + 1 - window
        } else {
            0
        };
        let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        let qn = ops::norm_rope_heads(q, c.head_dim, w, &f64s(cs.0), &f64s(cs.1), 1e-6);
        ops::decode_attention(
            &qn,
            kv.0,
            kv.1,
            c.kv_heads,
            c.head_dim,
            min_kj..max_kj,
            scale,
        )
    }

    /// Runs `c` on seeded data into a poisoned output, twice; checks the variant, that every
    /// element is written, the reference within `tol` (relative to `1 + |want|`, either
    /// neighbour where the output grid rounds) and that both runs agree bit for bit.
    fn check<T: Float, U: Poison>(ctx: &Context, c: Case, tol: f64) {
        let what = format!("{c:?} {}->{}", T::DTYPE.wgsl_name(), U::DTYPE.wgsl_name());
        let d = c.head_dim;
        let q: Vec<T> = values(c.q_heads * d, 1 + d as u64);
        let k: Vec<T> = values(c.key_len * c.kv_heads * d, 2 + c.key_len as u64);
        let v: Vec<T> = values(c.key_len * c.kv_heads * d, 3 + c.key_len as u64);
        let w: Vec<f32> = corpus::data(d, 4)
            .into_iter()
            .map(|x| 1.0 + 0.5 * x)
            .collect();
        let angles = corpus::data(d / 2, 5);
        let cos: Vec<f32> = angles.iter().map(|a| (a * 3.0).cos()).collect();
        let sin: Vec<f32> = angles.iter().map(|a| (a * 3.0).sin()).collect();
        let q_t = Tensor::from_slice(ctx, &[1, c.q_heads, d], &q).unwrap();
        let k_t = Tensor::from_slice(ctx, &[c.key_len, c.kv_heads, d], &k).unwrap();
        let v_t = Tensor::from_slice(ctx, &[c.key_len, c.kv_heads, d], &v).unwrap();
        let w_t = Tensor::from_slice(ctx, &[d], &w).unwrap();
        let cos_t = Tensor::from_slice(ctx, &[d / 2], &cos).unwrap();
        let sin_t = Tensor::from_slice(ctx, &[d / 2], &sin).unwrap();
        let inputs = op::Inputs {
            q: &q_t,
            w: &w_t,
            cos: &cos_t,
            sin: &sin_t,
            k: &k_t,
            v: &v_t,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            seq_q: 1,
            key_len: c.key_len as u32,
            q_offset: c.q_offset as u32,
            q_heads: c.q_heads as u32,
            kv_heads: c.kv_heads as u32,
            head_dim: d as u32,
        });
        attrs.scale = c.scale;
        attrs.window = c.window;
        attrs.out_quant_scale = c.out_quant_scale;
        let len = c.q_heads * d;
        let run = || {
            let mut out = Tensor::from_slice(ctx, &[1, len], &vec![U::POISON; len]).unwrap();
            let outputs = op::OutputsMut { out: &mut out };
            let plan = op::plan(
                ctx.caps(),
                &op::shapes(&inputs, &outputs),
                &op::DTypes::of::<T, U>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, "split8_fused", "{what}: variant");
            op::run_into(ctx, &inputs, outputs, &attrs).unwrap();
            out.to_vec(ctx).unwrap()
        };
        let got = run();
        if let Some(at) = first_unwritten(&got) {
            panic!("{what}: element {at} was not written");
        }
        if let Some(at) = got.iter().position(|x| !x.to_f64().is_finite()) {
            panic!("{what}: element {at} is not finite ({:?})", got[at]);
        }

        let widen = |x: &[T]| x.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
        let want = reference(&c, &widen(&q), &w, (&cos, &sin), (&widen(&k), &widen(&v)));
        let step = f64::from(c.out_quant_scale.unwrap_or(0.0));
        for (i, (g, &x)) in got.iter().zip(&want).enumerate() {
            let g = g.to_f64();
            let wants: Vec<f64> = if step == 0.0 {
                vec![x]
            } else {
                // Next to a rounding boundary of the output grid either neighbour is right.
                let slack = 1e-4 * (1.0 + x.abs());
                vec![ops::srq(x - slack, step), ops::srq(x + slack, step)]
            };
            let err = wants
                .iter()
                .map(|w| (g - w).abs() / (1.0 + w.abs()))
                .fold(f64::INFINITY, f64::min);
            assert!(
                err <= tol,
                "{what}: element {i} (head {}, dim {}): {g} against {x} (relative error {err:e})",
                i / d,
                i % d
            );
        }

        let again = run();
        if let Some(at) = (0..len).find(|&i| got[i].bits() != again[i].bits()) {
            panic!(
                "{what}: a second run differs at element {at}: {:?} then {:?}",
                got[at], again[at]
            );
        }
    }

    pub fn split8_fused_variant_matches_the_reference() {
        let ctx = context();
        let cases = [
            // Fewer keys than the 8 chunks that always take part: some chunks are empty.
            case(5, 4, (2, 1), 8),
            // A cache longer than the causal limit bounds the keys.
            case(20, 9, (2, 2), 16),
            // 10 active chunks of 60 keys, two query heads per KV head.
            case(600, 599, (4, 2), 16),
            // Every one of the 32 chunks active, several 256-key tiles in none of them.
            case(1985, 1984, (1, 1), 8),
            // A sliding window shorter than the history.
            Case {
                window: Some(100),
                ..case(300, 299, (2, 1), 8)
            },
            // No scale given: the manifest's default of 1.
            Case {
                scale: None,
                ..case(40, 39, (2, 1), 32)
            },
            // A head wider than a quarter of the 256 threads.
            case(30, 29, (2, 1), 256),
            // The o-projection's input grid applied to the output.
            Case {
                out_quant_scale: Some(1.0 / 64.0),
                ..case(70, 69, (2, 1), 16)
            },
        ];
        for c in cases {
            check::<f32, f32>(&ctx, c, 1e-5);
        }
    }

    pub fn half_precision_output() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("half_precision_output: skipped, the adapter has no shader-f16");
            return;
        }
        check::<f32, f16>(&ctx, case(70, 69, (2, 1), 16), 1e-3);
    }

    pub fn half_precision_inputs_are_rejected_by_name() {
        let ctx = context();
        let (d, keys) = (16usize, 70usize);
        let shape = [keys, 1, d];
        let attrs = op::Attrs::new(op::RequiredAttrs {
            seq_q: 1,
            key_len: keys as u32,
            q_offset: 69,
            q_heads: 2,
            kv_heads: 1,
            head_dim: d as u32,
        });
        let shapes = op::Shapes {
            q: &[1, 2, d],
            w: &[d],
            cos: &[d / 2],
            sin: &[d / 2],
            k: &shape,
            v: &shape,
            out: &[1, 2 * d],
        };
        let err = op::plan(ctx.caps(), &shapes, &op::DTypes::of::<f16, f32>(), &attrs).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("split8_fused") && message.contains("(dtypes.T, dtypes.U) is one of"),
            "{message}"
        );
        // The same call in f32 is accepted.
        op::plan(ctx.caps(), &shapes, &op::DTypes::of::<f32, f32>(), &attrs).unwrap();
    }
}
