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
    let mut vars: Vec<(&str, Vec<(&str, DType)>)> = Vec::new();
    for (info, tensor) in roles.iter().zip(inputs) {
        match info.kind {
            TensorKind::Index => expect_index(O::NAME, info.role, tensor)?,
            TensorKind::Fixed(dtype) => expect_dtype(O::NAME, info.role, tensor, dtype)?,
            TensorKind::Float { type_var } => {
                expect_float(O::NAME, info.role, tensor)?;
                let member = (info.role, tensor.dtype());
                match vars.iter_mut().find(|(var, _)| *var == type_var) {
                    Some((_, members)) => members.push(member),
                    None => vars.push((type_var, vec![member])),
                }
            }
        }
    }
    let mut bound: Vec<(&str, DType)> = Vec::with_capacity(vars.len());
    for (var, members) in &vars {
        bound.push((var, unify_dtype(O::NAME, var, members)?));
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

/// The dtype shared by all tensors of one type variable (untyped entry points).
fn unify_dtype(
    op: &'static str,
    type_var: &str,
    members: &[(&str, DType)],
) -> Result<DType, OpError> {
    let Some((first_role, first)) = members.first() else {
        return Err(OpError::Input {
            op,
            input: type_var.to_owned(),
            rule: "no tensor carries this type variable".to_owned(),
        });
    };
    for (role, dtype) in &members[1..] {
        if dtype != first {
            return Err(OpError::Input {
                op,
                input: (*role).to_owned(),
                rule: format!(
                    "is {dtype} but `{first_role}` is {first}; both have type `{type_var}`"
                ),
            });
        }
    }
    Ok(*first)
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
    match tensor {
        AnyTensor::Index(_) => Err(OpError::Input {
            op,
            input: role.to_owned(),
            rule: "expected a float32 or float16 tensor, got int64".to_owned(),
        }),
        _ => Ok(()),
    }
}

/// `Ok` when the untyped `tensor` for `role` has the fixed dtype `dtype` (float32 or float16).
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
