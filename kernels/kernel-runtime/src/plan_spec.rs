//! A variant's plan as data: the generated module describes each pass (its shader key, overrides,
//! bindings, uniform fields and dispatch) as a [`VariantSpec`] whose entries name values by
//! index, and [`build`] walks it with the module's `value` function into a [`Plan`].
//!
//! Each distinct expression of an op's plans is compiled once, as one arm of that function, so
//! a value used by several passes or variants is written once; the range checks and the error
//! texts (which pass, which value, which inputs it is computed from) live here, once for every
//! op.

use crate::dtype::DType;
use crate::error::PlanError;
use crate::expr::EvalError;
use crate::plan::{Binding, Dispatch, IntermediateSpec, Kernel, OutputSpec, Plan, PlannedPass};
use crate::shaders::{Key, ShaderTable};
use crate::uniform::Words;

/// A value a plan expression computes.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(&'a str),
    /// A string the expression built (`~`).
    String(String),
    List(Vec<i64>),
    /// A list held in place (a shape of rank 8 or less, or a list literal), which planning
    /// reads without a heap allocation.
    Dims(crate::support::Dims),
}

impl From<i64> for Value<'_> {
    fn from(value: i64) -> Self {
        Value::Int(value)
    }
}

impl From<f64> for Value<'_> {
    fn from(value: f64) -> Self {
        Value::Float(value)
    }
}

impl From<bool> for Value<'_> {
    fn from(value: bool) -> Self {
        Value::Bool(value)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(value: &'a str) -> Self {
        Value::Str(value)
    }
}

impl From<String> for Value<'_> {
    fn from(value: String) -> Self {
        Value::String(value)
    }
}

impl From<crate::support::Dims> for Value<'_> {
    fn from(value: crate::support::Dims) -> Self {
        Value::Dims(value)
    }
}

impl From<Vec<i64>> for Value<'_> {
    fn from(value: Vec<i64>) -> Self {
        Value::List(value)
    }
}

impl Value<'_> {
    fn key(&self) -> Key<'_> {
        match self {
            Value::Int(i) => Key::Int(*i),
            Value::Float(f) => Key::from(*f),
            Value::Bool(b) => Key::Bool(*b),
            Value::Str(s) => Key::Str(s),
            Value::String(s) => Key::Str(s),
            // Lists never select a shader: codegen keys only scalars.
            Value::List(_) | Value::Dims(_) => Key::Int(0),
        }
    }

    /// The integer; `what` names the value in the error, and is only called for one.
    fn int(&self, what: impl FnOnce() -> String) -> Result<i64, EvalError> {
        match self {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(i64::from(*b)),
            other => Err(EvalError::new(format!(
                "{} is {other:?}, not an integer",
                what()
            ))),
        }
    }

    /// The number, as [`Value::int`].
    fn float(&self, what: impl FnOnce() -> String) -> Result<f64, EvalError> {
        match self {
            Value::Float(f) => Ok(*f),
            Value::Int(i) => Ok(*i as f64),
            Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
            other => Err(EvalError::new(format!(
                "{} is {other:?}, not a number",
                what()
            ))),
        }
    }
}

/// A named value of a plan: the manifest's name (a uniform field, an override, a dispatch
/// axis) and the index of the expression that computes it.
pub type Slot = (&'static str, usize);

/// A scalar a pass sets, by its WGSL type: a field of the pass's uniform `Params` struct
/// (every field is a 4-byte scalar at `4 * i`) or a pipeline-overridable constant.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    U32(Slot),
    I32(Slot),
    F32(Slot),
}

/// A manifest's dispatch form, its counts as [`Slot`]s; see [`Dispatch`].
#[derive(Debug, Clone, Copy)]
pub enum DispatchSpec {
    Threads {
        threads: Slot,
        workgroup_size: Slot,
    },
    Workgroups(Slot),
    /// `x`, and `y` and `z` when given (1 otherwise).
    Grid(Slot, Option<Slot>, Option<Slot>),
    GridStride {
        items: Slot,
        workgroup_size: Slot,
    },
}

/// One pass of a variant.
#[derive(Debug, Clone, Copy)]
pub struct PassSpec {
    pub id: &'static str,
    /// The pass's index in the op's shader table.
    pub table_pass: usize,
    /// The values the pass's shader text depends on, in the table's key order.
    pub key: &'static [usize],
    /// Pipeline-overridable constants: the name in the shader, and the value with its type.
    pub overrides: &'static [(&'static str, Field)],
    pub bindings: &'static [Binding],
    pub params: &'static [Field],
    pub dispatch: DispatchSpec,
}

/// A buffer a variant needs between its passes: its id, element type and the value (a shape)
/// whose element count it holds.
#[derive(Debug, Clone, Copy)]
pub struct ScratchSpec {
    pub id: &'static str,
    pub dtype: DType,
    pub shape: usize,
}

/// What a variant dispatches.
#[derive(Debug, Clone, Copy)]
pub struct VariantSpec {
    pub passes: &'static [PassSpec],
    pub intermediates: &'static [ScratchSpec],
    /// Whether a pass writes an input in place (then a call whose outputs are all empty still
    /// runs).
    pub writes_in_place: bool,
}

/// An op's compiled plan values: `value(i, env)` evaluates expression `i`; `sources[i]` says
/// what it is computed from (" (from the shape of `x`)", or empty), for errors.
#[derive(Debug)]
pub struct Values<V: 'static> {
    pub value: V,
    pub sources: &'static [&'static str],
}

/// The plan of the variant `id` described by `spec`, its values computed by `values` over
/// `env`; `outputs` are the op's output shapes, which every variant shares.
pub fn build<'e, E, V>(
    op: &'static str,
    id: &'static str,
    spec: &VariantSpec,
    shaders: &'static ShaderTable,
    values: &Values<V>,
    env: &'e E,
    outputs: Vec<OutputSpec>,
) -> Result<Plan, PlanError>
where
    V: Fn(usize, &'e E) -> Result<Value<'e>, EvalError>,
{
    let mut plan = Plan {
        outputs,
        ..Plan::default()
    };
    build_into(op, id, spec, shaders, values, env, &mut plan)?;
    Ok(plan)
}

/// [`build`] into `plan`, whose `outputs` the caller has set: its passes, their overrides,
/// bindings and uniform bytes, and its intermediates are written over the storage the plan
/// already has, so planning the same op again allocates nothing. On an error `plan` holds
/// part of a plan and must be planned again before it is recorded.
pub fn build_into<'e, E, V>(
    op: &'static str,
    id: &'static str,
    spec: &VariantSpec,
    shaders: &'static ShaderTable,
    values: &Values<V>,
    env: &'e E,
    plan: &mut Plan,
) -> Result<(), PlanError>
where
    V: Fn(usize, &'e E) -> Result<Value<'e>, EvalError>,
{
    plan.op = op;
    plan.variant = id;
    plan.intermediates.clear();
    if writes_nothing(spec, &plan.outputs) {
        // Nothing to compute: dispatch sizes may divide by the empty axis (a softmax's rows of
        // no element), so none is evaluated.
        plan.passes.clear();
        return Ok(());
    }
    plan.passes.truncate(spec.passes.len());
    for (i, pass) in spec.passes.iter().enumerate() {
        match plan.passes.get_mut(i) {
            Some(planned) => planned_pass(pass, shaders, values, env, planned)?,
            None => {
                let mut planned = PlannedPass {
                    id: pass.id,
                    kernel: &EMPTY,
                    overrides: Vec::new(),
                    bindings: Vec::new(),
                    params: Vec::new(),
                    dispatch: Dispatch::Workgroups(0),
                };
                planned_pass(pass, shaders, values, env, &mut planned)?;
                plan.passes.push(planned);
            }
        }
    }
    for scratch in spec.intermediates {
        let shape = (values.value)(scratch.shape, env)
            .map_err(|error| EvalError::new(format!("intermediate `{}`: {error}", scratch.id)))?;
        let dims = match &shape {
            Value::List(dims) => dims.as_slice(),
            Value::Dims(dims) => dims.as_slice(),
            _ => {
                return Err(
                    EvalError::new(format!("intermediate `{}` has no shape", scratch.id)).into(),
                );
            }
        };
        plan.intermediates.push(IntermediateSpec {
            id: scratch.id,
            dtype: scratch.dtype,
            len: crate::support::element_count(scratch.id, dims)?,
        });
    }
    Ok(())
}

/// A placeholder shader for a pass being planned, replaced before the plan is returned.
static EMPTY: Kernel = Kernel {
    label: "",
    source: "",
    entry_point: "",
    digest: "",
    web_enables: "",
    least_sizes: &[],
};

/// Whether a call of the variant `spec` writes nothing: it has outputs, each of them empty,
/// and no pass writes a tensor in place.
fn writes_nothing(spec: &VariantSpec, outputs: &[OutputSpec]) -> bool {
    !spec.writes_in_place && !outputs.is_empty() && outputs.iter().all(|o| o.shape.contains(&0))
}

/// How an error names a slot: "`rows` (from the shape of `data`)".
fn described<V>(slot: Slot, values: &Values<V>) -> String {
    let (name, value) = slot;
    let source = values.sources.get(value).copied().unwrap_or_default();
    format!("`{name}`{source}")
}

fn planned_pass<'e, E, V>(
    pass: &PassSpec,
    shaders: &'static ShaderTable,
    values: &Values<V>,
    env: &'e E,
    planned: &mut PlannedPass,
) -> Result<(), PlanError>
where
    V: Fn(usize, &'e E) -> Result<Value<'e>, EvalError>,
{
    // A failing expression says which pass and value it was computing.
    let eval = |slot: Slot| {
        (values.value)(slot.1, env).map_err(|error| {
            EvalError::new(format!(
                "pass `{}`, {}: {error}",
                pass.id,
                described(slot, values)
            ))
        })
    };
    // Names are formatted only for an error: this runs on every call.
    let name = |slot: Slot| move || described(slot, values);
    let int = |slot: Slot| eval(slot)?.int(name(slot));
    let in_range = |slot: Slot, value: i64, fits: bool, what: &str| {
        if fits {
            Ok(())
        } else {
            Err(EvalError::new(format!("{} = {value} {what}", name(slot)())))
        }
    };
    let count = |slot: Slot| {
        let value = int(slot)?;
        in_range(slot, value, value >= 0, "is negative")?;
        Ok::<u64, EvalError>(value.unsigned_abs())
    };
    let size = |slot: Slot| {
        let value = int(slot)?;
        let fits = u32::try_from(value);
        in_range(slot, value, fits.is_ok(), "does not fit a u32")?;
        Ok::<u32, EvalError>(fits.unwrap_or_default())
    };
    let signed = |slot: Slot| {
        let value = int(slot)?;
        let fits = i32::try_from(value);
        in_range(slot, value, fits.is_ok(), "does not fit an i32")?;
        Ok::<i32, EvalError>(fits.unwrap_or_default())
    };
    // The shader: its key numbered column by column as the values are computed, with no list
    // of them kept (a value the columns lack is explained by the table's own lookup).
    let key_value = |value: usize| {
        (values.value)(value, env).map_err(|error| {
            EvalError::new(format!("pass `{}`, its shader's key: {error}", pass.id))
        })
    };
    let mut number = shaders
        .key_columns(pass.table_pass, pass.key.len())
        .map(|c| (c, 0));
    for (column, &value) in pass.key.iter().enumerate() {
        let value = key_value(value)?;
        number = number.and_then(|(columns, n)| {
            let n = crate::shaders::next_key_number(columns, column, n, value.key())?;
            Some((columns, n))
        });
    }
    planned.kernel = match number {
        Some((_, n)) => shaders.kernel_numbered(pass.table_pass, n),
        None => None,
    }
    .map_or_else(
        || {
            let key = (pass.key.iter())
                .map(|&value| key_value(value))
                .collect::<Result<Vec<_>, _>>()?;
            let key: Vec<Key<'_>> = key.iter().map(Value::key).collect();
            shaders.kernel(pass.table_pass, &key)
        },
        Ok,
    )?;
    planned.id = pass.id;
    planned.overrides.clear();
    for &(pipeline_name, field) in pass.overrides {
        let value = match field {
            Field::U32(slot) => f64::from(size(slot)?),
            Field::I32(slot) => f64::from(signed(slot)?),
            Field::F32(slot) => eval(slot)?.float(name(slot))?,
        };
        planned.overrides.push((pipeline_name, value));
    }
    let mut words = Words::reusing(std::mem::take(&mut planned.params));
    for field in pass.params {
        words = match *field {
            Field::U32(slot) => words.u32(size(slot)?),
            Field::I32(slot) => words.i32(signed(slot)?),
            Field::F32(slot) => words.f32(eval(slot)?.float(name(slot))? as f32),
        };
    }
    planned.params = words.into_bytes();
    planned.bindings.clear();
    planned.bindings.extend_from_slice(pass.bindings);
    let dispatch = match pass.dispatch {
        DispatchSpec::Threads {
            threads,
            workgroup_size,
        } => Dispatch::Threads {
            threads: count(threads)?,
            workgroup_size: size(workgroup_size)?,
        },
        DispatchSpec::Workgroups(n) => Dispatch::Workgroups(count(n)?),
        DispatchSpec::Grid(x, y, z) => Dispatch::Grid {
            x: count(x)?,
            y: y.map_or(Ok(1), count)?,
            z: z.map_or(Ok(1), count)?,
        },
        DispatchSpec::GridStride {
            items,
            workgroup_size,
        } => Dispatch::GridStride {
            items: count(items)?,
            workgroup_size: size(workgroup_size)?,
        },
    };
    planned.dispatch = dispatch;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shaders::Key::{Bool, Int};
    use crate::shaders::Pass;

    static TABLE: ShaderTable = ShaderTable::new(
        "Op",
        &[Pass {
            variant: "v",
            pass: "main",
            label: "Op.Main",
            entry_point: "main",
            overrides: &["n"],
            key: &[&[Bool(false), Bool(true)], &[Int(4)]],
        }],
        "// s\nfn main() {}\n",
        &[(0, 5, 18, "d0", 0, &[0, 1], 0)],
        &[&[]],
    );

    /// `n` from the environment: 0 `n`, 1 `n > 2`, 2 the constant 4, 3 `n / 0`, 4 `[n, 2]`,
    /// 5 `n - 10`.
    fn value(index: usize, n: &i64) -> Result<Value<'_>, EvalError> {
        Ok(match index {
            0 => Value::from(*n),
            1 => Value::from(*n > 2),
            2 => Value::from(4i64),
            3 => return Err(EvalError::new("division by zero")),
            4 => Value::from(vec![*n, 2]),
            _ => Value::from(*n - 10),
        })
    }

    const SOURCES: [&str; 6] = [
        "",
        "",
        "",
        " (from attribute `n`)",
        "",
        " (from attribute `n`)",
    ];

    fn spec(field: Field, dispatch: DispatchSpec) -> VariantSpec {
        let passes: &'static [PassSpec] = Box::leak(Box::new([PassSpec {
            id: "main",
            table_pass: 0,
            key: &[1, 2],
            overrides: &[("n_pipeline", Field::U32(("n", 1)))],
            bindings: &[Binding::Arg(0), Binding::Params],
            params: Box::leak(Box::new([Field::U32(("n", 0)), field])),
            dispatch,
        }]));
        VariantSpec {
            passes,
            intermediates: &[ScratchSpec {
                id: "tmp",
                dtype: DType::F32,
                shape: 4,
            }],
            writes_in_place: false,
        }
    }

    fn planned(field: Field, dispatch: DispatchSpec, n: i64) -> Result<Plan, PlanError> {
        let values = Values {
            value,
            sources: &SOURCES,
        };
        build(
            "Op",
            "v",
            &spec(field, dispatch),
            &TABLE,
            &values,
            &n,
            Vec::new(),
        )
    }

    #[test]
    fn a_spec_walks_into_the_plan_its_values_compute() {
        let plan = planned(
            Field::F32(("half", 1)),
            DispatchSpec::Grid(("x", 0), Some(("y", 2)), None),
            3,
        )
        .unwrap();
        let pass = &plan.passes[0];
        assert_eq!(pass.kernel.digest, "d0");
        assert_eq!(pass.overrides, [("n_pipeline", 1.0)]);
        assert_eq!(pass.params, [3, 0, 0, 0, 0, 0, 0x80, 0x3f]);
        assert_eq!(pass.dispatch, Dispatch::Grid { x: 3, y: 4, z: 1 });
        assert_eq!(plan.intermediates[0].len, 6);
    }

    #[test]
    fn errors_name_the_pass_the_value_and_what_it_is_computed_from() {
        let grid = DispatchSpec::Workgroups(("workgroups", 5));
        let error = planned(Field::U32(("bad", 3)), grid, 3).unwrap_err();
        assert_eq!(
            error.message(),
            "pass `main`, `bad` (from attribute `n`): division by zero"
        );
        let error = planned(Field::I32(("n", 0)), grid, 3).unwrap_err();
        assert_eq!(
            error.message(),
            "`workgroups` (from attribute `n`) = -7 is negative"
        );
        let error =
            planned(Field::I32(("n", 0)), DispatchSpec::Workgroups(("w", 0)), -1).unwrap_err();
        assert_eq!(error.message(), "`n` = -1 does not fit a u32");
    }
}
