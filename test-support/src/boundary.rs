//! One cell of a boundary-shape matrix: an op run through its registry entry on shapes at the
//! edges (a zero in a dimension, ones, odd sizes, launches past 65,535 workgroups), its
//! outputs poisoned first, and the outcome sorted into a right result, a typed refusal, or a
//! failure: a wrong or unwritten element, a wgpu error that reached the caller, a panic.
//! [`Matrix`] gathers the cells and prints them as a table of ops × shapes.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

use kernel_runtime::registry::OpEntry;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{AnyTensor, Arg, Context, DType, OpError, RuntimeError};

/// An input of a cell: its dtype, shape and values (row-major, as the dtype holds them).
#[derive(Debug, Clone)]
pub struct Input {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub values: Vec<f64>,
}

impl Input {
    /// Seeded values in [-1, 1) of `shape`, rounded to `dtype`.
    pub fn random(dtype: DType, shape: &[usize], seed: u64) -> Self {
        let len = shape.iter().product();
        let values = crate::data(len, seed)
            .iter()
            .map(|&x| match dtype {
                DType::F16 => f64::from(half::f16::from_f32(x)),
                _ => f64::from(x),
            })
            .collect();
        Self {
            dtype,
            shape: shape.to_vec(),
            values,
        }
    }

    /// `values` of `shape` as `dtype`.
    pub fn of(dtype: DType, shape: &[usize], values: Vec<f64>) -> Self {
        Self {
            dtype,
            shape: shape.to_vec(),
            values,
        }
    }
}

/// A float64 reference: the inputs, to each output's values in manifest order.
pub type Reference<'r> = &'r dyn Fn(&[Input]) -> Result<Vec<Vec<f64>>, String>;

/// How a cell ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every output element within tolerance of the reference: the variant, and the most
    /// workgroups one dispatch launched along y (above 1: the launch folded past x's limit).
    Right { variant: &'static str, folded: u32 },
    /// The op refused the call with a typed error: its kind and message.
    Refused { kind: &'static str, message: String },
    /// Anything else: a wrong or unwritten element, a wgpu error, a panic.
    Failed(String),
}

impl Outcome {
    /// The cell as the table prints it.
    pub fn cell(&self) -> String {
        match self {
            Outcome::Right { folded, .. } if *folded > 1 => format!("ok (y={folded})"),
            Outcome::Right { .. } => "ok".to_owned(),
            Outcome::Refused { kind, .. } => format!("error: {kind}"),
            Outcome::Failed(_) => "FAILED".to_owned(),
        }
    }
}

/// The kind of a typed refusal, or `None` for an error that must not reach a caller (wgpu's
/// own validation or internal errors, a lost device).
fn refusal(error: &OpError) -> Option<&'static str> {
    Some(match error {
        OpError::NoVariant { .. } => "no variant",
        OpError::Attribute { .. } => "attribute",
        OpError::Input { .. } => "input",
        OpError::Output { .. } => "output",
        OpError::Plan { .. } => "plan",
        OpError::Runtime(runtime) => match runtime {
            RuntimeError::TooLarge { .. } => "too large",
            RuntimeError::TooManyWorkgroups { .. } => "too many workgroups",
            RuntimeError::BindingTooSmall { .. } => "binding too small",
            RuntimeError::MissingFeature(_) => "missing feature",
            _ => return None,
        },
        _ => "other",
    })
}

/// The value an output is filled with before the run: a NaN for floats, a value no cell's
/// integer result takes otherwise.
pub fn poison(dtype: DType) -> f64 {
    match dtype {
        DType::F32 | DType::F16 => f64::NAN,
        DType::U8 => 255.0,
        DType::I8 => -128.0,
        _ => 12345.0,
    }
}

/// Runs `entry` on `inputs` and `attrs` with `ctx`, each output poisoned first, and holds the
/// outputs against `reference` within `tolerance` relative to `1 + |want|`.
pub fn run(
    ctx: &Context,
    entry: &OpEntry,
    inputs: &[Input],
    attrs: &[(String, AttrValue)],
    reference: Reference<'_>,
    tolerance: f64,
) -> Outcome {
    // Each step's error returns from the closure; a panic anywhere is caught around it.
    let cell = || -> Outcome {
        let failed =
            |what: &str, error: &dyn fmt::Display| Outcome::Failed(format!("{what}: {error}"));
        let mut tensors = Vec::with_capacity(inputs.len());
        for input in inputs {
            match AnyTensor::from_f64(ctx, input.dtype, &input.shape, &input.values) {
                Ok(tensor) => tensors.push(tensor),
                Err(error) => return failed("upload", &error),
            }
        }
        let refs: Vec<&AnyTensor> = tensors.iter().collect();
        let by_op = |error: OpError| match refusal(&error) {
            Some(kind) => Outcome::Refused {
                kind,
                message: error.to_string(),
            },
            None => failed("untyped error", &error),
        };
        let plan = match entry.plan(ctx, &refs, attrs) {
            Ok(plan) => plan,
            Err(error) => return by_op(error),
        };
        let mut outputs = Vec::with_capacity(plan.outputs.len());
        for spec in &plan.outputs {
            let len = spec.shape.iter().product();
            let filled = vec![poison(spec.dtype); len];
            match AnyTensor::from_f64(ctx, spec.dtype, &spec.shape, &filled) {
                Ok(tensor) => outputs.push(tensor),
                Err(error) => return by_op(error.into()),
            }
        }
        let args: Vec<Arg<'_>> = entry
            .inputs
            .iter()
            .zip(&tensors)
            .map(|(info, t)| Arg::read(info.role, t.binding()))
            .chain(
                entry
                    .outputs
                    .iter()
                    .zip(&outputs)
                    .map(|(info, t)| Arg::write(info.role, t.binding())),
            )
            .collect();
        if let Err(error) = ctx.run_plan(&plan, &args) {
            return by_op(error.into());
        }
        let folded = Ran::folded(ctx, &plan);
        let mut got = Vec::with_capacity(outputs.len());
        for (output, spec) in outputs.iter().zip(&plan.outputs) {
            match output.to_f64_vec(ctx) {
                Ok(values) => got.push((spec.role.to_owned(), values)),
                Err(error) => return failed("readback", &error),
            }
        }
        compare(
            Ran {
                variant: plan.variant,
                folded,
                outputs: got,
            },
            || reference(inputs),
            tolerance,
        )
    };
    caught(cell)
}

/// What a cell run through an op's typed API gave: the variant, the most workgroups one
/// dispatch launched along y, and each output's role and values (read back after the run).
#[derive(Debug, Clone)]
pub struct Ran {
    pub variant: &'static str,
    pub folded: u32,
    pub outputs: Vec<(String, Vec<f64>)>,
}

impl Ran {
    /// The most workgroups along y of `plan`'s passes on `ctx`'s device (0 when none runs).
    pub fn folded(ctx: &Context, plan: &kernel_runtime::Plan) -> u32 {
        let max = ctx.caps().limits.max_compute_workgroups_per_dimension;
        plan.active_passes(max)
            .map(|active| active.iter().map(|(_, [_, y, _])| *y).max().unwrap_or(0))
            .unwrap_or(0)
    }
}

/// A cell of an op the registry cannot run (a tensor written in place, an optional input, an
/// output the caller provides): `cell` uploads, poisons its outputs with [`poison`], runs the
/// typed API and reads back; its error is sorted as [`run`] sorts the registry's, a panic is a
/// failure, and the outputs are held against `reference` as [`run`] holds them.
pub fn check(
    cell: impl FnOnce() -> Result<Ran, OpError>,
    reference: impl FnOnce() -> Result<Vec<Vec<f64>>, String>,
    tolerance: f64,
) -> Outcome {
    caught(move || match cell() {
        Ok(ran) => compare(ran, reference, tolerance),
        Err(error) => match refusal(&error) {
            Some(kind) => Outcome::Refused {
                kind,
                message: error.to_string(),
            },
            None => Outcome::Failed(format!("untyped error: {error}")),
        },
    })
}

/// The outputs of `ran` against `reference`, each element within `tolerance` relative to
/// `1 + |want|`.
fn compare(
    ran: Ran,
    reference: impl FnOnce() -> Result<Vec<Vec<f64>>, String>,
    tolerance: f64,
) -> Outcome {
    let wanted = match reference() {
        Ok(wanted) => wanted,
        Err(error) => return Outcome::Failed(format!("reference: {error}")),
    };
    if wanted.len() != ran.outputs.len() {
        return Outcome::Failed(format!(
            "the reference gives {} outputs, the op {}",
            wanted.len(),
            ran.outputs.len()
        ));
    }
    for ((role, got), want) in ran.outputs.iter().zip(&wanted) {
        if got.len() != want.len() {
            return Outcome::Failed(format!(
                "`{role}` has {} elements, the reference {}",
                got.len(),
                want.len()
            ));
        }
        // A NaN (an element left poisoned) is never within tolerance.
        let bad = got.iter().zip(want).position(|(g, w)| {
            let within = (g - w).abs() <= tolerance * (1.0 + w.abs());
            !within
        });
        if let Some(i) = bad {
            return Outcome::Failed(format!(
                "`{role}`[{i}] is {}, want {} (tolerance {tolerance})",
                got[i], want[i]
            ));
        }
    }
    Outcome::Right {
        variant: ran.variant,
        folded: ran.folded,
    }
}

/// `cell`'s outcome, or a failure naming the panic it raised.
fn caught(cell: impl FnOnce() -> Outcome) -> Outcome {
    match catch_unwind(AssertUnwindSafe(cell)) {
        Ok(outcome) => outcome,
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Outcome::Failed(format!("panicked: {text}"))
        }
    }
}

/// One cell as a matrix keeps it: op, shape label, dtype, outcome.
type Row = (String, String, DType, Outcome);

/// The cells of a matrix, in the order they ran.
#[derive(Debug, Default)]
pub struct Matrix {
    cells: Vec<Row>,
}

impl Matrix {
    /// Adds a cell.
    pub fn push(&mut self, op: &str, shapes: &str, dtype: DType, outcome: Outcome) {
        self.cells
            .push((op.to_owned(), shapes.to_owned(), dtype, outcome));
    }

    /// The cells that failed, each as one line.
    pub fn failures(&self) -> Vec<String> {
        self.cells
            .iter()
            .filter_map(|(op, shapes, dtype, outcome)| match outcome {
                Outcome::Failed(why) => Some(format!("{op} {shapes} {dtype}: {why}")),
                _ => None,
            })
            .collect()
    }

    /// The outcome of the first cell of `op` and `shapes` in `dtype`.
    pub fn get(&self, op: &str, shapes: &str, dtype: DType) -> Option<&Outcome> {
        self.cells
            .iter()
            .find(|(o, s, d, _)| o == op && s == shapes && *d == dtype)
            .map(|(_, _, _, outcome)| outcome)
    }
}

impl fmt::Display for Matrix {
    /// One line per cell: op, shapes, dtype, result (the variant, or the error's message).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = |pick: &dyn Fn(&Row) -> usize| self.cells.iter().map(pick).max().unwrap_or(0);
        let (op_w, shape_w) = (width(&|c| c.0.len()), width(&|c| c.1.len()));
        for (op, shapes, dtype, outcome) in &self.cells {
            let detail = match outcome {
                Outcome::Right { variant, .. } => format!("({variant})"),
                Outcome::Refused { message, .. } => {
                    let first = message.lines().next().unwrap_or_default();
                    format!("({first})")
                }
                Outcome::Failed(why) => format!("({why})"),
            };
            let dtype = dtype.onnx_name();
            let cell = outcome.cell();
            writeln!(
                f,
                "{op:op_w$}  {shapes:shape_w$}  {dtype:7}  {cell:18} {detail}"
            )?;
        }
        Ok(())
    }
}
