//! The decoder's dimensions: a small configuration for tests and one of Gemma 4 E2B's size
//! for timing, chosen by name on the command line.

use std::fmt;

/// How the weights the packages offer in two forms are stored: the per-layer-embedding gate
/// and projection, the per-layer-embedding model projection and the LM head. The attention
/// and MLP projections and the embedding tables have packed QAT codes only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Packed codes: 4-bit QAT for the model projection and the LM head (block-major, with
    /// the argmax epilogue), 8-bit codes with a row scale for the per-layer-embedding path.
    Quantized,
    /// float16 weights (`DenseGemv`, the dense variants of the per-layer-embedding ops), the
    /// logits reduced by `ArgMax`.
    Dense,
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Quantized => "quantized",
            Precision::Dense => "dense f16",
        })
    }
}

/// A decoder's dimensions and options.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The name `--config` takes.
    pub name: &'static str,
    /// The residual stream's width. `QatEmbedGather`'s fused gather-and-norm variant is built
    /// for the Gemma 4 widths only (1536, 2560; `examples/corpus/hints`).
    pub hidden: usize,
    pub layers: usize,
    pub q_heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    /// The MLP's inner width.
    pub intermediate: usize,
    pub vocab: usize,
    /// The width of each layer's slice of the per-layer embedding.
    pub ple_dim: usize,
    /// Bits per code of the packed QAT weights (2 or 4).
    pub bits: u32,
    /// Columns sharing one scale in the embedding tables.
    pub embed_group: usize,
    /// Keys a local (sliding-window) layer attends to.
    pub sliding_window: usize,
    /// Every this-many-th layer attends globally (the others through the window).
    pub global_every: usize,
    /// Positions the KV cache holds: the longest run.
    pub max_positions: usize,
    pub precision: Precision,
    pub eps: f32,
    pub rope_theta_local: f64,
    pub rope_theta_global: f64,
}

impl Config {
    /// Two layers (one local with a 16-key window, one global) of Gemma 4 E2B's width, a
    /// 4,096-token vocabulary: runs on a software adapter and against the float64 reference.
    pub fn small() -> Self {
        Config {
            name: "small",
            hidden: 1536,
            layers: 2,
            q_heads: 4,
            kv_heads: 1,
            head_dim: 256,
            intermediate: 3072,
            vocab: 4096,
            ple_dim: 256,
            bits: 4,
            embed_group: 32,
            sliding_window: 16,
            global_every: 2,
            max_positions: 64,
            precision: Precision::Quantized,
            eps: 1e-6,
            rope_theta_local: 10_000.0,
            rope_theta_global: 1_000_000.0,
        }
    }

    /// Gemma 4 E2B's dimensions: 35 layers of width 1536, 8 query heads over one KV head of
    /// 256, an MLP of 6144, a 262,144-token vocabulary, 256 per-layer-embedding columns per
    /// layer, 4-bit weights, a 512-key window with every fifth layer global.
    pub fn e2b() -> Self {
        Config {
            name: "e2b",
            hidden: 1536,
            layers: 35,
            q_heads: 8,
            kv_heads: 1,
            head_dim: 256,
            intermediate: 6144,
            vocab: 262_144,
            ple_dim: 256,
            bits: 4,
            embed_group: 32,
            sliding_window: 512,
            global_every: 5,
            max_positions: 1024,
            ..Config::small()
        }
    }

    /// The configurations `--config` names.
    pub const NAMES: &'static [&'static str] = &["small", "e2b"];

    /// The configuration called `name`.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "small" => Some(Config::small()),
            "e2b" => Some(Config::e2b()),
            _ => None,
        }
    }

    /// This configuration with weights of `precision`.
    #[must_use]
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Whether `layer` attends over every cached key (else through the sliding window).
    pub fn is_global(&self, layer: usize) -> bool {
        (layer + 1).is_multiple_of(self.global_every)
    }

    /// Query features: heads times head size.
    pub fn q_out(&self) -> usize {
        self.q_heads * self.head_dim
    }

    /// Key (and value) features of one position.
    pub fn kv_out(&self) -> usize {
        self.kv_heads * self.head_dim
    }

    /// The per-layer embedding of one token, every layer's slice.
    pub fn ple_total(&self) -> usize {
        self.layers * self.ple_dim
    }

    /// The zero point of the packed QAT codes.
    pub fn zero_point(&self) -> u32 {
        1 << (self.bits - 1)
    }

    /// What is wrong with these dimensions for the packages, if anything.
    pub fn check(&self) -> Result<(), String> {
        let mut wrong = Vec::new();
        if self.bits != 2 && self.bits != 4 {
            wrong.push(format!("bits is {}, the packages pack 2 or 4", self.bits));
        }
        if !self.head_dim.is_multiple_of(2) {
            wrong.push(format!(
                "head_dim {} is odd: RoPE rotates halves",
                self.head_dim
            ));
        }
        if self.kv_heads == 0 || !self.q_heads.is_multiple_of(self.kv_heads) {
            wrong.push(format!(
                "{} query heads do not share {} KV heads evenly",
                self.q_heads, self.kv_heads
            ));
        }
        if !self.hidden.is_multiple_of(self.embed_group) {
            wrong.push(format!(
                "hidden {} is not a multiple of the embedding group {}",
                self.hidden, self.embed_group
            ));
        }
        for (what, n) in [
            ("hidden", self.hidden),
            ("intermediate", self.intermediate),
            ("ple_dim", self.ple_dim),
            ("q_heads * head_dim", self.q_out()),
        ] {
            // Every projection's input row is whole 128-bit blocks of codes.
            if n % (128 / self.bits as usize) != 0 {
                wrong.push(format!(
                    "{what} {n} is not a multiple of {} ({}-bit codes in 16-byte blocks)",
                    128 / self.bits,
                    self.bits
                ));
            }
        }
        if self.layers == 0 || self.global_every == 0 || self.max_positions == 0 {
            wrong.push("layers, global_every and max_positions must be positive".to_owned());
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "configuration `{}`: {}",
                self.name,
                wrong.join("; ")
            ))
        }
    }

    /// One line: the dimensions.
    pub fn summary(&self) -> String {
        format!(
            "`{}`: {} layers, hidden {}, {}×{} query heads over {} KV, MLP {}, vocabulary {}, \
             per-layer embedding {}, {}-bit codes, {} weights",
            self.name,
            self.layers,
            self.hidden,
            self.q_heads,
            self.head_dim,
            self.kv_heads,
            self.intermediate,
            self.vocab,
            self.ple_dim,
            self.bits,
            self.precision
        )
    }
}
