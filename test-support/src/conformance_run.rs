//! One case of a conformance suite run on a GPU through an op's untyped registry entry: inputs
//! bound to the op's roles by their keys and uploaded in manifest order, attributes converted
//! to `AttrValue`s, outputs read back and checked for dtype, shape and values (the case's
//! expected data, else a float64 reference run on the same rounded inputs), and the variant the
//! op selected recorded. Every way a case can fail is a [`CaseFailure`], never a panic.
//! [`run_case`] waits for the readback; [`run_case_async`], the same steps, awaits it, as a
//! browser page must.

use std::fmt;

use kernel_runtime::registry::{DynRun, OpEntry, RoleInfo};
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Context, DType, OpError, RuntimeError};

use crate::conformance::{Case, Expected, Mismatch, Tensor, as_dtype};

/// How many refused elements a failure lists.
const LISTED: usize = 8;

/// An input as a reference sees it: the op's role, the shape, the values rounded to the case's
/// dtype (what the GPU was given).
#[derive(Debug, Clone, Copy)]
pub struct RefInput<'a> {
    pub role: &'static str,
    pub shape: &'a [usize],
    pub values: &'a [f64],
}

/// A float64 reference of an op: inputs in manifest order and attributes by name, to the
/// values of each output in manifest order, or why it cannot compute them.
pub type Reference =
    dyn Fn(&[RefInput<'_>], &[(String, AttrValue)]) -> Result<Vec<Vec<f64>>, String>;

/// A reference of an op with one output called as a [`Reference`] is: `compute` takes the
/// inputs owned, each as its role, shape and values (the form of `kernels_tools::reference::by_op`),
/// and the attributes; its output is the only one, its error shown with its causes (`{:#}`, as
/// an `anyhow` chain prints them).
pub fn one_output_reference<F, E>(
    inputs: &[RefInput<'_>],
    attrs: &[(String, AttrValue)],
    compute: F,
) -> Result<Vec<Vec<f64>>, String>
where
    F: FnOnce(&[(String, Vec<usize>, Vec<f64>)], &[(String, AttrValue)]) -> Result<Vec<f64>, E>,
    E: fmt::Display,
{
    let owned: Vec<(String, Vec<usize>, Vec<f64>)> = inputs
        .iter()
        .map(|input| {
            (
                input.role.to_owned(),
                input.shape.to_vec(),
                input.values.to_vec(),
            )
        })
        .collect();
    compute(&owned, attrs)
        .map(|output| vec![output])
        .map_err(|error| format!("{error:#}"))
}

/// The device feature `ctx` lacks to run `case` at all (float16 tensors need `shader-f16`):
/// such a case is reported as not run on that device, not as a rejection by the op.
pub fn missing_feature(ctx: &Context, case: &Case) -> Option<&'static str> {
    let f16 = case
        .inputs
        .iter()
        .map(|t| &t.dtype)
        .chain(case.outputs.iter().map(|o| &o.dtype))
        .any(|d| d == "float16");
    (f16 && !ctx.caps().shader_f16).then_some("shader-f16")
}

/// What an output's values were held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// The values the case gives.
    Data,
    /// The reference's, rounded to the output's dtype.
    Reference,
    /// Nothing to hold them against: the shape and dtype were checked, and that no element is
    /// NaN where the case forbids it ("no reference").
    ShapeOnly,
}

/// One output of a case that passed.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputReport {
    /// The case's key for it.
    pub key: String,
    pub checked: Checked,
    /// The largest absolute difference over the finite elements (0 when [`Checked::ShapeOnly`]).
    pub worst: f64,
}

/// A case that passed: the variant the op selected, and what each output was checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    pub case: String,
    pub variant: &'static str,
    pub outputs: Vec<OutputReport>,
}

/// Why a case failed: the op, the case, the variant when one was selected, and what was wrong
/// (boxed: a `Result` with a failure stays small).
#[derive(Debug)]
pub struct CaseFailure {
    pub op: &'static str,
    pub case: String,
    pub variant: Option<&'static str>,
    pub kind: Box<FailureKind>,
}

/// What was wrong with a case or its result.
#[derive(Debug)]
pub enum FailureKind {
    /// A tensor's dtype is one kernel-runtime has no tensors of (yet).
    UnsupportedDtype { tensor: String, dtype: String },
    /// The case's keys and the op's roles do not pair up.
    Keys(String),
    /// An attribute the case gives has no `AttrValue` form.
    Attribute { name: String, reason: String },
    /// An input could not be uploaded.
    Upload { input: String, error: String },
    /// The op refused the case (its contract, no variant), or running it failed.
    Op(OpError),
    /// An output could not be read back.
    Readback { output: String, error: String },
    /// An output of another dtype than the case expects.
    Dtype {
        output: String,
        got: String,
        want: String,
    },
    /// An output of another shape than the case expects.
    Shape {
        output: String,
        got: Vec<usize>,
        want: Vec<usize>,
    },
    /// Elements the suite's rule refuses: the first few, and how many of how many.
    Values {
        output: String,
        tolerance: f64,
        first: Vec<Mismatch>,
        count: usize,
        of: usize,
    },
    /// The reference failed, or gave the wrong number of outputs or values.
    Reference(String),
}

impl fmt::Display for CaseFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` case `{}`", self.op, self.case)?;
        if let Some(variant) = self.variant {
            write!(f, " (variant `{variant}`)")?;
        }
        f.write_str(": ")?;
        match &*self.kind {
            FailureKind::UnsupportedDtype { tensor, dtype } => write!(
                f,
                "`{tensor}` is {dtype}, a dtype kernel-runtime has no tensors of"
            ),
            FailureKind::Keys(why) => f.write_str(why),
            FailureKind::Attribute { name, reason } => write!(f, "attribute `{name}`: {reason}"),
            FailureKind::Upload { input, error } => write!(f, "uploading `{input}`: {error}"),
            FailureKind::Op(error) => write!(f, "the op failed: {error}"),
            FailureKind::Readback { output, error } => write!(f, "reading `{output}`: {error}"),
            FailureKind::Dtype { output, got, want } => {
                write!(f, "output `{output}` is {got}, expected {want}")
            }
            FailureKind::Shape { output, got, want } => {
                write!(f, "output `{output}` has shape {got:?}, expected {want:?}")
            }
            FailureKind::Values {
                output,
                tolerance,
                first,
                count,
                of,
            } => {
                write!(
                    f,
                    "output `{output}`: {count} of {of} values refused (tolerance {tolerance}):"
                )?;
                for Mismatch { index, got, want } in first {
                    write!(f, " [{index}] got {got}, want {want};")?;
                }
                if *count > first.len() {
                    write!(f, " …")?;
                }
                Ok(())
            }
            FailureKind::Reference(why) => write!(f, "reference: {why}"),
        }
    }
}

impl std::error::Error for CaseFailure {}

/// The role of `roles` that case key `key` names: the same name, else the one name equal to it
/// without case, `_` and `-` (a bind key `positionIds` for the role `position_ids`).
fn role_of(roles: &[RoleInfo], key: &str) -> Result<usize, String> {
    if let Some(at) = roles.iter().position(|r| r.role == key) {
        return Ok(at);
    }
    let loose = |name: &str| -> String {
        name.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let matches: Vec<usize> = (0..roles.len())
        .filter(|&i| loose(roles[i].role) == loose(key))
        .collect();
    let names: Vec<&str> = roles.iter().map(|r| r.role).collect();
    match matches[..] {
        [at] => Ok(at),
        [] => Err(format!(
            "`{key}` is none of the op's roles ({})",
            names.join(", ")
        )),
        _ => Err(format!(
            "`{key}` could be several of the op's roles ({})",
            names.join(", ")
        )),
    }
}

/// The case's inputs in the order of `roles` (the op's, in manifest order): every role given
/// exactly once.
fn inputs_in_order<'c>(roles: &[RoleInfo], case: &'c Case) -> Result<Vec<&'c Tensor>, FailureKind> {
    let mut slots: Vec<Option<&Tensor>> = vec![None; roles.len()];
    for tensor in &case.inputs {
        let at =
            role_of(roles, &tensor.key).map_err(|why| FailureKind::Keys(format!("input {why}")))?;
        if slots[at].replace(tensor).is_some() {
            return Err(FailureKind::Keys(format!(
                "two inputs are the role `{}`",
                roles[at].role
            )));
        }
    }
    let missing: Vec<&str> = roles
        .iter()
        .zip(&slots)
        .filter(|(_, slot)| slot.is_none())
        .map(|(info, _)| info.role)
        .collect();
    if !missing.is_empty() {
        return Err(FailureKind::Keys(format!(
            "no input for the role(s) {}",
            missing.join(", ")
        )));
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The case's expected outputs with the index in `roles` (the op's outputs) of each; at least
/// one.
fn outputs_by_role<'c>(
    roles: &[RoleInfo],
    case: &'c Case,
) -> Result<Vec<(usize, &'c Expected)>, FailureKind> {
    if case.outputs.is_empty() {
        return Err(FailureKind::Keys("the case checks no output".to_owned()));
    }
    let mut out: Vec<(usize, &Expected)> = Vec::new();
    for expected in &case.outputs {
        let at = role_of(roles, &expected.key)
            .map_err(|why| FailureKind::Keys(format!("output {why}")))?;
        if out.iter().any(|(i, _)| *i == at) {
            return Err(FailureKind::Keys(format!(
                "two outputs are the role `{}`",
                roles[at].role
            )));
        }
        out.push((at, expected));
    }
    Ok(out)
}

/// An attribute as the case writes it (a JSON value) as the runtime takes it: an integer, a
/// float, a list of integers or a string; `true`/`false` are 1/0, as ONNX has no booleans.
pub fn attr_value(value: &serde_json::Value) -> Result<AttrValue, String> {
    use serde_json::Value;
    match value {
        Value::Bool(b) => Ok(AttrValue::Int(i64::from(*b))),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(AttrValue::Int(i)),
            (None, Some(_)) if n.is_u64() => Err(format!("{n} is past the int64 range")),
            (None, Some(x)) => Ok(AttrValue::Float(x)),
            (None, None) => Err(format!("{n} is not a number the runtime takes")),
        },
        Value::String(s) => Ok(AttrValue::Str(s.clone())),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_i64().ok_or_else(|| {
                    format!("item {i}, {item}, is not an int64: lists are of integers")
                })
            })
            .collect::<Result<Vec<i64>, String>>()
            .map(AttrValue::Ints),
        Value::Null | Value::Object(_) => Err(format!("{value} is not an attribute value")),
    }
}

/// What a case needs before the op sees it: inputs uploaded in manifest order, attributes.
struct Prepared<'c> {
    inputs: Vec<&'c Tensor>,
    tensors: Vec<AnyTensor>,
    attrs: Vec<(String, AttrValue)>,
}

fn prepare<'c>(
    ctx: &Context,
    entry: &OpEntry,
    case: &'c Case,
) -> Result<Prepared<'c>, FailureKind> {
    let inputs = inputs_in_order(entry.inputs, case)?;
    let mut attrs = Vec::with_capacity(case.attrs.len());
    for (name, value) in &case.attrs {
        let value = attr_value(value).map_err(|reason| FailureKind::Attribute {
            name: name.clone(),
            reason,
        })?;
        attrs.push((name.clone(), value));
    }
    let mut tensors = Vec::with_capacity(inputs.len());
    for tensor in &inputs {
        let Some(dtype) = DType::from_onnx_name(&tensor.dtype) else {
            return Err(FailureKind::UnsupportedDtype {
                tensor: tensor.key.clone(),
                dtype: tensor.dtype.clone(),
            });
        };
        let uploaded =
            AnyTensor::from_f64(ctx, dtype, &tensor.shape, &tensor.values).map_err(|error| {
                FailureKind::Upload {
                    input: tensor.key.clone(),
                    error: error.to_string(),
                }
            })?;
        tensors.push(uploaded);
    }
    Ok(Prepared {
        inputs,
        tensors,
        attrs,
    })
}

/// The variant `entry` selects for `case` on `ctx`, planned without running (inputs are still
/// uploaded: the op's host checks read index values).
pub fn plan_case(ctx: &Context, entry: &OpEntry, case: &Case) -> Result<&'static str, CaseFailure> {
    let failure = |kind| CaseFailure {
        op: entry.qualified_name,
        case: case.name.clone(),
        variant: None,
        kind: Box::new(kind),
    };
    let prepared = prepare(ctx, entry, case).map_err(failure)?;
    let inputs: Vec<&AnyTensor> = prepared.tensors.iter().collect();
    let plan = entry
        .plan(ctx, &inputs, &prepared.attrs)
        .map_err(|e| failure(FailureKind::Op(e)))?;
    Ok(plan.variant)
}

/// Runs `case` with `entry` on `ctx` and checks every output it lists: dtype, shape, and values
/// against the case's data or else `reference` (on the rounded inputs, its results rounded to
/// the output's dtype); without either, that no element is a NaN the case forbids. The steps
/// are [`run_case_async`]'s, this thread blocking while a readback is awaited.
#[cfg(not(target_arch = "wasm32"))]
pub fn run_case(
    ctx: &Context,
    entry: &OpEntry,
    case: &Case,
    reference: Option<&Reference>,
) -> Result<CaseReport, CaseFailure> {
    // Natively a readback's future is woken from the device poll it starts, as
    // `AnyTensor::to_f64_vec` relies on too.
    pollster::block_on(run_case_async(ctx, entry, case, reference))
}

/// [`run_case`] without blocking on the readback, for browsers (where a buffer is mapped only
/// once the page's event loop runs).
pub async fn run_case_async(
    ctx: &Context,
    entry: &OpEntry,
    case: &Case,
    reference: Option<&Reference>,
) -> Result<CaseReport, CaseFailure> {
    let mut ran = Ran::start(ctx, entry, case, reference)?;
    for at in 0..ran.len() {
        let got = ran
            .output(at)?
            .read_f64_async(ctx)
            .await
            .map_err(|error| ran.readback_failed(at, &error))?;
        ran.check(at, got)?;
    }
    Ok(ran.finish())
}

/// A case whose op has run, its outputs checked one at a time as each is read back.
struct Ran<'a> {
    entry: &'a OpEntry,
    case: &'a Case,
    reference: Option<&'a Reference>,
    /// The outputs the case lists, with the index of each among the op's.
    outputs: Vec<(usize, &'a Expected)>,
    prepared: Prepared<'a>,
    run: DynRun,
    /// The reference's outputs, computed once, when the first output without data needs them.
    wanted: Option<Vec<Vec<f64>>>,
    reports: Vec<OutputReport>,
}

impl<'a> Ran<'a> {
    /// Pairs the case's outputs with the op's, uploads the inputs and runs the op.
    fn start(
        ctx: &Context,
        entry: &'a OpEntry,
        case: &'a Case,
        reference: Option<&'a Reference>,
    ) -> Result<Self, CaseFailure> {
        let failure = |kind| CaseFailure {
            op: entry.qualified_name,
            case: case.name.clone(),
            variant: None,
            kind: Box::new(kind),
        };
        let outputs = outputs_by_role(entry.outputs, case).map_err(failure)?;
        let prepared = prepare(ctx, entry, case).map_err(failure)?;
        let inputs: Vec<&AnyTensor> = prepared.tensors.iter().collect();
        let run = entry
            .run(ctx, &inputs, &prepared.attrs)
            .map_err(|e| failure(FailureKind::Op(e)))?;
        Ok(Ran {
            entry,
            case,
            reference,
            reports: Vec::with_capacity(outputs.len()),
            outputs,
            prepared,
            run,
            wanted: None,
        })
    }

    /// How many outputs the case checks.
    fn len(&self) -> usize {
        self.outputs.len()
    }

    /// A failure of the case once the op has run (so naming the variant it selected).
    fn fail(&self, kind: FailureKind) -> CaseFailure {
        CaseFailure {
            op: self.entry.qualified_name,
            case: self.case.name.clone(),
            variant: Some(self.run.variant),
            kind: Box::new(kind),
        }
    }

    /// The tensor of the case's `n`th output, once its dtype and shape are the case's.
    fn output(&self, n: usize) -> Result<&AnyTensor, CaseFailure> {
        let (at, expected) = self.outputs[n];
        let Some(tensor) = self.run.outputs.get(at) else {
            return Err(self.fail(FailureKind::Keys(format!(
                "the op returned {} outputs, none for `{}`",
                self.run.outputs.len(),
                expected.key
            ))));
        };
        if tensor.dtype().onnx_name() != expected.dtype {
            return Err(self.fail(FailureKind::Dtype {
                output: expected.key.clone(),
                got: tensor.dtype().onnx_name().to_owned(),
                want: expected.dtype.clone(),
            }));
        }
        if tensor.shape() != expected.shape {
            return Err(self.fail(FailureKind::Shape {
                output: expected.key.clone(),
                got: tensor.shape().to_vec(),
                want: expected.shape.clone(),
            }));
        }
        Ok(tensor)
    }

    /// The failure of reading the case's `n`th output back.
    fn readback_failed(&self, n: usize, error: &RuntimeError) -> CaseFailure {
        self.fail(FailureKind::Readback {
            output: self.outputs[n].1.key.clone(),
            error: error.to_string(),
        })
    }

    /// Checks the values `got` of the case's `n`th output against the case's data, else the
    /// reference, else only for NaNs the case forbids.
    fn check(&mut self, n: usize, got: Vec<f64>) -> Result<(), CaseFailure> {
        let (at, expected) = self.outputs[n];
        let (want, checked) = match (&expected.values, self.reference) {
            (Some(values), _) => (values.clone(), Checked::Data),
            (None, Some(reference)) => {
                if self.wanted.is_none() {
                    let computed = run_reference(self.entry, reference, &self.prepared)
                        .map_err(|kind| self.fail(kind))?;
                    self.wanted = Some(computed);
                }
                let all = self.wanted.as_deref().unwrap_or_default();
                let raw = all.get(at).ok_or_else(|| {
                    self.fail(FailureKind::Reference(format!(
                        "{} outputs, none for `{}`",
                        all.len(),
                        expected.key
                    )))
                })?;
                let Some(rounded) = as_dtype(raw, &expected.dtype) else {
                    return Err(self.fail(FailureKind::UnsupportedDtype {
                        tensor: expected.key.clone(),
                        dtype: expected.dtype.clone(),
                    }));
                };
                (rounded, Checked::Reference)
            }
            // Held against itself, every element agrees except a NaN the case forbids.
            (None, None) => (got.clone(), Checked::ShapeOnly),
        };
        if want.len() != got.len() {
            return Err(self.fail(FailureKind::Reference(format!(
                "{} values for `{}`, which has {}",
                want.len(),
                expected.key,
                got.len()
            ))));
        }
        let (first, count) = expected.mismatches(&got, &want, LISTED);
        if count > 0 {
            return Err(self.fail(FailureKind::Values {
                output: expected.key.clone(),
                tolerance: expected.tolerance,
                first,
                count,
                of: got.len(),
            }));
        }
        let worst = got
            .iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs())
            .filter(|d| d.is_finite())
            .fold(0.0, f64::max);
        self.reports.push(OutputReport {
            key: expected.key.clone(),
            checked,
            worst,
        });
        Ok(())
    }

    /// The report of a case every output of which passed.
    fn finish(self) -> CaseReport {
        CaseReport {
            case: self.case.name.clone(),
            variant: self.run.variant,
            outputs: self.reports,
        }
    }
}

/// The reference's outputs for the prepared inputs.
fn run_reference(
    entry: &OpEntry,
    reference: &Reference,
    prepared: &Prepared<'_>,
) -> Result<Vec<Vec<f64>>, FailureKind> {
    let inputs: Vec<RefInput<'_>> = entry
        .inputs
        .iter()
        .zip(&prepared.inputs)
        .map(|(info, tensor)| RefInput {
            role: info.role,
            shape: &tensor.shape,
            values: &tensor.values,
        })
        .collect();
    reference(&inputs, &prepared.attrs).map_err(FailureKind::Reference)
}

/// The variants of `entry` a device like `ctx`'s can build: those each of whose passes has a
/// shader needing only features the device has. (Whether a call reaches one is up to its
/// `when` and those before it.)
pub fn buildable_variants(ctx: &Context, entry: &OpEntry) -> Vec<&'static str> {
    let passes = entry.shaders.passes();
    let shaders = entry.shaders.shaders();
    let caps = ctx.caps();
    entry
        .variants
        .iter()
        .copied()
        .filter(|variant| {
            passes
                .iter()
                .enumerate()
                .filter(|(_, pass)| pass.variant == *variant)
                .all(|(at, _)| {
                    shaders.iter().any(|shader| {
                        shader.pass == at && shader.features.iter().all(|f| caps.has_feature(f))
                    })
                })
        })
        .collect()
}

#[cfg(test)]
#[path = "conformance_run_tests.rs"]
mod tests;
