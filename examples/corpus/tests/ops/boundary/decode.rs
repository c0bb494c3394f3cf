//! Boundary cells of the corpus's reductions and attention: ArgMax, Attention,
//! DecodeQkNormRope and DecodeAttention. Attention's scalar variant and DecodeQkNormRope launch
//! one workgroup per query position along x, unfolded: 65,536 positions (each seeing one key,
//! so the cell stays small) need 65,536 workgroups there. DecodeAttention launches one per
//! query head along x and its 32 key chunks along y, so 65,536 heads pass x's limit.

use corpus::kernels::{arg_max, attention, decode_attention, decode_qk_norm_rope};
use corpus::runtime::{DType, Tensor};

use super::{Cells, Want, poisoned, ran, read, upload, values};

pub(crate) fn cells(c: &mut Cells<'_>) {
    arg_max(c);
    attention(c);
    qk_norm_rope(c);
    decode_attention(c);
}

/// The label of a cell whose launch needs 65,536 workgroups along x.
const PAST_X: &str = " (65,536 workgroups in x)";

fn arg_max(c: &mut Cells<'_>) {
    use arg_max as op;
    // Below 16,384 values one workgroup scans them all; from there two passes of 256.
    let cases = [
        (1000, Want::Right),
        (0, Want::Refused("args.count > 0` is false")),
        (1, Want::Right),
        (257, Want::Right),
        (16_385, Want::Right),
    ];
    for (count, want) in cases {
        let x = values::<f32>(count, 61, 1.0);
        c.cell(
            "ArgMax",
            &format!("[{count}]"),
            DType::F32,
            want,
            |ctx| {
                let x_t = upload::<f32>(ctx, &[count], &x)?;
                let inputs = op::Inputs {
                    x: Some(&x_t),
                    cand_val: None,
                    cand_idx: None,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    count: count as u32,
                });
                let mut out = Tensor::<u32>::from_slice(ctx, &[1], &[u32::MAX])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { out: &mut out }, attrs);
                let got = out.to_vec(ctx)?.into_iter().map(f64::from).collect();
                Ok(ran(ctx, &plan, vec![("Out", got)]))
            },
            || vec![vec![f64::from(crate::arg_max::gpu::first_max(&x, count))]],
        );
    }
}

fn attention(c: &mut Cells<'_>) {
    use crate::attention::gpu::Case;
    use attention as op;
    let case = |seq_q, key_len, q_offset, q_heads, kv_heads, head_dim| Case {
        seq_q,
        key_len,
        q_offset,
        q_heads,
        kv_heads,
        head_dim,
        scale: Some(0.25),
        window: None,
    };
    let cases = [
        (case(5, 5, 0, 4, 2, 16), Want::Right),
        (
            case(0, 5, 0, 4, 2, 16),
            Want::Refused("args.seqQ > 0` is false"),
        ),
        (
            case(5, 0, 0, 4, 2, 16),
            Want::Refused("args.keyLen > 0` is false"),
        ),
        (
            case(5, 5, 0, 0, 2, 16),
            Want::Refused("args.qHeads > 0` is false"),
        ),
        (
            case(5, 5, 0, 4, 0, 16),
            Want::Refused("args.kvHeads > 0` is false"),
        ),
        (
            case(5, 5, 0, 4, 2, 0),
            Want::Refused("args.headDim > 0` is false"),
        ),
        (case(1, 1, 0, 1, 1, 1), Want::Right),
        // At most 8 keys a query: past 8 the scalar shader's reductions race on workgroup
        // memory on lavapipe (see `attention.rs`), a fault of the package's template.
        (case(7, 7, 0, 3, 1, 12), Want::Right),
        (case(3, 8, 5, 3, 1, 12), Want::Right),
        (
            case(65_536, 1, 0, 1, 1, 4),
            Want::Refused("65536 workgroups"),
        ),
    ];
    for (k, want) in cases {
        let d = k.head_dim;
        let q = values::<f32>(k.seq_q * k.q_heads * d, 71, 0.5);
        let kv_len = k.key_len * k.kv_heads * d;
        let (keys, vals) = (
            values::<f32>(kv_len, 72, 0.5),
            values::<f32>(kv_len, 73, 0.5),
        );
        let fold = if k.seq_q > 65_535 { PAST_X } else { "" };
        let label = format!(
            "q {}×{}, k {}×{}, d {d}, offset {}{fold}",
            k.seq_q, k.q_heads, k.key_len, k.kv_heads, k.q_offset
        );
        c.cell(
            "Attention",
            &label,
            DType::F32,
            want,
            |ctx| {
                let q_t = upload::<f32>(ctx, &[k.seq_q, k.q_heads, d], &q)?;
                let k_t = upload::<f32>(ctx, &[k.key_len, k.kv_heads, d], &keys)?;
                let v_t = upload::<f32>(ctx, &[k.key_len, k.kv_heads, d], &vals)?;
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    seq_q: k.seq_q as u32,
                    key_len: k.key_len as u32,
                    q_offset: k.q_offset as u32,
                    q_heads: k.q_heads as u32,
                    kv_heads: k.kv_heads as u32,
                    head_dim: d as u32,
                });
                attrs.scale = k.scale;
                let inputs = op::Inputs {
                    q: &q_t,
                    k: &k_t,
                    v: &v_t,
                };
                let mut out = poisoned::<f32>(ctx, &[k.seq_q, k.q_heads * d])?;
                let outputs = op::OutputsMut { out: &mut out };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || vec![crate::attention::gpu::reference(&k, &q, &keys, &vals)],
        );
    }
}

fn qk_norm_rope(c: &mut Cells<'_>) {
    use crate::decode_qk_norm_rope::gpu::Case;
    use decode_qk_norm_rope as op;
    let case = |seq, heads, head_dim| Case {
        seq,
        heads,
        head_dim,
        dst_offset: None,
    };
    let cases = [
        (case(3, 4, 64), Want::Right),
        (case(0, 4, 64), Want::Refused("args.seq > 0` is false")),
        (case(3, 0, 64), Want::Refused("args.heads > 0` is false")),
        (case(3, 4, 0), Want::Refused("args.headDim > 0` is false")),
        (case(1, 1, 2), Want::Right),
        (case(5, 3, 18), Want::Right),
        (case(65_536, 1, 2), Want::Refused("65536 workgroups")),
    ];
    for (k, want) in cases {
        let (half, len) = (k.head_dim / 2, k.seq * k.heads * k.head_dim);
        let x = values::<f32>(len, 31, 1.0);
        let w: Vec<f32> = values::<f32>(k.head_dim, 32, 0.5)
            .iter()
            .map(|v| 1.0 + *v as f32)
            .collect();
        let angles = values::<f32>(k.seq * half, 33, 3.0);
        let cos: Vec<f32> = angles.iter().map(|a| a.cos() as f32).collect();
        let sin: Vec<f32> = angles.iter().map(|a| a.sin() as f32).collect();
        let fold = if k.seq > 65_535 { PAST_X } else { "" };
        let eps = 1e-6f32;
        c.cell(
            "DecodeQkNormRope",
            &format!("{} × {} × {}{fold}", k.seq, k.heads, k.head_dim),
            DType::F32,
            want,
            |ctx| {
                let x_t = upload::<f32>(ctx, &[k.seq, k.heads, k.head_dim], &x)?;
                let w_t = Tensor::from_slice(ctx, &[k.head_dim], &w)?;
                let cos_t = Tensor::from_slice(ctx, &[k.seq, half], &cos)?;
                let sin_t = Tensor::from_slice(ctx, &[k.seq, half], &sin)?;
                let inputs = op::Inputs {
                    x: &x_t,
                    w: &w_t,
                    cos: &cos_t,
                    sin: &sin_t,
                };
                let attrs = op::Attrs::new(op::RequiredAttrs {
                    seq: k.seq as u32,
                    heads: k.heads as u32,
                    head_dim: k.head_dim as u32,
                    eps,
                });
                let mut yn = poisoned::<f32>(ctx, &[len])?;
                let plan = plan_and_run!(op, ctx, inputs, op::OutputsMut { yn: &mut yn }, attrs);
                Ok(ran(ctx, &plan, vec![("Yn", read(ctx, &yn)?)]))
            },
            || {
                let reference = crate::decode_qk_norm_rope::gpu::reference;
                vec![reference(k, &x, &w, &cos, &sin, f64::from(eps))]
            },
        );
    }
}

fn decode_attention(c: &mut Cells<'_>) {
    use crate::decode_attention::gpu::{case, reference};
    use decode_attention as op;
    // (seqQ, keyLen, qOffset, (qHeads, kvHeads), headDim): one query row; the keys it sees
    // end at qOffset.
    let cases = [
        (1, 5, 4, (2, 1), 8, Want::Right),
        (
            0,
            5,
            4,
            (2, 1),
            8,
            Want::Refused("args.seqQ == 1` is false"),
        ),
        (
            2,
            5,
            4,
            (2, 1),
            8,
            Want::Refused("args.seqQ == 1` is false"),
        ),
        (
            1,
            0,
            4,
            (2, 1),
            8,
            Want::Refused("args.keyLen > 0` is false"),
        ),
        (
            1,
            5,
            4,
            (0, 1),
            8,
            Want::Refused("args.qHeads > 0` is false"),
        ),
        (
            1,
            5,
            4,
            (2, 0),
            8,
            Want::Refused("args.kvHeads > 0` is false"),
        ),
        (
            1,
            5,
            4,
            (2, 1),
            0,
            Want::Refused("args.headDim > 0` is false"),
        ),
        (
            1,
            5,
            4,
            (2, 1),
            2,
            Want::Refused("args.headDim % 4 == 0` is false"),
        ),
        (
            1,
            5,
            4,
            (3, 2),
            8,
            Want::Refused("args.qHeads % args.kvHeads == 0` is false"),
        ),
        (1, 1, 0, (1, 1), 4, Want::Right),
        (1, 7, 6, (3, 1), 12, Want::Right),
        (1, 33, 20, (5, 5), 20, Want::Right),
        (1, 1, 0, (65_536, 1), 4, Want::Refused("65536 workgroups")),
    ];
    for (seq_q, key_len, q_offset, (q_heads, kv_heads), d, want) in cases {
        let k = case(key_len, q_offset, (q_heads, kv_heads), d);
        let q = values::<f32>(seq_q * q_heads * d, 121, 1.0);
        let kv_len = key_len * kv_heads * d;
        let (keys, vals) = (
            values::<f32>(kv_len, 122, 1.0),
            values::<f32>(kv_len, 123, 1.0),
        );
        let w: Vec<f32> = corpus::data(d, 124).iter().map(|x| 1.0 + 0.5 * x).collect();
        let angles = corpus::data(d / 2, 125);
        let cos: Vec<f32> = angles.iter().map(|a| (a * 3.0).cos()).collect();
        let sin: Vec<f32> = angles.iter().map(|a| (a * 3.0).sin()).collect();
        let fold = if q_heads > 65_535 { PAST_X } else { "" };
        let label =
            format!("q {seq_q}×{q_heads}, k {key_len}×{kv_heads}, d {d}, offset {q_offset}{fold}");
        c.cell(
            "DecodeAttention",
            &label,
            DType::F32,
            want,
            |ctx| {
                let q_t = upload::<f32>(ctx, &[seq_q, q_heads, d], &q)?;
                let k_t = upload::<f32>(ctx, &[key_len, kv_heads, d], &keys)?;
                let v_t = upload::<f32>(ctx, &[key_len, kv_heads, d], &vals)?;
                let w_t = Tensor::from_slice(ctx, &[d], &w)?;
                let cos_t = Tensor::from_slice(ctx, &[d / 2], &cos)?;
                let sin_t = Tensor::from_slice(ctx, &[d / 2], &sin)?;
                let inputs = op::Inputs {
                    q: &q_t,
                    w: &w_t,
                    cos: &cos_t,
                    sin: &sin_t,
                    k: &k_t,
                    v: &v_t,
                };
                let mut attrs = op::Attrs::new(op::RequiredAttrs {
                    seq_q: seq_q as u32,
                    key_len: key_len as u32,
                    q_offset: q_offset as u32,
                    q_heads: q_heads as u32,
                    kv_heads: kv_heads as u32,
                    head_dim: d as u32,
                });
                attrs.scale = Some(1.0 / (d as f32).sqrt());
                let mut out = poisoned::<f32>(ctx, &[seq_q, q_heads * d])?;
                let outputs = op::OutputsMut { out: &mut out };
                let plan = plan_and_run!(op, ctx, inputs, outputs, attrs);
                Ok(ran(ctx, &plan, vec![("Out", read(ctx, &out)?)]))
            },
            || vec![reference(&k, &q, &w, (&cos, &sin), (&keys, &vals))],
        );
    }
}
