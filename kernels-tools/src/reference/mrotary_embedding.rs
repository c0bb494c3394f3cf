//! Float64 reference of `com.microsoft.MRotaryEmbedding`, transcribed from SEMANTICS.md §1.3
//! (M1–M7).
//!
//! It loops over every element `(b, n, s, c)` exactly as SEMANTICS.md states the math, one
//! output element at a time, with no knowledge of how the shaders split the work. Positions
//! outside `[0, M)` are passed through per element, as ONNX Runtime's GPU kernels do
//! (SEMANTICS.md §1.4): the project rejects such ids on the host, but the in-shader guard must
//! still behave this way, and worked example M4 checks it.

use anyhow::{Context as _, Result, bail, ensure};
use kernels::mrotary_embedding::Attrs;

/// The position stream (0 = temporal, 1 = height, 2 = width) of half-index `j` (SEMANTICS.md M5).
///
/// `interleaved_layout` is `mrope_layout == 1` (Qwen3-VL); otherwise the layout is sectioned
/// (Qwen2-VL). `sections` is `[s_t, s_h, s_w]`.
pub fn stream_of(j: usize, sections: [usize; 3], interleaved_layout: bool) -> usize {
    if interleaved_layout {
        // s_t is not read: it is implied by the sum rule.
        if j % 3 == 1 && j / 3 < sections[1] {
            1
        } else if j % 3 == 2 && j / 3 < sections[2] {
            2
        } else {
            0
        }
    } else if j < sections[0] {
        0
    } else if j < sections[0] + sections[1] {
        1
    } else {
        2
    }
}

/// The rotation partner of channel `c < R` and the sign of its term, with the shared
/// half-index `j` (SEMANTICS.md M4): `(j, partner, sign)`.
pub fn pairing(c: usize, rotary_dim: usize, interleaved: bool) -> (usize, usize, f64) {
    let half = rotary_dim / 2;
    if interleaved {
        let partner = if c.is_multiple_of(2) { c + 1 } else { c - 1 };
        let sign = if c.is_multiple_of(2) { -1.0 } else { 1.0 };
        (c / 2, partner, sign)
    } else {
        let sign = if c < half { -1.0 } else { 1.0 };
        (c % half, (c + half) % rotary_dim, sign)
    }
}

/// RoPE caches `cos[p, j] = cos(p * inv_freq[j])`, `sin[p, j] = sin(p * inv_freq[j])` with
/// `inv_freq[j] = theta^(-2j / (2 * half))`, both `(max_positions, half)` row-major.
pub fn rope_caches(max_positions: usize, half: usize, theta: f64) -> (Vec<f64>, Vec<f64>) {
    let rotary_dim = (2 * half) as f64;
    let mut cos = Vec::with_capacity(max_positions * half);
    let mut sin = Vec::with_capacity(max_positions * half);
    for p in 0..max_positions {
        for j in 0..half {
            let inv_freq = theta.powf(-((2 * j) as f64) / rotary_dim);
            let angle = p as f64 * inv_freq;
            cos.push(angle.cos());
            sin.push(angle.sin());
        }
    }
    (cos, sin)
}

/// Dimensions derived from the input shape and attributes (SEMANTICS.md §1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Batch size `B`.
    pub batch: usize,
    /// Heads `N` (attribute for rank 3, `dim1` for rank 4).
    pub heads: usize,
    /// Sequence length `S`.
    pub seq: usize,
    /// Head size `H`.
    pub head_size: usize,
    /// Effective rotary dimension `R`.
    pub rotary_dim: usize,
    /// Whether the input is rank 3 `(B, S, N*H)`.
    pub rank3: bool,
}

impl Dims {
    /// Derives `B, N, S, H, R` as SEMANTICS.md §1.2 does, failing on what the math cannot handle.
    pub fn new(input_shape: &[usize], attrs: &Attrs) -> Result<Self> {
        let (batch, heads, seq, head_size, rank3) = match *input_shape {
            [b, s, hidden] => {
                let n = usize::try_from(attrs.num_heads)
                    .ok()
                    .filter(|&n| n >= 1)
                    .context("rank-3 input needs num_heads >= 1")?;
                ensure!(
                    hidden.is_multiple_of(n),
                    "hidden size {hidden} is not divisible by num_heads {n}"
                );
                (b, n, s, hidden / n, true)
            }
            // Rank 4 ignores the num_heads attribute (SEMANTICS.md §1.2).
            [b, n, s, h] => (b, n, s, h, false),
            _ => bail!("input must be rank 3 or 4, got shape {input_shape:?}"),
        };
        let rotary_dim = match attrs.rotary_embedding_dim {
            0 => head_size,
            r => usize::try_from(r).context("rotary_embedding_dim must be >= 0")?,
        };
        ensure!(
            rotary_dim.is_multiple_of(2) && rotary_dim <= head_size,
            "effective rotary dim {rotary_dim} must be even and at most the head size {head_size}"
        );
        Ok(Self {
            batch,
            heads,
            seq,
            head_size,
            rotary_dim,
            rank3,
        })
    }

    /// Flat index of element `(b, n, s, c)` (SEMANTICS.md M1).
    pub fn index(&self, b: usize, n: usize, s: usize, c: usize) -> usize {
        let (nn, ss, h) = (self.heads, self.seq, self.head_size);
        if self.rank3 {
            ((b * ss + s) * nn + n) * h + c
        } else {
            ((b * nn + n) * ss + s) * h + c
        }
    }

    /// Number of input elements.
    pub fn numel(&self) -> usize {
        self.batch * self.heads * self.seq * self.head_size
    }
}

/// MRotaryEmbedding in float64 on the host (SEMANTICS.md §1.3, M1–M7).
///
/// `position_ids` is `(3, B, S)` row-major; `cos` and `sin` are `(max_positions, R/2)`.
/// Positions outside `[0, max_positions)` pass the affected elements through unchanged
/// (ORT GPU semantics), so the result also describes the in-shader guard.
pub fn mrotary_embedding(
    input: &[f64],
    input_shape: &[usize],
    position_ids: &[i64],
    cos: &[f64],
    sin: &[f64],
    max_positions: usize,
    attrs: &Attrs,
) -> Result<Vec<f64>> {
    let dims = Dims::new(input_shape, attrs)?;
    let Dims {
        batch,
        heads,
        seq,
        head_size,
        rotary_dim,
        ..
    } = dims;
    let half = rotary_dim / 2;
    ensure!(
        input.len() == dims.numel(),
        "input has {} elements, shape {input_shape:?} holds {}",
        input.len(),
        dims.numel()
    );
    ensure!(
        position_ids.len() == 3 * batch * seq,
        "position_ids has {} elements, (3, {batch}, {seq}) holds {}",
        position_ids.len(),
        3 * batch * seq
    );
    ensure!(
        cos.len() == max_positions * half && sin.len() == cos.len(),
        "cos/sin have {}/{} elements, ({max_positions}, {half}) holds {}",
        cos.len(),
        sin.len(),
        max_positions * half
    );
    let sections: [usize; 3] = match attrs.mrope_section.as_slice() {
        &[t, h, w] => [t, h, w].map(|v| usize::try_from(v).unwrap_or(usize::MAX)),
        other => bail!("mrope_section must have 3 entries, got {other:?}"),
    };
    ensure!(
        sections.iter().all(|&v| v <= half) && sections.iter().sum::<usize>() == half,
        "mrope_section {:?} must be non-negative and sum to R/2 = {half}",
        attrs.mrope_section
    );
    let scale = f64::from(attrs.scale);

    let mut output = vec![0.0; input.len()];
    for b in 0..batch {
        for n in 0..heads {
            for s in 0..seq {
                for c in 0..head_size {
                    let idx = dims.index(b, n, s, c);
                    // (M3) tail copy.
                    if c >= rotary_dim {
                        output[idx] = input[idx];
                        continue;
                    }
                    // (M4) pairing, (M5) stream, (M2) position.
                    let (j, partner, sign) = pairing(c, rotary_dim, attrs.interleaved);
                    let k = stream_of(j, sections, attrs.mrope_layout);
                    let p = position_ids[(k * batch + b) * seq + s];
                    let Some(row) = usize::try_from(p).ok().filter(|&p| p < max_positions) else {
                        // Outside the cache: ORT's GPU kernels copy the element unchanged.
                        output[idx] = input[idx];
                        continue;
                    };
                    // (M6) gather and scale, (M7) rotate.
                    let cos_v = scale * cos[row * half + j];
                    let sin_v = scale * sin[row * half + j];
                    let x_partner = input[idx - c + partner];
                    output[idx] = input[idx] * cos_v + sign * x_partner * sin_v;
                }
            }
        }
    }
    Ok(output)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use kernels::mrotary_embedding::RequiredAttrs;

    /// The data the worked examples M1–M4 share (SEMANTICS.md §1.5; M = 4, half = 4).
    const COS: [f64; 16] = [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.0, -0.1, -0.2, -0.3,
    ];
    const SIN: [f64; 16] = [
        0.0, 0.0, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 0.9, 0.8, 0.7,
    ];
    const X: [f64; 16] = [
        1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0,
    ];
    /// T = [1, 2], H = [3, 0], W = [2, 3].
    const POS: [i64; 6] = [1, 2, 3, 0, 2, 3];

    fn assert_close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() < 1e-12,
                "element {i}: got {g}, want {w}\n{got:?}"
            );
        }
    }

    #[test]
    fn worked_example_m1_sectioned_half_split_rank3() {
        let mut attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![2, 1, 1],
        });
        attrs.num_heads = 1;
        let y = mrotary_embedding(&X, &[1, 2, 8], &POS, &COS, &SIN, 4, &attrs).unwrap();
        assert_close(
            &y,
            &[
                0.4, 0.4, -6.2, -5.6, 4.6, 5.2, 1.0, 4.8, //
                2.0, 1.0, 6.0, -2.2, 6.0, 5.4, 2.0, 3.2,
            ],
        );
    }

    #[test]
    fn worked_example_m2_interleaved_layout_adjacent_pairs_rank4_scaled() {
        let mut attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![2, 1, 1],
        });
        attrs.mrope_layout = true;
        attrs.interleaved = true;
        attrs.scale = 0.5;
        let y = mrotary_embedding(&X, &[1, 1, 2, 8], &POS, &COS, &SIN, 4, &attrs).unwrap();
        assert_close(
            &y,
            &[
                0.35, 0.95, -1.95, 1.15, -1.35, 2.65, 0.5, 3.8, //
                0.25, 3.75, 3.0, 2.5, -1.6, 1.3, -0.2, 0.9,
            ],
        );
    }

    #[test]
    fn worked_example_m3_odd_head_copies_the_tail() {
        let mut attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 1, 0],
        });
        attrs.num_heads = 1;
        attrs.rotary_embedding_dim = 4;
        let first_two =
            |t: &[f64; 16]| -> Vec<f64> { t.chunks(4).flat_map(|row| row[..2].to_vec()).collect() };
        let (cos, sin) = (first_two(&COS), first_two(&SIN));
        let x = [5.0, 6.0, 7.0, 8.0, 9.0];
        let y = mrotary_embedding(&x, &[1, 1, 1, 5], &[2, 1, 0], &cos, &sin, 4, &attrs).unwrap();
        assert_close(&y, &[-1.0, 3.2, 6.0, 7.6, 9.0]);
    }

    #[test]
    fn worked_example_m4_out_of_range_positions_pass_through_per_element() {
        let attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 1, 1],
        });
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let (cos, sin) = (vec![0.0; 6], vec![1.0; 6]);
        let cases: [(usize, [f64; 6]); 3] = [
            (0, [1.0, -5.0, -6.0, 4.0, 2.0, 3.0]),
            (1, [-4.0, 2.0, -6.0, 1.0, 5.0, 3.0]),
            (2, [-4.0, -5.0, 3.0, 1.0, 2.0, 6.0]),
        ];
        for (stream, want) in cases {
            for bad in [-1, 2, i64::MIN, 1 << 32] {
                let mut pos = [0i64; 3];
                pos[stream] = bad;
                let y = mrotary_embedding(&x, &[1, 1, 1, 6], &pos, &cos, &sin, 2, &attrs).unwrap();
                assert_close(&y, &want);
            }
        }
    }

    #[test]
    fn rank3_equals_rank4_after_transposition() {
        let (b, n, s, h) = (2, 3, 4, 6);
        let mut rng = crate::data::DataRng::new(11);
        let x4 = rng.uniform(b * n * s * h, -1.0, 1.0);
        let pos = rng.indices(3 * b * s, 5);
        let cos = rng.uniform(5 * 3, -1.0, 1.0);
        let sin = rng.uniform(5 * 3, -1.0, 1.0);
        let mut attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 1, 1],
        });
        attrs.num_heads = n as i64;
        attrs.mrope_layout = true;
        let d4 = Dims::new(&[b, n, s, h], &attrs).unwrap();
        let d3 = Dims::new(&[b, s, n * h], &attrs).unwrap();
        let mut x3 = vec![0.0; x4.len()];
        for (bi, ni, si, c) in (0..b).flat_map(|bi| {
            (0..n)
                .flat_map(move |ni| (0..s).flat_map(move |si| (0..h).map(move |c| (bi, ni, si, c))))
        }) {
            x3[d3.index(bi, ni, si, c)] = x4[d4.index(bi, ni, si, c)];
        }
        let y4 = mrotary_embedding(&x4, &[b, n, s, h], &pos, &cos, &sin, 5, &attrs).unwrap();
        let y3 = mrotary_embedding(&x3, &[b, s, n * h], &pos, &cos, &sin, 5, &attrs).unwrap();
        for bi in 0..b {
            for ni in 0..n {
                for si in 0..s {
                    for c in 0..h {
                        assert_eq!(y3[d3.index(bi, ni, si, c)], y4[d4.index(bi, ni, si, c)]);
                    }
                }
            }
        }
    }

    /// Plain RoPE on one head vector, written the textbook way (rotate_half or GPT-J pairs).
    fn plain_rope(x: &[f64], cos: &[f64], sin: &[f64], interleaved: bool) -> Vec<f64> {
        let half = cos.len();
        let mut y = x.to_vec();
        for j in 0..half {
            let (a, b) = if interleaved {
                (2 * j, 2 * j + 1)
            } else {
                (j, j + half)
            };
            y[a] = x[a] * cos[j] - x[b] * sin[j];
            y[b] = x[b] * cos[j] + x[a] * sin[j];
        }
        y
    }

    #[test]
    fn equal_streams_reduce_to_plain_rope_for_all_layouts_and_pairings() {
        let (m, half) = (6, 6);
        let (cos, sin) = rope_caches(m, half, 10000.0);
        let mut rng = crate::data::DataRng::new(5);
        let x = rng.uniform(2 * half, -2.0, 2.0);
        for (layout, interleaved) in [(false, false), (false, true), (true, false), (true, true)] {
            let mut attrs = Attrs::new(RequiredAttrs {
                mrope_section: vec![2, 2, 2],
            });
            attrs.mrope_layout = layout;
            attrs.interleaved = interleaved;
            for p in 0..m {
                let pos = [p as i64; 3];
                let y = mrotary_embedding(&x, &[1, 1, 1, 2 * half], &pos, &cos, &sin, m, &attrs)
                    .unwrap();
                let row = p * half..(p + 1) * half;
                let want = plain_rope(&x, &cos[row.clone()], &sin[row], interleaved);
                assert_close(&y, &want);
            }
        }
    }

    #[test]
    fn stream_maps_match_the_spec_examples() {
        let sectioned: Vec<usize> = (0..64).map(|j| stream_of(j, [16, 24, 24], false)).collect();
        assert!(sectioned[..16].iter().all(|&k| k == 0));
        assert!(sectioned[16..40].iter().all(|&k| k == 1));
        assert!(sectioned[40..].iter().all(|&k| k == 2));
        let inter: Vec<usize> = (0..64).map(|j| stream_of(j, [24, 20, 20], true)).collect();
        for k in 0..3 {
            let count = inter.iter().filter(|&&v| v == k).count();
            assert_eq!(count, [24, 20, 20][k], "stream {k}");
        }
        assert_eq!((inter[58], inter[59], inter[61]), (1, 2, 0));
        assert_eq!(
            (0..4)
                .map(|j| stream_of(j, [2, 1, 1], true))
                .collect::<Vec<_>>(),
            [0, 1, 2, 0]
        );
    }

    #[test]
    fn invalid_inputs_are_errors_not_panics() {
        let attrs = Attrs::new(RequiredAttrs {
            mrope_section: vec![1, 1, 1],
        });
        let run = |shape: &[usize], attrs: &Attrs| {
            let n: usize = shape.iter().product();
            mrotary_embedding(
                &vec![1.0; n],
                shape,
                &[0; 3],
                &[1.0; 3],
                &[0.0; 3],
                1,
                attrs,
            )
        };
        assert!(run(&[1, 1, 1, 6], &attrs).is_ok());
        assert!(run(&[1, 6], &attrs).is_err(), "rank 2");
        assert!(run(&[1, 1, 6], &attrs).is_err(), "rank 3 without num_heads");
        assert!(run(&[1, 1, 1, 7], &attrs).is_err(), "odd rotary dim");
        let mut bad = attrs.clone();
        bad.mrope_section = vec![1, -1, 3];
        assert!(run(&[1, 1, 1, 6], &bad).is_err(), "negative section");
        bad.mrope_section = vec![3, 0];
        assert!(run(&[1, 1, 1, 6], &bad).is_err(), "two sections");
        let mut bad = attrs.clone();
        bad.rotary_embedding_dim = 8;
        assert!(run(&[1, 1, 1, 6], &bad).is_err(), "rotary dim > head");
    }
}
