//! The untyped face of generated ops, for tools that pick an op by name at run time
//! (`run-op`, the demo): role tables, tensors by role, attributes by name.

use std::time::Duration;

use crate::context::Context;
use crate::error::OpError;
use crate::support::AttrValue;
use crate::tensor::AnyTensor;

/// How a tensor role is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorKind {
    /// A floating-point tensor whose dtype is a type variable (f32 or f16).
    Float {
        /// The type variable's name (`T`).
        type_var: &'static str,
    },
    /// Logical int64 stored as u32 after a checked narrowing.
    Index,
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
}

/// One attribute of an op, as a tool shows it.
#[derive(Debug, Clone, Copy)]
pub struct AttrInfo {
    /// The attribute name.
    pub name: &'static str,
    /// Rust type in the typed API (`bool`, `i64`, `f32`, `Vec<i64>`, `String`).
    pub rust_type: &'static str,
    /// The manifest default, or `None` for required attributes.
    pub default: Option<&'static str>,
    /// The manifest's description.
    pub description: &'static str,
}

/// A host-side view of an input, for hand-written contract checks that need values
/// (index tensors keep their narrowed values on the host).
#[derive(Debug, Clone, Copy)]
pub struct ArgView<'a> {
    /// The input role.
    pub role: &'static str,
    /// Its shape.
    pub shape: &'a [usize],
    /// The narrowed values of an index tensor; `None` for float tensors.
    pub index_values: Option<&'a [u32]>,
}

impl<'a> ArgView<'a> {
    /// The view of an untyped tensor.
    pub fn of(role: &'static str, tensor: &'a AnyTensor) -> Self {
        let index_values = match tensor {
            AnyTensor::Index(t) => Some(t.values()),
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

/// Runs an op on untyped inputs (in manifest order); `repeats > 0` also times it.
pub type DynRunFn =
    fn(&Context, &[&AnyTensor], &[(String, AttrValue)], usize) -> Result<DynRun, OpError>;

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
    /// Runs the op on untyped inputs.
    pub run: DynRunFn,
}

impl OpEntry {
    /// Whether `name` is this op's qualified or bare name.
    pub fn matches(&self, name: &str) -> bool {
        self.qualified_name == name || self.name == name
    }
}
