//! Benchmark cases as data: `benchmarks/cases/<op>.bench.json`, one file per op, read at run time.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

/// One `<op>.bench.json` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchFile {
    /// The op's qualified name.
    pub op: String,
    #[serde(default)]
    pub description: String,
    pub cases: Vec<BenchCase>,
}

/// One benchmark case, run once per dtype.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BenchCase {
    pub name: String,
    /// ONNX dtype names for the op's type variable: `float32`, `float16`.
    pub dtypes: Vec<String>,
    /// Every input role, with its shape and data distribution.
    pub inputs: BTreeMap<String, InputSpec>,
    /// Attributes by name: integers, floats or integer lists.
    #[serde(default)]
    pub attrs: BTreeMap<String, serde_json::Value>,
    /// How many times the kernel must read each input at least (default once): the long-row
    /// softmax has to read its rows twice, since they cannot stay on chip.
    #[serde(default)]
    pub reads: BTreeMap<String, u32>,
    /// Small shapes and attribute overrides for `--quick` runs on software adapters.
    pub quick: QuickSpec,
}

/// Shape and distribution of one input.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InputSpec {
    pub shape: Vec<usize>,
    /// Uniform range of float inputs (default [-1, 1]).
    #[serde(default)]
    pub range: Option<[f64; 2]>,
    /// Index inputs: uniform integers in `[0, indicesBelow)`.
    #[serde(default)]
    pub indices_below: Option<i64>,
}

/// The `--quick` variant of a case.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuickSpec {
    /// Replacement shapes by role (roles not listed keep their shape).
    #[serde(default)]
    pub inputs: BTreeMap<String, Vec<usize>>,
    #[serde(default)]
    pub attrs: BTreeMap<String, serde_json::Value>,
    /// Replacement bound for index inputs.
    #[serde(default)]
    pub indices_below: Option<i64>,
}

impl BenchCase {
    /// The case with its quick overrides applied.
    pub fn quick(&self) -> BenchCase {
        let mut case = self.clone();
        for (role, shape) in &self.quick.inputs {
            if let Some(input) = case.inputs.get_mut(role) {
                input.shape.clone_from(shape);
            }
        }
        for (name, value) in &self.quick.attrs {
            case.attrs.insert(name.clone(), value.clone());
        }
        if let Some(bound) = self.quick.indices_below {
            for input in case.inputs.values_mut() {
                if input.indices_below.is_some() {
                    input.indices_below = Some(bound);
                }
            }
        }
        case
    }
}

/// Reads every `*.bench.json` under `dir`, sorted by file name, or the one file `dir` names.
pub fn load_dir(dir: &Path) -> Result<Vec<BenchFile>> {
    let mut paths: Vec<_> = if dir.is_file() {
        vec![dir.to_path_buf()]
    } else {
        std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".bench.json"))
            .collect()
    };
    paths.sort();
    if paths.is_empty() {
        bail!("no *.bench.json files in {}", dir.display());
    }
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not a valid bench file", path.display()))
        })
        .collect()
}
