//! Float64 references of the ONNX ops the Hub's packages implement (`ai.onnx.Add`,
//! `ai.onnx.Softmax`, `ai.onnx.MatMul`), written from the ONNX operator definitions: NumPy
//! broadcasting, softmax along one axis, NumPy `matmul`. Results are exact in float64 (or as
//! close as float64 gets); rounding to the output dtype, and wrapping integers to their width,
//! is the caller's.

use anyhow::{Result, bail};

/// The shape `a` and `b` broadcast to (ONNX multidirectional broadcasting).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let at = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |i| s[i]);
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            (x, y) => bail!("{a:?} and {b:?} do not broadcast ({x} against {y})"),
        })
        .collect()
}

/// The index into a tensor of `shape` that element `index` of a tensor of `out` (which
/// `shape` broadcasts to) reads.
pub fn broadcast_index(shape: &[usize], out: &[usize], mut index: usize) -> usize {
    let (mut at, mut stride) = (0, 1);
    for axis in (0..out.len()).rev() {
        let coordinate = index % out[axis].max(1);
        index /= out[axis].max(1);
        if let Some(own) = (axis + shape.len()).checked_sub(out.len()) {
            if shape[own] != 1 {
                at += coordinate * stride;
            }
            stride *= shape[own];
        }
    }
    at
}

/// `a + b`, broadcast.
pub fn add(a: &[f64], a_shape: &[usize], b: &[f64], b_shape: &[usize]) -> Result<Vec<f64>> {
    let out = broadcast_shape(a_shape, b_shape)?;
    let n: usize = out.iter().product();
    Ok((0..n)
        .map(|i| a[broadcast_index(a_shape, &out, i)] + b[broadcast_index(b_shape, &out, i)])
        .collect())
}

/// Softmax of `x` along `axis` (negative counts from the end): `exp(x - max) / Σ exp(x - max)`.
pub fn softmax(x: &[f64], shape: &[usize], axis: i64) -> Result<Vec<f64>> {
    let rank = i64::try_from(shape.len())?;
    let wrapped = if axis < 0 { axis + rank } else { axis };
    let Ok(axis) = usize::try_from(wrapped) else {
        bail!("axis {axis} is out of range for rank {rank}");
    };
    if axis >= shape.len() {
        bail!("axis {axis} is out of range for rank {rank}");
    }
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let mut y = vec![0.0; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| (o * n + k) * inner + i;
            let max = (0..n).map(|k| x[at(k)]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..n).map(|k| (x[at(k)] - max).exp()).sum();
            for k in 0..n {
                y[at(k)] = (x[at(k)] - max).exp() / sum;
            }
        }
    }
    Ok(y)
}

/// NumPy `matmul` of `a` and `b`: a 1-D `a` is a row and a 1-D `b` a column (the added axis
/// dropped from the result), batch axes broadcast. Returns the result and its shape.
pub fn matmul(
    a: &[f64],
    a_shape: &[usize],
    b: &[f64],
    b_shape: &[usize],
) -> Result<(Vec<f64>, Vec<usize>)> {
    if a_shape.is_empty() || b_shape.is_empty() {
        bail!("matmul needs operands of rank 1 or more, found {a_shape:?} and {b_shape:?}");
    }
    let a_full: Vec<usize> = if a_shape.len() == 1 {
        vec![1, a_shape[0]]
    } else {
        a_shape.to_vec()
    };
    let b_full: Vec<usize> = if b_shape.len() == 1 {
        vec![b_shape[0], 1]
    } else {
        b_shape.to_vec()
    };
    let (m, k) = (a_full[a_full.len() - 2], a_full[a_full.len() - 1]);
    let (kb, n) = (b_full[b_full.len() - 2], b_full[b_full.len() - 1]);
    if k != kb {
        bail!("matmul: {a_shape:?} and {b_shape:?} contract sizes {k} and {kb}");
    }
    let a_batch = &a_full[..a_full.len() - 2];
    let b_batch = &b_full[..b_full.len() - 2];
    let batch = broadcast_shape(a_batch, b_batch)?;
    let batches: usize = batch.iter().product();
    let mut y = vec![0.0; batches * m * n];
    for p in 0..batches {
        let pa = broadcast_index(a_batch, &batch, p);
        let pb = broadcast_index(b_batch, &batch, p);
        for r in 0..m {
            for c in 0..n {
                y[(p * m + r) * n + c] = (0..k)
                    .map(|i| a[(pa * m + r) * k + i] * b[(pb * k + i) * n + c])
                    .sum();
            }
        }
    }
    let mut shape = batch;
    if a_shape.len() > 1 {
        shape.push(m);
    }
    if b_shape.len() > 1 {
        shape.push(n);
    }
    Ok((y, shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_cases_by_hand() {
        let sum = add(&[1.0, 2.0, 3.0], &[3], &[10.0], &[1]).unwrap_or_default();
        assert_eq!(sum, [11.0, 12.0, 13.0]);
        let outer = add(&[1.0, 2.0], &[2, 1], &[10.0, 20.0, 30.0], &[3]).unwrap_or_default();
        assert_eq!(outer, [11.0, 21.0, 31.0, 12.0, 22.0, 32.0]);
        let y = softmax(&[0.0, 0.0, 1.0, 1.0], &[2, 2], 0).unwrap_or_default();
        let e = 1.0f64.exp();
        assert!((y[0] - 1.0 / (1.0 + e)).abs() < 1e-15 && (y[2] - e / (1.0 + e)).abs() < 1e-15);
        let (p, shape) =
            matmul(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &[1.0, 1.0], &[2]).unwrap_or_default();
        assert_eq!((p, shape), (vec![3.0, 7.0], vec![2]));
        let (p, shape) = matmul(&[1.0, 2.0], &[2], &[1.0, 2.0], &[2]).unwrap_or_default();
        assert_eq!((p, shape), (vec![5.0], vec![]));
    }
}
