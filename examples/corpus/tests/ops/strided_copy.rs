//! `com.xenova.StridedCopy` from the corpus: `dst[r * dstStride + dstStart + i] =
//! src[r * srcStride + srcStart + i]` for `r < rows`, `i < copyCols`, converting between f32 and
//! f16 (`scalar`, and `vec4_f16` when every offset is a multiple of 4), against a CPU reference;
//! the rest of the destination must keep what it held.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn copies_f32_rows_between_strides() {
    if !corpus::skip_without_corpus("copies_f32_rows_between_strides") {
        #[cfg(corpus)]
        gpu::copies_f32_rows_between_strides();
    }
}

#[test]
fn converts_between_f32_and_f16() {
    if !corpus::skip_without_corpus("converts_between_f32_and_f16") {
        #[cfg(corpus)]
        gpu::converts_between_f32_and_f16();
    }
}

#[test]
fn copies_f16_rows_four_at_a_time() {
    if !corpus::skip_without_corpus("copies_f16_rows_four_at_a_time") {
        #[cfg(corpus)]
        gpu::copies_f16_rows_four_at_a_time();
    }
}

#[cfg(corpus)]
mod gpu {
    use corpus::kernels::strided_copy as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};

    /// Written into the destination before the op runs: what it does not copy must keep it.
    const POISON: f64 = 30000.0;

    /// One copy: `rows` rows of `cols` values, with these strides and starts.
    #[derive(Clone, Copy, Debug)]
    struct Case {
        rows: usize,
        cols: usize,
        src_stride: usize,
        src_start: Option<usize>,
        dst_stride: usize,
        dst_start: Option<usize>,
    }

    impl Case {
        /// Elements the source and the destination need, rounded up to a multiple of 4
        /// (whole `vec4<f16>`), with a few more past the last row.
        fn lens(&self) -> (usize, usize) {
            let need = |stride: usize, start: Option<usize>| {
                ((self.rows - 1) * stride + start.unwrap_or(0) + self.cols + 8).next_multiple_of(4)
            };
            (
                need(self.src_stride, self.src_start),
                need(self.dst_stride, self.dst_start),
            )
        }
    }

    fn context() -> Context {
        corpus::context()
    }

    /// Runs `case` from seeded `S` values into a poisoned `D` destination and checks every
    /// destination element: copied ones within `tol` of the source, the others untouched.
    fn check<S: Float, D: Float>(ctx: &Context, case: Case, variant: &str, tol: f64) {
        let (src_len, dst_len) = case.lens();
        let src: Vec<S> = corpus::data(src_len, 7 + case.cols as u64)
            .into_iter()
            .map(|v| S::from_f64(f64::from(v)))
            .collect();
        let src_t = Tensor::from_slice(ctx, &[src_len], &src).unwrap();
        let mut dst_t =
            Tensor::from_slice(ctx, &[dst_len], &vec![D::from_f64(POISON); dst_len]).unwrap();
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            rows: case.rows as u32,
            src_stride: case.src_stride as u32,
            dst_stride: case.dst_stride as u32,
            copy_cols: case.cols as u32,
        });
        attrs.src_start = case.src_start.map(|s| s as u32);
        attrs.dst_start = case.dst_start.map(|s| s as u32);
        let inputs = op::Inputs { src: &src_t };
        let outputs = op::OutputsMut { dst: &mut dst_t };
        let shapes = op::shapes(&inputs, &outputs);
        let plan = op::plan(ctx.caps(), &shapes, &op::DTypes::of::<S, D>(), &attrs).unwrap();
        assert_eq!(plan.variant, variant, "{case:?}: variant");
        op::run_into(ctx, &inputs, outputs, &attrs).unwrap();
        let got = dst_t.to_vec(ctx).unwrap();
        assert_eq!(got.len(), dst_len, "{case:?}: destination length");

        let mut want = vec![None; dst_len];
        for r in 0..case.rows {
            for i in 0..case.cols {
                let s = r * case.src_stride + case.src_start.unwrap_or(0) + i;
                let d = r * case.dst_stride + case.dst_start.unwrap_or(0) + i;
                want[d] = Some(src[s].to_f64());
            }
        }
        for (at, (g, w)) in got.iter().zip(&want).enumerate() {
            let g = g.to_f64();
            match w {
                Some(w) => {
                    let err = (g - w).abs() / (1.0 + w.abs());
                    assert!(
                        err <= tol,
                        "{case:?}: element {at}: {g} against {w} (relative error {err:e})"
                    );
                }
                None => assert_eq!(
                    g, POISON,
                    "{case:?}: element {at} is not copied but changed"
                ),
            }
        }
    }

    /// Cases with offsets that are not multiples of 4, rows longer than a workgroup (64
    /// threads), and absent starts.
    fn odd_cases() -> [Case; 4] {
        [
            Case {
                rows: 5,
                cols: 30,
                src_stride: 37,
                src_start: Some(3),
                dst_stride: 50,
                dst_start: Some(7),
            },
            Case {
                rows: 9,
                cols: 150,
                src_stride: 151,
                src_start: None,
                dst_stride: 203,
                dst_start: Some(41),
            },
            Case {
                rows: 1,
                cols: 1,
                src_stride: 1,
                src_start: Some(11),
                dst_stride: 1,
                dst_start: None,
            },
            // Overlapping source rows (a stride below the copy width) are fine to read.
            Case {
                rows: 4,
                cols: 70,
                src_stride: 20,
                src_start: Some(1),
                dst_stride: 70,
                dst_start: Some(2),
            },
        ]
    }

    pub fn copies_f32_rows_between_strides() {
        let ctx = context();
        for case in odd_cases() {
            check::<f32, f32>(&ctx, case, "scalar", 0.0);
        }
    }

    pub fn converts_between_f32_and_f16() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("converts_between_f32_and_f16: skipped, the adapter has no shader-f16");
            return;
        }
        for case in odd_cases() {
            // f16 to f32 is exact; f32 to f16 rounds to one of the two nearest f16 values.
            check::<f16, f32>(&ctx, case, "scalar", 0.0);
            check::<f32, f16>(&ctx, case, "scalar", 1e-3);
            check::<f16, f16>(&ctx, case, "scalar", 0.0);
        }
    }

    pub fn copies_f16_rows_four_at_a_time() {
        let ctx = context();
        if !ctx.caps().has_feature("shader-f16") {
            eprintln!("copies_f16_rows_four_at_a_time: skipped, the adapter has no shader-f16");
            return;
        }
        let cases = [
            Case {
                rows: 6,
                cols: 32,
                src_stride: 40,
                src_start: Some(4),
                dst_stride: 36,
                dst_start: Some(4),
            },
            // 300 columns are 75 vec4s: more than the 64 threads of a workgroup.
            Case {
                rows: 3,
                cols: 300,
                src_stride: 308,
                src_start: None,
                dst_stride: 512,
                dst_start: Some(100),
            },
        ];
        for case in cases {
            check::<f16, f16>(&ctx, case, "vec4_f16", 0.0);
        }
    }
}
