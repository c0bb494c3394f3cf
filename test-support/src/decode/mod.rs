//! A float64 reference of one decode step of a Gemma-4-style decoder, composed from the
//! references of the ops that make it (`ops`): what `examples/gemma-decoder` records on the
//! GPU, stage by stage. Each stage is a function of its inputs, so a test can check the GPU's
//! stage against the reference applied to the GPU's own inputs (no drift from earlier
//! stages), and [`step`] chains them into a whole independent decode.

pub mod ops;

use ops::{Codes, Dense, Rows};

/// The dimensions the reference needs.
#[derive(Clone, Debug)]
pub struct Dims {
    pub hidden: usize,
    pub layers: usize,
    pub q_heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub vocab: usize,
    pub ple_dim: usize,
    pub sliding_window: usize,
    pub global_every: usize,
    pub eps: f64,
    pub theta_local: f64,
    pub theta_global: f64,
}

impl Dims {
    pub fn is_global(&self, layer: usize) -> bool {
        (layer + 1).is_multiple_of(self.global_every)
    }

    pub fn kv_out(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// The rotation of `layer` at `pos`: `pos / theta^(2i / head_dim)` for each half-index.
    pub fn rotation(&self, layer: usize, pos: usize) -> (Vec<f64>, Vec<f64>) {
        let theta = if self.is_global(layer) {
            self.theta_global
        } else {
            self.theta_local
        };
        (0..self.head_dim / 2)
            .map(|i| {
                let angle = pos as f64 / theta.powf(2.0 * i as f64 / self.head_dim as f64);
                (angle.cos(), angle.sin())
            })
            .unzip()
    }

    /// The positions `layer` attends to from `pos`.
    pub fn keys(&self, layer: usize, pos: usize) -> std::ops::RangeInclusive<usize> {
        let first = if self.is_global(layer) {
            0
        } else {
            (pos + 1).saturating_sub(self.sliding_window)
        };
        first..=pos
    }
}

/// A projection's weights, in whichever form they take.
pub enum Weight<'w> {
    Codes(Codes<'w>),
    Dense(Dense),
}

impl Weight<'_> {
    fn rows(&self) -> &dyn Rows {
        match self {
            Weight::Codes(c) => c,
            Weight::Dense(d) => d,
        }
    }

    /// `W · a`.
    pub fn apply(&self, a: &[f64]) -> Vec<f64> {
        ops::linear(self.rows(), a)
    }

    /// `W · a` as the `presrq` kernels compute it for codes, from the row sum they are given.
    pub fn apply_presrq(&self, a: &[f64], sum_a: f64) -> Vec<f64> {
        match self {
            Weight::Codes(c) => ops::projection_presrq(c, a, sum_a),
            Weight::Dense(d) => ops::linear(d, a),
        }
    }
}

/// One layer's weights.
pub struct Layer<'w> {
    pub q: Weight<'w>,
    pub k: Weight<'w>,
    pub v: Weight<'w>,
    pub q_norm: &'w [f32],
    pub k_norm: &'w [f32],
    pub o: Weight<'w>,
    pub post_attention_norm: &'w [f32],
    pub pre_mlp_norm: &'w [f32],
    pub gate: Weight<'w>,
    pub up: Weight<'w>,
    pub down: Weight<'w>,
    pub post_mlp_norm: &'w [f32],
    pub ple_gate: Weight<'w>,
    pub ple_projection: Weight<'w>,
    pub post_ple_norm: &'w [f32],
    pub layer_scalar: f64,
    /// Applied by the stage before the layer: the embedding's or the previous layer's.
    pub input_norm: &'w [f32],
}

/// The whole decoder's weights.
pub struct Model<'w> {
    pub dims: Dims,
    /// The token's embedding row, dequantized and scaled.
    pub embed: Box<dyn Fn(usize) -> Vec<f64> + 'w>,
    /// The token's per-layer embedding row (every layer's slice), dequantized and scaled.
    pub ple_embed: Box<dyn Fn(usize) -> Vec<f64> + 'w>,
    pub ple_model_projection: Weight<'w>,
    pub ple_projection_norm: &'w [f32],
    pub layers: Vec<Layer<'w>>,
    pub final_norm: &'w [f32],
    pub lm_head: Weight<'w>,
}

/// A normalized input and its sum, which the next projection takes.
pub struct Normed {
    pub x: Vec<f64>,
    pub sum: f64,
}

fn normed(x: &[f64], w: &[f32], eps: f64) -> Normed {
    let x = ops::rms_norm(x, Some(w), eps);
    Normed {
        sum: x.iter().sum(),
        x,
    }
}

/// The embedding row of `token` and layer 0's input (`QatEmbedGather`, fused variant).
pub fn embed(m: &Model<'_>, token: usize) -> (Vec<f64>, Normed) {
    let hidden = (m.embed)(token);
    let x = normed(&hidden, m.layers[0].input_norm, m.dims.eps);
    (hidden, x)
}

/// The per-layer inputs of `token`: its gathered rows, the projection of its embedding
/// `hidden`, that normalized per layer, and their combination `(normed + gathered) / √2`.
pub struct PleInputs {
    pub gathered: Vec<f64>,
    pub projected: Vec<f64>,
    pub normed: Vec<f64>,
    pub combined: Vec<f64>,
}

pub fn ple_gather(m: &Model<'_>, token: usize) -> Vec<f64> {
    (m.ple_embed)(token)
}

pub fn ple_project(m: &Model<'_>, hidden: &[f64]) -> Vec<f64> {
    m.ple_model_projection.apply(hidden)
}

pub fn ple_norm(m: &Model<'_>, projected: &[f64]) -> Vec<f64> {
    projected
        .chunks(m.dims.ple_dim)
        .flat_map(|row| ops::rms_norm(row, Some(m.ple_projection_norm), m.dims.eps))
        .collect()
}

pub fn ple_combine(normed: &[f64], gathered: &[f64]) -> Vec<f64> {
    let factor = f64::from(std::f32::consts::FRAC_1_SQRT_2);
    normed
        .iter()
        .zip(gathered)
        .map(|(n, g)| (n + g) * factor)
        .collect()
}

pub fn ple_inputs(m: &Model<'_>, token: usize, hidden: &[f64]) -> PleInputs {
    let gathered = ple_gather(m, token);
    let projected = ple_project(m, hidden);
    let normed = ple_norm(m, &projected);
    let combined = ple_combine(&normed, &gathered);
    PleInputs {
        gathered,
        projected,
        normed,
        combined,
    }
}

/// The layer's query, key and value rows (`DecodeQkvProj`).
pub fn qkv(l: &Layer<'_>, x: &[f64], sum: f64) -> [Vec<f64>; 3] {
    [&l.q, &l.k, &l.v].map(|w| w.apply_presrq(x, sum))
}

/// The key row as cached: normalized per head with `k_norm` and rotated.
pub fn key_row(d: &Dims, l: &Layer<'_>, k: &[f64], layer: usize, pos: usize) -> Vec<f64> {
    let (cos, sin) = d.rotation(layer, pos);
    ops::norm_rope_heads(k, d.head_dim, l.k_norm, &cos, &sin, d.eps)
}

/// The value row as cached: normalized per head, without a weight.
pub fn value_row(d: &Dims, v: &[f64]) -> Vec<f64> {
    v.chunks(d.head_dim)
        .flat_map(|head| ops::rms_norm(head, None, d.eps))
        .collect()
}

/// Attention of the layer's query over its caches, up to `pos` (`DecodeAttention`, which also
/// normalizes and rotates the query).
pub fn attention(
    d: &Dims,
    l: &Layer<'_>,
    q: &[f64],
    cache: (&[f64], &[f64]),
    layer: usize,
    pos: usize,
) -> Vec<f64> {
    let (cos, sin) = d.rotation(layer, pos);
    let q = ops::norm_rope_heads(q, d.head_dim, l.q_norm, &cos, &sin, d.eps);
    ops::decode_attention(
        &q,
        cache.0,
        cache.1,
        d.kv_heads,
        d.head_dim,
        d.keys(layer, pos),
        1.0,
    )
}

/// The output projection's norm added to `hidden`, and the MLP's input (`DecodeOprojNorm`).
pub fn out_projection(
    d: &Dims,
    l: &Layer<'_>,
    attention: &[f64],
    hidden: &[f64],
) -> (Vec<f64>, Normed) {
    let o = l.o.apply(attention);
    let hidden = ops::norm_add(hidden, &o, l.post_attention_norm, 1.0, d.eps);
    let x = normed(&hidden, l.pre_mlp_norm, d.eps);
    (hidden, x)
}

/// `gelu(gate · x) · (up · x)` (`DecodeGateUpNorm`).
pub fn gate_up(l: &Layer<'_>, x: &[f64], sum: f64) -> Vec<f64> {
    let g = l.gate.apply_presrq(x, sum);
    let u = l.up.apply_presrq(x, sum);
    g.iter()
        .zip(&u)
        .map(|(g, u)| ops::gelu_tanh(*g) * u)
        .collect()
}

/// The down projection's norm added to `hidden` (`DecodeDownNormAdd`).
pub fn down(d: &Dims, l: &Layer<'_>, mlp: &[f64], hidden: &[f64]) -> Vec<f64> {
    ops::norm_add(hidden, &l.down.apply(mlp), l.post_mlp_norm, 1.0, d.eps)
}

/// `gelu(ple_gate · hidden) · ple[layer]` (`DecodePleGate`).
pub fn ple_gate(d: &Dims, l: &Layer<'_>, hidden: &[f64], ple: &[f64], layer: usize) -> Vec<f64> {
    let slice = &ple[layer * d.ple_dim..][..d.ple_dim];
    l.ple_gate
        .apply(hidden)
        .iter()
        .zip(slice)
        .map(|(g, p)| ops::gelu_tanh(*g) * p)
        .collect()
}

/// The per-layer projection's norm added to `hidden`, times the layer scalar, and the next
/// input normalized with `next_norm` (`DecodePleProjNorm`).
pub fn ple_projection(
    d: &Dims,
    l: &Layer<'_>,
    gated: &[f64],
    hidden: &[f64],
    next_norm: &[f32],
) -> (Vec<f64>, Normed) {
    let projected = l.ple_projection.apply(gated);
    let hidden = ops::norm_add(hidden, &projected, l.post_ple_norm, l.layer_scalar, d.eps);
    let x = normed(&hidden, next_norm, d.eps);
    (hidden, x)
}

/// The logits of the final normalized input.
pub fn lm_head(m: &Model<'_>, x: &Normed) -> Vec<f64> {
    m.lm_head.apply_presrq(&x.x, x.sum)
}

/// The norm that follows layer `layer`: the next layer's input norm, or the final norm.
pub fn next_norm<'w>(m: &Model<'w>, layer: usize) -> &'w [f32] {
    match m.layers.get(layer + 1) {
        Some(next) => next.input_norm,
        None => m.final_norm,
    }
}

/// Every layer's cached keys and values, `[position, kv_head, head_dim]` flattened.
pub struct Cache {
    pub keys: Vec<Vec<f64>>,
    pub values: Vec<Vec<f64>>,
}

impl Cache {
    pub fn new(d: &Dims) -> Self {
        Cache {
            keys: vec![Vec::new(); d.layers],
            values: vec![Vec::new(); d.layers],
        }
    }
}

/// What a step ends with.
pub struct StepOut {
    pub logits: Vec<f64>,
    /// The greedy token, and how far ahead of the runner-up its logit is.
    pub token: usize,
    pub margin: f64,
}

/// One whole decode step of `token` at `pos` (the cache holds positions `0..pos`).
pub fn step(m: &Model<'_>, cache: &mut Cache, token: usize, pos: usize) -> StepOut {
    let d = &m.dims;
    let (mut hidden, mut x) = embed(m, token);
    let ple = ple_inputs(m, token, &hidden).combined;
    for (layer, l) in m.layers.iter().enumerate() {
        let [q, k, v] = qkv(l, &x.x, x.sum);
        cache.keys[layer].extend(key_row(d, l, &k, layer, pos));
        cache.values[layer].extend(value_row(d, &v));
        let attended = attention(
            d,
            l,
            &q,
            (&cache.keys[layer], &cache.values[layer]),
            layer,
            pos,
        );
        let (h, mlp_in) = out_projection(d, l, &attended, &hidden);
        let mlp = gate_up(l, &mlp_in.x, mlp_in.sum);
        let h = down(d, l, &mlp, &h);
        let gated = ple_gate(d, l, &h, &ple, layer);
        (hidden, x) = ple_projection(d, l, &gated, &h, next_norm(m, layer));
    }
    let logits = lm_head(m, &x);
    let token = ops::first_max(&logits);
    let runner_up = logits
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != token)
        .map(|(_, v)| *v)
        .fold(f64::NEG_INFINITY, f64::max);
    StepOut {
        margin: logits[token] - runner_up,
        logits,
        token,
    }
}
