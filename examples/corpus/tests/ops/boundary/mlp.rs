//! Boundary cells of the corpus's fused MLP and per-layer-embedding projections:
//! DecodeGateUpNorm, DecodeDownNormAdd and DecodePleGate. The gate/up GEMV and the PLE gate
//! give one workgroup 2 outputs and fold the rest along y: 131,074 outputs (K kept at one
//! packed word, or one vec4) need 65,537 workgroups, y = 2. DecodeDownNormAdd takes at most
//! 4,096 outputs (its norm runs over them in one workgroup), so its launch cannot fold: that
//! cap is its boundary cell.

use corpus::kernels::{decode_down_norm_add, decode_gate_up_norm, decode_ple_gate};
use corpus::runtime::{DType, Tensor};

use super::{Cells, Want, poisoned, ran, read, upload, values};
use crate::qat_mat_mul::gpu::{case as qat, pack, reference as projection, zero_point};

pub(crate) fn cells(c: &mut Cells<'_>) {
    gate_up(c);
    down_norm_add(c);
    ple_gate(c);
}

/// Outputs at which a launch of 2 outputs a workgroup passes 65,535 workgroups along x.
const FOLDED_N: usize = 131_074;

fn label(m: usize, k: usize, n: usize, bits: &str) -> String {
    let fold = if n.div_ceil(2) > 65_535 {
        " (y = 2)"
    } else {
        ""
    };
    format!("{m} × {k} → {n}{bits}{fold}")
}

/// Seeded positive per-output scales, as the packages' tests make them.
fn scales(n: usize, seed: u64) -> Vec<f32> {
    corpus::data(n, seed)
        .into_iter()
        .map(|v| 0.02 + 0.01 * v)
        .collect()
}

/// Packed words of `q` (`[n, k]` codes of `bits` bits), none where codes do not fill a word.
fn packed(q: &[u32], k: usize, n: usize, bits: usize) -> Vec<u32> {
    if k * bits / 32 == 0 {
        return Vec::new();
    }
    pack(q, &qat(1, k, n, bits))
}

fn gate_up(c: &mut Cells<'_>) {
    use crate::decode_gate_up_norm::gpu::{gelu, gelu_table};
    use decode_gate_up_norm as op;
    // (m, h, inter, bits): the GEMV below 16 token rows, the tile from 16.
    let cases = [
        (1, 64, 10, 4, Want::Right),
        (0, 64, 10, 4, Want::Refused("args.M > 0` is false")),
        (1, 0, 10, 4, Want::Refused("args.inFeatures > 0` is false")),
        (1, 64, 0, 4, Want::Refused("args.outFeatures > 0` is false")),
        (1, 8, 1, 4, Want::Right),
        (3, 24, 7, 4, Want::Right),
        (17, 32, 20, 2, Want::Right),
        // The shader stages one activation row in workgroup memory of 4,096.
        (
            1,
            4104,
            1,
            4,
            Want::Refused("args.inFeatures <= 4096` is false"),
        ),
        (1, 8, FOLDED_N, 4, Want::Right),
    ];
    for (m, h, inter, bits, want) in cases {
        let hidden = values::<f32>(m * h, 81, 1.0);
        let (qg, qu) = (
            corpus::codes(inter * h, bits, 82),
            corpus::codes(inter * h, bits, 83),
        );
        let (gs, us) = (scales(inter, 84), scales(inter, 85));
        c.cell(
            "DecodeGateUpNorm",
            &label(m, h, inter, &format!(", {bits} bits")),
            DType::F32,
            want,
            |ctx| {
                let words = [inter, h * bits / 32];
                let hidden_t = upload::<f32>(ctx, &[m, h], &hidden)?;
                let gate_t = Tensor::from_slice(ctx, &words, &packed(&qg, h, inter, bits))?;
                let up_t = Tensor::from_slice(ctx, &words, &packed(&qu, h, inter, bits))?;
                let gs_t = Tensor::from_slice(ctx, &[inter], &gs)?;
                let us_t = Tensor::from_slice(ctx, &[inter], &us)?;
                let lut_t = Tensor::from_slice(ctx, &[256], &gelu_table(1.0 / 16.0))?;
                let inputs = op::Inputs {
                    hidden: &hidden_t,
                    gate_bits: &gate_t,
                    gate_scale: &gs_t,
                    up_bits: &up_t,
                    up_scale: &us_t,
                    sum_a: None,
                    gelu_lut: &lut_t,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    m: m as u32,
                    in_features: h as u32,
                    out_features: inter as u32,
                    bits: bits as u32,
                    zero_point: zero_point(bits),
                    mask: (1 << bits) - 1,
                });
                let mut out = poisoned::<f32>(ctx, &[m, inter])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { out: &mut out }, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || {
                let k = qat(m, h, inter, bits);
                let g = projection(&k, &qg, &hidden, &gs);
                let u = projection(&k, &qu, &hidden, &us);
                vec![g.iter().zip(&u).map(|(g, u)| gelu(*g) * u).collect()]
            },
        );
    }
}

fn down_norm_add(c: &mut Cells<'_>) {
    use decode_down_norm_add as op;
    // (k, n, bits): one token row; K a whole number of 4-word blocks.
    let cases = [
        (64, 10, 4, Want::Right),
        (0, 10, 4, Want::Refused("args.inFeatures > 0` is false")),
        (64, 0, 4, Want::Refused("args.outFeatures > 0` is false")),
        (32, 1, 4, Want::Right),
        (64, 7, 2, Want::Right),
        (160, 13, 4, Want::Right),
        (32, 4096, 4, Want::Right),
        (
            32,
            4097,
            4,
            Want::Refused("args.outFeatures <= 4096` is false"),
        ),
    ];
    for (k, n, bits, want) in cases {
        let a = values::<f32>(k, 91, 1.0);
        let q = corpus::codes(n * k, bits, 92);
        let scale = scales(n, 93);
        let (w, start) = (values::<f32>(n, 94, 1.0), values::<f32>(n, 95, 1.0));
        c.cell(
            "DecodeDownNormAdd",
            &label(1, k, n, &format!(", {bits} bits")),
            DType::F32,
            want,
            |ctx| {
                let a_t = upload::<f32>(ctx, &[k], &a)?;
                let words = [n, k * bits / 32];
                let bits_t = Tensor::from_slice(ctx, &words, &packed(&q, k, n, bits))?;
                let scale_t = Tensor::from_slice(ctx, &[n], &scale)?;
                let w_t = upload::<f32>(ctx, &[n], &w)?;
                let inputs = op::Inputs {
                    a: &a_t,
                    bits: &bits_t,
                    scale: &scale_t,
                    w: &w_t,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    m: 1,
                    in_features: k as u32,
                    out_features: n as u32,
                    bits: bits as u32,
                    zero_point: zero_point(bits),
                    mask: (1 << bits) - 1,
                });
                let mut hidden = upload::<f32>(ctx, &[n], &start)?;
                let outputs = op::OutputsMut {
                    hidden: &mut hidden,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                Ok(ran(ctx, &plan, vec![("Hidden", read(ctx, &hidden)?)]))
            },
            || {
                // The down projection, then DecodeNormAdd's norm of it added to `hidden`.
                let d = projection(&qat(1, k, n, bits), &q, &a, &scale);
                let r = crate::decode_norm_add::gpu::reference;
                vec![r(&start, &d, &w, 1.0, 1, n, 1e-6)]
            },
        );
    }
}

fn ple_gate(c: &mut Cells<'_>) {
    use crate::decode_ple_gate::gpu::{Case, gelu_lut, reference};
    use decode_ple_gate as op;
    let case = |m, k, n, ple_offset| Case {
        m,
        k,
        n,
        ple_offset,
    };
    let cases = [
        (case(2, 64, 48, 5), Want::Right),
        (case(0, 64, 48, 5), Want::Refused("args.M > 0` is false")),
        (
            case(2, 0, 48, 5),
            Want::Refused("args.inFeatures > 0` is false"),
        ),
        (
            case(2, 64, 0, 5),
            Want::Refused("args.outFeatures > 0` is false"),
        ),
        (case(1, 4, 1, 0), Want::Right),
        (case(3, 36, 1027, 2), Want::Right),
        (case(1, 4, FOLDED_N, 1), Want::Right),
    ];
    for (k, want) in cases {
        let a = values::<f32>(k.m * k.k, 101, 1.0);
        let w = values::<f32>(k.n * k.k, 102, 0.25);
        let ple: Vec<f32> = corpus::data(k.ple_len(), 103);
        c.cell(
            "DecodePleGate",
            &label(k.m, k.k, k.n, &format!(", PLE at {}", k.ple_offset)),
            DType::F32,
            want,
            |ctx| {
                let a_t = upload::<f32>(ctx, &[k.m, k.k], &a)?;
                let w_t = upload::<f32>(ctx, &[k.n, k.k], &w)?;
                let ple_t = Tensor::from_slice(ctx, &[k.ple_len()], &ple)?;
                let lut_t = Tensor::from_slice(ctx, &[256], &gelu_lut(0.0))?;
                let inputs = op::Inputs {
                    a: &a_t,
                    w: Some(&w_t),
                    codes: None,
                    row_scale: None,
                    ple: &ple_t,
                    gelu_lut: &lut_t,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    m: k.m as u32,
                    in_features: k.k as u32,
                    out_features: k.n as u32,
                    ple_offset: k.ple_offset as u32,
                });
                let mut out = poisoned::<f32>(ctx, &[k.m, k.n])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { out: &mut out }, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || vec![reference(&k, &a, &ple, |o, j| w[o * k.k + j])],
        );
    }
}
