//! `com.xenova.gemma4.DecodePleGate` from the corpus: `out[m, o] = gelu(srq(sum_k W[o, k] *
//! srq(a[m, k]))) * ple[pleOffset + m * outFeatures + o]`, through the dense `scalar` variant
//! (f32 and f16) and the packed-u8 `codes` variant, against a float64 reference; every output
//! element is written (the output is poisoned first) and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn dense_weights_gate_the_ple() {
    if !corpus::skip_without_corpus("dense_weights_gate_the_ple") {
        #[cfg(corpus)]
        gpu::dense_weights_gate_the_ple();
    }
}

#[test]
fn half_precision_dense_weights() {
    if !corpus::skip_without_corpus("half_precision_dense_weights") {
        #[cfg(corpus)]
        gpu::half_precision_dense_weights();
    }
}

#[test]
fn packed_codes_gate_the_ple() {
    if !corpus::skip_without_corpus("packed_codes_gate_the_ple") {
        #[cfg(corpus)]
        gpu::packed_codes_gate_the_ple();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_ple_gate as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_unwritten};

    fn context() -> Context {
        corpus::context()
    }

    fn cast<T: Float>(v: &[f32]) -> Vec<T> {
        v.iter().map(|&x| T::from_f64(f64::from(x))).collect()
    }

    /// The host table the shader reads when an output scale puts the gelu input on a grid;
    /// unused (but required) without one.
    pub(crate) fn gelu_lut(scale: f64) -> Vec<f32> {
        (-128..128)
            .map(|k| ops::gelu_tanh(f64::from(k) * scale) as f32)
            .collect()
    }

    /// One call: `a` is `[m, k]`, the weight `[n, k]` (dense or packed four codes a word).
    pub(crate) struct Case {
        pub(crate) m: usize,
        pub(crate) k: usize,
        pub(crate) n: usize,
        pub(crate) ple_offset: usize,
    }

    impl Case {
        pub(crate) fn ple_len(&self) -> usize {
            // A tail past the last element read, so a wrong offset reads other data.
            self.ple_offset + self.m * self.n + 3
        }
    }

    /// Runs the op twice into poisoned outputs; returns the first result after checking that
    /// every element was written and that the second run gave the same bits.
    fn run_twice<T: Poison, Wt: Float>(
        ctx: &Context,
        inputs: &op::Inputs<'_, T, Wt>,
        attrs: &op::Attrs,
        len: usize,
        variant: &str,
    ) -> Vec<f64> {
        let shape = [attrs.m as usize, attrs.out_features as usize];
        let mut runs = Vec::new();
        for _ in 0..2 {
            let mut out = Tensor::from_slice(ctx, &shape, &vec![T::POISON; len]).unwrap();
            {
                let outputs = op::OutputsMut { out: &mut out };
                let shapes = op::shapes(inputs, &outputs);
                let plan =
                    op::plan(ctx.caps(), &shapes, &op::DTypes::of::<T, Wt>(), attrs).unwrap();
                assert_eq!(plan.variant, variant);
            }
            op::run_into(ctx, inputs, op::OutputsMut { out: &mut out }, attrs).unwrap();
            let got = out.to_vec(ctx).unwrap();
            if let Some(at) = first_unwritten(&got) {
                panic!("{variant}: element {at} was not written");
            }
            if let Some(at) = got.iter().position(|v| !v.to_f64().is_finite()) {
                panic!("{variant}: element {at} is {:?}", got[at]);
            }
            runs.push(got);
        }
        assert!(
            runs[0]
                .iter()
                .zip(&runs[1])
                .all(|(a, b)| a.bits() == b.bits()),
            "{variant}: a second run differs"
        );
        runs[0].iter().map(|v| v.to_f64()).collect()
    }

    /// `weight(o, j)` is the effective weight in f64.
    pub(crate) fn reference(
        case: &Case,
        a: &[f64],
        ple: &[f32],
        weight: impl Fn(usize, usize) -> f64,
    ) -> Vec<f64> {
        let Case { k, n, .. } = *case;
        let values = (0..n * k).map(|i| weight(i / k, i % k)).collect();
        let w = ops::Dense {
            rows: n,
            cols: k,
            values,
        };
        gated(case, a, ple, &w)
    }

    /// `gelu(W · a[m]) · ple[pleOffset + m · n ..]` for each row `m`.
    fn gated(case: &Case, a: &[f64], ple: &[f32], w: &dyn ops::Rows) -> Vec<f64> {
        let Case {
            m,
            k,
            n,
            ple_offset,
        } = *case;
        (0..m)
            .flat_map(|mi| {
                let ple = &ple[ple_offset + mi * n..][..n];
                ops::linear(w, &a[mi * k..][..k])
                    .into_iter()
                    .zip(ple)
                    .map(|(g, &p)| ops::gelu_tanh(g) * f64::from(p))
            })
            .collect()
    }

    fn check_dense<T: Poison, Wt: Float>(ctx: &Context, case: &Case, tol: f64) {
        let Case {
            m,
            k,
            n,
            ple_offset,
        } = *case;
        let a: Vec<T> = cast(&corpus::data(m * k, 11));
        let w: Vec<Wt> = cast(
            &corpus::data(n * k, 12)
                .iter()
                .map(|v| v * 0.25)
                .collect::<Vec<_>>(),
        );
        let ple = corpus::data(case.ple_len(), 13);
        let lut = gelu_lut(0.0);
        let a_t = Tensor::from_slice(ctx, &[m, k], &a).unwrap();
        let w_t = Tensor::from_slice(ctx, &[n, k], &w).unwrap();
        let ple_t = Tensor::from_slice(ctx, &[case.ple_len()], &ple).unwrap();
        let lut_t = Tensor::from_slice(ctx, &[256], &lut).unwrap();
        let inputs = op::Inputs {
            a: &a_t,
            w: Some(&w_t),
            codes: None,
            row_scale: None,
            ple: &ple_t,
            gelu_lut: &lut_t,
        };
        let attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: k as u32,
            out_features: n as u32,
            ple_offset: ple_offset as u32,
        });
        let got = run_twice(ctx, &inputs, &attrs, m * n, "scalar");
        let a64: Vec<f64> = a.iter().map(|v| v.to_f64()).collect();
        let want = reference(case, &a64, &ple, |o, j| w[o * k + j].to_f64());
        let got: Vec<f32> = got.iter().map(|&v| v as f32).collect();
        corpus::assert_close(&got, &want, tol, &format!("scalar m {m} k {k} n {n}"));
    }

    pub fn dense_weights_gate_the_ple() {
        let ctx = context();
        // One output row per workgroup below 1024 outputs, two from 1024 (the last pair
        // half past the end); K shorter and longer than the 32 threads' vec4 stride.
        for case in [
            Case {
                m: 2,
                k: 64,
                n: 48,
                ple_offset: 5,
            },
            Case {
                m: 1,
                k: 136,
                n: 7,
                ple_offset: 0,
            },
            Case {
                m: 1,
                k: 4,
                n: 1025,
                ple_offset: 9,
            },
        ] {
            check_dense::<f32, f32>(&ctx, &case, 1e-5);
        }
    }

    pub fn half_precision_dense_weights() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("half_precision_dense_weights: skipped, the adapter has no shader-f16");
            return;
        }
        let case = Case {
            m: 2,
            k: 32,
            n: 20,
            ple_offset: 3,
        };
        check_dense::<f32, f16>(&ctx, &case, 1e-5);
        // The output rounds to f16.
        check_dense::<f16, f16>(&ctx, &case, 2e-3);
        check_dense::<f16, f32>(&ctx, &case, 2e-3);
    }

    pub fn packed_codes_gate_the_ple() {
        let ctx = context();
        let case = Case {
            m: 2,
            k: 40,
            n: 24,
            ple_offset: 4,
        };
        let Case {
            m,
            k,
            n,
            ple_offset,
        } = case;
        let a = corpus::data(m * k, 21);
        // Arbitrary bytes: every code 0..=255 is a valid weight `code - 128`.
        let codes: Vec<u32> = corpus::data(n * k / 4, 22)
            .iter()
            .map(|v| v.to_bits().wrapping_mul(2_654_435_761))
            .collect();
        let row_scale: Vec<f32> = corpus::data(n, 23).iter().map(|v| v * 0.01).collect();
        let ple = corpus::data(case.ple_len(), 24);
        let lut = gelu_lut(0.0);
        let a_t = Tensor::from_slice(&ctx, &[m, k], &a).unwrap();
        let codes_t = Tensor::from_slice(&ctx, &[n, k / 4], &codes).unwrap();
        let scale_t = Tensor::from_slice(&ctx, &[n], &row_scale).unwrap();
        let ple_t = Tensor::from_slice(&ctx, &[case.ple_len()], &ple).unwrap();
        let lut_t = Tensor::from_slice(&ctx, &[256], &lut).unwrap();
        let inputs = op::Inputs::<f32, f32> {
            a: &a_t,
            w: None,
            codes: Some(&codes_t),
            row_scale: Some(&scale_t),
            ple: &ple_t,
            gelu_lut: &lut_t,
        };
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            m: m as u32,
            in_features: k as u32,
            out_features: n as u32,
            ple_offset: ple_offset as u32,
        });
        attrs.codes = Some(1);
        let got = run_twice(&ctx, &inputs, &attrs, m * n, "codes");
        let a64: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
        let weights = ops::Codes::packed(k, 8, 128.0, &row_scale, &codes);
        let want = gated(&case, &a64, &ple, &weights);
        let got: Vec<f32> = got.iter().map(|&v| v as f32).collect();
        corpus::assert_close(&got, &want, 1e-4, "codes");
    }
}
