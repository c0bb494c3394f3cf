//! Conformance suites in the `test.json` format of the Hub's kernel packages: read strictly
//! (an unknown key is an error at its JSON path), each case's inputs resolved (`$ref` into the
//! file's `fixtureArrays`, `fillFloat32` generated) and rounded to their dtypes, and outputs
//! compared by the suite's rules (a tolerance, infinities equal, NaN only where the reference
//! has one and `allowNaN` is not false).

use std::fmt;

use indexmap::IndexMap;
use serde::Deserialize;

/// A suite: its cases in file order.
#[derive(Debug, Clone)]
pub struct Suite {
    pub cases: Vec<Case>,
}

/// One case: named tensors in, expected tensors out.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// By bind key, in file order.
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Expected>,
    /// The op's attributes, as the case gives them (`attrs`).
    pub attrs: Vec<(String, serde_json::Value)>,
    /// Why the case is not run on a GPU (`category: reason`), when it is not.
    pub skip_gpu: Option<String>,
}

/// An input: its values rounded to its dtype, in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub key: String,
    /// The ONNX name (`float32`, `int8`, …).
    pub dtype: String,
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
}

/// An expected output.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub key: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    /// The largest absolute difference accepted (0 when the case gives none).
    pub tolerance: f64,
    /// The expected values, where the case gives them; otherwise a reference computes them.
    pub values: Option<Vec<f64>>,
    /// `allowNaN: false` forbids NaN even where the reference has one.
    pub allow_nan: bool,
}

/// Why a suite cannot be read: the JSON path and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for SuiteError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SuiteFile {
    #[serde(default)]
    fixture_arrays: IndexMap<String, Vec<f64>>,
    cases: Vec<CaseFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseFile {
    name: String,
    inputs: IndexMap<String, TensorFile>,
    outputs: IndexMap<String, OutputFile>,
    #[serde(default)]
    attrs: IndexMap<String, serde_json::Value>,
    #[serde(default)]
    skip_gpu: Option<SkipFile>,
    #[serde(default)]
    #[allow(
        dead_code,
        reason = "read for strictness; where a case comes from is not run"
    )]
    provenance: Option<ProvenanceFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorFile {
    dtype: String,
    shape: Vec<usize>,
    data: DataFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct OutputFile {
    dtype: String,
    shape: Vec<usize>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    data: Option<DataFile>,
    #[serde(default, rename = "allowNaN")]
    allow_nan: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkipFile {
    category: String,
    reason: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "read for strictness only")]
struct ProvenanceFile {
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    test: Option<String>,
    #[serde(default)]
    notes: Option<String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
enum DataFile {
    Values {
        values: ValuesFile,
    },
    #[serde(rename = "fillFloat32", rename_all = "camelCase")]
    FillFloat32 {
        sin_step: f64,
        cos_step: f64,
        #[serde(default)]
        scale: Option<f64>,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ValuesFile {
    Inline(Vec<f64>),
    Ref {
        #[serde(rename = "$ref")]
        pointer: String,
    },
}

/// Reads a suite from the text of a `test.json`.
pub fn parse(text: &str) -> Result<Suite, SuiteError> {
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let file: SuiteFile =
        serde_path_to_error::deserialize(deserializer).map_err(|e| SuiteError {
            path: e.path().to_string(),
            message: e.inner().to_string(),
        })?;
    let mut cases = Vec::with_capacity(file.cases.len());
    for (c, case) in file.cases.into_iter().enumerate() {
        let at = |what: String| format!("cases[{c}].{what}");
        let mut inputs = Vec::new();
        for (key, tensor) in case.inputs {
            let path = at(format!("inputs.{key}"));
            let count = tensor.shape.iter().product();
            let raw = values(&tensor.data, count, &file.fixture_arrays, &path)?;
            let values = rounded(&raw, &tensor.dtype, &path)?;
            inputs.push(Tensor {
                key,
                dtype: tensor.dtype,
                shape: tensor.shape,
                values,
            });
        }
        let mut outputs = Vec::new();
        for (key, output) in case.outputs {
            let path = at(format!("outputs.{key}"));
            let count = output.shape.iter().product();
            let values = match &output.data {
                Some(data) => Some(values(data, count, &file.fixture_arrays, &path)?),
                None => None,
            };
            // The expected values are checked to be of the dtype, not rounded to it.
            if let Some(values) = &values {
                rounded(values, &output.dtype, &path)?;
            }
            outputs.push(Expected {
                key,
                dtype: output.dtype,
                shape: output.shape,
                tolerance: output.tolerance.unwrap_or(0.0),
                values,
                allow_nan: output.allow_nan != Some(false),
            });
        }
        cases.push(Case {
            name: case.name,
            inputs,
            outputs,
            attrs: case.attrs.into_iter().collect(),
            skip_gpu: case
                .skip_gpu
                .map(|skip| format!("{}: {}", skip.category, skip.reason)),
        });
    }
    Ok(Suite { cases })
}

/// The values `data` gives, `count` of them.
fn values(
    data: &DataFile,
    count: usize,
    fixtures: &IndexMap<String, Vec<f64>>,
    path: &str,
) -> Result<Vec<f64>, SuiteError> {
    let error = |message: String| SuiteError {
        path: format!("{path}.data"),
        message,
    };
    let values = match data {
        DataFile::Values {
            values: ValuesFile::Inline(values),
        } => values.clone(),
        DataFile::Values {
            values: ValuesFile::Ref { pointer },
        } => {
            let name = pointer
                .strip_prefix("#/fixtureArrays/")
                .ok_or_else(|| error(format!("`{pointer}` is not `#/fixtureArrays/<name>`")))?;
            fixtures
                .get(name)
                .cloned()
                .ok_or_else(|| error(format!("no fixture array `{name}`")))?
        }
        // One formula for every suite: the cases that fill carry no expected data, so the
        // reference runs on the same generated inputs.
        DataFile::FillFloat32 {
            sin_step,
            cos_step,
            scale,
        } => (0..count)
            .map(|i| {
                let i = i as f64;
                scale.unwrap_or(1.0) * ((i * sin_step).sin() + (i * cos_step).cos())
            })
            .collect(),
    };
    if values.len() != count {
        return Err(error(format!(
            "{} values for a shape of {count} elements",
            values.len()
        )));
    }
    Ok(values)
}

/// `values` as the dtype holds them: floats rounded (to nearest, ties to even), integers
/// checked to be whole and in the dtype's range.
fn rounded(values: &[f64], dtype: &str, path: &str) -> Result<Vec<f64>, SuiteError> {
    let range = match dtype {
        "float32" => return Ok(values.iter().map(|&v| f64::from(v as f32)).collect()),
        "float16" => {
            return Ok(values
                .iter()
                .map(|&v| half::f16::from_f64(v).to_f64())
                .collect());
        }
        "int8" => (-128.0, 127.0),
        "uint8" => (0.0, 255.0),
        "int16" => (-32768.0, 32767.0),
        "uint16" => (0.0, 65535.0),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        other => {
            return Err(SuiteError {
                path: format!("{path}.dtype"),
                message: format!("unknown dtype `{other}`"),
            });
        }
    };
    for (i, &v) in values.iter().enumerate() {
        if v.fract() != 0.0 || v < range.0 || v > range.1 {
            return Err(SuiteError {
                path: format!("{path}.data"),
                message: format!("value {i}, {v}, is not a {dtype}"),
            });
        }
    }
    Ok(values.to_vec())
}

impl Expected {
    /// Compares `got` with `want` (the case's values or a reference's) by the suite's rules;
    /// the first difference, by index, when they disagree.
    pub fn compare(&self, got: &[f64], want: &[f64]) -> Result<(), String> {
        if got.len() != want.len() {
            return Err(format!(
                "`{}`: {} values, expected {}",
                self.key,
                got.len(),
                want.len()
            ));
        }
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let agrees = if w.is_nan() {
                g.is_nan() && self.allow_nan
            } else if w.is_infinite() || g.is_nan() {
                g == w
            } else {
                (g - w).abs() <= self.tolerance
            };
            if !agrees {
                return Err(format!(
                    "`{}`[{i}] is {g}, expected {w} (tolerance {})",
                    self.key, self.tolerance
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "conformance_tests.rs"]
mod tests;
