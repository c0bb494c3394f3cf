//! BiasSoftmax in float64 on the host, straight from SEMANTICS.md §2.2 (B1–B6): softmax of
//! `data + bias` over the flattened dimensions from `axis` on, the bias row of data row `i`
//! being `i / innerRepeat` (inner broadcast) or `i % biasBlockCount` (outer broadcast).

use anyhow::{Result, ensure};

/// SEMANTICS.md §2.5: data `(2,2,3)`, shared by worked examples B1 and B2.
pub const WORKED_DATA: [f64; 12] = [0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 3.0];
/// SEMANTICS.md §2.5: the bias values, shaped `(2,1,3)` in B1 and `(2,3)` in B2.
pub const WORKED_BIAS: [f64; 6] = [0.0, 0.0, -10000.0, 0.0, -1.0, 0.0];
/// SEMANTICS.md §2.5, B1 (inner broadcast, axis 2): the expected output.
#[allow(clippy::excessive_precision)] // float64 values written with every digit printed
pub const WORKED_B1_OUTPUT: [f64; 12] = [
    0.2689414213699951,
    0.7310585786300049,
    0.0,
    0.7310585786300049,
    0.2689414213699951,
    0.0,
    0.4223187982515182,
    0.1553624034969636,
    0.4223187982515182,
    0.0466126225779739,
    0.0171478255455204,
    0.9362395518765058,
];
/// SEMANTICS.md §2.5, B2 (outer broadcast, axis -1): the expected output.
#[allow(clippy::excessive_precision)]
pub const WORKED_B2_OUTPUT: [f64; 12] = [
    0.2689414213699951,
    0.7310585786300049,
    0.0,
    0.7869860421615984,
    0.1065069789192007,
    0.1065069789192007,
    0.5,
    0.5,
    0.0,
    0.0466126225779739,
    0.0171478255455204,
    0.9362395518765058,
];

/// Row geometry of a BiasSoftmax problem (SEMANTICS.md B1–B3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    /// Data rows `Rw` (product of the dimensions before the axis).
    pub rows: usize,
    /// Row length `C` (product of the dimensions from the axis on).
    pub cols: usize,
    /// Bias rows `K`.
    pub bias_rows: usize,
}

impl Rows {
    /// Checks the seed contract and returns the geometry; errors name the failing rule.
    pub fn new(shape: &[usize], bias_len: usize, axis: i64) -> Result<Self> {
        let rank = shape.len() as i64;
        ensure!(rank >= 1, "data must have rank >= 1");
        ensure!(
            (-rank..rank).contains(&axis),
            "axis {axis} is outside [-{rank}, {rank})"
        );
        let a = if axis < 0 { axis + rank } else { axis } as usize;
        let rows: usize = shape[..a].iter().product();
        let cols: usize = shape[a..].iter().product();
        if rows * cols == 0 && bias_len == 0 {
            return Ok(Rows {
                rows,
                cols,
                bias_rows: 0,
            });
        }
        ensure!(cols > 0, "the row length is 0 but the bias is not empty");
        ensure!(
            bias_len.is_multiple_of(cols),
            "bias has {bias_len} elements, not a multiple of the row length {cols}"
        );
        let bias_rows = bias_len / cols;
        ensure!(bias_rows > 0, "the bias is smaller than one row");
        ensure!(
            bias_rows <= rows && rows.is_multiple_of(bias_rows),
            "{bias_rows} bias rows do not divide {rows} data rows"
        );
        Ok(Rows {
            rows,
            cols,
            bias_rows,
        })
    }

    /// The bias row of data row `row` (SEMANTICS.md B4).
    pub fn bias_row(&self, row: usize, inner: bool) -> usize {
        if inner {
            row / (self.rows / self.bias_rows)
        } else {
            row % self.bias_rows
        }
    }
}

/// `softmax(data + bias)` over each row, in float64. A row that is all `-inf` gives NaN.
pub fn bias_softmax(
    data: &[f64],
    shape: &[usize],
    bias: &[f64],
    axis: i64,
    inner: bool,
) -> Result<Vec<f64>> {
    let geometry = Rows::new(shape, bias.len(), axis)?;
    ensure!(
        data.len() == shape.iter().product::<usize>(),
        "data has {} elements for shape {shape:?}",
        data.len()
    );
    let Rows { rows, cols, .. } = geometry;
    let mut out = vec![0.0; data.len()];
    if out.is_empty() {
        // Empty rows have no bias rows either (the contract's empty case).
        return Ok(out);
    }
    for row in 0..rows {
        let q = geometry.bias_row(row, inner);
        let z: Vec<f64> = (0..cols)
            .map(|c| data[row * cols + c] + bias[q * cols + c])
            .collect();
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
        let sum: f64 = e.iter().sum();
        for c in 0..cols {
            out[row * cols + c] = e[c] / sum;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(got: &[f64], want: &[f64]) {
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!((g - w).abs() < 1e-12, "element {i}: got {g}, want {w}");
        }
    }

    #[test]
    fn worked_example_b1_inner() {
        let got = bias_softmax(&WORKED_DATA, &[2, 2, 3], &WORKED_BIAS, 2, true).expect("valid");
        assert_close(&got, &WORKED_B1_OUTPUT);
    }

    #[test]
    fn worked_example_b2_outer() {
        let got = bias_softmax(&WORKED_DATA, &[2, 2, 3], &WORKED_BIAS, -1, false).expect("valid");
        assert_close(&got, &WORKED_B2_OUTPUT);
    }

    #[test]
    fn fully_masked_rows_are_nan_and_bad_layouts_are_rejected() {
        let got =
            bias_softmax(&[f64::NEG_INFINITY; 2], &[1, 2], &[0.0, 0.0], 1, true).expect("valid");
        assert!(got.iter().all(|v| v.is_nan()));
        assert!(
            Rows::new(&[4, 3], 4, 1).is_err(),
            "bias not a multiple of the row length"
        );
        assert!(
            Rows::new(&[4, 3], 9, 1).is_err(),
            "3 bias rows do not divide 4"
        );
        assert!(Rows::new(&[4, 3], 3, 2).is_err(), "axis out of range");
    }
}
