//! `run-op`'s fuzz target: small valid calls of each seed op (and of the Hub's Add, where
//! it was built), a safetensors file and arguments, mutated in the file's header, its data
//! and its arguments, run in process on one device.
//!
//! Must hold: no panic, no hang; success writes a safetensors file with every output and
//! nothing beside it, and never follows a file holding one input under two names; a failure
//! is one line, a usage error (status 2), and leaves no output.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use anyhow::{Context as _, Result};
use clap::Parser;
use kernel_runtime::Context;
use kernels_tools::run_op::{self, Args};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

use crate::drive::{self, Budget};

mod calls;

pub use calls::{Call, calls};
use calls::{named_twice, other_spelling};

/// One change to a call.
#[derive(Debug, Clone)]
pub enum Change {
    Dtype {
        tensor: usize,
        dtype: &'static str,
    },
    Dim {
        tensor: usize,
        dim: usize,
        value: u64,
    },
    DropDim {
        tensor: usize,
    },
    AddDim {
        tensor: usize,
        value: u64,
    },
    Offsets {
        tensor: usize,
        start: i64,
        end: i64,
    },
    Rename {
        tensor: usize,
        name: &'static str,
    },
    Remove {
        tensor: usize,
    },
    /// A copy of the tensor under the other spelling of its input's name (bind key and ONNX
    /// name), so the file holds one input twice.
    OtherSpelling {
        tensor: usize,
    },
    /// An int64 (index tensors) or float element set to an edge value.
    Element {
        tensor: usize,
        at: usize,
        bits: u64,
    },
    Truncate {
        at: usize,
    },
    Append {
        bytes: usize,
    },
    HeaderLength {
        value: u64,
    },
    DropAttr {
        at: usize,
    },
    Attr {
        text: &'static str,
    },
    AttrValue {
        at: usize,
        value: &'static str,
    },
    Repeat {
        text: &'static str,
    },
    OpName {
        text: &'static str,
    },
    OutputInMissingFolder,
}

/// A call and the changes made to it.
#[derive(Debug, Clone)]
pub struct Input {
    pub call: usize,
    pub changes: Vec<Change>,
}

const DTYPES: &[&str] = &[
    "F32", "F16", "BF16", "F64", "I64", "I32", "U8", "BOOL", "U64", "F8_E4M3", "nope",
];
const DIMS: &[u64] = &[
    0,
    1,
    2,
    3,
    5,
    7,
    16,
    65536,
    1 << 32,
    1 << 40,
    1 << 62,
    u64::MAX,
];
const NAMES: &[&str] = &[
    "",
    "input",
    "data",
    "bias",
    "x",
    "__metadata__",
    "position_ids",
    "é",
];
const ATTRS: &[&str] = &[
    "num_heads=0",
    "num_heads=-1",
    "num_heads=3",
    "num_heads=9223372036854775808",
    "axis=5",
    "axis=-4",
    "scale=1e39",
    "scale=nan",
    "scale=inf",
    "scale=0.5",
    "mrope_section=[[2,3,3",
    "mrope_section=[1,2",
    "mrope_section=1,,2",
    "mrope_section=[]",
    "interleaved=1",
    "rotary_embedding_dim=4",
    "is_inner_broadcast=0",
    "nope=1",
    "=3",
    "novalue",
    "num_heads",
];
const VALUES: &[&str] = &[
    "",
    "0",
    "-1",
    "1",
    "2",
    "1.5",
    "1e39",
    "nan",
    "abc",
    "[1,2",
    "2,1,1",
    " 3 ",
    "4294967296",
];
const REPEATS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "-1",
    "100001",
    "18446744073709551615",
    "abc",
    "",
];
const OPS: &[&str] = &[
    "MRotaryEmbedding",
    "BiasSoftmax",
    "com.microsoft.Nope",
    "",
    "biassoftmax",
];
/// Element values: int64 edges (index tensors) and float bit patterns (NaN, ±inf, max).
const ELEMENTS: &[u64] = &[
    u64::MAX,
    0,
    15,
    16,
    1 << 32,
    i64::MAX as u64,
    0x7FC0_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x7F7F_FFFF,
    0x7C00,
];

fn pick<T: Copy>(list: &[T], i: &Index) -> T {
    list[i.index(list.len())]
}

fn change() -> impl Strategy<Value = Change> {
    (0usize..18, any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(kind, a, b, c)| {
        let tensor = a.index(6);
        match kind {
            0 => Change::Dtype {
                tensor,
                dtype: pick(DTYPES, &b),
            },
            1 => Change::Dim {
                tensor,
                dim: b.index(4),
                value: pick(DIMS, &c),
            },
            2 => Change::DropDim { tensor },
            3 => Change::AddDim {
                tensor,
                value: pick(DIMS, &c),
            },
            4 => Change::Offsets {
                tensor,
                start: b.index(400) as i64 - 8,
                end: pick(&[0i64, 4, 96, 384, 1 << 40, -1], &c),
            },
            5 => Change::Rename {
                tensor,
                name: pick(NAMES, &b),
            },
            6 => Change::Remove { tensor },
            7 => Change::Element {
                tensor,
                at: b.index(100),
                bits: pick(ELEMENTS, &c),
            },
            8 => Change::Truncate { at: b.index(2000) },
            9 => Change::Append {
                bytes: b.index(40) + 1,
            },
            10 => Change::HeaderLength {
                value: pick(&[0u64, 1, 7, 100_000_001, u64::MAX, 1 << 40], &b),
            },
            11 => Change::DropAttr { at: b.index(3) },
            12 => Change::Attr {
                text: pick(ATTRS, &b),
            },
            13 => Change::AttrValue {
                at: b.index(3),
                value: pick(VALUES, &c),
            },
            14 => Change::Repeat {
                text: pick(REPEATS, &b),
            },
            15 => Change::OpName {
                text: pick(OPS, &b),
            },
            16 => Change::OtherSpelling { tensor },
            _ => Change::OutputInMissingFolder,
        }
    })
}

/// Inputs over all calls: a call, then one to four changes.
pub fn inputs() -> impl Strategy<Value = Input> {
    let count = calls().len();
    (0..count, proptest::collection::vec(change(), 1..=4))
        .prop_map(|(call, changes)| Input { call, changes })
}

/// What one input makes: the file's bytes and the arguments.
#[derive(Debug, Clone)]
pub struct Materialised {
    pub file: Vec<u8>,
    pub argv: Vec<String>,
    pub output_missing_folder: bool,
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let call = &calls()[self.call];
        writeln!(f, "# run-op input: {} {}", call.op, call.attrs.join(" "))?;
        for change in &self.changes {
            writeln!(f, "# change: {change:?}")?;
        }
        let made = materialise(self);
        writeln!(f, "# argv: {}", made.argv.join(" "))?;
        let header_len = made
            .file
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes);
        writeln!(
            f,
            "# file: {} bytes, header length field {header_len:?}",
            made.file.len()
        )
    }
}

/// Builds the file and arguments of `input` (paths `IN` and `OUT` stand for the files).
pub fn materialise(input: &Input) -> Materialised {
    let call = &calls()[input.call];
    let mut tensors = call.tensors.clone();
    let mut attrs = call.attrs.clone();
    let mut repeat = None;
    let mut op = call.op.to_owned();
    let mut offsets: BTreeMap<usize, (i64, i64)> = BTreeMap::new();
    let mut raw: Vec<&Change> = Vec::new();
    let mut output_missing_folder = false;
    for change in &input.changes {
        let n = tensors.len().max(1);
        match change {
            Change::Dtype { tensor, dtype } => {
                if let Some(t) = tensors.get_mut(tensor % n) {
                    t.1 = (*dtype).to_owned();
                }
            }
            Change::Dim { tensor, dim, value } => {
                if let Some(t) = tensors.get_mut(tensor % n)
                    && !t.2.is_empty()
                {
                    let d = dim % t.2.len();
                    t.2[d] = *value;
                }
            }
            Change::DropDim { tensor } => {
                if let Some(t) = tensors.get_mut(tensor % n) {
                    t.2.pop();
                }
            }
            Change::AddDim { tensor, value } => {
                if let Some(t) = tensors.get_mut(tensor % n) {
                    t.2.push(*value);
                }
            }
            Change::Offsets { tensor, start, end } => {
                offsets.insert(tensor % n, (*start, *end));
            }
            Change::Rename { tensor, name } => {
                if let Some(t) = tensors.get_mut(tensor % n) {
                    t.0 = (*name).to_owned();
                }
            }
            Change::Remove { tensor } => {
                if !tensors.is_empty() {
                    tensors.remove(tensor % n);
                }
            }
            Change::OtherSpelling { tensor } => {
                if let Some(t) = tensors.get(tensor % n) {
                    let copy = (
                        other_spelling(call.op, &t.0),
                        t.1.clone(),
                        t.2.clone(),
                        t.3.clone(),
                    );
                    tensors.push(copy);
                }
            }
            Change::Element { tensor, at, bits } => {
                if let Some(t) = tensors.get_mut(tensor % n) {
                    let width = match t.1.as_str() {
                        "I64" => 8,
                        "F16" => 2,
                        _ => 4,
                    };
                    let slots = t.3.len() / width;
                    if slots > 0 {
                        let at = (at % slots) * width;
                        t.3[at..at + width].copy_from_slice(&bits.to_le_bytes()[..width]);
                    }
                }
            }
            Change::DropAttr { at } => {
                if !attrs.is_empty() {
                    let at = at % attrs.len();
                    attrs.remove(at);
                }
            }
            Change::Attr { text } => attrs.push((*text).to_owned()),
            Change::AttrValue { at, value } => {
                if !attrs.is_empty() {
                    let at = at % attrs.len();
                    let name = attrs[at].split('=').next().unwrap_or_default().to_owned();
                    attrs[at] = format!("{name}={value}");
                }
            }
            Change::Repeat { text } => repeat = Some(*text),
            Change::OpName { text } => op = (*text).to_owned(),
            Change::OutputInMissingFolder => output_missing_folder = true,
            Change::Truncate { .. } | Change::Append { .. } | Change::HeaderLength { .. } => {
                raw.push(change);
            }
        }
    }
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (i, (name, dtype, shape, bytes)) in tensors.iter().enumerate() {
        let start = data.len() as i64;
        data.extend_from_slice(bytes);
        let (s, e) = offsets
            .get(&i)
            .copied()
            .unwrap_or((start, data.len() as i64));
        header.insert(
            name.clone(),
            json!({"dtype": dtype, "shape": shape, "data_offsets": [s, e]}),
        );
    }
    let mut text = Value::Object(header).to_string();
    while !text.len().is_multiple_of(8) {
        text.push(' ');
    }
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&data);
    for change in raw {
        match change {
            Change::Truncate { at } => file.truncate(at % (file.len() + 1)),
            Change::Append { bytes } => file.extend(std::iter::repeat_n(0x20u8, *bytes)),
            Change::HeaderLength { value } if file.len() >= 8 => {
                file[..8].copy_from_slice(&value.to_le_bytes());
            }
            _ => {}
        }
    }
    let mut argv = vec![
        "run-op".to_owned(),
        op,
        "--inputs".into(),
        "IN".into(),
        "--output".into(),
        "OUT".into(),
    ];
    for attr in attrs {
        argv.push("--attr".into());
        argv.push(attr);
    }
    if let Some(repeat) = repeat {
        argv.push(format!("--repeat={repeat}"));
    }
    Materialised {
        file,
        argv,
        output_missing_folder,
    }
}

/// How an input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// clap refused the arguments (status 2, its usage message).
    Arguments,
    /// run-op refused the input (status 2, one line).
    Refused,
    /// The op ran and the outputs were written.
    Ran,
}

/// Runs one input in `dir` on the shared device; `Err` when something that must hold does not.
pub fn check(
    input: &Input,
    dir: &std::path::Path,
    ctx: &Arc<OnceLock<Context>>,
    budget: Budget,
) -> Result<Class, String> {
    let made = materialise(input);
    let inputs = dir.join("in.safetensors");
    let out_dir = if made.output_missing_folder {
        dir.join("missing")
    } else {
        dir.to_path_buf()
    };
    let output = out_dir.join("out.safetensors");
    std::fs::write(&inputs, &made.file).map_err(|e| format!("cannot write the input: {e}"))?;
    let _ = std::fs::remove_file(&output);
    let argv: Vec<String> = made
        .argv
        .iter()
        .map(|a| match a.as_str() {
            "IN" => inputs.display().to_string(),
            "OUT" => output.display().to_string(),
            _ => a.clone(),
        })
        .collect();
    let Ok(args) = Args::try_parse_from(&argv) else {
        // clap's own usage error (status 2): a bad flag value, like `--repeat 0`.
        return Ok(Class::Arguments);
    };
    let shared = Arc::clone(ctx);
    let result = drive::guarded(budget.hang, move || run_op::run(&args, &shared))?;
    let leftovers: Vec<String> = std::fs::read_dir(&out_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if leftovers.iter().any(|n| n.ends_with(".partial")) {
        return Err(format!("a partial file is left behind: {leftovers:?}"));
    }
    match result {
        Ok(_) => {
            if let Some(names) = named_twice(&made.argv[1], &made.file) {
                return Err(format!(
                    "ran with one input given twice, as {names}, saying nothing"
                ));
            }
            let bytes = std::fs::read(&output)
                .map_err(|e| format!("exit 0 without an output file: {e}"))?;
            let file = safetensors::SafeTensors::deserialize(&bytes)
                .map_err(|e| format!("exit 0 with an unreadable output: {e}"))?;
            if file.names().is_empty() {
                return Err("exit 0 with an output file that holds no tensor".to_owned());
            }
            Ok(Class::Ran)
        }
        Err(failure) => {
            let message = failure.message();
            if message.is_empty() || message.contains('\n') {
                return Err(format!("a failure that is not one line: {message:?}"));
            }
            if failure.status() != 2 {
                return Err(format!(
                    "a bad input reported as a runtime failure: {message}"
                ));
            }
            if output.exists() {
                return Err(format!("a failure left an output file: {message}"));
            }
            Ok(Class::Refused)
        }
    }
}

/// Fuzzes run-op for `budget`: the shrunk failing input and its message, if one failed.
pub fn fuzz(budget: Budget) -> Result<Option<(String, String)>> {
    let dir = std::env::temp_dir().join(format!("fuzz-run-op-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ctx = Arc::new(OnceLock::new());
    eprintln!(
        "fuzz run-op: {} calls, {} s, seed {}",
        calls().len(),
        budget.time.as_secs(),
        budget.seed
    );
    let mut tally: BTreeMap<Class, u64> = BTreeMap::new();
    let run = drive::run(
        &inputs(),
        budget,
        |input| {
            let class = check(input, &dir, &ctx, budget)?;
            *tally.entry(class).or_default() += 1;
            Ok(())
        },
        |cases, elapsed| {
            eprintln!(
                "fuzz run-op: {cases} inputs in {:.0} s",
                elapsed.as_secs_f64()
            )
        },
    );
    eprintln!(
        "fuzz run-op: {} inputs in {:.1} s: {} refused by clap, {} refused by run-op, {} ran",
        run.cases,
        run.elapsed.as_secs_f64(),
        tally.get(&Class::Arguments).unwrap_or(&0),
        tally.get(&Class::Refused).unwrap_or(&0),
        tally.get(&Class::Ran).unwrap_or(&0)
    );
    let _ = std::fs::remove_dir_all(&dir);
    let Some(failure) = run.failure else {
        return Ok(None);
    };
    // The failing file is kept, so that `run-op` itself can be run on it with the printed
    // arguments (`IN` is this file).
    let kept = std::env::temp_dir().join("fuzz-run-op-failure.safetensors");
    std::fs::write(&kept, materialise(&failure.input).file)
        .with_context(|| format!("writing {}", kept.display()))?;
    let input = format!("{}# IN: {}\n", failure.input, kept.display());
    Ok(Some((input, failure.message)))
}
