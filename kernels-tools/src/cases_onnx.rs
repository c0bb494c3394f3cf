//! The main job's cases of the Hub's `ai.onnx` ops (`Add`, `Softmax`, `MatMul`): shapes an
//! inference engine runs, one or more per variant family, with float64 references from
//! [`crate::reference::onnx`]. Present only when the `hub` crate found its manifests.

use anyhow::Result;
use kernel_runtime::AttrValue;
use kernel_runtime::DType;

use crate::cases::{Case, HostTensor, round_dtype};
use crate::data::{DataRng, Tolerance};
use crate::reference::onnx;

/// The Hub ops' cases, when the `hub` crate has them.
pub fn all() -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    if !hub::PRESENT {
        return Ok(cases);
    }
    for dtype in [DType::F32, DType::F16] {
        cases.push(add(
            "residual (same shape)",
            dtype,
            &[8, 512, 768],
            &[8, 512, 768],
        )?);
        cases.push(add("bias (broadcast row)", dtype, &[8, 512, 768], &[768])?);
        cases.push(add("odd broadcast", dtype, &[3, 1, 35], &[7, 1])?);
        cases.push(softmax("attention rows", dtype, &[4, 12, 128, 128], -1)?);
        cases.push(softmax("long rows", dtype, &[4, 70_000], -1)?);
        cases.push(softmax("strided axis", dtype, &[8, 64, 96], 1)?);
        cases.push(matmul(
            MATMUL,
            "projection",
            dtype,
            &[256, 768],
            &[768, 768],
        )?);
        cases.push(matmul(
            MATMUL,
            "batched",
            dtype,
            &[4, 64, 128],
            &[4, 128, 64],
        )?);
        cases.push(matmul(
            MATMUL,
            "matrix × vector",
            dtype,
            &[512, 1024],
            &[1024],
        )?);
    }
    cases.push(add("int8 wrap", DType::I8, &[1024, 256], &[256])?);
    cases.push(add(
        "int32 residual",
        DType::I32,
        &[1024, 256],
        &[1024, 256],
    )?);
    Ok(cases)
}

/// The cases of `kernels.MatMul` (packages/kernels.MatMul), built like the Hub MatMul's
/// (`matmul`: its data, reference and tolerance). Odd sizes leave partial tiles on every edge;
/// a rank-2 `b` is shared by every batch of `a`, a rank-3 one is per batch. The float16 case
/// has K and N multiples of 8 and M past one 128-row tile: the vectorized tensor-core variant
/// where the device has subgroup matrices (and the context opts in), with a partial tile in M.
pub fn kernels_matmul() -> Result<Vec<Case>> {
    const OP: &str = "kernels.MatMul";
    Ok(vec![
        matmul(
            OP,
            "batched a, shared b (odd sizes)",
            DType::F32,
            &[2, 67, 45],
            &[45, 33],
        )?,
        matmul(
            OP,
            "batched a and b (odd sizes)",
            DType::F32,
            &[3, 20, 17],
            &[3, 17, 9],
        )?,
        matmul(
            OP,
            "rank 2, K and N multiples of 8",
            DType::F16,
            &[130, 136],
            &[136, 72],
        )?,
    ])
}

/// Seeded values for `dtype`: floats in [-2, 2), integers over the type's range.
fn values(rng: &mut DataRng, dtype: DType, len: usize) -> Vec<f64> {
    let raw = rng.uniform(len, -1.0, 1.0);
    match dtype {
        DType::I8 => raw.iter().map(|x| (x * 127.0).round()).collect(),
        DType::I32 => raw.iter().map(|x| (x * 1.0e6).round()).collect(),
        _ => round_dtype(dtype, &raw.iter().map(|x| x * 2.0).collect::<Vec<_>>()),
    }
}

fn tolerance(dtype: DType, f32_abs: f64, f16_abs: f64) -> Tolerance {
    match dtype {
        DType::F32 => Tolerance {
            abs: f32_abs,
            rel: f32_abs,
        },
        DType::F16 => Tolerance {
            abs: f16_abs,
            rel: f16_abs,
        },
        _ => Tolerance { abs: 0.0, rel: 0.0 },
    }
}

/// Seeded operands `a` and `b` of a binary op, drawn in turn from one generator: what
/// `reference` makes of them, and the case's inputs (the values are moved, not copied: some
/// cases are large).
fn binary_inputs<T>(
    seed: u64,
    dtype: DType,
    a_shape: &[usize],
    b_shape: &[usize],
    reference: impl FnOnce(&[f64], &[f64]) -> Result<T>,
) -> Result<(T, Vec<HostTensor>)> {
    let mut rng = DataRng::new(seed);
    let a = values(&mut rng, dtype, a_shape.iter().product());
    let b = values(&mut rng, dtype, b_shape.iter().product());
    let want = reference(&a, &b)?;
    Ok((
        want,
        vec![
            HostTensor::float(dtype, a_shape, a),
            HostTensor::float(dtype, b_shape, b),
        ],
    ))
}

fn add(name: &'static str, dtype: DType, a_shape: &[usize], b_shape: &[usize]) -> Result<Case> {
    let (sum, inputs) = binary_inputs(11, dtype, a_shape, b_shape, |a, b| {
        onnx::add(a, a_shape, b, b_shape)
    })?;
    // An 8-bit sum wraps, as the kernel stores it.
    let want = match dtype {
        DType::I8 => sum.iter().map(|&v| f64::from((v as i64) as i8)).collect(),
        _ => sum,
    };
    Ok(Case {
        op: "ai.onnx.Add",
        name,
        shape: onnx::broadcast_shape(a_shape, b_shape)?,
        dtype,
        inputs,
        attrs: Vec::new(),
        want,
        tolerance: tolerance(dtype, 1e-6, 2e-3),
    })
}

fn softmax(name: &'static str, dtype: DType, shape: &[usize], axis: i64) -> Result<Case> {
    let mut rng = DataRng::new(12);
    let x = values(&mut rng, dtype, shape.iter().product());
    Ok(Case {
        op: "ai.onnx.Softmax",
        name,
        shape: shape.to_vec(),
        dtype,
        want: onnx::softmax(&x, shape, axis)?,
        inputs: vec![HostTensor::float(dtype, shape, x)],
        attrs: vec![("axis".to_owned(), AttrValue::Int(axis))],
        tolerance: tolerance(dtype, 1e-6, 2e-3),
    })
}

const MATMUL: &str = "ai.onnx.MatMul";

/// A MatMul case of op `op` (the Hub's `ai.onnx.MatMul`, or `kernels.MatMul` of the seed
/// packages, [`crate::cases`]): seeded operands, NumPy `matmul` in float64, and a tolerance
/// that grows with K.
pub(crate) fn matmul(
    op: &'static str,
    name: &'static str,
    dtype: DType,
    a_shape: &[usize],
    b_shape: &[usize],
) -> Result<Case> {
    let ((want, shape), inputs) = binary_inputs(13, dtype, a_shape, b_shape, |a, b| {
        onnx::matmul(a, a_shape, b, b_shape)
    })?;
    // Sums of K products: the error grows with K.
    let k = a_shape.last().copied().unwrap_or(1) as f64;
    Ok(Case {
        op,
        name,
        shape,
        dtype,
        inputs,
        attrs: Vec::new(),
        want,
        tolerance: tolerance(dtype, 1e-6 * k, 1e-3 * k),
    })
}
