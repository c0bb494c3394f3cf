//! The float64 references of the decode ops, each what its package's kernel computes and what
//! that op's corpus test (`examples/corpus/tests/ops`) checks the kernel against: norms, the
//! packed-code projections with a given row sum, rotation, decode attention, the GELU gates,
//! the int8 grid. The decode step (`super`) is composed of the same functions.

/// Dequantized weights, a row at a time: the reference reads any layout through this.
pub trait Rows {
    fn rows(&self) -> usize;
    fn cols(&self) -> usize;
    /// Writes row `r` into `out` (`cols` values).
    fn row(&self, r: usize, out: &mut [f64]);
}

/// A dense float64 matrix, row-major.
pub struct Dense {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
}

impl Rows for Dense {
    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
    fn row(&self, r: usize, out: &mut [f64]) {
        out.copy_from_slice(&self.values[r * self.cols..][..self.cols]);
    }
}

/// Unpacked codes, row-major: `weight = scale[row] * (code - zero_point)`. The `presrq`
/// kernels compute `scale * (Σ code·a − zero_point · sumA)` with the row sum `sumA` given:
/// [`projection_presrq`] keeps the codes apart for that.
pub struct Codes<'a> {
    pub rows: usize,
    pub cols: usize,
    pub zero_point: f64,
    pub scale: &'a [f32],
    pub codes: Vec<u8>,
}

impl<'a> Codes<'a> {
    /// Codes held one to a `u32`, row-major: `scale.len()` rows of `cols`.
    pub fn new(cols: usize, zero_point: f64, scale: &'a [f32], codes: &[u32]) -> Self {
        Codes {
            rows: scale.len(),
            cols,
            zero_point,
            scale,
            codes: codes
                .iter()
                .map(|&c| u8::try_from(c).expect("a code of at most 8 bits"))
                .collect(),
        }
    }

    /// Codes of `bits` bits packed into 32-bit words lowest bits first, each row starting a
    /// word (`cols · bits / 32` words a row): `scale.len()` rows of `cols`.
    pub fn packed(
        cols: usize,
        bits: usize,
        zero_point: f64,
        scale: &'a [f32],
        words: &[u32],
    ) -> Self {
        let (per_word, words_per_row) = (32 / bits, cols * bits / 32);
        let mask = (1u32 << bits) - 1;
        let codes: Vec<u32> = (0..scale.len() * cols)
            .map(|i| {
                let (r, c) = (i / cols, i % cols);
                (words[r * words_per_row + c / per_word] >> (bits * (c % per_word))) & mask
            })
            .collect();
        Self::new(cols, zero_point, scale, &codes)
    }
}

impl Rows for Codes<'_> {
    fn rows(&self) -> usize {
        self.rows
    }
    fn cols(&self) -> usize {
        self.cols
    }
    fn row(&self, r: usize, out: &mut [f64]) {
        let s = f64::from(self.scale[r]);
        let codes = &self.codes[r * self.cols..][..self.cols];
        for (o, &code) in out.iter_mut().zip(codes) {
            *o = s * (f64::from(code) - self.zero_point);
        }
    }
}

/// `W · a`.
pub fn linear(w: &dyn Rows, a: &[f64]) -> Vec<f64> {
    let mut row = vec![0.0; w.cols()];
    (0..w.rows())
        .map(|r| {
            w.row(r, &mut row);
            row.iter().zip(a).map(|(w, a)| w * a).sum()
        })
        .collect()
}

/// `scale[o] · (Σ_k code[o, k] · a[k] − zero_point · sum_a)`: the `presrq` projections, whose
/// producer hands over the row sum (`sum_a`) instead of the kernel summing `a`.
pub fn projection_presrq(w: &Codes<'_>, a: &[f64], sum_a: f64) -> Vec<f64> {
    (0..w.rows)
        .map(|o| {
            let codes = &w.codes[o * w.cols..][..w.cols];
            let dot: f64 = codes.iter().zip(a).map(|(&c, a)| f64::from(c) * a).sum();
            f64::from(w.scale[o]) * (dot - w.zero_point * sum_a)
        })
        .collect()
}

/// `x / sqrt(mean(x²) + eps)`, times `w` where given.
pub fn rms_norm(x: &[f64], w: Option<&[f32]>, eps: f64) -> Vec<f64> {
    let inv = 1.0 / (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64 + eps).sqrt();
    x.iter()
        .enumerate()
        .map(|(i, v)| v * inv * w.map_or(1.0, |w| f64::from(w[i])))
        .collect()
}

/// Split-half rotation of one head: `(x[p], x[p + half])` turned by `(cos[p], sin[p])`.
pub fn rotate_halves(x: &[f64], cos: &[f64], sin: &[f64]) -> Vec<f64> {
    let half = x.len() / 2;
    let mut out = vec![0.0; x.len()];
    for p in 0..half {
        out[p] = x[p] * cos[p] - x[p + half] * sin[p];
        out[p + half] = x[p + half] * cos[p] + x[p] * sin[p];
    }
    out
}

/// Each head of `x` normalized with `w` and rotated: `DecodeQkNormRope`, and the query side
/// of `DecodeAttention`.
pub fn norm_rope_heads(
    x: &[f64],
    head_dim: usize,
    w: &[f32],
    cos: &[f64],
    sin: &[f64],
    eps: f64,
) -> Vec<f64> {
    x.chunks(head_dim)
        .flat_map(|head| rotate_halves(&rms_norm(head, Some(w), eps), cos, sin))
        .collect()
}

/// One decode query per head over the cached keys and values `[position, kv_head, head_dim]`:
/// scores `scale · q · k` over `positions` (`first..=pos`), their softmax weighting the values
/// (none: zeros). `q` is already normalized and rotated; query head `h` reads KV head
/// `h / (q_heads / kv_heads)`.
pub fn decode_attention(
    q: &[f64],
    keys: &[f64],
    values: &[f64],
    kv_heads: usize,
    head_dim: usize,
    positions: impl Iterator<Item = usize> + Clone,
    scale: f64,
) -> Vec<f64> {
    let q_heads = q.len() / head_dim;
    let group = q_heads / kv_heads;
    let mut out = vec![0.0; q.len()];
    for h in 0..q_heads {
        let qh = &q[h * head_dim..][..head_dim];
        let at = |t: usize| (t * kv_heads + h / group) * head_dim;
        let scores: Vec<f64> = positions
            .clone()
            .map(|t| {
                scale
                    * qh.iter()
                        .zip(&keys[at(t)..][..head_dim])
                        .map(|(a, b)| a * b)
                        .sum::<f64>()
            })
            .collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let weights: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
        let total: f64 = weights.iter().sum();
        let oh = &mut out[h * head_dim..][..head_dim];
        for (p, t) in weights.iter().zip(positions.clone()) {
            for (o, v) in oh.iter_mut().zip(&values[at(t)..][..head_dim]) {
                *o += p / total * v;
            }
        }
    }
    out
}

/// `x` rounded to the int8 grid of step `step`: `clamp(round(x / step), -128, 127) · step`,
/// halves to even (`SrqQuantize`, and the `inScale`/`outScale` attributes of the fused ops);
/// `x` itself for a zero step (no scale given).
pub fn srq(x: f64, step: f64) -> f64 {
    if step == 0.0 {
        return x;
    }
    (x / step).round_ties_even().clamp(-128.0, 127.0) * step
}

/// `ai.onnx.Gelu(approximate = "tanh")`.
pub fn gelu_tanh(v: f64) -> f64 {
    0.5 * v * (1.0 + (0.797_884_560_802_865_4 * (v + 0.044_715 * v * v * v)).tanh())
}

/// `residual + rms_norm(x) · w`, then times `scale`.
pub fn norm_add(residual: &[f64], x: &[f64], w: &[f32], scale: f64, eps: f64) -> Vec<f64> {
    residual
        .iter()
        .zip(rms_norm(x, Some(w), eps))
        .map(|(h, n)| (h + n) * scale)
        .collect()
}

/// The index of the first largest value.
pub fn first_max(x: &[f64]) -> usize {
    (0..x.len()).fold(0, |best, i| if x[i] > x[best] { i } else { best })
}
