//! `com.xenova.gemma4.DecodeNormAdd` from the corpus: `hidden = (hidden + rmsnorm(src) · w) ·
//! scale[0]` per row, in place, through its one variant `scalar` in f32 and (where the adapter
//! has shader-f16) f16, against a float64 reference; the part of `hidden` past `rows · dim`
//! keeps its bits, and a second run from the same input gives the same bits.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

#[test]
fn adds_the_normalized_source_in_place() {
    if !corpus::skip_without_corpus("adds_the_normalized_source_in_place") {
        #[cfg(corpus)]
        gpu::adds_the_normalized_source_in_place();
    }
}

#[cfg(corpus)]
pub(crate) mod gpu {
    use corpus::decode::ops;
    use corpus::kernels::decode_norm_add as op;
    use corpus::runtime::half::f16;
    use corpus::runtime::{Context, Float, Tensor};
    use corpus::{Poison, first_written};

    /// Past `rows · dim` the op must not write: these elements hold the poison throughout.
    const TAIL: usize = 5;

    fn cast<T: Float>(values: &[f32]) -> Vec<T> {
        values.iter().map(|&v| T::from_f64(f64::from(v))).collect()
    }

    /// Inputs as the GPU sees them (already rounded to their element types, so `w` holds
    /// f32 values).
    pub(crate) fn reference(
        hidden: &[f64],
        src: &[f64],
        w: &[f64],
        scale: f64,
        rows: usize,
        dim: usize,
        eps: f64,
    ) -> Vec<f64> {
        let w: Vec<f32> = w.iter().map(|&v| v as f32).collect();
        (0..rows)
            .flat_map(|r| {
                let (h, x) = (&hidden[r * dim..][..dim], &src[r * dim..][..dim]);
                ops::norm_add(h, x, &w, scale, eps)
            })
            .collect()
    }

    fn check<T: Poison, W: Poison>(
        ctx: &Context,
        rows: usize,
        dim: usize,
        eps: Option<f32>,
        tol: f64,
    ) {
        let what = format!(
            "{:?}/{:?} rows {rows} dim {dim} eps {eps:?}",
            T::DTYPE,
            W::DTYPE
        );
        let n = rows * dim;
        let mut hidden0: Vec<T> = cast(&corpus::data(n, 11));
        hidden0.extend(std::iter::repeat_n(T::POISON, TAIL));
        let src: Vec<T> = cast(&corpus::data(n, 12));
        let w: Vec<W> = cast(&corpus::data(dim, 13));
        // Not 1, so that every written element visibly changes.
        let scale = [0.75f32];
        let src_t = Tensor::from_slice(ctx, &[rows, dim], &src).unwrap();
        let w_t = Tensor::from_slice(ctx, &[dim], &w).unwrap();
        let scale_t = Tensor::from_slice(ctx, &[1], &scale).unwrap();
        let mut attrs = op::Attrs::new(op::RequiredAttrs {
            rows: rows as u32,
            dim: dim as u32,
        });
        attrs.eps = eps;
        let inputs = op::Inputs {
            src: &src_t,
            w: &w_t,
            scale: &scale_t,
        };
        let shapes = op::Shapes {
            hidden: &[n + TAIL],
            src: &[rows, dim],
            w: &[dim],
            scale: &[1],
        };
        let plan = op::plan(ctx.caps(), &shapes, &op::DTypes::of::<T, W>(), &attrs).unwrap();
        assert_eq!(plan.variant, "scalar", "{what}: variant");

        let run = || {
            let mut hidden = Tensor::from_slice(ctx, &[n + TAIL], &hidden0).unwrap();
            op::run_into(
                ctx,
                &inputs,
                op::OutputsMut {
                    hidden: &mut hidden,
                },
                &attrs,
            )
            .unwrap();
            hidden.to_vec(ctx).unwrap()
        };
        let got = run();
        assert_eq!(got.len(), n + TAIL, "{what}: length");
        if let Some(at) = first_written(&got[n..]) {
            panic!("{what}: element {} past rows · dim was written", n + at);
        }
        let head: Vec<f32> = got[..n].iter().map(|v| v.to_f64() as f32).collect();
        if let Some(at) = head.iter().position(|v| !v.is_finite()) {
            panic!("{what}: element {at} is not finite ({})", head[at]);
        }
        let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
        let want = reference(
            &f64s(&hidden0[..n]),
            &f64s(&src),
            &w.iter().map(|x| x.to_f64()).collect::<Vec<_>>(),
            f64::from(scale[0]),
            rows,
            dim,
            f64::from(eps.unwrap_or(1e-6)),
        );
        corpus::assert_close(&head, &want, tol, &what);

        let again = run();
        assert!(
            got.iter().zip(&again).all(|(a, b)| a.bits() == b.bits()),
            "{what}: a second run differs"
        );
    }

    pub fn adds_the_normalized_source_in_place() {
        let ctx = corpus::context();
        let caps = ctx.caps();
        if !(caps.has_feature("subgroups") && caps.subgroup_min_size >= 32) {
            eprintln!(
                "adds_the_normalized_source_in_place: the subgroup reduction of `scalar` needs \
                 subgroups of at least 32 lanes (this adapter: subgroups {}, sizes {}..{}); \
                 the workgroup-memory tree runs instead",
                caps.subgroups, caps.subgroup_min_size, caps.subgroup_max_size
            );
        }
        // One row shorter than the 256 threads, rows longer than them (a partial second
        // stride), and the default eps.
        check::<f32, f32>(&ctx, 1, 200, Some(1e-5), 1e-5);
        check::<f32, f32>(&ctx, 3, 600, None, 1e-5);
        if ctx.caps().has_feature("shader-f16") {
            // The result rounds to f16.
            check::<f16, f16>(&ctx, 3, 300, Some(1e-5), 2e-3);
            check::<f16, f32>(&ctx, 2, 260, None, 2e-3);
            check::<f32, f16>(&ctx, 2, 260, None, 1e-5);
        } else {
            eprintln!(
                "adds_the_normalized_source_in_place: no shader-f16 on this adapter, f16 not run"
            );
        }
    }
}
