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

/// The range of an integer dtype, `None` for floats and names the format does not have.
/// `int64` is limited to the integers a JSON number (a double) holds exactly, ±2^53.
fn int_range(dtype: &str) -> Option<(f64, f64)> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    Some(match dtype {
        "int8" => (-128.0, 127.0),
        "uint8" => (0.0, 255.0),
        "int16" => (-32768.0, 32767.0),
        "uint16" => (0.0, 65535.0),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "int64" => (-EXACT, EXACT),
        _ => return None,
    })
}

/// A float dtype's rounding (to nearest, ties to even), `None` for other names.
fn float_rounding(dtype: &str) -> Option<fn(f64) -> f64> {
    match dtype {
        "float32" => Some(|v| f64::from(v as f32)),
        "float16" => Some(|v| half::f16::from_f64(v).to_f64()),
        _ => None,
    }
}

/// `values` (a reference's results) as an output of `dtype` holds them: floats rounded (to
/// nearest, ties to even), integers truncated and wrapped to the dtype's width as integer
/// kernels store them; `None` for a dtype the format does not name.
pub fn as_dtype(values: &[f64], dtype: &str) -> Option<Vec<f64>> {
    if let Some(round) = float_rounding(dtype) {
        return Some(values.iter().map(|&v| round(v)).collect());
    }
    let (low, high) = int_range(dtype)?;
    let span = high - low + 1.0;
    Some(
        values
            .iter()
            .map(|&v| {
                if !v.is_finite() {
                    return v;
                }
                (v.trunc() - low).rem_euclid(span) + low
            })
            .collect(),
    )
}

/// `values` as the dtype holds them: floats rounded (to nearest, ties to even), integers
/// checked to be whole and in the dtype's range.
fn rounded(values: &[f64], dtype: &str, path: &str) -> Result<Vec<f64>, SuiteError> {
    if let Some(round) = float_rounding(dtype) {
        return Ok(values.iter().map(|&v| round(v)).collect());
    }
    let Some(range) = int_range(dtype) else {
        return Err(SuiteError {
            path: format!("{path}.dtype"),
            message: format!("unknown dtype `{dtype}`"),
        });
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

/// One element the suite's rule refuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mismatch {
    /// Its row-major index.
    pub index: usize,
    pub got: f64,
    pub want: f64,
}

impl Expected {
    /// The suite's rule for one element: within the tolerance, infinities equal, NaN only
    /// where `want` has one and `allowNaN` is not false.
    pub fn agrees(&self, got: f64, want: f64) -> bool {
        if want.is_nan() {
            got.is_nan() && self.allow_nan
        } else if want.is_infinite() || got.is_nan() {
            got == want
        } else {
            (got - want).abs() <= self.tolerance
        }
    }

    /// The elements of `got` the rule refuses against `want` (of one length): the first
    /// `limit` by index, and how many there are in all.
    pub fn mismatches(&self, got: &[f64], want: &[f64], limit: usize) -> (Vec<Mismatch>, usize) {
        let mut first = Vec::new();
        let mut count = 0;
        for (index, (&got, &want)) in got.iter().zip(want).enumerate() {
            if !self.agrees(got, want) {
                count += 1;
                if first.len() < limit {
                    first.push(Mismatch { index, got, want });
                }
            }
        }
        (first, count)
    }

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
        match self.mismatches(got, want, 1).0.first() {
            None => Ok(()),
            Some(Mismatch { index, got, want }) => Err(format!(
                "`{}`[{index}] is {got}, expected {want} (tolerance {})",
                self.key, self.tolerance
            )),
        }
    }
}

#[cfg(test)]
#[path = "conformance_tests.rs"]
mod tests;
