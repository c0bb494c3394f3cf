//! The decoder on a device: its weights uploaded once, and every buffer a token step uses
//! (the KV caches, the rotary tables, each stage's output) allocated once, before the first
//! token.

use kernel_runtime::half::f16;
use kernel_runtime::{Context, RuntimeError, Tensor};

use crate::config::Config;
use crate::weights::{Linear, QuantMatrix, Weights};

/// Packed codes and their scales on the device.
pub struct QuantGpu {
    pub words: Tensor<u32>,
    pub scale: Tensor<f32>,
}

impl QuantGpu {
    fn upload(ctx: &Context, m: &QuantMatrix) -> Result<Self, RuntimeError> {
        Ok(QuantGpu {
            words: Tensor::from_slice(ctx, &[m.rows, m.row_words()], &m.words)?,
            scale: Tensor::from_slice(ctx, &[m.rows], &m.scale)?,
        })
    }
}

/// A projection in the form its weights take.
pub enum LinearGpu {
    Quant(QuantGpu),
    Dense(Tensor<f16>),
}

impl LinearGpu {
    fn upload(ctx: &Context, l: &Linear) -> Result<Self, RuntimeError> {
        Ok(match l {
            Linear::Quant(m) => LinearGpu::Quant(QuantGpu::upload(ctx, m)?),
            Linear::Dense(m) => {
                LinearGpu::Dense(Tensor::from_slice(ctx, &[m.rows, m.cols], &m.values)?)
            }
        })
    }

    /// The dense matrix, or `None` for codes.
    pub fn dense(&self) -> Option<&Tensor<f16>> {
        match self {
            LinearGpu::Dense(t) => Some(t),
            LinearGpu::Quant(_) => None,
        }
    }

    /// The codes and their row scales, or `None` for a dense matrix.
    pub fn quant(&self) -> Option<&QuantGpu> {
        match self {
            LinearGpu::Quant(q) => Some(q),
            LinearGpu::Dense(_) => None,
        }
    }
}

/// One layer's weights and KV cache on the device.
pub struct LayerGpu {
    pub q: Tensor<u32>,
    pub k: Tensor<u32>,
    pub v: Tensor<u32>,
    /// The q, k and v row scales, end to end (`DecodeQkvProj`'s `Scales`).
    pub qkv_scales: Tensor<f32>,
    pub q_norm: Tensor<f32>,
    pub k_norm: Tensor<f32>,
    pub o: QuantGpu,
    /// The post-attention norm, then the pre-MLP norm (`DecodeOprojNorm`'s `W12`).
    pub o_norms: Tensor<f32>,
    pub gate: QuantGpu,
    pub up: QuantGpu,
    pub down: QuantGpu,
    pub post_mlp_norm: Tensor<f32>,
    pub ple_gate: LinearGpu,
    pub ple_projection: LinearGpu,
    /// The post-PLE norm, the next layer's input norm (the final norm after the last layer)
    /// and the layer scalar (`DecodePleProjNorm`'s `W12S`).
    pub ple_norms: Tensor<f32>,
}

/// One layer's keys and values, `[max_positions, kv_heads, head_dim]` each.
pub struct KvCache {
    pub k: Tensor<f32>,
    pub v: Tensor<f32>,
}

/// The rotary tables of one kind of layer: `[max_positions, head_dim / 2]`, and the current
/// position's row, which each token copies in.
pub struct Rotary {
    pub cos_table: Tensor<f32>,
    pub sin_table: Tensor<f32>,
    pub cos: Tensor<f32>,
    pub sin: Tensor<f32>,
}

impl Rotary {
    fn new(ctx: &Context, c: &Config, theta: f64) -> Result<Self, RuntimeError> {
        let half = c.head_dim / 2;
        let angle =
            |pos: usize, i: usize| pos as f64 / theta.powf(2.0 * i as f64 / c.head_dim as f64);
        let table = |f: fn(f64) -> f64| -> Vec<f32> {
            (0..c.max_positions * half)
                .map(|j| f(angle(j / half, j % half)) as f32)
                .collect()
        };
        Ok(Rotary {
            cos_table: Tensor::from_slice(ctx, &[c.max_positions, half], &table(f64::cos))?,
            sin_table: Tensor::from_slice(ctx, &[c.max_positions, half], &table(f64::sin))?,
            cos: Tensor::zeros(ctx, &[half])?,
            sin: Tensor::zeros(ctx, &[half])?,
        })
    }
}

/// Every buffer a token step reads or writes besides the weights.
pub struct Activations {
    /// The token being decoded; `ArgMax` writes the next one here.
    pub ids: Tensor<u32>,
    /// Every token decoded, by position.
    pub tokens: Tensor<u32>,
    /// The residual stream.
    pub hidden: Tensor<f32>,
    /// The current layer's normalized input, and its sum (the `presrq` contract).
    pub x: Tensor<f32>,
    pub x_sum: Tensor<f32>,
    pub q: Tensor<f32>,
    pub k: Tensor<f32>,
    pub v: Tensor<f32>,
    pub attention: Tensor<f32>,
    /// The MLP's normalized input and its sum.
    pub mlp_in: Tensor<f32>,
    pub mlp_in_sum: Tensor<f32>,
    pub mlp: Tensor<f32>,
    pub ple_gated: Tensor<f32>,
    /// The per-layer embeddings of the token: gathered, projected, normalized, combined.
    pub ple_gathered: Tensor<f32>,
    pub ple_projected: Tensor<f32>,
    pub ple: Tensor<f32>,
    pub logits: Tensor<f32>,
    pub cand_val: Tensor<f32>,
    pub cand_idx: Tensor<u32>,
    /// Each layer's KV cache.
    pub caches: Vec<KvCache>,
}

/// Constant inputs besides the weights.
pub struct Constants {
    pub local: Rotary,
    pub global: Rotary,
    /// The value norm has no weight and values are not rotated: ones, and a rotation by 0.
    pub ones: Tensor<f32>,
    pub no_turn_cos: Tensor<f32>,
    pub no_turn_sin: Tensor<f32>,
    /// `gelu(k / 16)` for `k` in `-128..128`: the packages bind it even when they evaluate
    /// the GELU.
    pub gelu_lut: Tensor<f32>,
    /// `1/√2`, the per-layer embedding's combining factor.
    pub ple_factor: Tensor<f32>,
}

/// The decoder's weights on the device.
pub struct WeightsGpu {
    pub embed: QuantGpu,
    pub ple_embed: QuantGpu,
    pub ple_model_projection: LinearGpu,
    pub ple_projection_norm: Tensor<f32>,
    pub embed_norm: Tensor<f32>,
    pub layers: Vec<LayerGpu>,
    pub lm_head: LinearGpu,
}

/// A decoder ready to step: configuration, weights, constants and activations.
pub struct Model {
    pub config: Config,
    pub weights: WeightsGpu,
    pub constants: Constants,
    pub act: Activations,
}

impl Model {
    /// Uploads `weights` and allocates everything a step uses.
    pub fn upload(ctx: &Context, config: &Config, weights: &Weights) -> Result<Self, RuntimeError> {
        let c = config;
        let f32s = |v: &[f32]| Tensor::from_slice(ctx, &[v.len()], v);
        let table = |t: &crate::weights::EmbedTable| -> Result<QuantGpu, RuntimeError> {
            Ok(QuantGpu {
                words: Tensor::from_slice(ctx, &[t.rows, t.cols * t.bits as usize / 32], &t.words)?,
                scale: Tensor::from_slice(ctx, &[t.rows, t.cols / t.group], &t.scale)?,
            })
        };
        let mut layers = Vec::with_capacity(c.layers);
        for (l, w) in weights.layers.iter().enumerate() {
            let next_norm = match weights.layers.get(l + 1) {
                Some(next) => &next.input_norm,
                None => &weights.final_norm,
            };
            let scales: Vec<f32> = [&w.q.scale, &w.k.scale, &w.v.scale]
                .into_iter()
                .flatten()
                .copied()
                .collect();
            let o_norms: Vec<f32> = [&w.post_attention_norm, &w.pre_mlp_norm]
                .into_iter()
                .flatten()
                .copied()
                .collect();
            let mut ple_norms: Vec<f32> = [&w.post_ple_norm, next_norm]
                .into_iter()
                .flatten()
                .copied()
                .collect();
            ple_norms.push(w.layer_scalar);
            layers.push(LayerGpu {
                q: Tensor::from_slice(ctx, &[w.q.rows, w.q.row_words()], &w.q.words)?,
                k: Tensor::from_slice(ctx, &[w.k.rows, w.k.row_words()], &w.k.words)?,
                v: Tensor::from_slice(ctx, &[w.v.rows, w.v.row_words()], &w.v.words)?,
                qkv_scales: f32s(&scales)?,
                q_norm: f32s(&w.q_norm)?,
                k_norm: f32s(&w.k_norm)?,
                o: QuantGpu::upload(ctx, &w.o)?,
                o_norms: f32s(&o_norms)?,
                gate: QuantGpu::upload(ctx, &w.gate)?,
                up: QuantGpu::upload(ctx, &w.up)?,
                down: QuantGpu::upload(ctx, &w.down)?,
                post_mlp_norm: f32s(&w.post_mlp_norm)?,
                ple_gate: LinearGpu::upload(ctx, &w.ple_gate)?,
                ple_projection: LinearGpu::upload(ctx, &w.ple_projection)?,
                ple_norms: f32s(&ple_norms)?,
            });
        }
        let weights_gpu = WeightsGpu {
            embed: table(&weights.embed)?,
            ple_embed: table(&weights.ple_embed)?,
            ple_model_projection: LinearGpu::upload(ctx, &weights.ple_model_projection)?,
            ple_projection_norm: f32s(&weights.ple_projection_norm)?,
            embed_norm: f32s(&weights.layers[0].input_norm)?,
            layers,
            lm_head: LinearGpu::upload(ctx, &weights.lm_head)?,
        };
        let half = c.head_dim / 2;
        let constants = Constants {
            local: Rotary::new(ctx, c, c.rope_theta_local)?,
            global: Rotary::new(ctx, c, c.rope_theta_global)?,
            ones: f32s(&vec![1.0; c.head_dim])?,
            no_turn_cos: f32s(&vec![1.0; half])?,
            no_turn_sin: f32s(&vec![0.0; half])?,
            gelu_lut: f32s(&gelu_table(1.0 / 16.0))?,
            ple_factor: f32s(&[std::f32::consts::FRAC_1_SQRT_2])?,
        };
        let zeros = |shape: &[usize]| Tensor::<f32>::zeros(ctx, shape);
        let groups = c.vocab.div_ceil(128);
        let act = Activations {
            ids: Tensor::zeros(ctx, &[1])?,
            tokens: Tensor::zeros(ctx, &[c.max_positions])?,
            hidden: zeros(&[1, c.hidden])?,
            x: zeros(&[1, c.hidden])?,
            x_sum: zeros(&[1])?,
            q: zeros(&[1, c.q_out()])?,
            k: zeros(&[1, c.kv_out()])?,
            v: zeros(&[1, c.kv_out()])?,
            attention: zeros(&[1, c.q_out()])?,
            mlp_in: zeros(&[1, c.hidden])?,
            mlp_in_sum: zeros(&[1])?,
            mlp: zeros(&[1, c.intermediate])?,
            ple_gated: zeros(&[1, c.ple_dim])?,
            ple_gathered: zeros(&[1, c.ple_total()])?,
            ple_projected: zeros(&[1, c.ple_total()])?,
            ple: zeros(&[1, c.ple_total()])?,
            logits: zeros(&[1, c.vocab])?,
            cand_val: zeros(&[groups])?,
            cand_idx: Tensor::zeros(ctx, &[groups])?,
            caches: (0..c.layers)
                .map(|_| {
                    let shape = [c.max_positions, c.kv_heads, c.head_dim];
                    Ok(KvCache {
                        k: zeros(&shape)?,
                        v: zeros(&shape)?,
                    })
                })
                .collect::<Result<_, RuntimeError>>()?,
        };
        Ok(Model {
            config: c.clone(),
            weights: weights_gpu,
            constants,
            act,
        })
    }
}

/// The tanh-approximated GELU.
pub fn gelu(v: f64) -> f64 {
    0.5 * v * (1.0 + (0.797_884_560_802_865_4 * (v + 0.044_715 * v * v * v)).tanh())
}

/// The table the packages read when an activation is on the int8 grid of `step`:
/// `gelu(k · step)` for `k` in `-128..128`.
pub fn gelu_table(step: f64) -> Vec<f32> {
    (-128..128)
        .map(|k| gelu(f64::from(k) * step) as f32)
        .collect()
}
