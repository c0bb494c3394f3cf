//! The untyped face of generated ops, for tools that pick an op by name at run time
//! (`run-op`, the demo): role tables, tensors by role, attributes by name.

use std::time::Duration;

use crate::any::AnyTensor;
use crate::args::Arg;
use crate::context::Context;
use crate::dtype::DType;
use crate::error::OpError;
use crate::plan::Plan;
use crate::support::AttrValue;

/// How a tensor role is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorKind {
    /// A floating-point tensor whose dtype is a type variable (f32 or f16).
    Float {
        /// The type variable's name (`T`).
        type_var: &'static str,
    },
    /// A tensor whose dtype is a type variable that allows integer dtypes (`int32`, `uint8`…),
    /// perhaps beside floats: any of `allowed`.
    TypeVar {
        /// The type variable's name (`T`).
        type_var: &'static str,
        /// The dtypes the variable allows (its `typeConstraints` entry).
        allowed: &'static [DType],
    },
    /// Logical int64 stored as u32 after a checked narrowing.
    Index,
    /// A tensor of one fixed dtype (`uint32` bit-packed weights, a `float32` scale table).
    Fixed(DType),
}

/// One input or output of an op.
#[derive(Debug, Clone, Copy)]
pub struct RoleInfo {
    /// The manifest's role name (`input`, `position_ids`, ...).
    pub role: &'static str,
    /// How the tensor is stored.
    pub kind: TensorKind,
    /// The manifest's description.
    pub description: &'static str,
    /// The tensor's ONNX name where the manifest gives one (`"A"` for the Hub's `a`), else
    /// empty.
    pub onnx: &'static str,
}

impl RoleInfo {
    /// The same role, also known by its ONNX name.
    pub const fn with_onnx(self, onnx: &'static str) -> Self {
        Self { onnx, ..self }
    }

    /// Whether `name` is this role's name or its ONNX name.
    pub fn is_named(&self, name: &str) -> bool {
        self.role == name || (!self.onnx.is_empty() && self.onnx == name)
    }

    /// A floating-point tensor whose dtype is type variable `type_var` (empty for a fixed
    /// dtype).
    pub const fn float(
        role: &'static str,
        type_var: &'static str,
        description: &'static str,
    ) -> Self {
        Self {
            role,
            kind: TensorKind::Float { type_var },
            description,
            onnx: "",
        }
    }

    /// A tensor whose dtype is type variable `type_var`, one of `allowed` (a variable that
    /// allows integer dtypes).
    pub const fn type_var(
        role: &'static str,
        type_var: &'static str,
        allowed: &'static [DType],
        description: &'static str,
    ) -> Self {
        Self {
            role,
            kind: TensorKind::TypeVar { type_var, allowed },
            description,
            onnx: "",
        }
    }

    /// The type variable of the tensor's dtype, if it has one.
    pub const fn type_var_name(&self) -> Option<&'static str> {
        match self.kind {
            TensorKind::Float { type_var } | TensorKind::TypeVar { type_var, .. } => Some(type_var),
            TensorKind::Index | TensorKind::Fixed(_) => None,
        }
    }

    /// A tensor of the fixed dtype `dtype`.
    pub const fn fixed(role: &'static str, dtype: DType, description: &'static str) -> Self {
        Self {
            role,
            kind: TensorKind::Fixed(dtype),
            description,
            onnx: "",
        }
    }

    /// A logical int64 tensor stored as u32.
    pub const fn index(role: &'static str, description: &'static str) -> Self {
        Self {
            role,
            kind: TensorKind::Index,
            description,
            onnx: "",
        }
    }
}

/// One attribute of an op, as a tool shows it.
#[derive(Debug, Clone, Copy)]
pub struct AttrInfo {
    /// The attribute name.
    pub name: &'static str,
    /// Rust type in the typed API (`bool`, `i64`, `u32`, `Option<f32>`, `Vec<i64>`, `String`…).
    pub rust_type: &'static str,
    /// The manifest default, or `None` for required attributes.
    pub default: Option<&'static str>,
    /// The manifest's description.
    pub description: &'static str,
}

impl AttrInfo {
    pub const fn new(
        name: &'static str,
        rust_type: &'static str,
        default: Option<&'static str>,
        description: &'static str,
    ) -> Self {
        Self {
            name,
            rust_type,
            default,
            description,
        }
    }
}

/// A host-side view of an input, for hand-written contract checks that need values
/// (index tensors keep their narrowed values on the host).
#[derive(Debug, Clone, Copy)]
pub struct ArgView<'a> {
    /// The input role.
    pub role: &'static str,
    /// Its shape.
    pub shape: &'a [usize],
    /// The narrowed values of an index tensor uploaded from the host; `None` for float
    /// tensors and for indices made on the GPU (host checks of values are skipped then).
    pub index_values: Option<&'a [u32]>,
}

impl<'a> ArgView<'a> {
    pub const fn new(
        role: &'static str,
        shape: &'a [usize],
        index_values: Option<&'a [u32]>,
    ) -> Self {
        ArgView {
            role,
            shape,
            index_values,
        }
    }

    /// The view of an untyped tensor.
    pub fn of(role: &'static str, tensor: &'a AnyTensor) -> Self {
        let index_values = match tensor {
            AnyTensor::Index(t) => t.values(),
            _ => None,
        };
        ArgView {
            role,
            shape: tensor.shape(),
            index_values,
        }
    }
}

/// The result of an untyped run.
#[derive(Debug)]
pub struct DynRun {
    /// Outputs in manifest order.
    pub outputs: Vec<AnyTensor>,
    /// The selected variant.
    pub variant: &'static str,
    /// GPU time of each timed repetition (empty when not timed).
    pub gpu_times: Vec<Duration>,
    /// GPU time of each pass that ran, per timed repetition (empty when not timed).
    pub pass_times: Vec<(&'static str, Vec<Duration>)>,
}

/// Checks untyped inputs (in manifest order) and attributes against an op's contract and
/// plans it for the context's device, host checks included.
pub type DynPlanFn = fn(&Context, &[&AnyTensor], &[(String, AttrValue)]) -> Result<Plan, OpError>;

/// Whether an op has an untyped entry, which takes inputs only and allocates the outputs.
#[derive(Debug, Clone, Copy)]
pub enum Untyped {
    /// It has: `plan_untyped` for the op.
    Plan(DynPlanFn),
    /// It has not, because `role` (an input, an output or a type variable) `reason`s.
    TypedOnly {
        role: &'static str,
        reason: &'static str,
    },
}

/// One generated op, as tools see it.
#[derive(Debug, Clone, Copy)]
pub struct OpEntry {
    /// `domain.name`, e.g. `com.microsoft.MRotaryEmbedding`.
    pub qualified_name: &'static str,
    /// The bare name, e.g. `MRotaryEmbedding`.
    pub name: &'static str,
    /// The manifest's description.
    pub description: &'static str,
    /// Inputs in manifest order.
    pub inputs: &'static [RoleInfo],
    /// Outputs in manifest order.
    pub outputs: &'static [RoleInfo],
    /// Attributes, sorted by name.
    pub attributes: &'static [AttrInfo],
    /// Variant ids in selection order.
    pub variants: &'static [&'static str],
    /// Every pre-rendered shader of the op (what `precompile` compiles; tools time or
    /// inspect them one by one).
    pub shaders: &'static crate::shaders::ShaderTable,
    /// Its untyped entry, or why it has none; [`OpEntry::plan`], [`OpEntry::run`] and
    /// [`OpEntry::time`] use it.
    pub untyped: Untyped,
}

impl OpEntry {
    /// Whether `name` is this op's qualified or bare name.
    pub fn matches(&self, name: &str) -> bool {
        self.qualified_name == name || self.name == name
    }

    /// Plans the op on untyped inputs (in manifest order), for the context's device.
    pub fn plan(
        &self,
        ctx: &Context,
        inputs: &[&AnyTensor],
        attrs: &[(String, AttrValue)],
    ) -> Result<Plan, OpError> {
        match self.untyped {
            Untyped::Plan(plan) => plan(ctx, inputs, attrs),
            Untyped::TypedOnly { role, reason } => {
                Err(typed_only(self.qualified_name, role, reason))
            }
        }
    }

    /// Runs the op on untyped inputs (in manifest order) with new outputs. Natively it waits
    /// for the GPU; in a browser it returns once submitted (read the outputs to wait).
    pub fn run(
        &self,
        ctx: &Context,
        inputs: &[&AnyTensor],
        attrs: &[(String, AttrValue)],
    ) -> Result<DynRun, OpError> {
        let (plan, outputs) = self.prepare(ctx, inputs, attrs)?;
        ctx.run_plan(&plan, &self.arguments(inputs, &outputs))?;
        Ok(DynRun {
            outputs,
            variant: plan.variant,
            gpu_times: Vec::new(),
            pass_times: Vec::new(),
        })
    }

    /// Runs the op once untimed, then `repeats` times with timestamp queries (see
    /// [`Context::time_plan_passes`]); the outputs hold the last repetition's result.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn time(
        &self,
        ctx: &Context,
        inputs: &[&AnyTensor],
        attrs: &[(String, AttrValue)],
        repeats: usize,
    ) -> Result<DynRun, OpError> {
        pollster::block_on(self.time_async(ctx, inputs, attrs, repeats))
    }

    /// [`OpEntry::time`] without blocking, for browsers.
    pub async fn time_async(
        &self,
        ctx: &Context,
        inputs: &[&AnyTensor],
        attrs: &[(String, AttrValue)],
        repeats: usize,
    ) -> Result<DynRun, OpError> {
        let (plan, outputs) = self.prepare(ctx, inputs, attrs)?;
        let times = ctx
            .time_plan_passes_async(&plan, &self.arguments(inputs, &outputs), repeats)
            .await?;
        Ok(DynRun {
            outputs,
            variant: plan.variant,
            gpu_times: times.total,
            pass_times: times.passes,
        })
    }

    fn prepare(
        &self,
        ctx: &Context,
        inputs: &[&AnyTensor],
        attrs: &[(String, AttrValue)],
    ) -> Result<(Plan, Vec<AnyTensor>), OpError> {
        let plan = self.plan(ctx, inputs, attrs)?;
        let mut outputs = Vec::with_capacity(plan.outputs.len());
        for spec in &plan.outputs {
            outputs.push(AnyTensor::zeros_for(ctx, plan.op, spec)?);
        }
        Ok((plan, outputs))
    }

    /// The plan's arguments: inputs in manifest order, then outputs.
    fn arguments<'a>(&self, inputs: &[&'a AnyTensor], outputs: &'a [AnyTensor]) -> Vec<Arg<'a>> {
        let inputs = self
            .inputs
            .iter()
            .zip(inputs)
            .map(|(info, t)| Arg::read(info.role, t.binding()));
        let outputs = self
            .outputs
            .iter()
            .zip(outputs)
            .map(|(info, t)| Arg::write(info.role, t.binding()));
        inputs.chain(outputs).collect()
    }
}

/// The untyped entry of an op it cannot serve: it takes inputs only and allocates the outputs,
/// and `role` (an input, an output or a type variable) `reason`s otherwise.
fn typed_only(op: &'static str, role: &str, reason: &str) -> OpError {
    OpError::Input {
        op,
        input: role.into(),
        rule: format!(
            "`{role}` {reason}, and the untyped entry takes inputs only and allocates the outputs: use the op's typed `record_into`"
        ),
    }
}
