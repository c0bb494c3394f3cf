//! `run-op`: runs any generated op on tensors from a safetensors file and writes its outputs,
//! for comparing against PyTorch or ONNX Runtime.
//!
//! ```text
//! run-op <OP> --inputs IN.safetensors --output OUT.safetensors [--attr NAME=VALUE]... [--repeat N]
//! ```
//! Input tensors are named by the manifest's input roles; F32/F16 for float inputs, I64 for
//! index inputs. Exit status: 0 on success, 2 for a contract violation or a bad input file,
//! 1 for a runtime failure (no adapter, device lost).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use examples::bench::median_us;
use kernel_runtime::registry::{OpEntry, TensorKind};
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Context, IndexTensor, OpError, RuntimeError, Tensor};
use safetensors::{Dtype, SafeTensors};

/// The most timed runs `--repeat` asks for: the timings are kept in memory, and more would
/// take hours without changing the median.
const MAX_REPEAT: i64 = 100_000;

#[derive(Parser)]
#[command(about = "Run one generated op on tensors from a safetensors file")]
struct Args {
    /// The op: its manifest's `domain.name` (e.g. com.microsoft.MRotaryEmbedding) or bare name.
    op: String,
    /// Input tensors, named by the op's input roles.
    #[arg(long)]
    inputs: PathBuf,
    /// Where to write the outputs, named by the op's output roles.
    #[arg(long)]
    output: PathBuf,
    /// An attribute: integers `name=3`, floats `name=0.5`, integer lists `name=16,24,24`.
    #[arg(long = "attr", value_name = "NAME=VALUE")]
    attrs: Vec<String>,
    /// Time the op this many times and report the median GPU time (1 to 100000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT))]
    repeat: u32,
}

/// A failure and the exit status it maps to.
enum Failure {
    /// Contract violation or bad input: status 2.
    Usage(String),
    /// Runtime failure: status 1.
    Runtime(String),
}

impl From<OpError> for Failure {
    fn from(err: OpError) -> Self {
        let line = one_line(&err.to_string());
        match err {
            OpError::Runtime(RuntimeError::Narrowing { .. }) => Failure::Usage(line),
            OpError::Runtime(_) => Failure::Runtime(line),
            _ => Failure::Usage(line),
        }
    }
}

fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(message)) => {
            eprintln!("run-op: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(message)) => {
            eprintln!("run-op: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<String, Failure> {
    let entry = kernels::OPS
        .iter()
        .find(|e| e.matches(&args.op))
        .ok_or_else(|| {
            let known: Vec<&str> = kernels::OPS.iter().map(|e| e.qualified_name).collect();
            Failure::Usage(format!(
                "unknown op `{}` (known: {})",
                args.op,
                known.join(", ")
            ))
        })?;
    let attrs = parse_attrs(&args.attrs)?;
    let bytes = std::fs::read(&args.inputs)
        .map_err(|e| Failure::Usage(format!("cannot read {}: {e}", args.inputs.display())))?;
    let file = SafeTensors::deserialize(&bytes).map_err(|e| {
        Failure::Usage(format!(
            "{} is not a safetensors file: {e}",
            args.inputs.display()
        ))
    })?;

    let ctx = Context::new().map_err(|e| Failure::Runtime(one_line(&e.to_string())))?;
    let inputs = upload_inputs(&ctx, entry, &file, &args.inputs)?;
    let input_refs: Vec<&AnyTensor> = inputs.iter().collect();
    let result = entry.time(&ctx, &input_refs, &attrs, args.repeat as usize)?;
    write_outputs(&ctx, entry, &result.outputs, &args.output)?;

    let timing = if result.gpu_times.is_empty() {
        "GPU time n/a (the adapter has no timestamp queries)".to_owned()
    } else {
        format!(
            "GPU time {:.1} µs (median of {})",
            median_us(&result.gpu_times),
            result.gpu_times.len()
        )
    };
    Ok(format!(
        "{}: adapter {}, variant {}, {timing}",
        entry.qualified_name,
        ctx.adapter_summary(),
        result.variant
    ))
}

fn parse_attrs(raw: &[String]) -> Result<Vec<(String, AttrValue)>, Failure> {
    let mut attrs: Vec<(String, AttrValue)> = Vec::new();
    for item in raw {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| Failure::Usage(format!("--attr `{item}` is not NAME=VALUE")))?;
        let name = name.trim();
        if attrs.iter().any(|(n, _)| n == name) {
            return Err(Failure::Usage(format!(
                "--attr `{name}` is given twice; give each attribute once"
            )));
        }
        attrs.push((name.to_owned(), AttrValue::parse(value)));
    }
    Ok(attrs)
}

fn upload_inputs(
    ctx: &Context,
    entry: &OpEntry,
    file: &SafeTensors<'_>,
    path: &std::path::Path,
) -> Result<Vec<AnyTensor>, Failure> {
    let names = file.names();
    for name in &names {
        if !entry.inputs.iter().any(|r| r.role == *name) {
            eprintln!(
                "run-op: note: ignoring tensor `{name}` of {}: not an input of {}",
                path.display(),
                entry.name
            );
        }
    }
    let mut tensors = Vec::new();
    for role in entry.inputs {
        let view = file.tensor(role.role).map_err(|_| {
            Failure::Usage(format!(
                "{} has no tensor `{}` (has: {}); {} needs {}",
                path.display(),
                role.role,
                names.join(", "),
                entry.name,
                entry
                    .inputs
                    .iter()
                    .map(|r| r.role)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let shape = view.shape();
        let data = view.data();
        let bad_dtype = |want: &str| {
            Failure::Usage(format!(
                "input `{}` has dtype {:?}; expected {want}",
                role.role,
                view.dtype()
            ))
        };
        let tensor = match (role.kind, view.dtype()) {
            (TensorKind::Float { .. }, Dtype::F32) => {
                let values: Vec<f32> = data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                AnyTensor::F32(
                    Tensor::from_slice(ctx, shape, &values)
                        .map_err(|e| upload_error(role.role, e))?,
                )
            }
            (TensorKind::Float { .. }, Dtype::F16) => {
                let values: Vec<half::f16> = data
                    .chunks_exact(2)
                    .map(|c| half::f16::from_bits(u16::from_le_bytes([c[0], c[1]])))
                    .collect();
                AnyTensor::F16(
                    Tensor::from_slice(ctx, shape, &values)
                        .map_err(|e| upload_error(role.role, e))?,
                )
            }
            (TensorKind::Float { .. }, _) => return Err(bad_dtype("F32 or F16")),
            (TensorKind::Index, Dtype::I64) => {
                let values: Vec<i64> = data
                    .chunks_exact(8)
                    .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect();
                AnyTensor::Index(
                    IndexTensor::from_i64(ctx, shape, &values)
                        .map_err(|e| upload_error(role.role, e))?,
                )
            }
            (TensorKind::Index, _) => return Err(bad_dtype("I64")),
        };
        tensors.push(tensor);
    }
    Ok(tensors)
}

fn upload_error(role: &str, err: RuntimeError) -> Failure {
    match err {
        RuntimeError::Narrowing { .. } | RuntimeError::ShapeMismatch { .. } => {
            Failure::Usage(format!("input `{role}`: {}", one_line(&err.to_string())))
        }
        other => Failure::Runtime(format!("input `{role}`: {}", one_line(&other.to_string()))),
    }
}

fn write_outputs(
    ctx: &Context,
    entry: &OpEntry,
    outputs: &[AnyTensor],
    path: &std::path::Path,
) -> Result<(), Failure> {
    let mut blobs: Vec<(String, Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (role, tensor) in entry.outputs.iter().zip(outputs) {
        let runtime = |e: RuntimeError| {
            Failure::Runtime(format!(
                "reading back `{}`: {}",
                role.role,
                one_line(&e.to_string())
            ))
        };
        let (dtype, bytes) = match tensor {
            AnyTensor::F32(t) => (
                Dtype::F32,
                t.to_vec(ctx)
                    .map_err(runtime)?
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            AnyTensor::F16(t) => (
                Dtype::F16,
                t.to_vec(ctx)
                    .map_err(runtime)?
                    .iter()
                    .flat_map(|v| v.to_bits().to_le_bytes())
                    .collect(),
            ),
            AnyTensor::Index(t) => (
                Dtype::I64,
                t.to_vec(ctx)
                    .map_err(runtime)?
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
        };
        blobs.push((role.role.to_owned(), dtype, tensor.shape().to_vec(), bytes));
    }
    let mut views = Vec::new();
    for (name, dtype, shape, bytes) in &blobs {
        let view = safetensors::tensor::TensorView::new(*dtype, shape.clone(), bytes)
            .map_err(|e| Failure::Runtime(format!("output `{name}`: {e}")))?;
        views.push((name.clone(), view));
    }
    let metadata: Option<HashMap<String, String>> = Some(HashMap::from([(
        "op".to_owned(),
        entry.qualified_name.to_owned(),
    )]));
    let bytes = safetensors::serialize(views, metadata)
        .map_err(|e| Failure::Runtime(format!("serializing outputs: {e}")))?;
    // Written beside the destination and renamed, so a failed write leaves no partial file.
    let file_name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let partial = path.with_file_name(format!(".{file_name}.partial"));
    let written = std::fs::write(&partial, bytes).and_then(|()| std::fs::rename(&partial, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        Failure::Usage(format!("cannot write {}: {e}", path.display()))
    })
}
