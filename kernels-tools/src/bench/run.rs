//! Runs one benchmark case on one dtype: random inputs, an optional check against the float64
//! reference, the cold first call, then timed repetitions.

use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use half::f16;
use kernel_runtime::registry::{OpEntry, TensorKind};
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Context, DType, IndexTensor, Tensor};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::spec::BenchCase;
use crate::data::{Tolerance, compare};

/// Host copies of the generated inputs, in their kernel element type.
pub enum HostData {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Index(Vec<i64>),
}

impl HostData {
    fn to_f64(&self) -> Vec<f64> {
        match self {
            HostData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostData::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            HostData::Index(v) => v.iter().map(|&x| x as f64).collect(),
        }
    }

    /// Bytes the GPU stores: index tensors are narrowed to u32.
    fn storage_bytes(&self) -> u64 {
        match self {
            HostData::F32(v) => 4 * v.len() as u64,
            HostData::F16(v) => 2 * v.len() as u64,
            HostData::Index(v) => 4 * v.len() as u64,
        }
    }
}

/// The measurements of one case and dtype.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub op: String,
    pub case: String,
    pub dtype: String,
    pub variant: String,
    pub shapes: Vec<(String, Vec<usize>)>,
    /// Each input read `reads` times, each output written once.
    pub minimal_bytes: u64,
    pub repetitions: usize,
    pub median_us: f64,
    pub min_us: f64,
    pub gbps: f64,
    /// `gbps` over the copy kernel's rate measured in the same run.
    pub fraction_of_copy: f64,
    /// Arithmetic rate, for the ops whose work is counted in floating-point operations:
    /// MatMul, at a multiply and an add per output element per step along K.
    pub tflops: Option<f64>,
    /// Wall time of the first call: pipeline creation, upload of uniforms, one dispatch.
    pub cold_start_ms: f64,
    /// Largest absolute error against the float64 reference, when checked.
    pub max_abs_error: Option<f64>,
    /// Median time of each pass that ran, each in a compute pass of its own; their sum is
    /// below `median_us` by the gaps between passes.
    pub passes: Vec<PassResult>,
}

/// The median GPU time of one pass of a case.
#[derive(Debug, Clone, Serialize)]
pub struct PassResult {
    pub id: String,
    pub median_us: f64,
}

/// A fast generator per chunk, so gigabyte inputs are filled on every core.
fn fill<T: Send>(len: usize, seed: u64, make: impl Fn(&mut StdRng) -> T + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(16);
    let chunk = len.div_ceil(threads).max(1 << 16);
    let mut out: Vec<Vec<T>> = Vec::new();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..len.div_ceil(chunk))
            .map(|i| {
                let make = &make;
                let n = chunk.min(len - i * chunk);
                scope.spawn(move || {
                    let mut rng = StdRng::seed_from_u64(
                        seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    );
                    (0..n).map(|_| make(&mut rng)).collect::<Vec<T>>()
                })
            })
            .collect();
        out = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect();
    });
    out.into_iter().flatten().collect()
}

/// Generates every input of `case` for `entry` in `dtype`.
pub fn generate(
    entry: &OpEntry,
    case: &BenchCase,
    dtype: DType,
    seed: u64,
) -> Result<Vec<(String, Vec<usize>, HostData)>> {
    let mut inputs = Vec::new();
    for (i, role) in entry.inputs.iter().enumerate() {
        let spec = case
            .inputs
            .get(role.role)
            .with_context(|| format!("case `{}` has no input `{}`", case.name, role.role))?;
        let len: usize = spec.shape.iter().product();
        let seed = seed.wrapping_add(i as u64 * 1_000_003);
        let data = match role.kind {
            TensorKind::Index => {
                let bound = spec
                    .indices_below
                    .context("index inputs need `indicesBelow`")?
                    .max(1);
                HostData::Index(fill(len, seed, |rng| rng.random_range(0..bound)))
            }
            TensorKind::TypeVar { type_var, .. } if !dtype.is_float() => {
                anyhow::bail!(
                    "input `{}` has type `{type_var}` at an integer dtype: the harness generates floats and indices only",
                    role.role
                )
            }
            // A type variable that also allows integers is generated as a float one when
            // benchmarked at a float dtype.
            TensorKind::Float { .. }
            | TensorKind::TypeVar { .. }
            | TensorKind::Fixed(DType::F32 | DType::F16) => {
                let [lo, hi] = spec.range.unwrap_or([-1.0, 1.0]);
                let dtype = match role.kind {
                    TensorKind::Fixed(fixed) => fixed,
                    _ => dtype,
                };
                match dtype {
                    DType::F16 => HostData::F16(fill(len, seed, |rng| {
                        f16::from_f64(rng.random_range(lo..hi))
                    })),
                    _ => HostData::F32(fill(len, seed, |rng| rng.random_range(lo..hi) as f32)),
                }
            }
            TensorKind::Fixed(other) => {
                anyhow::bail!(
                    "input `{}` is {other}, which the harness does not generate",
                    role.role
                )
            }
        };
        inputs.push((role.role.to_owned(), spec.shape.clone(), data));
    }
    Ok(inputs)
}

/// JSON attribute values as the untyped entry points take them.
pub fn attrs(case: &BenchCase) -> Result<Vec<(String, AttrValue)>> {
    case.attrs
        .iter()
        .map(|(name, value)| {
            let value = match value {
                serde_json::Value::Number(n) if n.is_i64() => {
                    AttrValue::Int(n.as_i64().unwrap_or_default())
                }
                serde_json::Value::Number(n) => AttrValue::Float(n.as_f64().unwrap_or_default()),
                serde_json::Value::Array(items) => AttrValue::Ints(
                    items
                        .iter()
                        .map(|v| v.as_i64().context("integer lists only"))
                        .collect::<Result<_>>()?,
                ),
                serde_json::Value::String(s) => AttrValue::Str(s.clone()),
                other => bail!("attribute `{name}`: unsupported value {other}"),
            };
            Ok((name.clone(), value))
        })
        .collect()
}

fn upload(ctx: &Context, shape: &[usize], data: &HostData) -> Result<AnyTensor> {
    Ok(match data {
        HostData::F32(v) => AnyTensor::F32(Tensor::from_slice(ctx, shape, v)?),
        HostData::F16(v) => AnyTensor::F16(Tensor::from_slice(ctx, shape, v)?),
        HostData::Index(v) => AnyTensor::Index(IndexTensor::from_i64(ctx, shape, v)?),
    })
}

/// Options of one harness run.
pub struct RunOptions {
    pub repetitions: usize,
    /// Check every case against the float64 reference before timing it.
    pub check: bool,
    /// Copy-kernel rate of this run, GB/s.
    pub copy_gbps: f64,
    /// Sustained GPU work before timing ([`super::WARM_UP`]; none in quick runs).
    pub warm_up: std::time::Duration,
}

/// Generates, checks (optionally), warms up and times one case in one dtype.
pub fn run_case(
    ctx: &Context,
    entry: &OpEntry,
    case: &BenchCase,
    dtype: DType,
    options: &RunOptions,
) -> Result<CaseResult> {
    let host = generate(entry, case, dtype, 0x5eed)?;
    let attrs = attrs(case)?;
    let tensors: Vec<AnyTensor> = host
        .iter()
        .map(|(_, shape, data)| upload(ctx, shape, data))
        .collect::<Result<_>>()?;
    let refs: Vec<&AnyTensor> = tensors.iter().collect();

    let started = Instant::now();
    let first = entry.run(ctx, &refs, &attrs)?;
    let cold_start = started.elapsed();

    let max_abs_error = if options.check {
        let inputs: Vec<(String, Vec<usize>, Vec<f64>)> = host
            .iter()
            .map(|(r, s, d)| (r.clone(), s.clone(), d.to_f64()))
            .collect();
        let want = crate::reference::by_op(entry.qualified_name, &inputs, &attrs)?;
        let got = first
            .outputs
            .first()
            .context("no output")?
            .to_f64_vec(ctx)?;
        let comparison = compare(&got, &want, tolerance(entry.qualified_name, dtype, &host));
        if !comparison.passed() {
            bail!(
                "{} / {} / {dtype}: result differs from the float64 reference: {comparison}",
                entry.name,
                case.name
            );
        }
        Some(comparison.max_abs)
    } else {
        None
    };
    drop(first);

    super::warm_up(options.warm_up, |n| {
        Ok(entry.time(ctx, &refs, &attrs, n)?.gpu_times)
    })?;
    let timed = entry.time(ctx, &refs, &attrs, options.repetitions)?;
    let times = &timed.gpu_times;
    let (Some(median), Some(min)) = (super::median(times), times.iter().min()) else {
        bail!("the adapter has no timestamp queries");
    };
    let median = median.as_secs_f64();
    let output_bytes: u64 = timed
        .outputs
        .iter()
        // Bytes the GPU writes: 8-bit elements take a 32-bit word each, indices a `u32`.
        .map(|o| (o.numel() * o.dtype().storage_bytes()) as u64)
        .sum();
    let input_bytes: u64 = host
        .iter()
        .map(|(role, _, data)| {
            u64::from(*case.reads.get(role).unwrap_or(&1)) * data.storage_bytes()
        })
        .sum();
    let minimal_bytes = input_bytes + output_bytes;
    let gbps = minimal_bytes as f64 / median / 1e9;
    let output_numel = timed.outputs.first().map_or(0, |o| o.numel());
    let tflops = flops(entry.qualified_name, &host, output_numel).map(|f| f / median / 1e12);
    Ok(CaseResult {
        op: entry.qualified_name.to_owned(),
        case: case.name.clone(),
        dtype: dtype.onnx_name().to_owned(),
        variant: timed.variant.to_owned(),
        shapes: host
            .iter()
            .map(|(role, shape, _)| (role.clone(), shape.clone()))
            .collect(),
        minimal_bytes,
        repetitions: times.len(),
        median_us: median * 1e6,
        min_us: min.as_secs_f64() * 1e6,
        gbps,
        fraction_of_copy: gbps / options.copy_gbps,
        tflops,
        cold_start_ms: cold_start.as_secs_f64() * 1e3,
        max_abs_error,
        passes: timed
            .pass_times
            .iter()
            .map(|(id, times)| PassResult {
                id: (*id).to_owned(),
                median_us: super::median_us(times),
            })
            .collect(),
    })
}

/// The MatMuls: the Hub's and the seed packages' tensor-core one (`packages/kernels.MatMul`).
const MATMULS: &[&str] = &["ai.onnx.MatMul", "kernels.MatMul"];

/// Floating-point operations of one call of the ops measured by arithmetic rather than bytes:
/// MatMul does a multiply and an add per output element per step along K, `a`'s last axis
/// (as `torch.matmul`'s TFLOP/s in `benchmarks/peers/onnx_torch.py` counts them).
fn flops(op: &str, host: &[(String, Vec<usize>, HostData)], output_numel: usize) -> Option<f64> {
    if !MATMULS.contains(&op) {
        return None;
    }
    Some(2.0 * output_numel as f64 * matmul_depth(host)? as f64)
}

/// MatMul's K: the last axis of `a`.
fn matmul_depth(host: &[(String, Vec<usize>, HostData)]) -> Option<usize> {
    let (_, shape, _) = host.iter().find(|(role, _, _)| role == "a")?;
    shape.last().copied()
}

fn tolerance(op: &str, dtype: DType, host: &[(String, Vec<usize>, HostData)]) -> Tolerance {
    match op {
        "ai.onnx.MatMul" | "kernels.MatMul" => {
            Tolerance::matmul(dtype, matmul_depth(host).unwrap_or(1))
        }
        "com.microsoft.BiasSoftmax" => Tolerance::bias_softmax(dtype),
        "com.microsoft.GatedRelativePositionBias" => Tolerance::gated_bias(dtype),
        _ => Tolerance::mrope(dtype),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(role: &str, shape: &[usize]) -> (String, Vec<usize>, HostData) {
        (role.to_owned(), shape.to_vec(), HostData::F32(Vec::new()))
    }

    #[test]
    fn matmul_counts_two_operations_per_output_element_and_depth() {
        let square = [input("a", &[64, 32]), input("b", &[32, 16])];
        assert_eq!(
            flops("ai.onnx.MatMul", &square, 64 * 16),
            Some(2.0 * 64.0 * 16.0 * 32.0)
        );
        let batched = [input("a", &[3, 5, 7]), input("b", &[3, 7, 2])];
        assert_eq!(flops("ai.onnx.MatMul", &batched, 3 * 5 * 2), Some(420.0));
        let vector = [input("a", &[9]), input("b", &[9, 4])];
        assert_eq!(flops("ai.onnx.MatMul", &vector, 4), Some(72.0));
        assert_eq!(
            flops("kernels.MatMul", &batched, 3 * 5 * 2),
            flops("ai.onnx.MatMul", &batched, 3 * 5 * 2)
        );
        assert_eq!(flops("ai.onnx.Add", &square, 64 * 32), None);
    }
}
