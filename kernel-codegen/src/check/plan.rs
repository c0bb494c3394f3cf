//! What can go wrong in a variant's plan on a call its `when` accepts: a value that fails to
//! evaluate (division by zero, overflow, an axis out of range), a size that is negative or
//! fractional, a uniform field out of its WGSL type's range, a dispatch past the device's
//! limits, and a storage binding viewed in vectors the tensor cannot fill.

use super::devices::Device;
use super::eval::CallEnv;
use crate::expr::Value;
use crate::model::{BindingTarget, Dispatch, ElementType, Op};

/// One problem of a plan: where (a JSON path into the manifest), what, and which kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    pub path: String,
    pub message: String,
    /// A binding that may be smaller than its element type (kind 4), rather than a plan
    /// that fails (kind 3).
    pub binding: bool,
}

/// Every problem of `variant`'s plan on this call.
pub fn problems(
    op: &Op,
    variant_index: usize,
    device: &Device,
    env: &CallEnv<'_>,
) -> Vec<PlanProblem> {
    let variant = &op.variants[variant_index];
    let env = env.within(variant, true);
    let out = std::cell::RefCell::new(Vec::new());
    let fail = |path: &str, message: String| {
        out.borrow_mut().push(PlanProblem {
            path: path.to_owned(),
            message,
            binding: false,
        });
    };
    let fail_binding = |problem: PlanProblem| out.borrow_mut().push(problem);
    for constant in &variant.constants {
        if let Err(e) = env.eval(&constant.expr.ir) {
            fail(
                &constant.expr.path,
                format!("`{}` fails: {e}", constant.expr.source),
            );
        }
    }
    for intermediate in &variant.intermediates {
        let shape = &intermediate.shape;
        match env.eval(&shape.ir) {
            Ok(Value::List(dims)) if dims.iter().any(|&d| d < 0) => fail(
                &shape.path,
                format!(
                    "intermediate `{}` gets the negative shape {dims:?}",
                    intermediate.id
                ),
            ),
            Ok(_) => {}
            Err(e) => fail(&shape.path, format!("`{}` fails: {e}", shape.source)),
        }
    }
    let max = device
        .limit("maxComputeWorkgroupsPerDimension")
        .unwrap_or(65_535);
    for (pass_index, pass) in variant.passes.iter().enumerate() {
        let workgroups = match dispatch(&pass.dispatch, &env, max) {
            Ok(n) => n,
            Err((path, message)) => {
                fail(&path, message);
                continue;
            }
        };
        if workgroups == 0 {
            // A pass with no work is skipped: its values are not uploaded and its bindings
            // never created.
            continue;
        }
        for value in &pass.inputs {
            if let Err(e) = env.eval(&value.expr.ir) {
                fail(
                    &value.expr.path,
                    format!("`{}` fails: {e}", value.expr.source),
                );
            }
        }
        for field in pass
            .bindings
            .iter()
            .filter_map(|b| b.params.as_ref())
            .flat_map(|p| &p.fields)
        {
            let value = &field.value;
            match env.eval(&value.ir) {
                Ok(v) => {
                    if let Some(why) = out_of_range(&v, field.wgsl_type) {
                        fail(
                            &value.path,
                            format!("uniform field `{}` = {v}: {why}", field.name),
                        );
                    }
                }
                Err(e) => fail(&value.path, format!("`{}` fails: {e}", value.source)),
            }
        }
        for (binding_index, binding) in pass.bindings.iter().enumerate() {
            let BindingTarget::Tensor(t) = binding.target else {
                continue;
            };
            let lanes = match &binding.element {
                Some(ElementType::Fixed(_, lanes)) => i64::from(*lanes),
                Some(ElementType::Constant(name)) => match env.eval_named(name) {
                    Some(Ok(Value::Str(text) | Value::Dtype(text))) => {
                        crate::model::parse_element(&text).map_or(1, |(_, lanes)| i64::from(lanes))
                    }
                    _ => 1,
                },
                _ => 1,
            };
            let vec4 = binding
                .vec4_when
                .as_ref()
                .is_some_and(|name| matches!(env.eval_named(name), Some(Ok(Value::Bool(true)))));
            let lanes = if vec4 { 4 } else { lanes };
            if lanes <= 1 {
                continue;
            }
            let Some(elements) = elements(&env, t) else {
                continue;
            };
            if elements < lanes || elements % lanes != 0 {
                fail_binding(PlanProblem {
                    path: format!(
                        "variants[{variant_index}].passes[{pass_index}].bindings[{binding_index}]"
                    ),
                    message: format!(
                        "binding `{}` reads tensor `{}` in groups of {lanes}, but it holds {elements} element{}",
                        binding.name,
                        op.tensors().nth(t).map_or("?", |t| t.role.as_str()),
                        if elements == 1 { "" } else { "s" },
                    ),
                    binding: true,
                });
            }
        }
    }
    out.into_inner()
}

/// Why `value` does not fit a uniform field of WGSL type `wgsl`.
fn out_of_range(value: &Value, wgsl: &str) -> Option<&'static str> {
    let int = match value {
        Value::Int(i) => *i,
        Value::Float(f) if wgsl != "f32" && f.fract() != 0.0 => return Some("not a whole number"),
        Value::Float(f) if wgsl != "f32" => *f as i64,
        _ => return None,
    };
    match wgsl {
        "u32" if int < 0 => Some("negative, in a u32"),
        "u32" if int > i64::from(u32::MAX) => Some("past u32's range"),
        "i32" if i32::try_from(int).is_err() => Some("past i32's range"),
        _ => None,
    }
}

/// A size the plan computes, as the generated code converts it.
fn size(value: &Value) -> Result<i64, String> {
    match value {
        Value::Int(i) if *i < 0 => Err(format!("is negative ({i})")),
        Value::Int(i) => Ok(*i),
        Value::Float(f) if f.fract() != 0.0 || *f < 0.0 => Err(format!("is not a size ({f})")),
        Value::Float(f) => Ok(*f as i64),
        other => Err(format!("is not a number ({other})")),
    }
}

/// How many workgroups a pass runs (0 when skipped), by the runtime's rules, or where and
/// why it fails.
fn dispatch(d: &Dispatch, env: &CallEnv<'_>, max: i64) -> Result<i64, (String, String)> {
    let eval = |e: &crate::model::Expr| -> Result<i64, (String, String)> {
        let value = env
            .eval(&e.ir)
            .map_err(|err| (e.path.clone(), format!("`{}` fails: {err}", e.source)))?;
        size(&value).map_err(|why| (e.path.clone(), format!("`{}` {why}", e.source)))
    };
    let linear = |n: i64, path: &str| {
        if n > max.saturating_mul(max) {
            Err((
                path.to_owned(),
                format!(
                    "{n} workgroups: more than {max} × {max}, the most a dispatch can split into"
                ),
            ))
        } else {
            Ok(n)
        }
    };
    let workgroup = |e: &crate::model::Expr| match eval(e)? {
        0 => Err((e.path.clone(), "a workgroup size of 0".to_owned())),
        w => Ok(w),
    };
    match d {
        Dispatch::Threads {
            threads,
            workgroup_size,
        } => {
            let t = eval(threads)?;
            let w = workgroup(workgroup_size)?;
            linear(ceil_div(t, w), &threads.path)
        }
        Dispatch::Workgroups(n) => linear(eval(n)?, &n.path),
        Dispatch::Grid { x, y, z } => {
            let mut total = 1i64;
            for e in std::iter::once(x).chain(y).chain(z) {
                let n = eval(e)?;
                if n > max {
                    return Err((
                        e.path.clone(),
                        format!(
                            "`{}` = {n} workgroups, past the device's {max} per dimension",
                            e.source
                        ),
                    ));
                }
                total = total.saturating_mul(n);
            }
            Ok(total)
        }
        Dispatch::GridStride {
            items,
            workgroup_size,
        } => {
            let n = eval(items)?;
            let w = workgroup(workgroup_size)?;
            Ok(ceil_div(n, w).min(max))
        }
    }
}

/// The number of elements tensor `t` holds on this call: its given shape, or its output
/// shape expression's value.
fn elements(env: &CallEnv<'_>, t: usize) -> Option<i64> {
    let shape = env.tensor_shape(t)?.ok()?;
    shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d))
}

/// `ceil(n / d)` for `n >= 0`, `d > 0`.
fn ceil_div(n: i64, d: i64) -> i64 {
    n / d + i64::from(n % d != 0)
}
