//! Seeded random weights in the layouts the packages read: packed QAT codes with their
//! scales, 8-bit codes with a row scale, float16 matrices and norm weights. Packed words are
//! drawn directly (random words are random codes in any layout), so the largest tables cost
//! one pass of a generator; [`QuantMatrix::code`] and friends read a code back for a
//! reference.

use kernel_runtime::half::f16;

use crate::config::{Config, Precision};

/// How a packed matrix's words are ordered. Codes are LSB first within a word either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `rows` rows of `cols * bits / 32` words.
    RowMajor,
    /// `QatMatMul`'s `fast` family: the 4-word (128-bit) block `b` of every row is
    /// contiguous, `[block][row][4]`.
    BlockMajor,
}

/// `weight[o, k] = scale[o] * (code[o, k] - zero_point)`, codes packed into `u32` words.
#[derive(Clone, Debug)]
pub struct QuantMatrix {
    pub rows: usize,
    pub cols: usize,
    pub bits: u32,
    pub zero_point: u32,
    pub layout: Layout,
    pub words: Vec<u32>,
    /// One per row.
    pub scale: Vec<f32>,
}

impl QuantMatrix {
    fn seeded(rows: usize, cols: usize, bits: u32, layout: Layout, seeds: &mut Seeds) -> Self {
        let words = seeds.next().words(rows * cols * bits as usize / 32);
        // Codes uniform on [0, 2^bits): the step that gives outputs of about unit variance
        // from inputs of unit variance.
        let levels = f64::from(1u32 << bits);
        let code_sd = ((levels * levels - 1.0) / 12.0).sqrt();
        let step = 1.0 / (code_sd * (cols as f64).sqrt());
        let scale = seeds
            .next()
            .uniform(rows)
            .into_iter()
            .map(|u| (step * (1.0 + 0.25 * u)) as f32)
            .collect();
        QuantMatrix {
            rows,
            cols,
            bits,
            zero_point: 1 << (bits - 1),
            layout,
            words,
            scale,
        }
    }

    /// Words per row.
    pub fn row_words(&self) -> usize {
        self.cols * self.bits as usize / 32
    }

    /// The code at `[row, col]`.
    pub fn code(&self, row: usize, col: usize) -> u32 {
        let per_word = 32 / self.bits as usize;
        let word = match self.layout {
            Layout::RowMajor => row * self.row_words() + col / per_word,
            Layout::BlockMajor => {
                let per_block = 4 * per_word;
                ((col / per_block) * self.rows + row) * 4 + (col % per_block) / per_word
            }
        };
        let mask = (1u32 << self.bits) - 1;
        (self.words[word] >> ((col % per_word) * self.bits as usize)) & mask
    }

    /// The weight at `[row, col]`, in float64.
    pub fn weight(&self, row: usize, col: usize) -> f64 {
        f64::from(self.scale[row]) * (f64::from(self.code(row, col)) - f64::from(self.zero_point))
    }
}

/// An embedding table: `row[c] = embed_scale * scale[row, c / group] * (code - zero_point)`.
#[derive(Clone, Debug)]
pub struct EmbedTable {
    pub rows: usize,
    pub cols: usize,
    pub bits: u32,
    pub group: usize,
    pub zero_point: u32,
    pub embed_scale: f32,
    pub words: Vec<u32>,
    /// `rows * cols / group`, row by row.
    pub scale: Vec<f32>,
}

impl EmbedTable {
    /// A table scaled by `embed_scale` (Gemma's `√width`), entries of about unit variance.
    fn seeded(
        (rows, cols): (usize, usize),
        bits: u32,
        group: usize,
        embed_scale: f64,
        seeds: &mut Seeds,
    ) -> Self {
        let words = seeds.next().words(rows * cols * bits as usize / 32);
        let levels = f64::from(1u32 << bits);
        let code_sd = ((levels * levels - 1.0) / 12.0).sqrt();
        // Entries of about unit variance after the embedding scale.
        let step = 1.0 / (code_sd * embed_scale);
        let scale = seeds
            .next()
            .uniform(rows * cols / group)
            .into_iter()
            .map(|u| (step * (1.0 + 0.25 * u)) as f32)
            .collect();
        EmbedTable {
            rows,
            cols,
            bits,
            group,
            zero_point: 1 << (bits - 1),
            embed_scale: embed_scale as f32,
            words,
            scale,
        }
    }

    /// Row `id`, dequantized, in float64.
    pub fn row(&self, id: usize) -> Vec<f64> {
        let per_word = 32 / self.bits as usize;
        let row_words = self.cols / per_word;
        let mask = (1u32 << self.bits) - 1;
        (0..self.cols)
            .map(|c| {
                let word = self.words[id * row_words + c / per_word];
                let code = (word >> ((c % per_word) * self.bits as usize)) & mask;
                let s = f64::from(self.scale[id * (self.cols / self.group) + c / self.group]);
                f64::from(self.embed_scale) * s * (f64::from(code) - f64::from(self.zero_point))
            })
            .collect()
    }
}

/// A float16 matrix, row-major `[rows, cols]`.
#[derive(Clone, Debug)]
pub struct DenseMatrix {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f16>,
}

impl DenseMatrix {
    fn seeded(rows: usize, cols: usize, seeds: &mut Seeds) -> Self {
        // Uniform on [-a, a) with variance 1 / cols.
        let a = (3.0 / cols as f64).sqrt();
        let values = seeds
            .next()
            .uniform(rows * cols)
            .into_iter()
            .map(|u| f16::from_f64(a * u))
            .collect();
        DenseMatrix { rows, cols, values }
    }
}

/// A projection the packages offer in both forms.
#[derive(Clone, Debug)]
pub enum Linear {
    Quant(QuantMatrix),
    Dense(DenseMatrix),
}

impl Linear {
    /// The weight at `[row, col]`, in float64.
    pub fn weight(&self, row: usize, col: usize) -> f64 {
        match self {
            Linear::Quant(m) => m.weight(row, col),
            Linear::Dense(m) => m.values[row * m.cols + col].to_f64(),
        }
    }

    pub fn rows(&self) -> usize {
        match self {
            Linear::Quant(m) => m.rows,
            Linear::Dense(m) => m.rows,
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            Linear::Quant(m) => m.cols,
            Linear::Dense(m) => m.cols,
        }
    }
}

/// One decoder layer's weights.
#[derive(Clone, Debug)]
pub struct LayerWeights {
    /// The attention input norm; applied by whichever op produces this layer's input (the
    /// embedding gather for layer 0, the previous layer's per-layer-embedding op after that).
    pub input_norm: Vec<f32>,
    pub q: QuantMatrix,
    pub k: QuantMatrix,
    pub v: QuantMatrix,
    pub q_norm: Vec<f32>,
    pub k_norm: Vec<f32>,
    pub o: QuantMatrix,
    pub post_attention_norm: Vec<f32>,
    pub pre_mlp_norm: Vec<f32>,
    pub gate: QuantMatrix,
    pub up: QuantMatrix,
    pub down: QuantMatrix,
    pub post_mlp_norm: Vec<f32>,
    /// `hidden → ple_dim`.
    pub ple_gate: Linear,
    /// `ple_dim → hidden`.
    pub ple_projection: Linear,
    pub post_ple_norm: Vec<f32>,
    /// The layer's output scale.
    pub layer_scalar: f32,
}

/// A whole decoder's weights.
#[derive(Clone, Debug)]
pub struct Weights {
    pub embed: EmbedTable,
    /// Every layer's per-layer embedding of a token: `vocab × layers·ple_dim`.
    pub ple_embed: EmbedTable,
    /// `hidden → layers·ple_dim`, from the token's embedding.
    pub ple_model_projection: Linear,
    pub ple_projection_norm: Vec<f32>,
    pub layers: Vec<LayerWeights>,
    pub final_norm: Vec<f32>,
    /// `hidden → vocab`: block-major 4-bit codes, or float16.
    pub lm_head: Linear,
}

impl Weights {
    /// Weights for `config` drawn from `seed`.
    pub fn seeded(config: &Config, seed: u64) -> Self {
        let mut seeds = Seeds(seed);
        let c = config;
        let norm = |n: usize, seeds: &mut Seeds| -> Vec<f32> {
            seeds
                .next()
                .uniform(n)
                .into_iter()
                .map(|u| (1.0 + 0.1 * u) as f32)
                .collect()
        };
        let quant = |rows, cols, seeds: &mut Seeds| {
            QuantMatrix::seeded(rows, cols, c.bits, Layout::RowMajor, seeds)
        };
        let two_forms = |rows, cols, seeds: &mut Seeds| match c.precision {
            // The per-layer-embedding ops read 8-bit codes, four to a word, zero point 128.
            Precision::Quantized => {
                Linear::Quant(QuantMatrix::seeded(rows, cols, 8, Layout::RowMajor, seeds))
            }
            Precision::Dense => Linear::Dense(DenseMatrix::seeded(rows, cols, seeds)),
        };
        let embed = EmbedTable::seeded(
            (c.vocab, c.hidden),
            c.bits,
            c.embed_group,
            (c.hidden as f64).sqrt(),
            &mut seeds,
        );
        // Each layer's slice is scaled by the square root of its own width.
        let ple_embed = EmbedTable::seeded(
            (c.vocab, c.ple_total()),
            c.bits,
            c.embed_group,
            (c.ple_dim as f64).sqrt(),
            &mut seeds,
        );
        let ple_model_projection = match c.precision {
            Precision::Quantized => Linear::Quant(quant(c.ple_total(), c.hidden, &mut seeds)),
            Precision::Dense => {
                Linear::Dense(DenseMatrix::seeded(c.ple_total(), c.hidden, &mut seeds))
            }
        };
        let ple_projection_norm = norm(c.ple_dim, &mut seeds);
        let layers = (0..c.layers)
            .map(|_| LayerWeights {
                input_norm: norm(c.hidden, &mut seeds),
                q: quant(c.q_out(), c.hidden, &mut seeds),
                k: quant(c.kv_out(), c.hidden, &mut seeds),
                v: quant(c.kv_out(), c.hidden, &mut seeds),
                q_norm: norm(c.head_dim, &mut seeds),
                k_norm: norm(c.head_dim, &mut seeds),
                o: quant(c.hidden, c.q_out(), &mut seeds),
                post_attention_norm: norm(c.hidden, &mut seeds),
                pre_mlp_norm: norm(c.hidden, &mut seeds),
                gate: quant(c.intermediate, c.hidden, &mut seeds),
                up: quant(c.intermediate, c.hidden, &mut seeds),
                down: quant(c.hidden, c.intermediate, &mut seeds),
                post_mlp_norm: norm(c.hidden, &mut seeds),
                ple_gate: two_forms(c.ple_dim, c.hidden, &mut seeds),
                ple_projection: two_forms(c.hidden, c.ple_dim, &mut seeds),
                post_ple_norm: norm(c.hidden, &mut seeds),
                layer_scalar: (0.75 + 0.25 * seeds.next().uniform(1)[0]) as f32,
            })
            .collect();
        let final_norm = norm(c.hidden, &mut seeds);
        let lm_head = match c.precision {
            Precision::Quantized => Linear::Quant(QuantMatrix::seeded(
                c.vocab,
                c.hidden,
                c.bits,
                Layout::BlockMajor,
                &mut seeds,
            )),
            Precision::Dense => Linear::Dense(DenseMatrix::seeded(c.vocab, c.hidden, &mut seeds)),
        };
        Weights {
            embed,
            ple_embed,
            ple_model_projection,
            ple_projection_norm,
            layers,
            final_norm,
            lm_head,
        }
    }

    /// Bytes a token must read at least over a run of `tokens` tokens from position 0: every
    /// weight but the embedding tables, one row of each table, and the cached keys and values
    /// each layer attends to, averaged over the run.
    pub fn bytes_read_per_token(&self, c: &Config, tokens: usize) -> f64 {
        let table = |t: &EmbedTable| 4 * (t.words.len() + t.scale.len()) as u64;
        let row = |t: &EmbedTable| table(t) / t.rows as u64;
        let weights = self.bytes() - table(&self.embed) - table(&self.ple_embed)
            + row(&self.embed)
            + row(&self.ple_embed);
        weights as f64 + kv_bytes_per_token(c, tokens)
    }

    /// The weight bytes each stage kind reads per token, summed over the layers (the
    /// embedding stages one row of their table), and attention's cached keys and values
    /// averaged over a run of `tokens` tokens from position 0.
    pub fn stage_bytes(&self, c: &Config, tokens: usize) -> Vec<(&'static str, f64)> {
        let quant = |m: &QuantMatrix| 4 * (m.words.len() + m.scale.len()) as u64;
        let linear = |l: &Linear| match l {
            Linear::Quant(m) => quant(m),
            Linear::Dense(m) => 2 * m.values.len() as u64,
        };
        let row = |t: &EmbedTable| 4 * (t.words.len() + t.scale.len()) as u64 / t.rows as u64;
        let layers = |f: &dyn Fn(&LayerWeights) -> u64| self.layers.iter().map(f).sum::<u64>();
        vec![
            ("Embed", row(&self.embed) as f64),
            ("PleGather", row(&self.ple_embed) as f64),
            ("PleProject", linear(&self.ple_model_projection) as f64),
            (
                "Qkv",
                layers(&|l| quant(&l.q) + quant(&l.k) + quant(&l.v)) as f64,
            ),
            ("Attention", kv_bytes_per_token(c, tokens)),
            ("OutProjection", layers(&|l| quant(&l.o)) as f64),
            ("GateUp", layers(&|l| quant(&l.gate) + quant(&l.up)) as f64),
            ("Down", layers(&|l| quant(&l.down)) as f64),
            ("PleGate", layers(&|l| linear(&l.ple_gate)) as f64),
            (
                "PleProjection",
                layers(&|l| linear(&l.ple_projection)) as f64,
            ),
            ("LmHead", linear(&self.lm_head) as f64),
        ]
    }

    /// Bytes of every weight as stored on the GPU.
    pub fn bytes(&self) -> u64 {
        let quant = |m: &QuantMatrix| 4 * (m.words.len() + m.scale.len()) as u64;
        let linear = |l: &Linear| match l {
            Linear::Quant(m) => quant(m),
            Linear::Dense(m) => 2 * m.values.len() as u64,
        };
        let table = |t: &EmbedTable| 4 * (t.words.len() + t.scale.len()) as u64;
        let norms = |v: &[&Vec<f32>]| v.iter().map(|w| 4 * w.len() as u64).sum::<u64>();
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| {
                [&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down]
                    .iter()
                    .map(|m| quant(m))
                    .sum::<u64>()
                    + linear(&l.ple_gate)
                    + linear(&l.ple_projection)
                    + norms(&[
                        &l.input_norm,
                        &l.q_norm,
                        &l.k_norm,
                        &l.post_attention_norm,
                        &l.pre_mlp_norm,
                        &l.post_mlp_norm,
                        &l.post_ple_norm,
                    ])
            })
            .sum();
        table(&self.embed)
            + table(&self.ple_embed)
            + linear(&self.ple_model_projection)
            + linear(&self.lm_head)
            + layers
            + norms(&[&self.ple_projection_norm, &self.final_norm])
    }
}

/// The cached keys and values each token reads over a run of `tokens` tokens from position 0,
/// every layer (a local one through its window), averaged over the run.
fn kv_bytes_per_token(c: &Config, tokens: usize) -> f64 {
    let kv_row = (2 * c.kv_out() * 4) as u64;
    let total: u64 = (0..tokens)
        .flat_map(|pos| {
            (0..c.layers).map(move |l| {
                let keys = if c.is_global(l) {
                    pos + 1
                } else {
                    (pos + 1).min(c.sliding_window)
                };
                keys as u64 * kv_row
            })
        })
        .sum();
    total as f64 / tokens.max(1) as f64
}

/// The seeds of successive tensors, from one model seed.
struct Seeds(u64);

impl Seeds {
    fn next(&mut self) -> Stream {
        self.0 = self.0.wrapping_add(1);
        Stream(self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d)
    }
}

/// A SplitMix64 stream.
struct Stream(u64);

impl Stream {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniformly random words: every code of every width is uniform.
    fn words(mut self, len: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let z = self.next_u64();
            out.push(z as u32);
            if out.len() < len {
                out.push((z >> 32) as u32);
            }
        }
        out
    }

    /// Values uniform on `[-1, 1)`.
    fn uniform(mut self, len: usize) -> Vec<f64> {
        (0..len)
            .map(|_| (self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
            .collect()
    }
}
