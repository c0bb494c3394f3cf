//! `com.xenova.gemma4.QatEmbedGather` from the corpus: gathers QAT-packed embedding rows,
//! `y[t, c] = embedScale * scale[id, c / groupSize] * (q - zeroPoint)`, through the `main`
//! variant (2- and 4-bit codes, f32 and f16 rows) and the fused `norm_srq` one (the row, its
//! RMS-normalized and weighted copy, and that copy's sum), against a float64 reference; every
//! output element is written (outputs are poisoned first) and a second run gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn main_variant_gathers_rows() {
    if !corpus::skip_without_corpus("main_variant_gathers_rows") {
        #[cfg(corpus)]
        gpu::main_variant_gathers_rows();
    }
}

#[test]
fn norm_srq_variant_gathers_and_normalizes() {
    if !corpus::skip_without_corpus("norm_srq_variant_gathers_and_normalizes") {
        #[cfg(corpus)]
        gpu::norm_srq_variant_gathers_and_normalizes();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::qat_embed_gather as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Tensor};
    use corpus::{Poison, first_unwritten};

    const POISON_F32: f32 = f32::from_bits(0x7fc0_0bad);

    fn context() -> Context {
        corpus::context()
    }

    /// Positive per-group steps in `[0.01, 0.03)`.
    fn scales(len: usize, seed: u64) -> Vec<f32> {
        corpus::data(len, seed)
            .into_iter()
            .map(|v| 0.02 + 0.01 * v)
            .collect()
    }

    /// The model's packed table: `vocab` rows of `hidden` codes of `bits` bits, LSB first.
    pub(crate) struct Table {
        pub(crate) hidden: usize,
        pub(crate) vocab: usize,
        pub(crate) bits: usize,
        pub(crate) group: usize,
        zero_point: u32,
        embed_scale: f32,
        pub(crate) packed: Vec<u32>,
        pub(crate) scale: Vec<f32>,
    }

    impl Table {
        pub(crate) fn new(hidden: usize, vocab: usize, bits: usize, group: usize) -> Self {
            let words_per_row = hidden * bits / 32;
            Table {
                hidden,
                vocab,
                bits,
                group,
                zero_point: if bits == 4 { 8 } else { 2 },
                embed_scale: 4.0,
                // Seeded words: every bit position varies, unlike `corpus::data`'s values.
                packed: corpus::codes(vocab * words_per_row, 32, 10 + bits as u64),
                scale: scales(vocab * hidden / group, 20 + bits as u64),
            }
        }

        pub(crate) fn attrs(&self, seq: usize) -> op::Attrs {
            op::Attrs::new(op::RequiredAttrs {
                seq: seq as u32,
                hidden: self.hidden as u32,
                vocab: self.vocab as u32,
                bits: self.bits as u32,
                group_size: self.group as u32,
                zero_point: self.zero_point,
                embed_scale: self.embed_scale,
            })
        }

        /// Row `id` dequantized, in float64.
        pub(crate) fn row(&self, id: usize) -> Vec<f64> {
            let words_per_row = self.hidden * self.bits / 32;
            let per_word = 32 / self.bits;
            let mask = (1u32 << self.bits) - 1;
            (0..self.hidden)
                .map(|c| {
                    let word = self.packed[id * words_per_row + c / per_word];
                    let q = (word >> ((c % per_word) * self.bits)) & mask;
                    let s = f64::from(self.scale[id * (self.hidden / self.group) + c / self.group]);
                    f64::from(self.embed_scale) * s * (f64::from(q) - f64::from(self.zero_point))
                })
                .collect()
        }
    }

    fn assert_written<T: Poison>(got: &[T], what: &str) {
        if let Some(at) = first_unwritten(got) {
            panic!("{what}: element {at} was not written");
        }
        if let Some(at) = got.iter().position(|v| !v.to_f64().is_finite()) {
            panic!("{what}: element {at} is not finite ({:?})", got[at]);
        }
    }

    fn assert_same_bits<T: Poison>(first: &[T], again: &[T], what: &str) {
        assert_eq!(first.len(), again.len(), "{what}: lengths differ");
        if let Some(at) = (0..first.len()).find(|&i| first[i].bits() != again[i].bits()) {
            panic!(
                "{what}: a second run differs at element {at}: {:?} then {:?}",
                first[at], again[at]
            );
        }
    }

    fn gather<T: Poison>(ctx: &Context, table: &Table, ids: &[u32], tol: f64) {
        let (seq, hidden) = (ids.len(), table.hidden);
        let what = format!("main, {} bits, {}", table.bits, T::DTYPE.wgsl_name());
        let ids_t = Tensor::from_slice(ctx, &[seq], ids).unwrap();
        let bits_t =
            Tensor::from_slice(ctx, &[table.vocab, hidden * table.bits / 32], &table.packed)
                .unwrap();
        let scale_t =
            Tensor::from_slice(ctx, &[table.vocab, hidden / table.group], &table.scale).unwrap();
        let inputs = op::Inputs {
            ids: &ids_t,
            bits: &bits_t,
            scale: &scale_t,
            w: None,
        };
        let attrs = table.attrs(seq);
        let run = || {
            let mut out =
                Tensor::from_slice(ctx, &[seq, hidden], &vec![T::POISON; seq * hidden]).unwrap();
            let outputs = op::OutputsMut {
                out: &mut out,
                y2: None,
                sum_a: None,
            };
            let plan = op::plan(
                ctx.caps(),
                &op::shapes(&inputs, &outputs),
                &op::DTypes::of::<T>(),
                &attrs,
            )
            .unwrap();
            assert_eq!(plan.variant, "main", "{what}: variant");
            op::run_into(ctx, &inputs, outputs, &attrs).unwrap();
            out.to_vec(ctx).unwrap()
        };
        let got = run();
        assert_written(&got, &what);
        let want: Vec<f64> = ids.iter().flat_map(|&id| table.row(id as usize)).collect();
        let got32: Vec<f32> = got.iter().map(|v| v.to_f64() as f32).collect();
        corpus::assert_close(&got32, &want, tol, &what);
        assert_same_bits(&got, &run(), &what);
    }

    pub fn main_variant_gathers_rows() {
        let ctx = context();
        // Rows repeat and the last id of the table is used: the gather indexes rows, not tokens.
        let ids = [3u32, 0, 4, 3];
        gather::<f32>(&ctx, &Table::new(64, 5, 4, 32), &ids, 1e-6);
        gather::<f32>(&ctx, &Table::new(48, 5, 2, 16), &ids, 1e-6);
        if ctx.caps().has_feature("shader-f16") {
            gather::<f16>(&ctx, &Table::new(64, 5, 4, 32), &ids, 1e-3);
        } else {
            eprintln!("main_variant_gathers_rows: f16 rows skipped, the adapter has no shader-f16");
        }
    }

    pub fn norm_srq_variant_gathers_and_normalizes() {
        let ctx = context();
        // The package's shaders for this variant exist only for the Gemma 4 hidden sizes
        // (examples/corpus/hints).
        let (hidden, eps) = (1536usize, 1e-6f64);
        for (bits, in_scale) in [(4usize, None), (2, Some(1.0f32 / 64.0))] {
            let what = format!("norm_srq, {bits} bits, inScale {in_scale:?}");
            let table = Table::new(hidden, 3, bits, 32);
            let id = 2u32;
            let w = corpus::data(hidden, 30);
            let ids_t = Tensor::from_slice(&ctx, &[1], &[id]).unwrap();
            let bits_t = Tensor::from_slice(&ctx, &[3, hidden * bits / 32], &table.packed).unwrap();
            let scale_t = Tensor::from_slice(&ctx, &[3, hidden / 32], &table.scale).unwrap();
            let w_t = Tensor::from_slice(&ctx, &[hidden], &w).unwrap();
            let inputs = op::Inputs {
                ids: &ids_t,
                bits: &bits_t,
                scale: &scale_t,
                w: Some(&w_t),
            };
            let mut attrs = table.attrs(1);
            attrs.norm_srq = Some(1);
            attrs.in_scale = in_scale;
            let run = || {
                let poison = vec![POISON_F32; hidden];
                let mut out = Tensor::from_slice(&ctx, &[1, hidden], &poison).unwrap();
                let mut y2 = Tensor::from_slice(&ctx, &[1, hidden], &poison).unwrap();
                let mut sum_a = Tensor::from_slice(&ctx, &[1], &[POISON_F32]).unwrap();
                let outputs = op::OutputsMut {
                    out: &mut out,
                    y2: Some(&mut y2),
                    sum_a: Some(&mut sum_a),
                };
                let plan = op::plan(
                    ctx.caps(),
                    &op::shapes(&inputs, &outputs),
                    &op::DTypes::of::<f32>(),
                    &attrs,
                )
                .unwrap();
                assert_eq!(plan.variant, "norm_srq", "{what}: variant");
                op::run_into(&ctx, &inputs, outputs, &attrs).unwrap();
                (
                    out.to_vec(&ctx).unwrap(),
                    y2.to_vec(&ctx).unwrap(),
                    sum_a.to_vec(&ctx).unwrap(),
                )
            };
            let (y, y2, sum_a) = run();
            assert_written(&y, &format!("{what}: Poison"));
            assert_written(&y2, &format!("{what}: Y2"));
            assert_written(&sum_a, &format!("{what}: SumA"));

            let row = table.row(id as usize);
            corpus::assert_close(&y, &row, 1e-6, &format!("{what}: Poison"));
            let step = f64::from(in_scale.unwrap_or(0.0));
            // On the quantization grid a value within float error of a rounding boundary may
            // land on either side: accept either neighbour.
            let normed = ops::rms_norm(&row, Some(&w), eps);
            for (c, (&got, &exact)) in y2.iter().zip(&normed).enumerate() {
                let slack = 1e-5 * (1.0 + exact.abs());
                let ok = [ops::srq(exact - slack, step), ops::srq(exact + slack, step)]
                    .iter()
                    .any(|want| (f64::from(got) - want).abs() <= 1e-5 * (1.0 + want.abs()));
                assert!(
                    ok,
                    "{what}: Y2 element {c}: {got} against {exact} on step {step}"
                );
            }
            // The sum is the shader's own Y2 summed, so it checks the reduction, not the grid.
            let total: f64 = y2.iter().map(|v| f64::from(*v)).sum();
            corpus::assert_close(&sum_a, &[total], 1e-4, &format!("{what}: SumA"));

            let (y_again, y2_again, sum_again) = run();
            assert_same_bits(&y, &y_again, &format!("{what}: Poison"));
            assert_same_bits(&y2, &y2_again, &format!("{what}: Y2"));
            assert_same_bits(&sum_a, &sum_again, &format!("{what}: SumA"));
        }
    }
}
