//! The main job (`cargo xtask demo`): runs every generated op on the best adapter through the
//! op registry, on realistic shapes and random data, and checks each result against the
//! float64 CPU reference. Prints op, adapter, variant, dtype, shape, max error and GPU time.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use examples::bench::median;
use examples::data::{DataRng, Tolerance, compare, round_to};
use examples::reference;
use examples::reference::gated_relative_position_bias::{Problem, Sizes};
use kernel_runtime::registry::OpEntry;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Context, DType, IndexTensor};

/// How many timed repetitions each case gets (median reported).
const REPEATS: usize = 20;

/// One demo case of one op.
struct Case {
    name: &'static str,
    shape: Vec<usize>,
    dtype: DType,
    inputs: Vec<AnyTensor>,
    attrs: Vec<(String, AttrValue)>,
    /// The float64 reference of the first output.
    want: Vec<f64>,
    tolerance: Tolerance,
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("demo: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool> {
    let ctx = Context::new()
        .context("no GPU adapter (install mesa-vulkan-drivers for a software one)")?;
    let adapter = ctx.adapter_info().name.clone();
    println!("adapter: {}", ctx.adapter_summary());
    println!(
        "{:<40} {:<34} {:<9} {:<18} {:<18} {:<8} {:>10} {:>12}  result",
        "op", "case", "adapter", "variant", "shape", "dtype", "max err", "GPU µs"
    );
    let mut all_passed = true;
    for entry in kernels::OPS {
        let cases = cases_for(&ctx, entry)?;
        if cases.is_empty() {
            println!("{:<40} no demo case yet", entry.qualified_name);
            continue;
        }
        for case in cases {
            let inputs: Vec<&AnyTensor> = case.inputs.iter().collect();
            let result = entry
                .time(&ctx, &inputs, &case.attrs, REPEATS)
                .with_context(|| format!("{} / {}", entry.name, case.name))?;
            let output = result
                .outputs
                .first()
                .context("the op returned no output")?;
            let got = output.to_f64_vec(&ctx)?;
            let comparison = compare(&got, &case.want, case.tolerance);
            let gpu = median(&result.gpu_times).map_or("n/a".to_owned(), |t| {
                format!("{:.1}", t.as_secs_f64() * 1e6)
            });
            let passed = comparison.passed();
            all_passed &= passed;
            println!(
                "{:<40} {:<34} {:<9} {:<18} {:<18} {:<8} {:>10.2e} {:>12}  {}",
                entry.qualified_name,
                case.name,
                adapter.split_whitespace().next().unwrap_or(""),
                result.variant,
                format!("{:?}", case.shape),
                case.dtype.onnx_name(),
                comparison.max_abs,
                gpu,
                if passed {
                    "ok".to_owned()
                } else {
                    format!("FAIL: {comparison}")
                }
            );
        }
    }
    Ok(all_passed)
}

fn cases_for(ctx: &Context, entry: &OpEntry) -> Result<Vec<Case>> {
    match entry.qualified_name {
        "com.microsoft.MRotaryEmbedding" => {
            let mut cases = Vec::new();
            for dtype in [DType::F32, DType::F16] {
                cases.push(mrope_case(
                    ctx,
                    "Qwen2-VL rank 3, sections 16/24/24",
                    dtype,
                    MropeSetup {
                        rank4: false,
                        interleaved: false,
                        layout: 0,
                        sections: [16, 24, 24],
                    },
                )?);
                cases.push(mrope_case(
                    ctx,
                    "Qwen3-VL rank 4, interleaved layout",
                    dtype,
                    MropeSetup {
                        rank4: true,
                        interleaved: false,
                        layout: 1,
                        sections: [24, 20, 20],
                    },
                )?);
            }
            Ok(cases)
        }
        "com.microsoft.BiasSoftmax" => {
            let mut cases = Vec::new();
            for dtype in [DType::F32, DType::F16] {
                // Attention scores (B, N, S, S) with a padding mask (B, 1, 1, S): inner broadcast.
                cases.push(bias_softmax_case(
                    ctx,
                    "scores + padding mask (inner)",
                    dtype,
                    &[2, 8, 128, 128],
                    &[2, 1, 1, 128],
                    true,
                )?);
                // Long rows that need the split statistics passes.
                cases.push(bias_softmax_case(
                    ctx,
                    "long rows (outer)",
                    dtype,
                    &[4, 131072],
                    &[1, 131072],
                    false,
                )?);
                // Many short rows, several per workgroup.
                cases.push(bias_softmax_case(
                    ctx,
                    "short rows (outer)",
                    dtype,
                    &[16384, 8],
                    &[64, 8],
                    false,
                )?);
            }
            Ok(cases)
        }
        "com.microsoft.GatedRelativePositionBias" => {
            let mut cases = Vec::new();
            for dtype in [DType::F32, DType::F16] {
                // WavLM: 16 heads of 64, D = 8 (head-parallel projection).
                cases.push(gated_bias_case(
                    ctx,
                    "WavLM-like, 16 heads x 64, D 8",
                    dtype,
                    Sizes {
                        batch: 2,
                        seq: 200,
                        heads: 16,
                        head_size: 64,
                        proj: 8,
                    },
                )?);
                // A small head: the serial projection of the `row` variant.
                cases.push(gated_bias_case(
                    ctx,
                    "small head, odd sequence",
                    dtype,
                    Sizes {
                        batch: 3,
                        seq: 77,
                        heads: 4,
                        head_size: 8,
                        proj: 4,
                    },
                )?);
            }
            Ok(cases)
        }
        _ => Ok(Vec::new()),
    }
}

fn gated_bias_case(ctx: &Context, name: &'static str, dtype: DType, sizes: Sizes) -> Result<Case> {
    let Sizes {
        batch,
        seq,
        heads,
        head_size,
        proj,
    } = sizes;
    let mut rng = DataRng::new(5);
    let mut draw = |n: usize, scale: f64| round_dtype(dtype, &rng.uniform(n, -scale, scale));
    let query = draw(batch * seq * heads * head_size, 1.0);
    let query_bias = draw(heads * head_size, 0.5);
    let rel_pos = draw(heads * seq * seq, 4.0);
    let weight = draw(head_size * proj, 0.5);
    let bias = draw(proj, 0.5);
    // WavLM's `gru_rel_pos_const` starts at 1: a positive coefficient keeps the gate away from
    // the cancellation near 0 that a relative tolerance cannot judge.
    let eco_a = round_dtype(dtype, &rng.uniform(heads, 0.5, 1.5));
    let want = Problem {
        sizes,
        query: &query,
        query_bias: &query_bias,
        rel_pos: &rel_pos,
        weight: &weight,
        bias: &bias,
        eco_a: &eco_a,
    }
    .output()?;
    let inputs = vec![
        AnyTensor::from_f64(ctx, dtype, &[batch, seq, heads * head_size], &query)?,
        AnyTensor::from_f64(ctx, dtype, &[heads * head_size], &query_bias)?,
        AnyTensor::from_f64(ctx, dtype, &[1, heads, seq, seq], &rel_pos)?,
        AnyTensor::from_f64(ctx, dtype, &[head_size, proj], &weight)?,
        AnyTensor::from_f64(ctx, dtype, &[proj], &bias)?,
        AnyTensor::from_f64(ctx, dtype, &[1, heads, 1, 1], &eco_a)?,
    ];
    let attrs = vec![("num_heads".to_owned(), AttrValue::Int(heads as i64))];
    Ok(Case {
        name,
        shape: vec![batch, heads, seq, seq],
        dtype,
        inputs,
        attrs,
        want,
        tolerance: Tolerance::gated_bias(dtype),
    })
}

fn bias_softmax_case(
    ctx: &Context,
    name: &'static str,
    dtype: DType,
    shape: &[usize],
    bias_shape: &[usize],
    inner: bool,
) -> Result<Case> {
    let mut rng = DataRng::new(3);
    let data = round_dtype(dtype, &rng.uniform(shape.iter().product(), -4.0, 4.0));
    let bias = round_dtype(dtype, &rng.uniform(bias_shape.iter().product(), -2.0, 2.0));
    let want = reference::bias_softmax::bias_softmax(&data, shape, &bias, -1, inner)?;
    let attrs = vec![
        ("axis".to_owned(), AttrValue::Int(-1)),
        (
            "is_inner_broadcast".to_owned(),
            AttrValue::Int(i64::from(inner)),
        ),
    ];
    let inputs = vec![
        AnyTensor::from_f64(ctx, dtype, shape, &data)?,
        AnyTensor::from_f64(ctx, dtype, bias_shape, &bias)?,
    ];
    Ok(Case {
        name,
        shape: shape.to_vec(),
        dtype,
        inputs,
        attrs,
        want,
        tolerance: Tolerance::bias_softmax(dtype),
    })
}

struct MropeSetup {
    rank4: bool,
    interleaved: bool,
    layout: i64,
    sections: [i64; 3],
}

fn mrope_case(ctx: &Context, name: &'static str, dtype: DType, setup: MropeSetup) -> Result<Case> {
    let (batch, seq, heads, head, max_positions) = (2usize, 256usize, 8usize, 128usize, 4096usize);
    let half = head / 2;
    let shape = if setup.rank4 {
        vec![batch, heads, seq, head]
    } else {
        vec![batch, seq, heads * head]
    };
    let mut rng = DataRng::new(7);
    let x = round_dtype(dtype, &rng.uniform(batch * seq * heads * head, -2.0, 2.0));
    let positions = rng.indices(3 * batch * seq, max_positions as i64);
    let (cos, sin) = reference::mrotary_embedding::rope_caches(max_positions, half, 10000.0);
    let (cos, sin) = (round_dtype(dtype, &cos), round_dtype(dtype, &sin));
    let attrs = vec![
        ("num_heads".to_owned(), AttrValue::Int(heads as i64)),
        (
            "mrope_section".to_owned(),
            AttrValue::Ints(setup.sections.to_vec()),
        ),
        ("mrope_layout".to_owned(), AttrValue::Int(setup.layout)),
        (
            "interleaved".to_owned(),
            AttrValue::Int(i64::from(setup.interleaved)),
        ),
    ];
    let typed = kernels::mrotary_embedding::Attrs::from_raw(&attrs)?;
    let want = reference::mrotary_embedding::mrotary_embedding(
        &x,
        &shape,
        &positions,
        &cos,
        &sin,
        max_positions,
        &typed,
    )?;
    let cache_shape = [max_positions, half];
    let inputs = vec![
        AnyTensor::from_f64(ctx, dtype, &shape, &x)?,
        AnyTensor::Index(IndexTensor::from_i64(ctx, &[3, batch, seq], &positions)?),
        AnyTensor::from_f64(ctx, dtype, &cache_shape, &cos)?,
        AnyTensor::from_f64(ctx, dtype, &cache_shape, &sin)?,
    ];
    Ok(Case {
        name,
        shape,
        dtype,
        inputs,
        attrs,
        want,
        tolerance: Tolerance::mrope(dtype),
    })
}

fn round_dtype(dtype: DType, data: &[f64]) -> Vec<f64> {
    match dtype {
        DType::F16 => round_to::<half::f16>(data),
        _ => round_to::<f32>(data),
    }
}
