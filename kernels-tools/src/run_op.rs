//! `run-op`'s work, as a library so that the command and its fuzz target run the same code:
//! read the inputs (or draw them: `run_op/random.rs`) and attributes, run the op, write the outputs.

mod random;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::bench::median_us;
use crate::run_op_files;
use clap::Parser;
use kernel_runtime::registry::{OpEntry, TensorKind};
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Context, DType, IndexTensor, OpError, RuntimeError, Tensor};
use safetensors::{Dtype, SafeTensors};

/// The most timed runs `--repeat` asks for: the timings are kept in memory, and more would
/// take hours without changing the median.
pub const MAX_REPEAT: i64 = 100_000;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "run-op",
    about = "Run one generated op on tensors from a safetensors file or drawn at random"
)]
pub struct Args {
    /// The op: its manifest's `domain.name` (e.g. com.microsoft.MRotaryEmbedding) or bare name.
    pub op: String,
    /// Input tensors, named by the op's input roles (or their ONNX names).
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// An input drawn at random instead: its role, an ONNX dtype and sizes joined by `x`
    /// (`input=float16:2x0x8`; `input=float32:` is a scalar). Floats are uniform in [-1, 1],
    /// integers in 0..=3.
    #[arg(long = "random", value_name = "ROLE=DTYPE:DIMS")]
    pub random: Vec<String>,
    /// The seed of the `--random` inputs: the same seed draws the same values.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Where to write the outputs, named by the op's output roles; without it they are
    /// computed and not written.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// An attribute: integers `name=3`, floats `name=0.5`, integer lists `name=16,24,24`.
    #[arg(long = "attr", value_name = "NAME=VALUE")]
    pub attrs: Vec<String>,
    /// Time the op this many times and report the median GPU time (1 to 100000).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=MAX_REPEAT))]
    pub repeat: u32,
}

/// A failure and the exit status it maps to.
#[derive(Debug, Clone)]
pub enum Failure {
    /// Contract violation or bad input: status 2.
    Usage(String),
    /// Runtime failure: status 1.
    Runtime(String),
}

impl From<OpError> for Failure {
    fn from(err: OpError) -> Self {
        let line = one_line(&err.to_string());
        match err {
            OpError::Runtime(
                RuntimeError::Narrowing { .. } | RuntimeError::IntegerRange { .. },
            ) => Failure::Usage(line),
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

impl Failure {
    /// The command's exit status for this failure.
    pub fn status(&self) -> u8 {
        match self {
            Failure::Usage(_) => 2,
            Failure::Runtime(_) => 1,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::Runtime(m) => m,
        }
    }
}

/// What a successful run prints: notes (tensors of the file the op does not take) for
/// stderr, then the summary line for stdout.
#[derive(Debug, Clone)]
pub struct Done {
    pub notes: Vec<String>,
    pub line: String,
}

/// Runs the op as `args` say. The device is made in `ctx` on first need (after the files and
/// attributes are read), so one device can serve many calls.
pub fn run(args: &Args, ctx: &OnceLock<Context>) -> Result<Done, Failure> {
    let entry = crate::ops().find(|e| e.matches(&args.op)).ok_or_else(|| {
        let known: Vec<&str> = crate::ops().map(|e| e.qualified_name).collect();
        Failure::Usage(format!(
            "unknown op `{}` (known: {})",
            args.op,
            known.join(", ")
        ))
    })?;
    let attrs = parse_attrs(&args.attrs)?;
    let random = random::parse(entry, &args.random)?;
    if let Some(output) = &args.output {
        let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
        run_op_files::check_output(output, &inputs).map_err(Failure::Usage)?;
    }
    let bytes = match &args.inputs {
        Some(path) => run_op_files::read_input(path).map_err(Failure::Usage)?,
        None => Vec::new(),
    };
    let file = match &args.inputs {
        Some(path) => Some((open_file(entry, &bytes, path)?, path.as_path())),
        None => None,
    };
    let sources = random::sources(entry, file.as_ref().map(|(f, p)| (f, *p)), &random)?;

    let ctx = match ctx.get() {
        Some(ctx) => ctx,
        None => {
            let made = Context::new().map_err(|e| Failure::Runtime(one_line(&e.to_string())))?;
            ctx.get_or_init(|| made)
        }
    };
    let notes = (file.as_ref()).map_or_else(Vec::new, |(f, p)| ignored_tensors(entry, f, p));
    let inputs = upload_inputs(ctx, entry, &sources, args.seed)?;
    let input_refs: Vec<&AnyTensor> = inputs.iter().collect();
    let result = entry.time(ctx, &input_refs, &attrs, args.repeat as usize)?;
    if let Some(output) = &args.output {
        write_outputs(ctx, entry, &result.outputs, output)?;
    }

    let timing = if result.gpu_times.is_empty() {
        "GPU time n/a (the adapter has no timestamp queries)".to_owned()
    } else {
        format!(
            "GPU time {:.1} µs (median of {})",
            median_us(&result.gpu_times),
            result.gpu_times.len()
        )
    };
    let line = format!(
        "{}: adapter {}, variant {}, {timing}",
        entry.qualified_name,
        ctx.adapter_summary(),
        result.variant
    );
    Ok(Done { notes, line })
}

/// Reads the safetensors file `bytes` read from `path`, refusing a header that names a tensor
/// twice and a file holding one input under both of its names.
fn open_file<'a>(
    entry: &OpEntry,
    bytes: &'a [u8],
    path: &Path,
) -> Result<SafeTensors<'a>, Failure> {
    if let Some(name) = run_op_files::repeated_tensor(bytes) {
        return Err(Failure::Usage(format!(
            "{} is not a safetensors file: its header names tensor `{name}` twice",
            path.display()
        )));
    }
    let file = SafeTensors::deserialize(bytes).map_err(|e| {
        let why = explain_bad_file(bytes).unwrap_or_else(|| e.to_string());
        Failure::Usage(format!(
            "{} is not a safetensors file: {why}",
            path.display()
        ))
    })?;
    input_named_twice(entry, &file, path)?;
    Ok(file)
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
        let parsed = AttrValue::parse(value);
        if matches!(parsed, AttrValue::Str(_)) && AttrValue::is_integer_literal(value.trim()) {
            return Err(Failure::Usage(format!(
                "--attr `{name}`: {} is outside the 64-bit integer range",
                value.trim()
            )));
        }
        attrs.push((name.to_owned(), parsed));
    }
    Ok(attrs)
}

/// A note for each tensor of the file that is not an input of the op.
fn ignored_tensors(entry: &OpEntry, file: &SafeTensors<'_>, path: &Path) -> Vec<String> {
    let mut names = file.names();
    names.sort_unstable();
    names
        .into_iter()
        .filter(|name| !entry.inputs.iter().any(|r| r.is_named(name)))
        .map(|name| {
            format!(
                "ignoring tensor `{name}` of {}: not an input of {}",
                path.display(),
                entry.name
            )
        })
        .collect()
}

/// Refuses a file holding one input under both of its names, its role (the Hub's bind key)
/// and its ONNX name: which of the two the op would read is not the user's to guess.
fn input_named_twice(entry: &OpEntry, file: &SafeTensors<'_>, path: &Path) -> Result<(), Failure> {
    let names = file.names();
    let has = |name: &str| names.contains(&name);
    let twice = (entry.inputs.iter())
        .find(|r| !r.onnx.is_empty() && r.onnx != r.role && has(r.role) && has(r.onnx));
    match twice {
        Some(role) => Err(Failure::Usage(format!(
            "{} holds input `{}` of {} twice, as `{}` (its bind key) and as `{}` (its ONNX name): keep one",
            path.display(),
            role.role,
            entry.name,
            role.role,
            role.onnx
        ))),
        None => Ok(()),
    }
}

fn upload_inputs(
    ctx: &Context,
    entry: &OpEntry,
    sources: &[random::Source<'_>],
    seed: u64,
) -> Result<Vec<AnyTensor>, Failure> {
    let mut tensors = Vec::new();
    for (role, source) in entry.inputs.iter().zip(sources) {
        let tensor = match source {
            random::Source::File(view) => {
                let dtype = logical_dtype(view.dtype()).filter(|d| accepts(role.kind, *d));
                let Some(dtype) = dtype else {
                    return Err(Failure::Usage(format!(
                        "input `{}` has dtype {:?}; expected {}",
                        role.role,
                        view.dtype(),
                        expected_dtypes(role.kind)
                    )));
                };
                upload_le(ctx, dtype, view.shape(), view.data())
            }
            random::Source::Random(spec) => {
                random::check_fits(ctx, spec)?;
                upload_le(ctx, spec.dtype, &spec.shape, &random::draw(spec, seed))
            }
        };
        tensors.push(tensor.map_err(|e| upload_error(role.role, e))?);
    }
    Ok(tensors)
}

/// The manifest dtype of a safetensors dtype, for the dtypes ops take.
fn logical_dtype(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::F32 => DType::F32,
        Dtype::F16 => DType::F16,
        Dtype::I64 => DType::I64,
        Dtype::U32 => DType::U32,
        Dtype::I32 => DType::I32,
        Dtype::I8 => DType::I8,
        Dtype::U8 => DType::U8,
        Dtype::I16 => DType::I16,
        _ => return None,
    })
}

/// The safetensors spelling of a manifest dtype.
fn file_dtype(dtype: DType) -> Dtype {
    match dtype {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::I64 => Dtype::I64,
        DType::U32 => Dtype::U32,
        DType::I32 => Dtype::I32,
        DType::I8 => Dtype::I8,
        DType::U8 => Dtype::U8,
        DType::I16 => Dtype::I16,
    }
}

/// Whether an input of `kind` takes a tensor of `dtype` (a type variable's tensors must
/// also agree with each other, which the op's untyped entry checks).
fn accepts(kind: TensorKind, dtype: DType) -> bool {
    match kind {
        TensorKind::Float { .. } => dtype.is_float(),
        TensorKind::TypeVar { allowed, .. } => allowed.contains(&dtype),
        TensorKind::Index => dtype == DType::I64,
        TensorKind::Fixed(fixed) => dtype == fixed,
    }
}

/// The file dtypes an input of `kind` takes, for messages (`F32 or F16`).
fn expected_dtypes(kind: TensorKind) -> String {
    let names: Vec<String> = DType::ALL
        .into_iter()
        .filter(|d| accepts(kind, *d))
        .map(|d| format!("{:?}", file_dtype(d)))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "nothing".to_owned(),
    }
}

/// Uploads a tensor's little-endian bytes as `dtype` (the file's own dtype, so every value
/// is one of the dtype's; `int64` values are narrowed to `u32`, checked).
fn upload_le(
    ctx: &Context,
    dtype: DType,
    shape: &[usize],
    data: &[u8],
) -> Result<AnyTensor, RuntimeError> {
    fn words<const N: usize, T>(data: &[u8], from: fn([u8; N]) -> T) -> Vec<T> {
        data.chunks_exact(N)
            .map(|c| {
                let mut bytes = [0u8; N];
                bytes.copy_from_slice(c);
                from(bytes)
            })
            .collect()
    }
    Ok(match dtype {
        DType::F32 => AnyTensor::F32(Tensor::from_slice(
            ctx,
            shape,
            &words(data, f32::from_le_bytes),
        )?),
        DType::F16 => AnyTensor::F16(Tensor::from_slice(
            ctx,
            shape,
            &words(data, |b| half::f16::from_bits(u16::from_le_bytes(b))),
        )?),
        DType::I64 => AnyTensor::Index(IndexTensor::from_i64(
            ctx,
            shape,
            &words(data, i64::from_le_bytes),
        )?),
        DType::U32 => AnyTensor::U32(Tensor::from_slice(
            ctx,
            shape,
            &words(data, u32::from_le_bytes),
        )?),
        DType::I32 => AnyTensor::I32(Tensor::from_slice(
            ctx,
            shape,
            &words(data, i32::from_le_bytes),
        )?),
        DType::I8 => AnyTensor::I8(Tensor::from_slice(
            ctx,
            shape,
            &words(data, i8::from_le_bytes),
        )?),
        DType::U8 => AnyTensor::U8(Tensor::from_slice(ctx, shape, data)?),
        DType::I16 => AnyTensor::I16(Tensor::from_slice(
            ctx,
            shape,
            &words(data, i16::from_le_bytes),
        )?),
    })
}

/// A tensor read back as the little-endian bytes of its safetensors dtype.
fn read_le(ctx: &Context, tensor: &AnyTensor) -> Result<(Dtype, Vec<u8>), RuntimeError> {
    fn bytes<T, const N: usize>(values: Vec<T>, to: fn(T) -> [u8; N]) -> Vec<u8> {
        values.into_iter().flat_map(to).collect()
    }
    let bytes = match tensor {
        AnyTensor::F32(t) => bytes(t.to_vec(ctx)?, f32::to_le_bytes),
        AnyTensor::F16(t) => bytes(t.to_vec(ctx)?, |v| v.to_bits().to_le_bytes()),
        AnyTensor::Index(t) => bytes(t.to_vec(ctx)?, i64::to_le_bytes),
        AnyTensor::U32(t) => bytes(t.to_vec(ctx)?, u32::to_le_bytes),
        AnyTensor::I32(t) => bytes(t.to_vec(ctx)?, i32::to_le_bytes),
        AnyTensor::I8(t) => bytes(t.to_vec(ctx)?, i8::to_le_bytes),
        AnyTensor::U8(t) => t.to_vec(ctx)?,
        AnyTensor::I16(t) => bytes(t.to_vec(ctx)?, i16::to_le_bytes),
    };
    Ok((file_dtype(tensor.dtype()), bytes))
}

fn upload_error(role: &str, err: RuntimeError) -> Failure {
    match err {
        RuntimeError::Narrowing { .. }
        | RuntimeError::IntegerRange { .. }
        | RuntimeError::ShapeMismatch { .. } => {
            Failure::Usage(format!("input `{role}`: {}", one_line(&err.to_string())))
        }
        other => Failure::Runtime(format!("input `{role}`: {}", one_line(&other.to_string()))),
    }
}

fn write_outputs(
    ctx: &Context,
    entry: &OpEntry,
    outputs: &[AnyTensor],
    path: &Path,
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
        let (dtype, bytes) = read_le(ctx, tensor).map_err(runtime)?;
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
    run_op_files::write_output(path, &bytes).map_err(Failure::Usage)
}

/// Which tensor of a file the safetensors crate refused, and why, where its error names none
/// (a shape that disagrees with the data offsets, data that does not cover the file).
fn explain_bad_file(bytes: &[u8]) -> Option<String> {
    let len = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    let header = bytes.get(8..8usize.checked_add(len)?)?;
    let entries: HashMap<String, serde_json::Value> = serde_json::from_slice(header).ok()?;
    let mut tensors: Vec<(String, safetensors::tensor::TensorInfo)> = Vec::new();
    for (name, value) in entries {
        if name == "__metadata__" {
            continue;
        }
        match serde_json::from_value(value) {
            Ok(info) => tensors.push((name, info)),
            Err(e) => return Some(format!("tensor `{name}`: {e}")),
        }
    }
    tensors.sort_by_key(|(_, info)| info.data_offsets);
    let mut end = 0;
    for (name, info) in &tensors {
        let (start, stop) = info.data_offsets;
        let bits = info
            .shape
            .iter()
            .try_fold(info.dtype.bitsize(), |n, &d| n.checked_mul(d));
        let Some(bits) = bits else {
            return Some(format!(
                "tensor `{name}`: shape {:?} of {:?} has more bytes than an address can count",
                info.shape, info.dtype
            ));
        };
        if start != end || stop < start {
            return Some(format!(
                "tensor `{name}`: data_offsets [{start}, {stop}] do not start where the previous tensor ends (byte {end})"
            ));
        }
        if !bits.is_multiple_of(8) || bits / 8 != stop - start {
            return Some(format!(
                "tensor `{name}`: shape {:?} of {:?} takes {} bytes, but its data_offsets [{start}, {stop}] hold {}",
                info.shape,
                info.dtype,
                bits.div_ceil(8),
                stop - start
            ));
        }
        end = stop;
    }
    let data = bytes.len() - 8 - len;
    (data != end).then(|| {
        format!(
            "the tensors' data ends at byte {end} of the data section, which holds {data} bytes"
        )
    })
}

#[cfg(test)]
mod tests {
    // In tests a panic is the failure report.
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Each integer dtype a file may hold is uploaded as itself and written back byte for
    /// byte, the ends of its range included; `int8` and `uint8` are one byte per element in
    /// the file, whatever the GPU stores.
    #[test]
    fn integer_tensors_round_trip_through_files() {
        let ctx = test_support::context();
        let cases: [(Dtype, Vec<u8>); 4] = [
            (
                Dtype::I32,
                [i32::MIN, -1, 0, i32::MAX]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (
                Dtype::U32,
                [0, 1, 255, u32::MAX]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (
                Dtype::I8,
                [-128i8, -1, 0, 127]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
            ),
            (Dtype::U8, vec![0, 1, 128, 255]),
        ];
        for (file, bytes) in cases {
            let dtype = logical_dtype(file).unwrap();
            let tensor = upload_le(&ctx, dtype, &[2, 2], &bytes).unwrap();
            assert_eq!(tensor.dtype(), dtype);
            assert_eq!(tensor.shape(), [2, 2]);
            assert_eq!(read_le(&ctx, &tensor).unwrap(), (file, bytes), "{file:?}");
        }
    }

    /// What each kind of input takes, and how a refusal names it.
    #[test]
    fn inputs_take_the_dtypes_of_their_kind() {
        let ints: &'static [DType] = &[DType::I32, DType::I8, DType::U8];
        let var = TensorKind::TypeVar {
            type_var: "T",
            allowed: ints,
        };
        assert!(accepts(var, DType::I8) && !accepts(var, DType::U32));
        assert_eq!(expected_dtypes(var), "I32, I8 or U8");
        let float = TensorKind::Float { type_var: "T" };
        assert!(accepts(float, DType::F16) && !accepts(float, DType::I32));
        assert_eq!(expected_dtypes(float), "F32 or F16");
        assert_eq!(expected_dtypes(TensorKind::Index), "I64");
        assert_eq!(expected_dtypes(TensorKind::Fixed(DType::U8)), "U8");
        assert_eq!(logical_dtype(Dtype::BF16), None);
    }
}
