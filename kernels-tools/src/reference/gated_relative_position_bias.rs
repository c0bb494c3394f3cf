//! GatedRelativePositionBias in float64 on the host, straight from SEMANTICS.md §3.2 (G1–G5): per
//! (batch, head, query position), the biased query head row is projected to `D` values, the
//! logistic of each half-sum gives `gate_u` and `gate_r`, and the `rel_pos` row (shared by all
//! batches) is scaled by `gate_u * (gate_r * eco_a[n] - 1) + 2`.

use anyhow::{Result, ensure};

/// The problem sizes: `(B, S, N, H, D)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub batch: usize,
    pub seq: usize,
    pub heads: usize,
    pub head_size: usize,
    pub proj: usize,
}

impl Sizes {
    /// Output element count `B * N * S * S`.
    pub fn output_len(&self) -> usize {
        self.batch * self.heads * self.seq * self.seq
    }
}

fn logistic(v: f64) -> f64 {
    1.0 / (1.0 + (-v).exp())
}

/// One problem's inputs, row-major as the op takes them.
#[derive(Debug, Clone, Copy)]
pub struct Problem<'a> {
    pub sizes: Sizes,
    /// `(B, S, N*H)`.
    pub query: &'a [f64],
    /// `(N*H)`.
    pub query_bias: &'a [f64],
    /// `(1, N, S, S)`.
    pub rel_pos: &'a [f64],
    /// `(H, D)`.
    pub weight: &'a [f64],
    /// `(D)`.
    pub bias: &'a [f64],
    /// `(1, N, 1, 1)`.
    pub eco_a: &'a [f64],
}

impl Problem<'_> {
    /// The gate of row `(b, n, s)` (G1–G4).
    pub fn gate(&self, b: usize, n: usize, s: usize) -> f64 {
        let Sizes {
            seq,
            heads,
            head_size,
            proj,
            ..
        } = self.sizes;
        let hidden = heads * head_size;
        let q: Vec<f64> = (0..head_size)
            .map(|k| {
                self.query[(b * seq + s) * hidden + n * head_size + k]
                    + self.query_bias[n * head_size + k]
            })
            .collect();
        let projection: Vec<f64> = (0..proj)
            .map(|e| {
                (0..head_size)
                    .map(|k| q[k] * self.weight[k * proj + e])
                    .sum::<f64>()
                    + self.bias[e]
            })
            .collect();
        let gate_u = logistic(projection[..proj / 2].iter().sum());
        let gate_r = logistic(projection[proj / 2..].iter().sum());
        gate_u * (gate_r * self.eco_a[n] - 1.0) + 2.0
    }

    /// The whole output `(B, N, S, S)` (G5); errors name an input of the wrong size.
    pub fn output(&self) -> Result<Vec<f64>> {
        let Sizes {
            batch,
            seq,
            heads,
            head_size,
            proj,
        } = self.sizes;
        ensure!(
            proj % 2 == 0 && (2..=32).contains(&proj),
            "D = {proj} must be even and in [2, 32]"
        );
        ensure!(
            self.query.len() == batch * seq * heads * head_size,
            "query_layer has {} elements",
            self.query.len()
        );
        ensure!(
            self.query_bias.len() == heads * head_size,
            "query_bias has {} elements",
            self.query_bias.len()
        );
        ensure!(
            self.rel_pos.len() == heads * seq * seq,
            "rel_pos has {} elements",
            self.rel_pos.len()
        );
        ensure!(
            self.weight.len() == head_size * proj,
            "weight has {} elements",
            self.weight.len()
        );
        ensure!(
            self.bias.len() == proj && self.eco_a.len() == heads,
            "bias or eco_a has the wrong length"
        );
        let mut out = vec![0.0; self.sizes.output_len()];
        for b in 0..batch {
            for n in 0..heads {
                for s in 0..seq {
                    let g = self.gate(b, n, s);
                    for t in 0..seq {
                        out[((b * heads + n) * seq + s) * seq + t] =
                            g * self.rel_pos[(n * seq + s) * seq + t];
                    }
                }
            }
        }
        Ok(out)
    }
}

/// SEMANTICS.md §3.4, worked example G1: B = 2, S = 2, N = 2, H = 2, D = 4.
pub const G1: Problem<'static> = Problem {
    sizes: Sizes {
        batch: 2,
        seq: 2,
        heads: 2,
        head_size: 2,
        proj: 4,
    },
    query: &[
        1.0, 0.0, 0.5, -0.5, 0.0, 1.0, 2.0, 0.0, -1.0, 1.0, 0.0, 0.0, 0.5, 0.5, -1.0, 1.0,
    ],
    query_bias: &[0.0, 0.5, 0.0, -0.5],
    rel_pos: &[1.0, -2.0, 0.5, 4.0, 0.0, 1.0, -1.0, 3.0],
    weight: &[1.0, 0.0, 0.5, -1.0, 0.0, 1.0, -0.5, 0.5],
    bias: &[0.1, -0.1, 0.0, 0.2],
    eco_a: &[1.0, 2.0],
};

/// SEMANTICS.md §3.4: the output of G1, `(2, 2, 2, 2)`.
#[allow(clippy::excessive_precision)] // float64 values written with every digit printed
pub const G1_OUTPUT: [f64; 16] = [
    1.5303504602143496,
    -3.0607009204286992,
    0.8159778830762814,
    6.5278230646102510,
    0.0,
    1.9905634491462312,
    -1.6893634262038661,
    5.0680902786115980,
    1.7934603825791993,
    -3.5869207651583985,
    0.7904976047594078,
    6.3239808380752620,
    0.0,
    2.0376287213484760,
    -2.1269954479760793,
    6.3809863439282380,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_g1() {
        let got = G1.output().expect("valid");
        for (i, (g, w)) in got.iter().zip(G1_OUTPUT).enumerate() {
            assert!((g - w).abs() < 1e-12, "element {i}: got {g}, want {w}");
        }
    }
}
