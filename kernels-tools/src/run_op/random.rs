//! `run-op --random ROLE=DTYPE:DIMS`: inputs drawn by shape from a fixed seed, beside or
//! instead of a file's, so that a finding can be replayed from one command line; and where
//! each input of a run comes from.

use std::path::Path;

use kernel_runtime::registry::{OpEntry, RoleInfo};
use kernel_runtime::{Context, DType};
use safetensors::SafeTensors;
use safetensors::tensor::TensorView;

use super::{Failure, accepts};
use crate::data::DataRng;

/// Integers are drawn from `0..INT_BOUND`: small enough to be in range as an index of most
/// ops, as every input with an integer dtype of the seed packages is.
const INT_BOUND: i64 = 4;

/// Values are drawn this many at a time, so a large tensor needs no float64 copy of itself.
const CHUNK: usize = 1 << 16;

/// One `--random` argument, read.
#[derive(Debug, Clone)]
pub(super) struct Spec {
    /// The argument as given, for messages.
    pub text: String,
    /// The input it fills, by its position among the op's inputs.
    pub index: usize,
    pub dtype: DType,
    pub shape: Vec<usize>,
    /// Elements of `shape` (checked: it and its storage bytes fit a `usize`).
    pub numel: usize,
}

impl Spec {
    fn refuse(&self, why: impl std::fmt::Display) -> Failure {
        refuse(&self.text, why)
    }
}

fn refuse(text: &str, why: impl std::fmt::Display) -> Failure {
    Failure::Usage(format!("--random `{text}`: {why}"))
}

/// Reads every `--random` argument against `entry`'s inputs; an input named twice is refused.
pub(super) fn parse(entry: &OpEntry, raw: &[String]) -> Result<Vec<Spec>, Failure> {
    let mut specs: Vec<Spec> = Vec::new();
    for text in raw {
        let spec = parse_one(entry, text)?;
        if let Some(first) = specs.iter().find(|s| s.index == spec.index) {
            return Err(spec.refuse(format_args!(
                "input `{}` is already drawn by --random `{}`; give each input once",
                entry.inputs[spec.index].role, first.text
            )));
        }
        specs.push(spec);
    }
    Ok(specs)
}

fn parse_one(entry: &OpEntry, text: &str) -> Result<Spec, Failure> {
    let bad = |why: String| refuse(text, why);
    let (role, rest) = (text.split_once('='))
        .ok_or_else(|| bad("not ROLE=DTYPE:DIMS (e.g. `input=float32:2x3`)".to_owned()))?;
    let (dtype, dims) = rest.split_once(':').ok_or_else(|| {
        bad(format!(
            "`{rest}` is not DTYPE:DIMS (e.g. `float32:2x3`, or `float32:` for a scalar)"
        ))
    })?;
    let index = (entry.inputs.iter().position(|r| r.is_named(role))).ok_or_else(|| {
        bad(format!(
            "{} has no input `{role}` (its inputs: {})",
            entry.name,
            role_names(entry.inputs)
        ))
    })?;
    let info = &entry.inputs[index];
    let dtype = DType::from_onnx_name(dtype).ok_or_else(|| {
        bad(format!(
            "unknown dtype `{dtype}` (one of {})",
            onnx_names(|_| true)
        ))
    })?;
    if !accepts(info.kind, dtype) {
        return Err(bad(format!(
            "input `{}` of {} takes {}, not {}",
            info.role,
            entry.name,
            onnx_names(|d| accepts(info.kind, d)),
            dtype.onnx_name()
        )));
    }
    let shape = parse_dims(dims).map_err(bad)?;
    let numel = (shape.iter())
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|n| n.checked_mul(dtype.storage_bytes()).is_some())
        .ok_or_else(|| {
            bad(format!(
                "shape {shape:?} of {} has more bytes than an address can count",
                dtype.onnx_name()
            ))
        })?;
    Ok(Spec {
        text: text.to_owned(),
        index,
        dtype,
        shape,
        numel,
    })
}

/// Sizes joined by `x` (`2x0x8`); empty for a rank-0 tensor.
fn parse_dims(dims: &str) -> Result<Vec<usize>, String> {
    if dims.is_empty() {
        return Ok(Vec::new());
    }
    (dims.split('x'))
        .map(|size| {
            if size.is_empty() {
                return Err(format!(
                    "`{dims}` has an empty size (sizes are joined by `x`: `2x0x8`)"
                ));
            }
            if !size.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!(
                    "size `{size}` of `{dims}` is not a whole number (sizes are joined by `x`: `2x0x8`)"
                ));
            }
            size.parse::<usize>().map_err(|_| {
                format!(
                    "size {size} of `{dims}` is more than the largest size, {}",
                    usize::MAX
                )
            })
        })
        .collect()
}

fn role_names(roles: &[RoleInfo]) -> String {
    roles.iter().map(|r| r.role).collect::<Vec<_>>().join(", ")
}

/// The ONNX names of the dtypes `keep` keeps (`float32 or float16`).
fn onnx_names(keep: impl Fn(DType) -> bool) -> String {
    let names: Vec<&str> = (DType::ALL.into_iter())
        .filter(|d| keep(*d))
        .map(DType::onnx_name)
        .collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "nothing".to_owned(),
    }
}

/// Where one input of a run comes from.
pub(super) enum Source<'a> {
    File(TensorView<'a>),
    Random(&'a Spec),
}

/// The source of each of `entry`'s inputs, in order: the file (by role or ONNX name) or a
/// `--random` argument; an input given by both, or by neither, is refused by name.
pub(super) fn sources<'a>(
    entry: &OpEntry,
    file: Option<(&SafeTensors<'a>, &Path)>,
    random: &'a [Spec],
) -> Result<Vec<Source<'a>>, Failure> {
    let mut sources = Vec::new();
    for (index, role) in entry.inputs.iter().enumerate() {
        let spec = random.iter().find(|s| s.index == index);
        let view = file.and_then(|(file, _)| {
            let named = |name: &str| file.tensor(name).ok().map(|v| (name.to_owned(), v));
            named(role.role).or_else(|| (!role.onnx.is_empty()).then(|| named(role.onnx))?)
        });
        let source = match (spec, view, file) {
            (Some(spec), None, _) => Source::Random(spec),
            (None, Some((_, view)), _) => Source::File(view),
            (Some(spec), Some((name, _)), Some((_, path))) => {
                return Err(spec.refuse(format_args!(
                    "input `{}` is also in {} (as `{name}`); give it once",
                    role.role,
                    path.display()
                )));
            }
            (None, None, Some((file, path))) => {
                return Err(Failure::Usage(format!(
                    "{} has no tensor `{}` (has: {}); {} needs {} (or give it with --random {}=DTYPE:DIMS)",
                    path.display(),
                    role.role,
                    file.names().join(", "),
                    entry.name,
                    role_names(entry.inputs),
                    role.role
                )));
            }
            (_, _, None) => {
                return Err(Failure::Usage(format!(
                    "{} needs input `{}` (its inputs: {}): give it with --inputs FILE or --random {}=DTYPE:DIMS",
                    entry.name,
                    role.role,
                    role_names(entry.inputs),
                    role.role
                )));
            }
        };
        sources.push(source);
    }
    Ok(sources)
}

/// Refuses a tensor larger than `ctx`'s device can bind, before any of it is drawn.
pub(super) fn check_fits(ctx: &Context, spec: &Spec) -> Result<(), Failure> {
    let limits = &ctx.caps().limits;
    let limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    // `numel` was checked to fit a `usize` in storage bytes, so this product fits a `u64`.
    let bytes = spec.numel as u64 * spec.dtype.storage_bytes() as u64;
    if bytes > limit {
        return Err(spec.refuse(format_args!(
            "{bytes} bytes on the device, more than its storage buffer limit of {limit} bytes"
        )));
    }
    Ok(())
}

/// The little-endian bytes of `spec`'s tensor, in its dtype: floats uniform in [-1, 1] (never
/// zero), integers uniform in `0..INT_BOUND`. Fixed by `seed` and the input's position among
/// the op's inputs alone, so an input keeps its values whatever else is drawn or read.
pub(super) fn draw(spec: &Spec, seed: u64) -> Vec<u8> {
    let stream = (spec.index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut rng = DataRng::new(seed ^ stream);
    let mut bytes = Vec::with_capacity(spec.numel * spec.dtype.size_bytes());
    let mut left = spec.numel;
    while left > 0 {
        let n = left.min(CHUNK);
        left -= n;
        if spec.dtype.is_float() {
            for v in rng.uniform(n, -1.0, 1.0) {
                match spec.dtype {
                    DType::F16 => bytes.extend(half::f16::from_f64(v).to_bits().to_le_bytes()),
                    _ => bytes.extend((v as f32).to_le_bytes()),
                }
            }
            continue;
        }
        for v in rng.indices(n, INT_BOUND) {
            // Every value is in 0..INT_BOUND, so each narrowing below is exact.
            match spec.dtype {
                DType::I64 => bytes.extend(v.to_le_bytes()),
                DType::I32 => bytes.extend((v as i32).to_le_bytes()),
                DType::U32 => bytes.extend((v as u32).to_le_bytes()),
                DType::I16 => bytes.extend((v as i16).to_le_bytes()),
                DType::I8 => bytes.extend((v as i8).to_le_bytes()),
                _ => bytes.push(v as u8),
            }
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    // In tests a panic is the failure report.
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn dims_are_sizes_joined_by_x() {
        assert_eq!(parse_dims("").unwrap(), Vec::<usize>::new());
        assert_eq!(parse_dims("2x0x8").unwrap(), [2, 0, 8]);
        assert!(
            parse_dims("2x")
                .unwrap_err()
                .contains("`2x` has an empty size")
        );
        assert!(parse_dims("-1").unwrap_err().contains("not a whole number"));
        let huge = parse_dims("99999999999999999999999").unwrap_err();
        assert!(huge.contains("more than the largest size"), "{huge}");
    }

    #[test]
    fn each_dtype_draws_its_own_bytes_from_the_seed() {
        for dtype in DType::ALL {
            let spec = Spec {
                text: String::new(),
                index: 0,
                dtype,
                shape: vec![3, 5],
                numel: 15,
            };
            let bytes = draw(&spec, 7);
            assert_eq!(bytes.len(), 15 * dtype.size_bytes(), "{dtype:?}");
            assert_eq!(bytes, draw(&spec, 7), "{dtype:?}");
            assert_ne!(bytes, draw(&spec, 8), "{dtype:?}");
        }
        assert_eq!(onnx_names(DType::is_float), "float32 or float16");
    }
}
