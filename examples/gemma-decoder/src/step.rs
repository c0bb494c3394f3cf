//! The stages of a token step and their attributes: the embedding gather with the first input
//! norm, the per-layer embeddings, per layer the QKV projection, the K and V rows into the
//! cache with their norms and rotation, attention, the output projection with its norms, the
//! MLP's gate/up and down halves with theirs, the per-layer-embedding gate and projection
//! (which also normalizes the next layer's input), then the LM head and the argmax, whose
//! token is the next step's input. `calls.rs` binds them, `run.rs` records them.

use std::fmt;

use corpus::kernels::{
    add_in_place, arg_max, decode_attention, decode_down_norm_add, decode_gate_up_norm,
    decode_oproj_norm, decode_ple_gate, decode_ple_proj_norm, decode_qk_norm_rope, decode_qkv_proj,
    dense_gemv, mul_broadcast, qat_embed_gather, qat_mat_mul, rmsnorm,
};
use kernel_runtime::{OpError, RuntimeError, wgpu};

use crate::config::{Config, Precision};
use crate::weights::Weights;

/// A stage of the step: one op call (two for the per-layer embeddings' combination).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Stage {
    /// The token's embedding row, and layer 0's normalized input and its sum.
    Embed,
    /// Every layer's per-layer embedding row of the token.
    PleGather,
    /// The embedding projected to every layer's per-layer input.
    PleProject,
    /// That projection normalized per layer.
    PleNorm,
    /// The normalized projection plus the gathered rows, times `1/√2`.
    PleCombine,
    Qkv,
    /// The key row normalized, rotated and written into the cache.
    KeyCache,
    /// The value row normalized and written into the cache.
    ValueCache,
    Attention,
    /// The output projection, its norm added to the residual, and the MLP's normalized input.
    OutProjection,
    GateUp,
    /// The down projection, its norm added to the residual.
    Down,
    PleGate,
    /// The per-layer projection, its norm added to the residual, the layer scalar, and the
    /// next layer's (or the final) normalized input.
    PleProjection,
    LmHead,
    ArgMax,
}

/// Where in the step: a stage, of a layer or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct At {
    pub layer: Option<usize>,
    pub stage: Stage,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layer {
            Some(l) => write!(f, "layer {l}, {:?}", self.stage),
            None => write!(f, "{:?}", self.stage),
        }
    }
}

/// Why a step could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("{at}: {source}")]
    Op {
        at: At,
        #[source]
        source: OpError,
    },
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("position {pos} is past the KV cache's {max} positions")]
    PastCache { pos: usize, max: usize },
    #[error("{0}")]
    Config(String),
}

/// Looks at the step stage by stage: a step recorded for a probe gives each stage a compute
/// pass of its own, with the probe's timestamp writes, and calls the probe after each (a test
/// copies the stage's outputs out, a timing run writes timestamps).
pub trait Probe {
    /// Timestamp writes for the compute pass of stage `at`, if any.
    fn pass_timestamps(&mut self, at: At) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let _ = at;
        None
    }

    /// After the stage `at` was recorded; `outputs` are the buffers it wrote, by name.
    fn after(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        at: At,
        outputs: &[(&'static str, wgpu::Buffer)],
    );
}

/// How a step is recorded.
pub enum Recording<'p> {
    /// Every dispatch of the token in one compute pass, as an application runs it, with
    /// timestamp writes at its beginning and end where given.
    OnePass(Option<wgpu::ComputePassTimestampWrites<'p>>),
    /// A compute pass per stage, shown to a probe.
    PerStage(&'p mut dyn Probe),
}

/// Every stage's attributes, made once; a step changes only the position's fields.
pub struct StepAttrs {
    pub(crate) embed: qat_embed_gather::Attrs,
    pub(crate) ple_gather: qat_embed_gather::Attrs,
    pub(crate) ple_project_quant: qat_mat_mul::Attrs,
    pub(crate) ple_project_dense: dense_gemv::Attrs,
    pub(crate) ple_norm: rmsnorm::Attrs,
    pub(crate) ple_add: add_in_place::Attrs,
    pub(crate) ple_scale: mul_broadcast::Attrs,
    pub(crate) qkv: decode_qkv_proj::Attrs,
    pub(crate) key_rope: decode_qk_norm_rope::Attrs,
    pub(crate) value_norm: decode_qk_norm_rope::Attrs,
    pub(crate) attention: decode_attention::Attrs,
    pub(crate) out_projection: decode_oproj_norm::Attrs,
    pub(crate) gate_up: decode_gate_up_norm::Attrs,
    pub(crate) down: decode_down_norm_add::Attrs,
    pub(crate) ple_gate: decode_ple_gate::Attrs,
    pub(crate) ple_projection: decode_ple_proj_norm::Attrs,
    pub(crate) lm_head_quant: qat_mat_mul::Attrs,
    pub(crate) lm_head_dense: dense_gemv::Attrs,
    pub(crate) arg_max: arg_max::Attrs,
}

impl StepAttrs {
    /// The attributes of `c`'s stages, with the embedding scales of `weights`.
    pub fn new(c: &Config, weights: &Weights) -> Self {
        let u = |n: usize| n as u32;
        let (bits, zero_point, mask) = (c.bits, c.zero_point(), (1u32 << c.bits) - 1);
        let eps = Some(c.eps);
        let quant = c.precision == Precision::Quantized;
        let gather = |hidden: usize, embed_scale: f32| {
            qat_embed_gather::Attrs::new(qat_embed_gather::RequiredAttrs {
                seq: 1,
                hidden: u(hidden),
                vocab: u(c.vocab),
                bits,
                group_size: u(c.embed_group),
                zero_point,
                embed_scale,
            })
        };
        let matmul = |in_features: usize, out_features: usize| {
            qat_mat_mul::Attrs::new(qat_mat_mul::RequiredAttrs {
                m: 1,
                in_features: u(in_features),
                out_features: u(out_features),
                bits,
                zero_point,
                mask,
            })
        };
        let gemv = |in_features: usize, out_features: usize| {
            dense_gemv::Attrs::new(dense_gemv::RequiredAttrs {
                m: 1,
                in_features: u(in_features),
                out_features: u(out_features),
            })
        };
        let norm_rope = |w_eps: f32| {
            decode_qk_norm_rope::Attrs::new(decode_qk_norm_rope::RequiredAttrs {
                seq: 1,
                heads: u(c.kv_heads),
                head_dim: u(c.head_dim),
                eps: w_eps,
            })
        };
        let mut embed = gather(c.hidden, weights.embed.embed_scale);
        embed.norm_srq = Some(1);
        embed.eps = eps;
        let mut ple_norm = rmsnorm::Attrs::new(rmsnorm::RequiredAttrs {
            rows: u(c.layers),
            dim: u(c.ple_dim),
        });
        ple_norm.eps = eps;
        let mut ple_scale = mul_broadcast::Attrs::new(mul_broadcast::RequiredAttrs {
            count: u(c.ple_total()),
        });
        ple_scale.period = Some(1);
        let mut attention = decode_attention::Attrs::new(decode_attention::RequiredAttrs {
            seq_q: 1,
            key_len: 1,
            q_offset: 0,
            q_heads: u(c.q_heads),
            kv_heads: u(c.kv_heads),
            head_dim: u(c.head_dim),
        });
        attention.eps = eps;
        attention.scale = Some(1.0);
        let mut out_projection = decode_oproj_norm::Attrs::new(decode_oproj_norm::RequiredAttrs {
            in_features: u(c.q_out()),
            out_features: u(c.hidden),
            bits,
            zero_point,
            mask,
        });
        out_projection.eps = eps;
        // The row-cooperative form, which the package selects only when asked (`rows: 1`)
        // and the device has 32-lane subgroups: each workgroup projects eight rows.
        out_projection.rows = Some(1);
        let gate_up = decode_gate_up_norm::Attrs::new(decode_gate_up_norm::RequiredAttrs {
            m: 1,
            in_features: u(c.hidden),
            out_features: u(c.intermediate),
            bits,
            zero_point,
            mask,
        });
        let mut down = decode_down_norm_add::Attrs::new(decode_down_norm_add::RequiredAttrs {
            m: 1,
            in_features: u(c.intermediate),
            out_features: u(c.hidden),
            bits,
            zero_point,
            mask,
        });
        down.eps = eps;
        let mut ple_gate = decode_ple_gate::Attrs::new(decode_ple_gate::RequiredAttrs {
            m: 1,
            in_features: u(c.hidden),
            out_features: u(c.ple_dim),
            ple_offset: 0,
        });
        ple_gate.codes = quant.then_some(1);
        let mut ple_projection =
            decode_ple_proj_norm::Attrs::new(decode_ple_proj_norm::RequiredAttrs {
                in_features: u(c.ple_dim),
                out_features: u(c.hidden),
            });
        ple_projection.codes = quant.then_some(1);
        ple_projection.eps = eps;
        let mut lm_head_quant = matmul(c.hidden, c.vocab);
        lm_head_quant.block_major = Some(1);
        lm_head_quant.emit_argmax = Some(1);
        StepAttrs {
            embed,
            ple_gather: gather(c.ple_total(), weights.ple_embed.embed_scale),
            ple_project_quant: matmul(c.hidden, c.ple_total()),
            ple_project_dense: gemv(c.hidden, c.ple_total()),
            ple_norm,
            ple_add: add_in_place::Attrs::new(add_in_place::RequiredAttrs {
                count: u(c.ple_total()),
            }),
            ple_scale,
            qkv: decode_qkv_proj::Attrs::new(decode_qkv_proj::RequiredAttrs {
                in_features: u(c.hidden),
                q_out: u(c.q_out()),
                kv_out: u(c.kv_out()),
                bits,
                zero_point,
                mask,
            }),
            key_rope: norm_rope(c.eps),
            value_norm: norm_rope(c.eps),
            attention,
            out_projection,
            gate_up,
            down,
            ple_gate,
            ple_projection,
            lm_head_quant,
            lm_head_dense: gemv(c.hidden, c.vocab),
            arg_max: if quant {
                let mut a = arg_max::Attrs::new(arg_max::RequiredAttrs {
                    count: u(c.vocab.div_ceil(128)),
                });
                a.finalize = Some(1);
                a
            } else {
                arg_max::Attrs::new(arg_max::RequiredAttrs { count: u(c.vocab) })
            },
        }
    }
}

/// Wraps an op's error with where it happened.
pub(crate) fn at(layer: Option<usize>, stage: Stage) -> impl Fn(OpError) -> DecodeError {
    move |source| DecodeError::Op {
        at: At { layer, stage },
        source,
    }
}
