//! Boundary cells of the corpus's plain projections and the embedding gather: QatMatMul,
//! DenseGemv and QatEmbedGather. Both GEMVs give one workgroup 8 output rows once there are
//! enough of them and fold the rest along y: 524,296 outputs (K kept at one packed word, or
//! one vec4) need 65,537 workgroups, y = 2. The gather launches one workgroup per id along x,
//! unfolded, so 65,536 ids need 65,536 workgroups there.

use corpus::kernels::{dense_gemv, qat_embed_gather, qat_mat_mul};
use corpus::runtime::{DType, Tensor};

use super::{Cells, Want, poisoned, ran, read, upload, values};

pub(crate) fn cells(c: &mut Cells<'_>) {
    qat_mat_mul(c);
    dense_gemv(c);
    qat_embed_gather(c);
}

/// Outputs at which both GEMVs' launch passes 65,535 workgroups along x: `ceil(n / 8)` is
/// 65,537, so y = 2.
const FOLDED_N: usize = 524_296;

/// The label of a GEMV cell: `m × k → n`, and the fold where it passes x's limit.
fn gemv_label(m: usize, k: usize, n: usize, extra: &str) -> String {
    let fold = if n.div_ceil(8) > 65_535 {
        " (y = 2)"
    } else {
        ""
    };
    format!("{m} × {k} → {n}{extra}{fold}")
}

fn qat_mat_mul(c: &mut Cells<'_>) {
    use crate::qat_mat_mul::gpu::{Case, case, pack, reference, zero_point};
    use qat_mat_mul as op;
    let block_major = |c: Case| Case {
        block_major: true,
        ..c
    };
    let cases = [
        (case(1, 64, 10, 4), Want::Right),
        (case(0, 64, 10, 4), Want::Refused("args.M > 0` is false")),
        (
            case(1, 0, 10, 4),
            Want::Refused("args.inFeatures > 0` is false"),
        ),
        (
            case(1, 64, 0, 4),
            Want::Refused("args.outFeatures > 0` is false"),
        ),
        // One 4-bit code does not fill a packed word.
        (case(1, 1, 1, 4), Want::Refused("% 32 == 0` is false")),
        (case(1, 8, 1, 4), Want::Right),
        (case(3, 24, 7, 4), Want::Right),
        (case(65, 16, 33, 2), Want::Right),
        (block_major(case(1, 32, 1, 4)), Want::Right),
        (block_major(case(1, 64, 131, 2)), Want::Right),
        (case(1, 8, FOLDED_N, 4), Want::Right),
    ];
    for (k, want) in cases {
        let a = values::<f32>(k.m * k.k, 41, 1.0);
        let q = corpus::codes(k.n * k.k, k.bits, 42);
        let scale: Vec<f32> = corpus::data(k.n, 43)
            .into_iter()
            .map(|v| 0.02 + 0.01 * v)
            .collect();
        let layout = if k.block_major { ", block-major" } else { "" };
        c.cell(
            "QatMatMul",
            &gemv_label(k.m, k.k, k.n, &format!(", {} bits{layout}", k.bits)),
            DType::F32,
            want,
            |ctx| {
                let a_t = upload::<f32>(ctx, &[k.m, k.k], &a)?;
                let words = [k.n, k.k * k.bits / 32];
                // Codes that do not fill a word have nothing to pack (the plan refuses them).
                let packed = if words[1] > 0 {
                    pack(&q, &k)
                } else {
                    Vec::new()
                };
                let bits_t = Tensor::from_slice(ctx, &words, &packed)?;
                let scale_t = Tensor::from_slice(ctx, &[k.n], &scale)?;
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    m: k.m as u32,
                    in_features: k.k as u32,
                    out_features: k.n as u32,
                    bits: k.bits as u32,
                    zero_point: zero_point(k.bits),
                    mask: (1 << k.bits) - 1,
                });
                attrs.block_major = k.block_major.then_some(1);
                let inputs = op::Inputs {
                    a: &a_t,
                    bits: &bits_t,
                    scale: &scale_t,
                    sum_a: None,
                };
                let mut out = poisoned::<f32>(ctx, &[k.m, k.n])?;
                let outputs = op::OutputsMut {
                    out: &mut out,
                    cand_val: None,
                    cand_idx: None,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || vec![reference(&k, &q, &a, &scale)],
        );
    }
}

fn dense_gemv(c: &mut Cells<'_>) {
    use dense_gemv as op;
    // (m, k, n): below 64 rows the scalar GEMV, from 64 the 32 × 32 tile.
    let cases = [
        (1, 64, 48, Want::Right),
        (0, 64, 48, Want::Refused("args.M > 0` is false")),
        (1, 0, 48, Want::Refused("args.inFeatures > 0` is false")),
        (1, 64, 0, Want::Refused("args.outFeatures > 0` is false")),
        // The shader reads `a` as vec4s.
        (1, 1, 1, Want::Refused("args.inFeatures % 4 == 0` is false")),
        (1, 4, 1, Want::Right),
        (3, 36, 1027, Want::Right),
        (70, 20, 33, Want::Right),
        (1, 4, FOLDED_N, Want::Right),
    ];
    for (m, k, n, want) in cases {
        let a = values::<f32>(m * k, 51, 1.0);
        let w = values::<f32>(n * k, 52, 0.5);
        c.cell(
            "DenseGemv",
            &gemv_label(m, k, n, ""),
            DType::F32,
            want,
            |ctx| {
                let a_t = upload::<f32>(ctx, &[m, k], &a)?;
                let w_t = upload::<f32>(ctx, &[n, k], &w)?;
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    m: m as u32,
                    in_features: k as u32,
                    out_features: n as u32,
                });
                let inputs = op::Inputs { a: &a_t, w: &w_t };
                let mut out = poisoned::<f32>(ctx, &[m, n])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { out: &mut out }, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || {
                let products = crate::dense_gemv::gpu::products;
                let rows = (0..m).flat_map(|r| products(&a[r * k..(r + 1) * k], &w, k, n));
                vec![rows.collect()]
            },
        );
    }
}

fn qat_embed_gather(c: &mut Cells<'_>) {
    use crate::qat_embed_gather::gpu::Table;
    use qat_embed_gather as op;
    // (ids, hidden, vocab, bits, group): ids cycle through the table's rows.
    let cases = [
        (4, 64, 5, 4, 32, Want::Right),
        (0, 64, 5, 4, 32, Want::Refused("args.seq > 0` is false")),
        (4, 0, 5, 4, 32, Want::Refused("args.hidden > 0` is false")),
        (
            4,
            64,
            5,
            4,
            0,
            Want::Refused("args.groupSize > 0` is false"),
        ),
        (1, 8, 1, 4, 8, Want::Right),
        (7, 48, 3, 2, 16, Want::Right),
        (65_536, 8, 1, 4, 8, Want::Refused("65536 workgroups")),
    ];
    for (seq, hidden, vocab, bits, group, want) in cases {
        // A zero group size would divide by zero in the table's own scale count.
        let table = Table::new(hidden, vocab, bits, group.max(1));
        let ids: Vec<u32> = (0..seq).map(|i| ((i * 3 + 1) % vocab) as u32).collect();
        let fold = if seq > 65_535 {
            " (65,536 workgroups in x)"
        } else {
            ""
        };
        c.cell(
            "QatEmbedGather",
            &format!("{seq} ids of {vocab} × {hidden}, {bits} bits / {group}{fold}"),
            DType::F32,
            want,
            |ctx| {
                let ids_t = Tensor::from_slice(ctx, &[seq], &ids)?;
                let words = [vocab, hidden * bits / 32];
                let bits_t = Tensor::from_slice(ctx, &words, &table.packed)?;
                let groups = [vocab, hidden / group.max(1)];
                let scale_t = Tensor::from_slice(ctx, &groups, &table.scale)?;
                let mut attrs = table.attrs(seq);
                attrs.group_size = group as u32;
                let inputs = op::Inputs {
                    ids: &ids_t,
                    bits: &bits_t,
                    scale: &scale_t,
                    w: None,
                };
                let mut out = poisoned::<f32>(ctx, &[seq, hidden])?;
                let outputs = op::OutputsMut {
                    out: &mut out,
                    y2: None,
                    sum_a: None,
                };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || vec![ids.iter().flat_map(|&id| table.row(id as usize)).collect()],
        );
    }
}
