//! Boundary cells of the corpus's element-wise ops: AddInPlace, MulBroadcast, SrqQuantize,
//! PleGate and StridedCopy. AddInPlace and MulBroadcast cap x at 1,024 workgroups and fold the
//! rest into y, so they pass 65,535 in no dimension below four billion elements; their fold
//! cells take y past 1 instead.

use corpus::kernels::{add_in_place, mul_broadcast, ple_gate, srq_quantize, strided_copy};
use corpus::runtime::DType;

use super::{Cells, Want, poisoned, ran, read, upload, values};

pub(crate) fn cells(c: &mut Cells<'_>) {
    add_in_place(c);
    mul_broadcast(c);
    srq_quantize(c);
    ple_gate(c);
    strided_copy(c);
}

fn add_in_place(c: &mut Cells<'_>) {
    use add_in_place as op;
    // (length, count): the tail past `count` keeps its values.
    let no_count = Want::Refused("args.count > 0` is false");
    let cases = [
        (1000, 1000, "", Want::Right),
        (0, 0, "", no_count),
        (5, 0, "", no_count),
        (1, 1, "", Want::Right),
        (7, 5, "", Want::Right),
        (70_001, 69_999, ", y = 2", Want::Right),
    ];
    for (len, count, note, want) in cases {
        let (y0, x) = (values::<f32>(len, 1, 1.0), values::<f32>(len, 2, 1.0));
        c.cell(
            "AddInPlace",
            &format!("[{len}] count {count}{note}"),
            DType::F32,
            want,
            |ctx| {
                let mut y = upload::<f32>(ctx, &[len], &y0)?;
                let x_t = upload::<f32>(ctx, &[len], &x)?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    count: count as u32,
                });
                let inputs = op::Inputs { x: &x_t };
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { y: &mut y }, attrs);
                Ok(ran(ctx, &plan, vec![("Y", read(ctx, &y)?)]))
            },
            || {
                let sum = (0..len).map(|i| if i < count { y0[i] + x[i] } else { y0[i] });
                vec![sum.collect()]
            },
        );
    }
}

fn mul_broadcast(c: &mut Cells<'_>) {
    use mul_broadcast as op;
    // `i % 0` is no division: the manifest reads a period of 0 as absent (the whole factor).
    let count_zero = Want::Refused("`y` (from argument `count`): division by zero");
    let short = Want::Refused("numel(shapes.factorT) = 0");
    let cases: [(usize, Option<usize>, usize, Want); 8] = [
        (3000, Some(48), 48, Want::Right),
        (0, None, 0, count_zero),
        (0, Some(4), 4, count_zero),
        (1, None, 1, Want::Right),
        (513, Some(7), 7, Want::Right),
        (6, Some(0), 6, Want::Right),
        (6, Some(0), 0, short),
        (70_001, Some(3), 3, Want::Right),
    ];
    for (len, period, factor_len, want) in cases {
        let (x0, factor) = (
            values::<f32>(len, 3, 1.0),
            values::<f32>(factor_len, 4, 1.0),
        );
        let fold = if len > 64 * 1024 { ", y = 2" } else { "" };
        c.cell(
            "MulBroadcast",
            &format!("[{len}] period {period:?} factor [{factor_len}]{fold}"),
            DType::F32,
            want,
            |ctx| {
                let mut x = upload::<f32>(ctx, &[len], &x0)?;
                let factor_t = upload::<f32>(ctx, &[factor_len], &factor)?;
                let mut attrs = op::Attrs::new(op::RequiredAttrs { count: len as u32 });
                attrs.period = period.map(|p| p as u32);
                let inputs = op::Inputs { factor: &factor_t };
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { x: &mut x }, attrs);
                Ok(ran(ctx, &plan, vec![("X", read(ctx, &x)?)]))
            },
            || {
                vec![
                    (0..len)
                        .map(|i| x0[i] * factor[i % factor_len.max(1)])
                        .collect(),
                ]
            },
        );
    }
}

fn srq64(x: f64, s: f64) -> f64 {
    if s == 0.0 {
        return x;
    }
    (x / s).round_ties_even().clamp(-128.0, 127.0) * s
}

fn srq_quantize(c: &mut Cells<'_>) {
    use srq_quantize as op;
    // One element a thread, 256 a workgroup along x alone: past 65,535 × 256 elements the
    // launch needs 65,536 workgroups in x.
    let past = 65_536 * 256;
    let cases = [
        (1000, 0.0625, Want::Right),
        (0, 0.0625, Want::Refused("args.count > 0` is false")),
        (1, 0.0625, Want::Right),
        (257, 0.0625, Want::Right),
        (33, 0.0, Want::Right),
        (past, 0.0625, Want::Refused("65536 workgroups")),
    ];
    for (len, scale, want) in cases {
        let x = values::<f32>(len, 41, 3.0);
        let label = if len == past {
            format!("[{len}] (65,536 workgroups in x)")
        } else {
            format!("[{len}] scale {scale}")
        };
        c.cell(
            "SrqQuantize",
            &label,
            DType::F32,
            want,
            |ctx| {
                let x_t = upload::<f32>(ctx, &[len], &x)?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    count: len as u32,
                    scale: scale as f32,
                });
                let inputs = op::Inputs { x: &x_t };
                let mut y = poisoned::<f32>(ctx, &[len])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { y: &mut y }, attrs);
                Ok(ran(ctx, &plan, vec![("Y", read(ctx, &y)?)]))
            },
            || vec![x.iter().map(|&v| srq64(v, scale)).collect()],
        );
    }
}

fn ple_gate(c: &mut Cells<'_>) {
    use ple_gate as op;
    let no_count = Want::Refused("args.count > 0` is false");
    let cases = [
        (1000, None, None, Want::Right),
        (0, None, None, no_count),
        (0, Some(3), None, no_count),
        (1, None, None, Want::Right),
        (1001, Some(5), None, Want::Right),
        (301, None, Some(0.0625), Want::Right),
    ];
    for (count, b_offset, grid_scale, want) in cases {
        let offset = b_offset.unwrap_or(0);
        let a = values::<f32>(count, 51, 6.0);
        let b = values::<f32>(offset + count, 52, 1.0);
        let lut = values::<f32>(256, 53, 1.0);
        c.cell(
            "PleGate",
            &format!("[{count}] offset {b_offset:?} grid {grid_scale:?}"),
            DType::F32,
            want,
            |ctx| {
                let a_t = upload::<f32>(ctx, &[count], &a)?;
                let b_t = upload::<f32>(ctx, &[b.len()], &b)?;
                let lut_t = upload::<f32>(ctx, &[256], &lut)?;
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    count: count as u32,
                });
                attrs.b_offset = b_offset.map(|o| o as u32);
                attrs.grid_scale = grid_scale.map(|s| s as f32);
                let inputs = op::Inputs {
                    a: &a_t,
                    b: &b_t,
                    gelu_lut: &lut_t,
                };
                let mut y = poisoned::<f32>(ctx, &[count])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { y: &mut y }, attrs);
                Ok(ran(ctx, &plan, vec![("Y", read(ctx, &y)?)]))
            },
            || {
                let gated = (0..count).map(|i| {
                    let g = match grid_scale {
                        Some(s) => lut[crate::ple_gate::gpu::grid_index(a[i], s)],
                        None => crate::ple_gate::gpu::gelu_tanh(a[i]),
                    };
                    g * b[offset + i]
                });
                vec![gated.collect()]
            },
        );
    }
}

fn strided_copy(c: &mut Cells<'_>) {
    use strided_copy as op;
    // What the copy does not reach keeps this value.
    const KEPT: f64 = 30000.0;
    // (rows, columns, source stride, destination stride); one row a workgroup along x alone.
    let cases = [
        (5, 30, 37, 50, Want::Right),
        (0, 30, 37, 50, Want::Right),
        (5, 0, 37, 50, Want::Right),
        (1, 1, 1, 1, Want::Right),
        (9, 151, 151, 203, Want::Right),
        (65_536, 1, 1, 1, Want::Refused("65536 workgroups")),
    ];
    for (rows, cols, src_stride, dst_stride, want) in cases {
        let len = |stride: usize| usize::saturating_sub(rows, 1) * stride + cols + 3;
        let (src_len, dst_len) = (len(src_stride), len(dst_stride));
        let src = values::<f32>(src_len, 7, 1.0);
        let label = if rows > 65_535 {
            format!("{rows} rows × {cols} (65,536 workgroups in x)")
        } else {
            format!("{rows} rows × {cols}, strides {src_stride}/{dst_stride}")
        };
        c.cell(
            "StridedCopy",
            &label,
            DType::F32,
            want,
            |ctx| {
                let src_t = upload::<f32>(ctx, &[src_len], &src)?;
                let mut dst = upload::<f32>(ctx, &[dst_len], &vec![KEPT; dst_len])?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    rows: rows as u32,
                    src_stride: src_stride as u32,
                    dst_stride: dst_stride as u32,
                    copy_cols: cols as u32,
                });
                let inputs = op::Inputs { src: &src_t };
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { dst: &mut dst }, attrs);
                Ok(ran(ctx, &plan, vec![("Dst", read(ctx, &dst)?)]))
            },
            || {
                let mut want = vec![KEPT; dst_len];
                for r in 0..rows {
                    for i in 0..cols {
                        want[r * dst_stride + i] = src[r * src_stride + i];
                    }
                }
                vec![want]
            },
        );
    }
}
