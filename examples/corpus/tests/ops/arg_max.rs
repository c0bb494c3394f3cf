//! `com.xenova.gemma4.ArgMax` from the corpus: the index of the first maximum of `x[0..count)`
//! (single workgroup `scalar`, `twopass` from 16384 values on), and the `finalize` pass over
//! given (value, index) candidates, against a CPU reference.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn scalar_variant_finds_the_first_maximum() {
    if !corpus::skip_without_corpus("scalar_variant_finds_the_first_maximum") {
        #[cfg(corpus)]
        gpu::scalar_variant_finds_the_first_maximum();
    }
}

#[test]
fn two_pass_variant_finds_the_first_maximum() {
    if !corpus::skip_without_corpus("two_pass_variant_finds_the_first_maximum") {
        #[cfg(corpus)]
        gpu::two_pass_variant_finds_the_first_maximum();
    }
}

#[test]
fn finalize_variant_picks_the_best_candidate() {
    if !corpus::skip_without_corpus("finalize_variant_picks_the_best_candidate") {
        #[cfg(corpus)]
        gpu::finalize_variant_picks_the_best_candidate();
    }
}

#[test]
fn half_precision_input_finds_the_first_maximum() {
    if !corpus::skip_without_corpus("half_precision_input_finds_the_first_maximum") {
        #[cfg(corpus)]
        gpu::half_precision_input_finds_the_first_maximum();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::kernels::arg_max as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};

    /// Written into the output before the op runs, so an unwritten output shows.
    const POISON: u32 = u32::MAX;

    /// The index of the first maximum of `x[..count]`, as `a[i] > a[best]` scans find it.
    pub(crate) fn first_max(x: &[f64], count: usize) -> u32 {
        corpus::decode::ops::first_max(&x[..count]) as u32
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Runs the op over `x` (of which `count` values count) into a poisoned output; returns
    /// the variant chosen and the index written.
    fn run_over<T: Float>(ctx: &Context, x: &[T], count: u32) -> (&'static str, u32) {
        let x_t = Tensor::from_slice(ctx, &[x.len()], x).unwrap();
        let inputs = op::Inputs {
            x: Some(&x_t),
            cand_val: None,
            cand_idx: None,
        };
        let attrs = op::Attrs::new(op::RequiredAttrs { count });
        let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
        let mut out = Tensor::from_slice(ctx, &[1], &[POISON]).unwrap();
        op::run_into(ctx, &inputs, op::OutputsMut { out: &mut out }, &attrs).unwrap();
        let got = out.to_vec(ctx).unwrap();
        assert_eq!(got.len(), 1);
        (plan.variant, got[0])
    }

    /// `len` seeded values, with the maximum `top` (above every seeded value) planted at each
    /// of `at` (ties: the first one wins), and a larger value at `beyond` (past `count`, so it
    /// must be ignored).
    fn planted(len: usize, seed: u64, top: f32, at: &[usize], beyond: Option<usize>) -> Vec<f32> {
        let mut x = corpus::data(len, seed);
        assert!(
            x.iter().all(|&v| v < top),
            "the planted maximum must be the largest"
        );
        for &i in at {
            x[i] = top;
        }
        if let Some(i) = beyond {
            x[i] = top * 2.0;
        }
        x
    }

    fn check<T: Float>(ctx: &Context, x: &[T], x64: &[f64], count: usize, variant: &str) {
        let (chosen, got) = run_over(ctx, x, count as u32);
        assert_eq!(chosen, variant, "count {count}: variant");
        assert_ne!(got, POISON, "count {count}: the output was not written");
        let want = first_max(x64, count);
        assert_eq!(got, want, "count {count}: got index {got}, want {want}");
    }

    pub fn scalar_variant_finds_the_first_maximum() {
        let ctx = context();
        // The seeded values alone, then ties planted across threads' strides, and a
        // larger value past `count` in a longer tensor.
        let cases: [(usize, Vec<f32>); 4] = [
            (1000, corpus::data(1000, 11)),
            (1000, planted(1000, 12, 10.0, &[700, 37, 293], None)),
            (1, vec![-0.25]),
            (777, planted(1000, 13, 12.0, &[500, 776], Some(777))),
        ];
        for (count, x) in &cases {
            let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            check(&ctx, x, &x64, *count, "scalar");
        }
        // Everything equal: the first index.
        let flat = vec![0.5f32; 300];
        let (_, got) = run_over(&ctx, &flat, 300);
        assert_eq!(got, 0, "all equal");
        // Below the two-pass threshold.
        let x = corpus::data(16383, 14);
        let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        check(&ctx, &x, &x64, 16383, "scalar");
    }

    pub fn two_pass_variant_finds_the_first_maximum() {
        let ctx = context();
        // 20000 values: 256 slices of 79 (the last one short); 16384 = 256 x 64 exactly.
        // Ties planted in different slices, and within one slice across threads.
        let cases: [(usize, Vec<f32>); 5] = [
            (20000, corpus::data(20000, 21)),
            (20000, planted(20000, 22, 10.0, &[19999, 15000, 80], None)),
            (20000, planted(20000, 23, 10.0, &[12345 + 60, 12345], None)),
            (16384, planted(16384, 24, 10.0, &[16383], None)),
            (
                17000,
                planted(20000, 25, 10.0, &[16999, 16998], Some(17000)),
            ),
        ];
        for (count, x) in &cases {
            let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            check(&ctx, x, &x64, *count, "twopass");
        }
    }

    pub fn finalize_variant_picks_the_best_candidate() {
        let ctx = context();
        // Candidates as pass 1 leaves them, or any (value, index) pairs: the largest value
        // wins, the smallest index among equal values; entries past `count` are ignored.
        for (count, len) in [(256usize, 256usize), (300, 300), (5, 40)] {
            let mut vals = corpus::data(len, 31 + count as u64);
            let idx: Vec<u32> = (0..len as u32).map(|i| (i * 7919 + 13) % 100_003).collect();
            // A tie on the best value between two candidates, and a better value past count.
            vals[count - 1] = 10.0;
            vals[count / 2] = 10.0;
            if len > count {
                vals[count] = 20.0;
            }
            let vals_t = Tensor::from_slice(&ctx, &[len], &vals).unwrap();
            let idx_t = Tensor::from_slice(&ctx, &[len], &idx).unwrap();
            let inputs = op::Inputs::<f32> {
                x: None,
                cand_val: Some(&vals_t),
                cand_idx: Some(&idx_t),
            };
            let mut attrs = op::Attrs::new(op::RequiredAttrs {
                count: count as u32,
            });
            attrs.finalize = Some(1);
            let plan = op::plan(ctx.caps(), &inputs.shapes(), &inputs.dtypes(), &attrs).unwrap();
            assert_eq!(plan.variant, "finalize", "count {count}");
            let mut out = Tensor::from_slice(&ctx, &[1], &[POISON]).unwrap();
            op::run_into(&ctx, &inputs, op::OutputsMut { out: &mut out }, &attrs).unwrap();
            let got = out.to_vec(&ctx).unwrap()[0];
            let best = vals[..count].iter().copied().fold(f32::MIN, f32::max);
            let want = (0..count)
                .filter(|&i| vals[i] == best)
                .map(|i| idx[i])
                .min()
                .unwrap();
            assert_eq!(got, want, "count {count}: got {got}, want {want}");
        }
    }

    pub fn half_precision_input_finds_the_first_maximum() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!(
                "half_precision_input_finds_the_first_maximum: skipped, the adapter has no shader-f16"
            );
            return;
        }
        for (count, variant) in [(1000usize, "scalar"), (20000, "twopass")] {
            let x: Vec<f16> = planted(count, 41, 10.0, &[count - 3, count / 3], None)
                .into_iter()
                .map(f16::from_f32)
                .collect();
            let x64: Vec<f64> = x.iter().map(|v| f64::from(v.to_f32())).collect();
            check(&ctx, &x, &x64, count, variant);
        }
    }
}
