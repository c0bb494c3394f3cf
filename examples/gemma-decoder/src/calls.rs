//! Every op call of a token step, bound once to the model's tensors (`bind` of each generated
//! module): a step updates the few whose attributes follow the position (the KV-cache writes
//! and attention) and records them all, in order, looking nothing up.

use corpus::kernels::{
    add_in_place, arg_max, decode_attention, decode_down_norm_add, decode_gate_up_norm,
    decode_oproj_norm, decode_ple_gate, decode_ple_proj_norm, decode_qk_norm_rope, decode_qkv_proj,
    dense_gemv, mul_broadcast, qat_embed_gather, qat_mat_mul, rmsnorm,
};
use kernel_runtime::half::f16;
use kernel_runtime::{Bound, Context, Op, OpError, Plan, wgpu};

use crate::model::{LinearGpu, Model};
use crate::step::{At, DecodeError, Stage, StepAttrs, at};

/// A bound call of any op, as a step records it.
pub(crate) trait Call {
    /// Zeroes the call's intermediates, before the pass it is recorded in.
    fn clear(&self, encoder: &mut wgpu::CommandEncoder);
    /// Records the call into `pass`, after `clear` in the same encoder.
    fn record(&self, pass: &mut wgpu::ComputePass<'_>);
    /// The plan it records.
    fn plan(&self) -> &Plan;
}

impl<O: Op> Call for Bound<O> {
    fn clear(&self, encoder: &mut wgpu::CommandEncoder) {
        self.clear_intermediates(encoder);
    }
    fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        self.record_cleared(pass);
    }
    fn plan(&self) -> &Plan {
        Bound::plan(self)
    }
}

/// The calls whose attributes follow the position, per layer.
pub(crate) struct Positional {
    key: Bound<decode_qk_norm_rope::Op>,
    value: Bound<decode_qk_norm_rope::Op>,
    attention: Bound<decode_attention::Op>,
}

/// Which call a stage records.
enum Which {
    Fixed(Box<dyn Call>),
    Key(usize),
    Value(usize),
    Attention(usize),
}

/// One stage's call: where it is, what it records, and the buffers it writes (for a probe).
pub(crate) struct Entry {
    pub(crate) at: At,
    which: Which,
    pub(crate) outputs: Vec<(&'static str, wgpu::Buffer)>,
}

/// A token step's calls, in the order they run.
pub(crate) struct Calls {
    pub(crate) entries: Vec<Entry>,
    positional: Vec<Positional>,
}

impl Calls {
    /// The call an entry records.
    pub(crate) fn call<'a>(&'a self, entry: &'a Entry) -> &'a dyn Call {
        match &entry.which {
            Which::Fixed(call) => call.as_ref(),
            Which::Key(l) => &self.positional[*l].key,
            Which::Value(l) => &self.positional[*l].value,
            Which::Attention(l) => &self.positional[*l].attention,
        }
    }

    /// Sets the position-dependent attributes of every layer's calls for position `pos`.
    pub(crate) fn update(
        &mut self,
        ctx: &Context,
        attrs: &mut StepAttrs,
        model: &Model,
        pos: usize,
    ) -> Result<(), DecodeError> {
        let c = &model.config;
        let row = (pos * c.kv_out()) as u32;
        attrs.key_rope.dst_offset = Some(row);
        attrs.value_norm.dst_offset = Some(row);
        attrs.attention.key_len = (pos + 1) as u32;
        attrs.attention.q_offset = pos as u32;
        for (layer, calls) in self.positional.iter_mut().enumerate() {
            let fail = |stage| at(Some(layer), stage);
            attrs.attention.window = (!c.is_global(layer)).then_some(c.sliding_window as u32);
            calls
                .key
                .update(ctx, &attrs.key_rope)
                .map_err(fail(Stage::KeyCache))?;
            calls
                .value
                .update(ctx, &attrs.value_norm)
                .map_err(fail(Stage::ValueCache))?;
            calls
                .attention
                .update(ctx, &attrs.attention)
                .map_err(fail(Stage::Attention))?;
        }
        Ok(())
    }

    /// Binds every call of the step to `model`'s tensors, with the attributes of position 0.
    pub(crate) fn bind(
        ctx: &Context,
        model: &mut Model,
        attrs: &mut StepAttrs,
    ) -> Result<Self, DecodeError> {
        let Model {
            config: c,
            weights: w,
            constants: k,
            act: a,
        } = model;
        let mut entries = Vec::new();

        push(
            &mut entries,
            None,
            Stage::Embed,
            boxed(qat_embed_gather::bind(
                ctx,
                &qat_embed_gather::Inputs {
                    ids: &a.ids,
                    bits: &w.embed.words,
                    scale: &w.embed.scale,
                    w: Some(&w.embed_norm),
                },
                qat_embed_gather::OutputsMut {
                    out: &mut a.hidden,
                    y2: Some(&mut a.x),
                    sum_a: Some(&mut a.x_sum),
                },
                &attrs.embed,
            )),
            &[
                ("hidden", a.hidden.buffer()),
                ("x", a.x.buffer()),
                ("x_sum", a.x_sum.buffer()),
            ],
        )?;
        push(
            &mut entries,
            None,
            Stage::PleGather,
            boxed(qat_embed_gather::bind(
                ctx,
                &qat_embed_gather::Inputs {
                    ids: &a.ids,
                    bits: &w.ple_embed.words,
                    scale: &w.ple_embed.scale,
                    w: None,
                },
                qat_embed_gather::OutputsMut {
                    out: &mut a.ple_gathered,
                    y2: None,
                    sum_a: None,
                },
                &attrs.ple_gather,
            )),
            &[("ple_gathered", a.ple_gathered.buffer())],
        )?;
        let project = match &w.ple_model_projection {
            LinearGpu::Quant(m) => boxed(qat_mat_mul::bind(
                ctx,
                &qat_mat_mul::Inputs {
                    a: &a.hidden,
                    bits: &m.words,
                    scale: &m.scale,
                    sum_a: None,
                },
                qat_mat_mul::OutputsMut {
                    out: &mut a.ple_projected,
                    cand_val: None,
                    cand_idx: None,
                },
                &attrs.ple_project_quant,
            )),
            LinearGpu::Dense(m) => boxed(dense_gemv::bind(
                ctx,
                &dense_gemv::Inputs { a: &a.hidden, w: m },
                dense_gemv::OutputsMut {
                    out: &mut a.ple_projected,
                },
                &attrs.ple_project_dense,
            )),
        };
        push(
            &mut entries,
            None,
            Stage::PleProject,
            project,
            &[("ple_projected", a.ple_projected.buffer())],
        )?;
        push(
            &mut entries,
            None,
            Stage::PleNorm,
            boxed(rmsnorm::bind(
                ctx,
                &rmsnorm::Inputs {
                    x: &a.ple_projected,
                    w: Some(&w.ple_projection_norm),
                },
                rmsnorm::OutputsMut { y: &mut a.ple },
                &attrs.ple_norm,
            )),
            &[("ple", a.ple.buffer())],
        )?;
        push(
            &mut entries,
            None,
            Stage::PleCombine,
            boxed(add_in_place::bind(
                ctx,
                &add_in_place::Inputs { x: &a.ple_gathered },
                add_in_place::OutputsMut { y: &mut a.ple },
                &attrs.ple_add,
            )),
            &[],
        )?;
        push(
            &mut entries,
            None,
            Stage::PleCombine,
            boxed(mul_broadcast::bind(
                ctx,
                &mul_broadcast::Inputs {
                    factor: &k.ple_factor,
                },
                mul_broadcast::OutputsMut { x: &mut a.ple },
                &attrs.ple_scale,
            )),
            &[("ple", a.ple.buffer())],
        )?;

        let mut positional = Vec::with_capacity(c.layers);
        for (layer, l) in w.layers.iter().enumerate() {
            let here = Some(layer);
            let rotary = if c.is_global(layer) {
                &k.global
            } else {
                &k.local
            };
            push(
                &mut entries,
                here,
                Stage::Qkv,
                boxed(decode_qkv_proj::bind(
                    ctx,
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
                )),
                &[
                    ("q", a.q.buffer()),
                    ("k", a.k.buffer()),
                    ("v", a.v.buffer()),
                ],
            )?;
            let cache = &mut a.caches[layer];
            let fail = |stage| at(here, stage);
            attrs.attention.window = (!c.is_global(layer)).then_some(c.sliding_window as u32);
            let calls = Positional {
                key: decode_qk_norm_rope::bind(
                    ctx,
                    &decode_qk_norm_rope::Inputs {
                        x: &a.k,
                        w: &l.k_norm,
                        cos: &rotary.cos,
                        sin: &rotary.sin,
                    },
                    decode_qk_norm_rope::OutputsMut { yn: &mut cache.k },
                    &attrs.key_rope,
                )
                .map_err(fail(Stage::KeyCache))?,
                value: decode_qk_norm_rope::bind(
                    ctx,
                    &decode_qk_norm_rope::Inputs {
                        x: &a.v,
                        w: &k.ones,
                        cos: &k.no_turn_cos,
                        sin: &k.no_turn_sin,
                    },
                    decode_qk_norm_rope::OutputsMut { yn: &mut cache.v },
                    &attrs.value_norm,
                )
                .map_err(fail(Stage::ValueCache))?,
                attention: decode_attention::bind(
                    ctx,
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
                .map_err(fail(Stage::Attention))?,
            };
            for (stage, which, name, buffer) in [
                (
                    Stage::KeyCache,
                    Which::Key(layer),
                    "k_cache",
                    cache.k.buffer(),
                ),
                (
                    Stage::ValueCache,
                    Which::Value(layer),
                    "v_cache",
                    cache.v.buffer(),
                ),
                (
                    Stage::Attention,
                    Which::Attention(layer),
                    "attention",
                    a.attention.buffer(),
                ),
            ] {
                entries.push(Entry {
                    at: At { layer: here, stage },
                    which,
                    outputs: vec![(name, buffer.clone())],
                });
            }
            positional.push(calls);
            push(
                &mut entries,
                here,
                Stage::OutProjection,
                boxed(decode_oproj_norm::bind(
                    ctx,
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
                )),
                &[
                    ("hidden", a.hidden.buffer()),
                    ("mlp_in", a.mlp_in.buffer()),
                    ("mlp_in_sum", a.mlp_in_sum.buffer()),
                ],
            )?;
            push(
                &mut entries,
                here,
                Stage::GateUp,
                boxed(decode_gate_up_norm::bind(
                    ctx,
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
                )),
                &[("mlp", a.mlp.buffer())],
            )?;
            push(
                &mut entries,
                here,
                Stage::Down,
                boxed(decode_down_norm_add::bind(
                    ctx,
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
                )),
                &[("hidden", a.hidden.buffer())],
            )?;
            attrs.ple_gate.ple_offset = (layer * c.ple_dim) as u32;
            push(
                &mut entries,
                here,
                Stage::PleGate,
                boxed(decode_ple_gate::bind(
                    ctx,
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
                )),
                &[("ple_gated", a.ple_gated.buffer())],
            )?;
            push(
                &mut entries,
                here,
                Stage::PleProjection,
                boxed(decode_ple_proj_norm::bind(
                    ctx,
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
                )),
                &[
                    ("hidden", a.hidden.buffer()),
                    ("x", a.x.buffer()),
                    ("x_sum", a.x_sum.buffer()),
                ],
            )?;
        }

        match &w.lm_head {
            LinearGpu::Quant(m) => {
                push(
                    &mut entries,
                    None,
                    Stage::LmHead,
                    boxed(qat_mat_mul::bind(
                        ctx,
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
                    )),
                    &[
                        ("logits", a.logits.buffer()),
                        ("cand_val", a.cand_val.buffer()),
                        ("cand_idx", a.cand_idx.buffer()),
                    ],
                )?;
                push(
                    &mut entries,
                    None,
                    Stage::ArgMax,
                    boxed(arg_max::bind(
                        ctx,
                        &arg_max::Inputs::<f32> {
                            x: None,
                            cand_val: Some(&a.cand_val),
                            cand_idx: Some(&a.cand_idx),
                        },
                        arg_max::OutputsMut { out: &mut a.ids },
                        &attrs.arg_max,
                    )),
                    &[("ids", a.ids.buffer())],
                )?;
            }
            LinearGpu::Dense(m) => {
                push(
                    &mut entries,
                    None,
                    Stage::LmHead,
                    boxed(dense_gemv::bind(
                        ctx,
                        &dense_gemv::Inputs { a: &a.x, w: m },
                        dense_gemv::OutputsMut { out: &mut a.logits },
                        &attrs.lm_head_dense,
                    )),
                    &[("logits", a.logits.buffer())],
                )?;
                push(
                    &mut entries,
                    None,
                    Stage::ArgMax,
                    boxed(arg_max::bind(
                        ctx,
                        &arg_max::Inputs {
                            x: Some(&a.logits),
                            cand_val: None,
                            cand_idx: None,
                        },
                        arg_max::OutputsMut { out: &mut a.ids },
                        &attrs.arg_max,
                    )),
                    &[("ids", a.ids.buffer())],
                )?;
            }
        }
        Ok(Calls {
            entries,
            positional,
        })
    }
}

/// Adds the call of `stage` to the step, with the buffers it writes.
fn push(
    entries: &mut Vec<Entry>,
    layer: Option<usize>,
    stage: Stage,
    call: Result<Box<dyn Call>, OpError>,
    outputs: &[(&'static str, &wgpu::Buffer)],
) -> Result<(), DecodeError> {
    let call = call.map_err(at(layer, stage))?;
    entries.push(Entry {
        at: At { layer, stage },
        which: Which::Fixed(call),
        outputs: outputs.iter().map(|&(n, b)| (n, b.clone())).collect(),
    });
    Ok(())
}

fn boxed<O: Op + 'static>(bound: Result<Bound<O>, OpError>) -> Result<Box<dyn Call>, OpError> {
    bound.map(|b| Box::new(b) as Box<dyn Call>)
}
