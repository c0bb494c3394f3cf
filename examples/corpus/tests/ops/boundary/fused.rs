//! Boundary cells of the corpus's fused decode projections: DecodeQkvProj, DecodeOprojNorm
//! and DecodePleProjNorm. DecodeQkvProj launches `ceil(qOut / 2) + 2 · ceil(kvOut / 2)`
//! workgroups along x and never folds; its manifest refuses more than 65,535 by clause, so
//! 65,535 runs (K kept at one packed word) and 65,536 is refused. The two norms run over all
//! their outputs in one launch of `ceil(outFeatures / 8)` and `ceil(outFeatures / 16)`
//! workgroups (y = 1), capped at 8,192 outputs: at most 1,024 workgroups, so that cap, not
//! x's limit, is their boundary cell.

use corpus::kernels::{decode_oproj_norm, decode_ple_proj_norm, decode_qkv_proj};
use corpus::runtime::{Context, DType, OpError, Plan, Tensor};
use test_support::boundary::Ran;

use super::{Cells, Want, poisoned, ran, read};

pub(crate) fn cells(c: &mut Cells<'_>) {
    qkv_proj(c);
    oproj_norm(c);
    ple_proj_norm(c);
}

fn qkv_proj(c: &mut Cells<'_>) {
    use crate::decode_qkv_proj::gpu::{reference, words};
    use decode_qkv_proj as op;
    // (k, qOut, kvOut, bits)
    let cases = [
        (64, 6, 3, 4, Want::Right),
        (0, 6, 3, 4, Want::Refused("args.inFeatures > 0` is false")),
        (64, 0, 3, 4, Want::Refused("args.qOut > 0` is false")),
        (64, 6, 0, 4, Want::Refused("args.kvOut > 0` is false")),
        // 12 inputs of 4 bits do not fill a packed word.
        (12, 6, 3, 4, Want::Refused("% 32 == 0` is false")),
        (8, 1, 1, 4, Want::Right),
        (16, 1, 1, 2, Want::Right),
        (24, 5, 3, 4, Want::Right),
        (8, 131_066, 2, 4, Want::Right),
        (
            8,
            131_068,
            2,
            4,
            Want::Refused("2 * ceil(args.kvOut / 2)) <= 65535` is false"),
        ),
    ];
    for (k, q_out, kv_out, bits, want) in cases {
        let wpr = k * bits as usize / 32;
        let rows = [q_out, kv_out, kv_out];
        let a: Vec<f32> = corpus::data(k, 111);
        let weights: Vec<Vec<u32>> = [112, 113, 114]
            .iter()
            .zip(rows)
            .map(|(&seed, n)| words(n * wpr, seed))
            .collect();
        let scales: Vec<f32> = corpus::data(q_out + 2 * kv_out, 115)
            .iter()
            .map(|v| 0.05 * (1.5 + v))
            .collect();
        let groups = q_out.div_ceil(2) + 2 * kv_out.div_ceil(2);
        let past = if groups > 65_535 { " (past x)" } else { "" };
        c.cell(
            "DecodeQkvProj",
            &format!("1 × {k} → {q_out} + 2 × {kv_out}, {bits} bits, x = {groups}{past}"),
            DType::F32,
            want,
            |ctx| {
                let a_t = Tensor::from_slice(ctx, &[1, k], &a)?;
                let w_t = weights
                    .iter()
                    .zip(rows)
                    .map(|(w, n)| Tensor::from_slice(ctx, &[n, wpr], w))
                    .collect::<Result<Vec<_>, _>>()?;
                let scales_t = Tensor::from_slice(ctx, &[scales.len()], &scales)?;
                let sum_t = Tensor::from_slice(ctx, &[1], &[a.iter().sum::<f32>()])?;
                let inputs = op::Inputs {
                    a: &a_t,
                    qbits: &w_t[0],
                    kbits: &w_t[1],
                    vbits: &w_t[2],
                    scales: &scales_t,
                    sum_a: &sum_t,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    in_features: k as u32,
                    q_out: q_out as u32,
                    kv_out: kv_out as u32,
                    bits,
                    zero_point: 1 << (bits - 1),
                    mask: (1 << bits) - 1,
                });
                let mut q = poisoned::<f32>(ctx, &[1, q_out])?;
                let mut kk = poisoned::<f32>(ctx, &[1, kv_out])?;
                let mut v = poisoned::<f32>(ctx, &[1, kv_out])?;
                let outputs = op::OutputsMut {
                    q: &mut q,
                    k: &mut kk,
                    v: &mut v,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                let outs = vec![
                    ("Q", read(ctx, &q)?),
                    ("K", read(ctx, &kk)?),
                    ("V", read(ctx, &v)?),
                ];
                Ok(ran(ctx, &plan, outs))
            },
            || reference(k, bits, &a, &weights, rows, &scales),
        );
    }
}

/// The label of a norm cell: `k → n` and its launch along x, a workgroup for `per` outputs.
fn norm_label(k: usize, n: usize, per: usize, extra: &str) -> String {
    format!("1 × {k} → {n}{extra}, x = {}", n.div_ceil(per))
}

/// A norm's outputs: `hidden` seeded, `y2` and `sum2` poisoned.
fn norm_outputs(ctx: &Context, hidden: &[f32]) -> Result<[Tensor<f32>; 3], OpError> {
    let n = hidden.len();
    Ok([
        Tensor::from_slice(ctx, &[n], hidden)?,
        poisoned::<f32>(ctx, &[n])?,
        poisoned::<f32>(ctx, &[1])?,
    ])
}

/// A norm's run: `plan`, and `hidden`, `y2` and `sum2` read back.
fn norm_ran(ctx: &Context, plan: &Plan, outputs: [&Tensor<f32>; 3]) -> Result<Ran, OpError> {
    let [hidden, y2, sum2] = outputs;
    let outs = vec![
        ("Hidden", read(ctx, hidden)?),
        ("Y2", read(ctx, y2)?),
        ("Sum2", read(ctx, sum2)?),
    ];
    Ok(ran(ctx, plan, outs))
}

fn oproj_norm(c: &mut Cells<'_>) {
    use crate::decode_oproj_norm::gpu::{case, data, reference};
    use decode_oproj_norm as op;
    // (k, n, bits): K a whole number of packed words and of vec4s.
    let cases = [
        (64, 40, 4, Want::Right),
        (0, 40, 4, Want::Refused("args.inFeatures > 0` is false")),
        (64, 0, 4, Want::Refused("args.outFeatures > 0` is false")),
        (12, 5, 4, Want::Refused("% (32 / args.bits) == 0` is false")),
        (8, 1, 4, Want::Right),
        (16, 1, 2, Want::Right),
        (24, 13, 4, Want::Right),
        (8, 8192, 4, Want::Right),
        (
            8,
            8193,
            4,
            Want::Refused("args.outFeatures <= 8192` is false"),
        ),
    ];
    for (k, n, bits, want) in cases {
        let case = case(k, n, bits);
        let d = data(case);
        c.cell(
            "DecodeOprojNorm",
            &norm_label(k, n, 8, &format!(", {bits} bits")),
            DType::F32,
            want,
            |ctx| {
                let a_t = Tensor::from_slice(ctx, &[1, k], &d.a)?;
                let codes_t = Tensor::from_slice(ctx, &[d.codes.len()], &d.codes)?;
                let scale_t = Tensor::from_slice(ctx, &[n], &d.scale)?;
                let w12_t = Tensor::from_slice(ctx, &[2 * n], &d.w12)?;
                let inputs = op::Inputs {
                    a: &a_t,
                    bits: &codes_t,
                    scale: &scale_t,
                    w12: &w12_t,
                };
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    in_features: k as u32,
                    out_features: n as u32,
                    bits,
                    zero_point: 1 << (bits - 1),
                    mask: (1 << bits) - 1,
                });
                attrs.eps = Some(1e-6);
                let [mut hidden, mut y2, mut sum2] = norm_outputs(ctx, &d.hidden[..n])?;
                let outputs = op::OutputsMut {
                    hidden: &mut hidden,
                    y2: &mut y2,
                    sum2: &mut sum2,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                norm_ran(ctx, &plan, [&hidden, &y2, &sum2])
            },
            || {
                let (hidden, y2, sum2) = reference::<f32, f32>(case, &d);
                vec![hidden, y2, vec![sum2]]
            },
        );
    }
}

fn ple_proj_norm(c: &mut Cells<'_>) {
    use crate::decode_ple_proj_norm::gpu::{case, data, reference};
    use decode_ple_proj_norm as op;
    // (k, n, codes): dense weights in `fused`, packed u8 codes (at most 1,024 inputs) in
    // `fused_codes`; K a whole number of vec4s.
    let cases = [
        (64, 40, false, Want::Right),
        (64, 40, true, Want::Right),
        (0, 40, false, Want::Refused("args.inFeatures > 0` is false")),
        (64, 0, true, Want::Refused("args.outFeatures > 0` is false")),
        (
            6,
            3,
            false,
            Want::Refused("args.inFeatures % 4 == 0` is false"),
        ),
        (4, 1, false, Want::Right),
        (4, 1, true, Want::Right),
        (36, 13, false, Want::Right),
        (1024, 3, true, Want::Right),
        (
            1028,
            3,
            true,
            Want::Refused("args.inFeatures <= 1024` is false"),
        ),
        (4, 8192, false, Want::Right),
        (
            4,
            8193,
            true,
            Want::Refused("args.outFeatures <= 8192` is false"),
        ),
    ];
    for (k, n, codes, want) in cases {
        let case = case(k, n, codes);
        let d = data::<f32, f32>(case);
        let weights = if codes { ", u8 codes" } else { ", dense" };
        c.cell(
            "DecodePleProjNorm",
            &norm_label(k, n, 16, weights),
            DType::F32,
            want,
            |ctx| {
                let a_t = Tensor::from_slice(ctx, &[1, k], &d.a)?;
                let w_t = Tensor::from_slice(ctx, &[n, k], &d.w)?;
                let codes_t = Tensor::from_slice(ctx, &[d.codes.len()], &d.codes)?;
                let scale_t = Tensor::from_slice(ctx, &[n], &d.row_scale)?;
                let w12s_t = Tensor::from_slice(ctx, &[2 * n + 1], &d.w12s)?;
                let inputs = op::Inputs {
                    a: &a_t,
                    wt: (!codes).then_some(&w_t),
                    codes: codes.then_some(&codes_t),
                    row_scale: codes.then_some(&scale_t),
                    w12s: &w12s_t,
                };
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    in_features: k as u32,
                    out_features: n as u32,
                });
                attrs.codes = codes.then_some(1);
                attrs.eps = Some(1e-6);
                let [mut hidden, mut y2, mut sum2] = norm_outputs(ctx, &d.hidden[..n])?;
                let outputs = op::OutputsMut {
                    hidden: &mut hidden,
                    y2: &mut y2,
                    sum2: &mut sum2,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                norm_ran(ctx, &plan, [&hidden, &y2, &sum2])
            },
            || {
                let (hidden, y2, sum2) = reference::<f32, f32, f32, f32>(case, &d);
                vec![hidden, y2, vec![sum2]]
            },
        );
    }
}
