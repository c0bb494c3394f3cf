//! Boundary cells of the corpus's row-wise ops: RMSNorm, Rope1d, DecodeNormAdd,
//! DecodeRmsSrq and DecodeNormAddNorm. The norms launch one workgroup a row, at most 65,535 along x and the rest
//! along y, so 65,537 rows of 4 take y to 2; Rope1d launches one workgroup per position along
//! x, unfolded, so 65,536 positions need 65,536 workgroups there.

use corpus::kernels::{decode_norm_add, decode_norm_add_norm, decode_rms_srq, rmsnorm, rope1d};
use corpus::runtime::DType;

use super::{Cells, Want, poisoned, ran, read, upload, values};

pub(crate) fn cells(c: &mut Cells<'_>) {
    rms_norm(c);
    rope(c);
    decode_norm_add(c);
    decode_rms_srq(c);
    decode_norm_add_norm(c);
}

/// (rows, dim) of the row-wise norms: the ordinary case, a zero in each (which every norm's
/// manifest refuses by name), ones, odd sizes, and 65,537 rows (one workgroup each: y = 2).
const NORM_CASES: [(usize, usize, Want); 6] = [
    (5, 200, Want::Right),
    (0, 200, Want::Refused("args.rows > 0` is false")),
    (5, 0, Want::Refused("args.dim > 0` is false")),
    (1, 1, Want::Right),
    (7, 13, Want::Right),
    (65_537, 4, Want::Right),
];

fn norm_label(rows: usize, dim: usize) -> String {
    let fold = if rows > 65_535 { " (y = 2)" } else { "" };
    format!("{rows} rows × {dim}{fold}")
}

fn rms_norm(c: &mut Cells<'_>) {
    use rmsnorm as op;
    for (rows, dim, want) in NORM_CASES {
        for weighted in [true, false] {
            let x = values::<f32>(rows * dim, 7, 1.0);
            let w = values::<f32>(dim, 8, 1.0);
            let label = format!(
                "{}{}",
                norm_label(rows, dim),
                ["", ", no weight"][usize::from(!weighted)]
            );
            c.cell(
                "RMSNorm",
                &label,
                DType::F32,
                want,
                |ctx| {
                    let x_t = upload::<f32>(ctx, &[rows, dim], &x)?;
                    let w_t = upload::<f32>(ctx, &[dim], &w)?;
                    let mut attrs = op::Attrs::new(op::RequiredAttrs {
                        rows: rows as u32,
                        dim: dim as u32,
                    });
                    attrs.eps = Some(1e-5);
                    let inputs = op::Inputs::<f32, f32> {
                        x: &x_t,
                        w: weighted.then_some(&w_t),
                    };
                    let mut y = poisoned::<f32>(ctx, &[rows, dim])?;
                    let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { y: &mut y }, attrs);
                    Ok(ran(ctx, &plan, vec![("Y", read(ctx, &y)?)]))
                },
                || {
                    let (x, w) = (f32s(&x), f32s(&w));
                    let w = weighted.then_some(w.as_slice());
                    vec![crate::rms_norm::gpu::reference(&x, w, rows, dim, 1e-5)]
                },
            );
        }
    }
}

fn f32s(values: &[f64]) -> Vec<f32> {
    values.iter().map(|&v| v as f32).collect()
}

fn rope(c: &mut Cells<'_>) {
    use rope1d as op;
    // (positions, heads, head dim).
    let cases = [
        (7, 3, 160, Want::Right),
        (0, 3, 160, Want::Refused("args.seq > 0` is false")),
        (7, 0, 160, Want::Refused("args.heads > 0` is false")),
        (7, 3, 0, Want::Refused("args.headDim > 0` is false")),
        (1, 1, 2, Want::Right),
        (5, 3, 18, Want::Right),
        (65_536, 1, 2, Want::Refused("65536 workgroups")),
    ];
    for (seq, heads, head_dim, want) in cases {
        let half = head_dim / 2;
        let x0 = values::<f32>(seq * heads * head_dim, 9, 1.0);
        let angles = values::<f32>(seq * half, 10, 3.0);
        let cos: Vec<f64> = angles.iter().map(|a| f64::from(a.cos() as f32)).collect();
        let sin: Vec<f64> = angles.iter().map(|a| f64::from(a.sin() as f32)).collect();
        let label = if seq > 65_535 {
            format!("{seq} × {heads} × {head_dim} (65,536 workgroups in x)")
        } else {
            format!("{seq} × {heads} × {head_dim}")
        };
        c.cell(
            "Rope1d",
            &label,
            DType::F32,
            want,
            |ctx| {
                let mut x = upload::<f32>(ctx, &[seq, heads, head_dim], &x0)?;
                let cos_t = upload::<f32>(ctx, &[seq, half], &cos)?;
                let sin_t = upload::<f32>(ctx, &[seq, half], &sin)?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    seq: seq as u32,
                    heads: heads as u32,
                    head_dim: head_dim as u32,
                });
                let inputs = op::Inputs {
                    cos: &cos_t,
                    sin: &sin_t,
                };
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { x: &mut x }, attrs);
                Ok(ran(ctx, &plan, vec![("X", read(ctx, &x)?)]))
            },
            || {
                let mut want = x0.clone();
                for t in 0..seq {
                    for h in 0..heads {
                        let base = (t * heads + h) * head_dim;
                        for k in 0..half {
                            let (c, s) = (cos[t * half + k], sin[t * half + k]);
                            let (a, b) = (x0[base + k], x0[base + k + half]);
                            want[base + k] = a * c - b * s;
                            want[base + k + half] = b * c + a * s;
                        }
                    }
                }
                vec![want]
            },
        );
    }
}

fn decode_norm_add(c: &mut Cells<'_>) {
    use decode_norm_add as op;
    for (rows, dim, want) in NORM_CASES {
        let n = rows * dim;
        let (hidden0, src) = (values::<f32>(n, 11, 1.0), values::<f32>(n, 12, 1.0));
        let w = values::<f32>(dim, 13, 1.0);
        // Not 1, so that every written element visibly changes.
        let scale = 0.75;
        c.cell(
            "DecodeNormAdd",
            &norm_label(rows, dim),
            DType::F32,
            want,
            |ctx| {
                let mut hidden = upload::<f32>(ctx, &[n], &hidden0)?;
                let src_t = upload::<f32>(ctx, &[rows, dim], &src)?;
                let w_t = upload::<f32>(ctx, &[dim], &w)?;
                let scale_t = upload::<f32>(ctx, &[1], &[scale])?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    rows: rows as u32,
                    dim: dim as u32,
                });
                let inputs = op::Inputs {
                    src: &src_t,
                    w: &w_t,
                    scale: &scale_t,
                };
                let plan = plan_and_run!(
                    op,
                    ctx,
                    inputs,
                    op::OutputsMut {
                        hidden: &mut hidden,
                    },
                    attrs
                );
                Ok(ran(ctx, &plan, vec![("Hidden", read(ctx, &hidden)?)]))
            },
            || {
                let r = crate::decode_norm_add::gpu::reference;
                vec![r(&hidden0, &src, &w, scale, rows, dim, 1e-6)]
            },
        );
    }
}

fn decode_rms_srq(c: &mut Cells<'_>) {
    use decode_rms_srq as op;
    for (rows, dim, want) in NORM_CASES {
        let n = rows * dim;
        let (x, w) = (values::<f32>(n, 21, 1.0), values::<f32>(dim, 22, 1.0));
        c.cell(
            "DecodeRmsSrq",
            &norm_label(rows, dim),
            DType::F32,
            want,
            |ctx| {
                let x_t = upload::<f32>(ctx, &[n], &x)?;
                let w_t = upload::<f32>(ctx, &[dim], &w)?;
                // No grid (`inScale` absent): the quantizer passes values through.
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    rows: rows as u32,
                    dim: dim as u32,
                });
                let inputs = op::Inputs { x: &x_t, w: &w_t };
                let mut y = poisoned::<f32>(ctx, &[n])?;
                let mut sum_a = poisoned::<f32>(ctx, &[rows])?;
                let outputs = op::OutputsMut {
                    y: &mut y,
                    sum_a: &mut sum_a,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                let got = vec![("Y", read(ctx, &y)?), ("SumA", read(ctx, &sum_a)?)];
                Ok(ran(ctx, &plan, got))
            },
            || {
                let w =
                    crate::rms_norm::gpu::reference(&f32s(&x), Some(&f32s(&w)), rows, dim, 1e-6);
                let sums = (0..rows)
                    .map(|r| w[r * dim..(r + 1) * dim].iter().sum())
                    .collect();
                vec![w, sums]
            },
        );
    }
}

fn decode_norm_add_norm(c: &mut Cells<'_>) {
    use decode_norm_add_norm as op;
    for (rows, dim, want) in NORM_CASES {
        let n = rows * dim;
        let (hidden0, src) = (values::<f32>(n, 111, 1.0), values::<f32>(n, 112, 1.0));
        let (w1, w2) = (values::<f32>(dim, 113, 1.0), values::<f32>(dim, 114, 1.0));
        let scale = 0.75;
        c.cell(
            "DecodeNormAddNorm",
            &norm_label(rows, dim),
            DType::F32,
            want,
            |ctx| {
                let mut hidden = upload::<f32>(ctx, &[n], &hidden0)?;
                let src_t = upload::<f32>(ctx, &[rows, dim], &src)?;
                let w1_t = upload::<f32>(ctx, &[dim], &w1)?;
                let w2_t = upload::<f32>(ctx, &[dim], &w2)?;
                let scale_t = upload::<f32>(ctx, &[1], &[scale])?;
                // No grid (`inScale` absent): `y2` is the plain norm.
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    rows: rows as u32,
                    dim: dim as u32,
                });
                let inputs = op::Inputs {
                    src: &src_t,
                    w1: &w1_t,
                    scale: &scale_t,
                    w2: &w2_t,
                };
                let mut y2 = poisoned::<f32>(ctx, &[n])?;
                let mut sum2 = poisoned::<f32>(ctx, &[rows])?;
                let outputs = op::OutputsMut {
                    hidden: &mut hidden,
                    y2: &mut y2,
                    sum2: &mut sum2,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                let got = vec![
                    ("Hidden", read(ctx, &hidden)?),
                    ("Y2", read(ctx, &y2)?),
                    ("Sum2", read(ctx, &sum2)?),
                ];
                Ok(ran(ctx, &plan, got))
            },
            || {
                // DecodeNormAdd's update, then RMSNorm of the updated rows.
                let add = crate::decode_norm_add::gpu::reference;
                let hidden = add(&hidden0, &src, &w1, scale, rows, dim, 1e-6);
                let norm = crate::rms_norm::gpu::reference;
                let y2 = norm(&f32s(&hidden), Some(&f32s(&w2)), rows, dim, 1e-6);
                let sums = (0..rows)
                    .map(|r| y2[r * dim..(r + 1) * dim].iter().sum())
                    .collect();
                vec![hidden, y2, sums]
            },
        );
    }
}
