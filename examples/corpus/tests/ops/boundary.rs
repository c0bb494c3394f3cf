//! The boundary-shape matrix of every corpus op: each op through its typed API (most of them
//! write in place, take an optional input or an output the caller sizes, which the untyped
//! registry cannot serve) on its ordinary small case, a zero in each dimension its attributes
//! allow, ones, odd sizes, and, where its manifest's dispatch can pass 65,535 workgroups in one
//! dimension at a size lavapipe runs in moments, that size. Outputs are poisoned first and held
//! against the float64 references of the ops' own tests. Every cell is a right result or a
//! typed error; an empty output must be right. The matrix is printed (`cargo test -p corpus
//! --test ops boundary -- --nocapture`).

#![cfg(corpus)]
// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

/// Plans `$op` on the call's tensors (the matrix shows its variant and fold), then runs it:
/// the plan, or the first error.
macro_rules! plan_and_run {
    ($op:ident, $ctx:expr, $inputs:expr, $outputs:expr, $attrs:expr) => {{
        let outputs = $outputs;
        let shapes = $op::shapes(&$inputs, &outputs);
        let dtypes = $op::dtypes(&$inputs, &outputs);
        let plan = $op::plan($ctx.caps(), &shapes, &dtypes, &$attrs)?;
        $op::run_into($ctx, &$inputs, outputs, &$attrs)?;
        plan
    }};
}

mod decode;
mod elementwise;
mod fused;
mod matmul;
mod mlp;
mod rows;

use corpus::runtime::{Context, DType, Float, OpError, Plan, Tensor};
use test_support::boundary::{self, Matrix, Outcome, Ran};

/// f32 results against float64 (sums of up to a few hundred products, exponentials).
pub(crate) const F32: f64 = 1e-4;
/// f16 results, rounded once or twice to 11 bits.
pub(crate) const F16: f64 = 2e-2;

/// What a cell must give.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Want {
    /// The right result.
    Right,
    /// A typed error whose message holds this text.
    Refused(&'static str),
}

/// The cells run so far, and those that gave something other than they must.
pub(crate) struct Cells<'c> {
    pub ctx: &'c Context,
    matrix: Matrix,
    wrong: Vec<String>,
}

impl Cells<'_> {
    /// Runs one cell: `run` uploads, poisons, runs and reads back; `reference` gives each
    /// output's values in the order `run` returns them.
    pub fn cell(
        &mut self,
        op: &str,
        shapes: &str,
        dtype: DType,
        want: Want,
        run: impl FnOnce(&Context) -> Result<Ran, OpError>,
        reference: impl FnOnce() -> Vec<Vec<f64>>,
    ) {
        let tolerance = if dtype == DType::F16 { F16 } else { F32 };
        let ctx = self.ctx;
        let outcome = boundary::check(|| run(ctx), || Ok(reference()), tolerance);
        let fits = match (&outcome, want) {
            (Outcome::Right { .. }, Want::Right) => true,
            (Outcome::Refused { message, .. }, Want::Refused(text)) => message.contains(text),
            _ => false,
        };
        if !fits {
            self.wrong.push(format!(
                "{op} {shapes} {dtype}: want {want:?}, got {outcome:?}"
            ));
        }
        self.matrix.push(op, shapes, dtype, outcome);
    }
}

/// Seeded values in [-1, 1) times `scale`, rounded to `T`.
pub(crate) fn values<T: Float>(len: usize, seed: u64, scale: f64) -> Vec<f64> {
    corpus::data(len, seed)
        .into_iter()
        .map(|v| T::from_f64(scale * f64::from(v)).to_f64())
        .collect()
}

/// `values` of `shape` as a tensor of `T`.
pub(crate) fn upload<T: Float>(
    ctx: &Context,
    shape: &[usize],
    values: &[f64],
) -> Result<Tensor<T>, OpError> {
    let cast: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
    Ok(Tensor::from_slice(ctx, shape, &cast)?)
}

/// A tensor of `shape` holding the poison value of `T` (a NaN) everywhere.
pub(crate) fn poisoned<T: Float>(ctx: &Context, shape: &[usize]) -> Result<Tensor<T>, OpError> {
    let len = shape.iter().product();
    upload(ctx, shape, &vec![boundary::poison(T::DTYPE); len])
}

/// A tensor's values as float64.
pub(crate) fn read<T: Float>(ctx: &Context, tensor: &Tensor<T>) -> Result<Vec<f64>, OpError> {
    Ok(tensor.to_vec(ctx)?.into_iter().map(T::to_f64).collect())
}

/// The run's report: `plan`'s variant and fold, and the outputs read back.
pub(crate) fn ran(ctx: &Context, plan: &Plan, outputs: Vec<(&str, Vec<f64>)>) -> Ran {
    Ran {
        variant: plan.variant,
        folded: Ran::folded(ctx, plan),
        outputs: outputs
            .into_iter()
            .map(|(role, values)| (role.to_owned(), values))
            .collect(),
    }
}

#[test]
fn every_corpus_op_answers_every_boundary_shape() {
    let ctx = corpus::context();
    let mut cells = Cells {
        ctx: &ctx,
        matrix: Matrix::default(),
        wrong: Vec::new(),
    };
    elementwise::cells(&mut cells);
    rows::cells(&mut cells);
    decode::cells(&mut cells);
    matmul::cells(&mut cells);
    mlp::cells(&mut cells);
    fused::cells(&mut cells);
    println!("{}", cells.matrix);
    assert!(cells.wrong.is_empty(), "\n{}", cells.wrong.join("\n"));
    assert!(cells.matrix.failures().is_empty());
}
