//! The untyped entry of generated ops: untyped tensors (in manifest order) and attributes by
//! name, checked against an op's role table and planned through its typed `plan`, written once
//! for every op against [`OpHooks`].

use crate::any::AnyTensor;
use crate::context::Context;
use crate::dtype::DType;
use crate::error::OpError;
use crate::op::OpHooks;
use crate::plan::Plan;
use crate::registry::{ArgView, TensorKind};
use crate::support::AttrValue;

/// The untyped entry of any op: inputs checked against the roles of [`crate::Op::ENTRY`] (count,
/// kind, one dtype per type variable), attributes by name, then the typed `plan` and the op's
/// checks of input values.
pub fn plan_untyped<O: OpHooks>(
    ctx: &Context,
    inputs: &[&AnyTensor],
    raw: &[(String, AttrValue)],
) -> Result<Plan, OpError> {
    let attrs = O::attrs(raw)?;
    let roles = O::ENTRY.inputs;
    if inputs.len() != roles.len() {
        let names: Vec<&str> = roles.iter().map(|r| r.role).collect();
        let names = names.join(", ");
        return Err(OpError::Input {
            op: O::NAME,
            input: names.clone(),
            rule: format!(
                "expected {} inputs ({names}), got {}",
                roles.len(),
                inputs.len()
            ),
        });
    }
    // Each type variable takes the dtype of its first tensor; every other tensor of it must agree.
    let mut bound: Vec<(&str, DType)> = Vec::new();
    for (info, tensor) in roles.iter().zip(inputs) {
        match info.kind {
            TensorKind::Index => expect_index(O::NAME, info.role, tensor)?,
            TensorKind::Fixed(dtype) => expect_dtype(O::NAME, info.role, tensor, dtype)?,
            TensorKind::Float { .. } => expect_float(O::NAME, info.role, tensor)?,
            TensorKind::TypeVar { type_var, allowed } => {
                expect_one_of(O::NAME, info.role, tensor, type_var, allowed)?;
            }
        }
        let Some(type_var) = info.type_var_name() else {
            continue;
        };
        match bound.iter().find(|(var, _)| *var == type_var) {
            Some(&(_, dtype)) if dtype != tensor.dtype() => {
                let first = roles
                    .iter()
                    .find(|r| r.type_var_name() == Some(type_var))
                    .map_or("", |r| r.role);
                return Err(OpError::Input {
                    op: O::NAME,
                    input: info.role.to_owned(),
                    rule: format!(
                        "is {} but `{first}` is {dtype}; both have type `{type_var}`",
                        tensor.dtype()
                    ),
                });
            }
            Some(_) => {}
            None => bound.push((type_var, tensor.dtype())),
        }
    }
    let dtypes = O::dtypes_from(&|var| {
        bound
            .iter()
            .find(|(name, _)| *name == var)
            .map_or(DType::F32, |(_, dtype)| *dtype)
    });
    let shape_of = |role: &str| {
        let at = roles.iter().position(|r| r.role == role)?;
        Some(inputs[at].shape())
    };
    let plan = O::plan(ctx.caps(), &O::shapes_from(&shape_of), &dtypes, &attrs)?;
    let views: Vec<ArgView<'_>> = roles
        .iter()
        .zip(inputs)
        .map(|(info, tensor)| ArgView::of(info.role, tensor))
        .collect();
    O::check_views(&views, &attrs)?;
    Ok(plan)
}

/// An untyped input that must be an index (int64 → u32) tensor.
fn expect_index(op: &'static str, role: &str, tensor: &AnyTensor) -> Result<(), OpError> {
    match tensor {
        AnyTensor::Index(_) => Ok(()),
        other => Err(OpError::Input {
            op,
            input: role.to_owned(),
            rule: format!("expected int64 indices, got {}", other.dtype()),
        }),
    }
}

/// An untyped input that must be a floating-point tensor.
fn expect_float(op: &'static str, role: &str, tensor: &AnyTensor) -> Result<(), OpError> {
    if tensor.dtype().is_float() {
        return Ok(());
    }
    Err(OpError::Input {
        op,
        input: role.to_owned(),
        rule: format!(
            "expected a float32 or float16 tensor, got {}",
            tensor.dtype()
        ),
    })
}

/// An untyped input whose dtype is type variable `type_var`, which allows `allowed`.
fn expect_one_of(
    op: &'static str,
    role: &str,
    tensor: &AnyTensor,
    type_var: &str,
    allowed: &[DType],
) -> Result<(), OpError> {
    if allowed.contains(&tensor.dtype()) {
        return Ok(());
    }
    let names: Vec<&str> = allowed.iter().map(|d| d.onnx_name()).collect();
    Err(OpError::Input {
        op,
        input: role.to_owned(),
        rule: format!(
            "is {}, which type `{type_var}` does not allow (allowed: {})",
            tensor.dtype(),
            names.join(", ")
        ),
    })
}

/// `Ok` when the untyped `tensor` for `role` has the fixed dtype `dtype`.
fn expect_dtype(
    op: &'static str,
    role: &str,
    tensor: &AnyTensor,
    dtype: DType,
) -> Result<(), OpError> {
    if tensor.dtype() == dtype {
        return Ok(());
    }
    Err(OpError::Input {
        op,
        input: role.to_owned(),
        rule: format!("expected a {dtype} tensor, got {}", tensor.dtype()),
    })
}
