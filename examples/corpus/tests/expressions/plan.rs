//! A planned variant against the interpreter: the plan's numbers (dispatch sizes, pipeline
//! overrides, uniform words, intermediates, output shapes), and the shader each pass runs,
//! which must be the one the generator rendered for the interpreter's static values.

use kernel_codegen::GeneratedShader;
use kernel_codegen::expr::Value;
use kernel_codegen::model::{self, Dispatch, Expr, Op, Variant};

use super::compare::{Fault, Package, Tally};
use super::env::RandomEnv;
use super::interp::{Interp, Traced};
use super::steps::dispatch_exprs;

/// Compares the generated plan of an accepted variant with the interpreter's values.
pub fn check(
    package: &Package,
    v: usize,
    interp: &Interp<'_>,
    env: &RandomEnv,
    fault: &Fault,
    plan: &Result<kernel_runtime::Plan, String>,
    tally: &mut Tally,
) {
    let op = &package.op;
    let variant = &op.variants[v];
    tally.generated += 1;
    match plan {
        Ok(plan) => {
            *tally.planned.entry(variant.id.clone()).or_default() += 1;
            let got = actual_plan(plan);
            let expected = expected_plan(op, variant, interp, env, fault, &got);
            if expected != got {
                tally.plan_mismatches += 1;
                tally.fail(format!(
                    "plan of `{}`:\n    interpreter {expected:?}\n    generated   {got:?}\n    {}",
                    variant.id,
                    env.describe()
                ));
            }
        }
        Err(error) if !plan_can_fail(op, variant, interp) => tally.fail(format!(
            "plan of `{}` failed ({error}) where every value is in range\n    {}",
            variant.id,
            env.describe()
        )),
        Err(_) => *tally.planned.entry(variant.id.clone()).or_default() += 1,
    }
}

/// Whether each pass of `plan`, the plan of the variant selected, runs the shader the
/// generator rendered for the values the interpreter gives the pass's static template values
/// and element types: the generated code's shader keys, and the `derive` entries they read,
/// against the interpreter. (Only the selected variant's: a variant's shaders are rendered for
/// the environments where the variants before it are rejected.)
pub fn check_kernels(
    package: &Package,
    v: usize,
    interp: &Interp<'_>,
    env: &RandomEnv,
    fault: &Fault,
    plan: &kernel_runtime::Plan,
    tally: &mut Tally,
) {
    let variant = &package.op.variants[v];
    *tally.selected.entry(variant.id.clone()).or_default() += 1;
    for (p, (pass, planned)) in variant.passes.iter().zip(&plan.passes).enumerate() {
        let values: Vec<(String, Result<Value, String>)> = model::static_values(variant, pass)
            .map(|value| {
                // By its own expression: a `derive` entry of the same name would hide a
                // constant from `constant`.
                let traced = interp.eval(&value.expr.ir);
                (value.name.clone(), traced.value.map_err(|e| e.message))
            })
            .collect();
        let of_pass: Vec<&GeneratedShader> = package
            .shaders
            .iter()
            .filter(|s| s.shader.variant == v && s.shader.pass == p)
            .collect();
        let selects = |c: &model::Combination| {
            c.values
                .iter()
                .zip(&values)
                .all(|((_, want), (_, got))| got.as_ref().is_ok_and(|got| same(got, want)))
                && c.dtypes
                    .iter()
                    .all(|(var, d)| env.dtypes.get(var) == Some(d))
        };
        let selected = of_pass
            .iter()
            .find(|s| s.combinations.iter().any(selects))
            .map(|s| s.shader.digest.as_str());
        let expected = match (selected, fault) {
            (Some(digest), Fault::Kernel) if p == 0 => of_pass
                .iter()
                .map(|other| other.shader.digest.as_str())
                .find(|other| *other != digest)
                .unwrap_or(digest),
            (Some(digest), _) => digest,
            (None, _) => "",
        };
        tally.kernels += 1;
        if planned.kernel.digest != expected {
            tally.kernel_mismatches += 1;
            tally.fail(format!(
                "pass `{}` of `{}` runs shader {} where the interpreter's static values {values:?} \
                 and element types {:?} select {}\n    {}",
                pass.id,
                variant.id,
                planned.kernel.digest,
                env.dtypes,
                if expected.is_empty() {
                    "none of its shaders"
                } else {
                    expected
                },
                env.describe()
            ));
        }
    }
}

/// Whether a static value is the one a shader was rendered for: numbers by value, as a value
/// a `/` computes is a float where the domain its hints pin it to holds integers.
fn same(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => *a as f64 == *b,
        _ => got == want,
    }
}

/// A pass's dispatch sizes, overrides by name and uniform words.
type PassNumbers = (Vec<i64>, Vec<(String, f64)>, Vec<u32>);

/// A plan as plain numbers: per pass its dispatch, overrides and uniform words (as the
/// interpreter's values convert to them), then intermediates' lengths and outputs' shapes.
#[derive(Debug, PartialEq)]
struct PlanNumbers {
    passes: Vec<PassNumbers>,
    intermediates: Vec<i64>,
    outputs: Vec<Vec<i64>>,
}

fn int(traced: &Traced) -> i64 {
    match &traced.value {
        Ok(Value::Int(v)) => *v,
        Ok(Value::Bool(b)) => i64::from(*b),
        _ => i64::MIN,
    }
}

fn float(traced: &Traced) -> f64 {
    match &traced.value {
        Ok(Value::Int(v)) => *v as f64,
        Ok(Value::Float(v)) => *v,
        Ok(Value::Bool(b)) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

/// The plan the interpreter computes; of the variant's dynamic values, those `got`'s passes
/// take as overrides (a pass's shader declares only the ones its template reads).
fn expected_plan(
    op: &Op,
    variant: &Variant,
    interp: &Interp<'_>,
    env: &RandomEnv,
    fault: &Fault,
    got: &PlanNumbers,
) -> PlanNumbers {
    let outputs: Vec<Vec<i64>> = op
        .tensors()
        .zip(&env.shapes)
        .skip(op.inputs.len())
        .map(|(_, s)| s.clone().unwrap_or_default())
        .collect();
    if writes_nothing(op, variant, &outputs) {
        return PlanNumbers {
            passes: Vec::new(),
            intermediates: Vec::new(),
            outputs,
        };
    }
    let mut passes = Vec::new();
    for (p, pass) in variant.passes.iter().enumerate() {
        let mut dispatch: Vec<i64> = match &pass.dispatch {
            Dispatch::Grid { x, y, z } => [Some(x), y.as_ref(), z.as_ref()]
                .into_iter()
                .map(|e| e.map_or(1, |e| int(&interp.eval(&e.ir))))
                .collect(),
            other => dispatch_exprs(other)
                .into_iter()
                .map(|e| int(&interp.eval(&e.ir)))
                .collect(),
        };
        if p == 0 && matches!(fault, Fault::PlanValue) {
            dispatch[0] += 1;
        }
        let taken: Vec<&String> = got
            .passes
            .get(p)
            .map(|g| g.1.iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
        let mut overrides = Vec::new();
        for value in pass.inputs.iter().chain(&variant.constants) {
            let name = op.override_name(&value.name);
            if value.class != model::Class::Dynamic
                || !taken.contains(&&name)
                || overrides.iter().any(|(n, _)| *n == name)
            {
                continue;
            }
            overrides.push((name, float(&interp.eval(&value.expr.ir))));
        }
        overrides.sort_by(|a, b| a.0.cmp(&b.0));
        let mut words = Vec::new();
        for field in pass
            .bindings
            .iter()
            .flat_map(|b| b.params.iter().flat_map(|s| &s.fields))
        {
            let traced = interp.eval(&field.value.ir);
            words.push(match field.wgsl_type {
                "f32" => (float(&traced) as f32).to_bits(),
                "i32" => int(&traced) as i32 as u32,
                _ => int(&traced) as u32,
            });
        }
        passes.push((dispatch, overrides, words));
    }
    let intermediates = variant
        .intermediates
        .iter()
        .map(|m| match interp.eval(&m.shape.ir).value {
            Ok(Value::List(dims)) => dims.iter().product(),
            Ok(Value::Int(n)) => n,
            _ => i64::MIN,
        })
        .collect();
    PlanNumbers {
        passes,
        intermediates,
        outputs,
    }
}

/// Whether a call writes nothing, so that its plan has no pass: it has outputs, each of them
/// empty, and no pass of the variant binds an input `read_write` (writes it in place).
fn writes_nothing(op: &Op, variant: &Variant, outputs: &[Vec<i64>]) -> bool {
    let in_place = (variant.passes.iter().flat_map(|p| &p.bindings)).any(|b| {
        b.access == model::Access::ReadWrite
            && matches!(b.target, model::BindingTarget::Tensor(t) if t < op.inputs.len())
    });
    !in_place && !outputs.is_empty() && outputs.iter().all(|o| o.contains(&0))
}

fn actual_plan(plan: &kernel_runtime::Plan) -> PlanNumbers {
    let passes = plan
        .passes
        .iter()
        .map(|pass| {
            let dispatch = match pass.dispatch {
                kernel_runtime::Dispatch::Grid { x, y, z } => vec![x as i64, y as i64, z as i64],
                kernel_runtime::Dispatch::Workgroups(n) => vec![n as i64],
                kernel_runtime::Dispatch::Threads {
                    threads,
                    workgroup_size,
                }
                | kernel_runtime::Dispatch::GridStride {
                    items: threads,
                    workgroup_size,
                } => {
                    vec![threads as i64, i64::from(workgroup_size)]
                }
            };
            let mut overrides: Vec<(String, f64)> = pass
                .overrides
                .iter()
                .map(|(n, v)| ((*n).to_owned(), *v))
                .collect();
            overrides.sort_by(|a, b| a.0.cmp(&b.0));
            let words = pass
                .params
                .chunks(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            (dispatch, overrides, words)
        })
        .collect();
    PlanNumbers {
        passes,
        intermediates: plan.intermediates.iter().map(|m| m.len as i64).collect(),
        outputs: plan
            .outputs
            .iter()
            .map(|o| o.shape.iter().map(|d| *d as i64).collect())
            .collect(),
    }
}

/// Whether some value of the variant's plan fails in the interpreter or is out of the range of
/// what carries it (a negative count, a word beyond 32 bits), so that the plan may fail.
fn plan_can_fail(op: &Op, variant: &Variant, interp: &Interp<'_>) -> bool {
    let mut exprs: Vec<&Expr> = variant.intermediates.iter().map(|m| &m.shape).collect();
    for pass in &variant.passes {
        exprs.extend(dispatch_exprs(&pass.dispatch));
        exprs.extend(pass.bindings.iter().flat_map(|b| {
            b.params
                .iter()
                .flat_map(|s| s.fields.iter().map(|f| &f.value))
        }));
        exprs.extend(pass.inputs.iter().map(|v| &v.expr));
    }
    exprs.extend(variant.constants.iter().map(|c| &c.expr));
    exprs.extend(op.outputs.iter().filter_map(|t| t.shape.as_ref()));
    exprs.iter().any(|e| match interp.eval(&e.ir).value {
        Err(_) => true,
        Ok(Value::Int(v)) => !(0..=i64::from(u32::MAX)).contains(&v),
        Ok(Value::Float(v)) => !v.is_finite() || v < 0.0 || v > f64::from(u32::MAX),
        Ok(Value::List(dims)) => dims.iter().any(|d| *d < 0),
        Ok(_) => false,
    })
}
