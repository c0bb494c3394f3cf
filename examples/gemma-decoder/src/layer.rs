//! The stages of one decoder layer and of the head, as [`crate::step`] records them.

use corpus::kernels::{
    arg_max, decode_attention, decode_down_norm_add, decode_gate_up_norm, decode_oproj_norm,
    decode_ple_gate, decode_ple_proj_norm, decode_qk_norm_rope, decode_qkv_proj, dense_gemv,
    qat_mat_mul,
};
use kernel_runtime::half::f16;
use kernel_runtime::{Context, wgpu};

use crate::model::LinearGpu;
use crate::step::{At, DecodeError, Parts, Probe, Stage, StepAttrs, at};

impl Parts<'_> {
    /// Layer `layer` at position `pos`.
    pub(crate) fn layer(
        &mut self,
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        attrs: &mut StepAttrs,
        layer: usize,
        pos: usize,
        probe: &mut dyn Probe,
    ) -> Result<(), DecodeError> {
        let Parts { c, w, k, a } = self;
        let l = &w.layers[layer];
        let rotary = if c.is_global(layer) {
            &k.global
        } else {
            &k.local
        };
        let here = |stage| At {
            layer: Some(layer),
            stage,
        };
        let fail = |stage| at(Some(layer), stage);

        decode_qkv_proj::record_into(
            ctx,
            encoder,
            &decode_qkv_proj::Inputs {
                a: &a.x,
                qbits: &l.q,
                kbits: &l.k,
                vbits: &l.v,
                scales: &l.qkv_scales,
                sum_a: &a.x_sum,
            },
            decode_qkv_proj::OutputsMut {
                q: &mut a.q,
                k: &mut a.k,
                v: &mut a.v,
            },
            &attrs.qkv,
        )
        .map_err(fail(Stage::Qkv))?;
        probe.after(
            encoder,
            here(Stage::Qkv),
            &[
                ("q", a.q.buffer()),
                ("k", a.k.buffer()),
                ("v", a.v.buffer()),
            ],
        );

        // The position's key and value rows go straight into the cache: the key normalized
        // and rotated, the value normalized without a weight and not rotated.
        let row = (pos * c.kv_out()) as u32;
        attrs.key_rope.dst_offset = Some(row);
        attrs.value_norm.dst_offset = Some(row);
        let cache = &mut a.caches[layer];
        decode_qk_norm_rope::record_into(
            ctx,
            encoder,
            &decode_qk_norm_rope::Inputs {
                x: &a.k,
                w: &l.k_norm,
                cos: &rotary.cos,
                sin: &rotary.sin,
            },
            decode_qk_norm_rope::OutputsMut { yn: &mut cache.k },
            &attrs.key_rope,
        )
        .map_err(fail(Stage::KeyCache))?;
        probe.after(
            encoder,
            here(Stage::KeyCache),
            &[("k_cache", cache.k.buffer())],
        );
        decode_qk_norm_rope::record_into(
            ctx,
            encoder,
            &decode_qk_norm_rope::Inputs {
                x: &a.v,
                w: &k.ones,
                cos: &k.no_turn_cos,
                sin: &k.no_turn_sin,
            },
            decode_qk_norm_rope::OutputsMut { yn: &mut cache.v },
            &attrs.value_norm,
        )
        .map_err(fail(Stage::ValueCache))?;
        probe.after(
            encoder,
            here(Stage::ValueCache),
            &[("v_cache", cache.v.buffer())],
        );

        attrs.attention.key_len = (pos + 1) as u32;
        attrs.attention.q_offset = pos as u32;
        attrs.attention.window = (!c.is_global(layer)).then_some(c.sliding_window as u32);
        decode_attention::record_into(
            ctx,
            encoder,
            &decode_attention::Inputs {
                q: &a.q,
                w: &l.q_norm,
                cos: &rotary.cos,
                sin: &rotary.sin,
                k: &cache.k,
                v: &cache.v,
            },
            decode_attention::OutputsMut {
                out: &mut a.attention,
            },
            &attrs.attention,
        )
        .map_err(fail(Stage::Attention))?;
        probe.after(
            encoder,
            here(Stage::Attention),
            &[("attention", a.attention.buffer())],
        );

        decode_oproj_norm::record_into(
            ctx,
            encoder,
            &decode_oproj_norm::Inputs {
                a: &a.attention,
                bits: &l.o.words,
                scale: &l.o.scale,
                w12: &l.o_norms,
            },
            decode_oproj_norm::OutputsMut {
                hidden: &mut a.hidden,
                y2: &mut a.mlp_in,
                sum2: &mut a.mlp_in_sum,
            },
            &attrs.out_projection,
        )
        .map_err(fail(Stage::OutProjection))?;
        probe.after(
            encoder,
            here(Stage::OutProjection),
            &[
                ("hidden", a.hidden.buffer()),
                ("mlp_in", a.mlp_in.buffer()),
                ("mlp_in_sum", a.mlp_in_sum.buffer()),
            ],
        );

        decode_gate_up_norm::record_into(
            ctx,
            encoder,
            &decode_gate_up_norm::Inputs {
                hidden: &a.mlp_in,
                gate_bits: &l.gate.words,
                gate_scale: &l.gate.scale,
                up_bits: &l.up.words,
                up_scale: &l.up.scale,
                sum_a: Some(&a.mlp_in_sum),
                gelu_lut: &k.gelu_lut,
            },
            decode_gate_up_norm::OutputsMut { out: &mut a.mlp },
            &attrs.gate_up,
        )
        .map_err(fail(Stage::GateUp))?;
        probe.after(encoder, here(Stage::GateUp), &[("mlp", a.mlp.buffer())]);

        decode_down_norm_add::record_into(
            ctx,
            encoder,
            &decode_down_norm_add::Inputs {
                a: &a.mlp,
                bits: &l.down.words,
                scale: &l.down.scale,
                w: &l.post_mlp_norm,
            },
            decode_down_norm_add::OutputsMut {
                hidden: &mut a.hidden,
            },
            &attrs.down,
        )
        .map_err(fail(Stage::Down))?;
        probe.after(encoder, here(Stage::Down), &[("hidden", a.hidden.buffer())]);

        attrs.ple_gate.ple_offset = (layer * c.ple_dim) as u32;
        decode_ple_gate::record_into(
            ctx,
            encoder,
            &decode_ple_gate::Inputs::<f32, f16> {
                a: &a.hidden,
                w: l.ple_gate.dense(),
                codes: l.ple_gate.quant().map(|q| &q.words),
                row_scale: l.ple_gate.quant().map(|q| &q.scale),
                ple: &a.ple,
                gelu_lut: &k.gelu_lut,
            },
            decode_ple_gate::OutputsMut {
                out: &mut a.ple_gated,
            },
            &attrs.ple_gate,
        )
        .map_err(fail(Stage::PleGate))?;
        probe.after(
            encoder,
            here(Stage::PleGate),
            &[("ple_gated", a.ple_gated.buffer())],
        );

        decode_ple_proj_norm::record_into(
            ctx,
            encoder,
            &decode_ple_proj_norm::Inputs::<f32, f16> {
                a: &a.ple_gated,
                wt: l.ple_projection.dense(),
                codes: l.ple_projection.quant().map(|q| &q.words),
                row_scale: l.ple_projection.quant().map(|q| &q.scale),
                w12s: &l.ple_norms,
            },
            decode_ple_proj_norm::OutputsMut {
                hidden: &mut a.hidden,
                y2: &mut a.x,
                sum2: &mut a.x_sum,
            },
            &attrs.ple_projection,
        )
        .map_err(fail(Stage::PleProjection))?;
        probe.after(
            encoder,
            here(Stage::PleProjection),
            &[
                ("hidden", a.hidden.buffer()),
                ("x", a.x.buffer()),
                ("x_sum", a.x_sum.buffer()),
            ],
        );
        Ok(())
    }

    /// The LM head over the final normalized input, and the argmax into `ids`.
    pub(crate) fn head(
        &mut self,
        ctx: &Context,
        encoder: &mut wgpu::CommandEncoder,
        attrs: &StepAttrs,
        probe: &mut dyn Probe,
    ) -> Result<(), DecodeError> {
        let Parts { w, a, .. } = self;
        let here = |stage| At { layer: None, stage };
        match &w.lm_head {
            LinearGpu::Quant(m) => {
                qat_mat_mul::record_into(
                    ctx,
                    encoder,
                    &qat_mat_mul::Inputs {
                        a: &a.x,
                        bits: &m.words,
                        scale: &m.scale,
                        sum_a: Some(&a.x_sum),
                    },
                    qat_mat_mul::OutputsMut {
                        out: &mut a.logits,
                        cand_val: Some(&mut a.cand_val),
                        cand_idx: Some(&mut a.cand_idx),
                    },
                    &attrs.lm_head_quant,
                )
                .map_err(at(None, Stage::LmHead))?;
                probe.after(
                    encoder,
                    here(Stage::LmHead),
                    &[
                        ("logits", a.logits.buffer()),
                        ("cand_val", a.cand_val.buffer()),
                        ("cand_idx", a.cand_idx.buffer()),
                    ],
                );
                arg_max::record_into(
                    ctx,
                    encoder,
                    &arg_max::Inputs::<f32> {
                        x: None,
                        cand_val: Some(&a.cand_val),
                        cand_idx: Some(&a.cand_idx),
                    },
                    arg_max::OutputsMut { out: &mut a.ids },
                    &attrs.arg_max,
                )
            }
            LinearGpu::Dense(m) => {
                dense_gemv::record_into(
                    ctx,
                    encoder,
                    &dense_gemv::Inputs { a: &a.x, w: m },
                    dense_gemv::OutputsMut { out: &mut a.logits },
                    &attrs.lm_head_dense,
                )
                .map_err(at(None, Stage::LmHead))?;
                probe.after(
                    encoder,
                    here(Stage::LmHead),
                    &[("logits", a.logits.buffer())],
                );
                arg_max::record_into(
                    ctx,
                    encoder,
                    &arg_max::Inputs {
                        x: Some(&a.logits),
                        cand_val: None,
                        cand_idx: None,
                    },
                    arg_max::OutputsMut { out: &mut a.ids },
                    &attrs.arg_max,
                )
            }
        }
        .map_err(at(None, Stage::ArgMax))?;
        probe.after(encoder, here(Stage::ArgMax), &[("ids", a.ids.buffer())]);
        Ok(())
    }
}
