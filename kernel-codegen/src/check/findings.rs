//! What checking reports: a [`Finding`] of some [`Kind`], at a file and JSON path, with the
//! [`Witness`] call that shows it and how `run-op` reproduces that call.

use std::fmt;

use super::devices;
use super::inputs::Input;
use crate::expr::Value;
use crate::model::Op;

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Shadowed,
    Uncovered,
    PlanFails,
    BindingTooSmall,
    LeftOut,
    Unselectable,
    UnusedHintValue,
    Unreached,
}

impl Kind {
    /// The name findings are printed and counted under.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Shadowed => "shadowed-variant",
            Kind::Uncovered => "uncovered-input",
            Kind::PlanFails => "plan-fails",
            Kind::BindingTooSmall => "binding-too-small",
            Kind::LeftOut => "left-out-combination",
            Kind::Unselectable => "unselectable-variant",
            Kind::UnusedHintValue => "unused-hint-value",
            Kind::Unreached => "unreached-variant",
        }
    }

    /// Whether the finding is a warning (`--deny warnings` fails on it) or a note.
    pub fn is_warning(self) -> bool {
        !matches!(self, Kind::Unreached | Kind::UnusedHintValue)
    }
}

/// A call that shows a finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Witness {
    /// The device it was evaluated on.
    pub device: &'static str,
    /// Each given tensor: role, dtype (ONNX name) and shape.
    pub tensors: Vec<(String, &'static str, Vec<i64>)>,
    /// Each attribute given.
    pub attrs: Vec<(String, Value)>,
    /// For a finding about one variant's plan: the variant that runs this call instead, when
    /// another one is selected here (the plan then fails only where that one is not).
    pub ran_instead: Option<String>,
    /// Every output of the call is empty: the runtime writes nothing and plans nothing (the
    /// finding shows only in loaders that evaluate the plan anyway).
    pub outputs_empty: bool,
}

impl Witness {
    pub(super) fn new(op: &Op, input: &Input, device: &devices::Device) -> Self {
        let tensors = op
            .tensors()
            .enumerate()
            .filter_map(|(i, t)| {
                let shape = input.shapes.get(i)?.clone()?;
                let dtype = input.tensor_dtype(op, i)?.onnx_name();
                Some((t.role.clone(), dtype, shape))
            })
            .collect();
        let attrs = input
            .attrs
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Witness {
            device: device.name,
            tensors,
            attrs,
            ran_instead: None,
            outputs_empty: false,
        }
    }

    /// The arguments of `run-op` that make this call (`op` is the op's `domain.name`).
    pub fn run_op_args(&self, op: &str) -> String {
        let mut line = op.to_owned();
        for (role, dtype, shape) in &self.tensors {
            let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
            line.push_str(&format!(" --random {role}={dtype}:{}", dims.join("x")));
        }
        for (name, value) in &self.attrs {
            let text = match value {
                Value::List(items) => items
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                Value::Str(s) => s.clone(),
                Value::Bool(b) => u8::from(*b).to_string(),
                other => other.to_string(),
            };
            line.push_str(&format!(" --attr {name}={text}"));
        }
        line
    }
}

impl fmt::Display for Witness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tensors: Vec<String> = self
            .tensors
            .iter()
            .map(|(role, dtype, shape)| format!("{role}: {dtype} {shape:?}"))
            .collect();
        write!(f, "{}", tensors.join(", "))?;
        for (name, value) in &self.attrs {
            write!(f, ", {name} = {value}")?;
        }
        write!(f, " on {}", self.device)?;
        if let Some(other) = &self.ran_instead {
            write!(f, " (where `{other}` runs instead)")?;
        }
        if self.outputs_empty {
            write!(
                f,
                " (every output is empty: this runtime plans nothing for it, loaders that evaluate the plan fail)"
            )?;
        }
        Ok(())
    }
}

/// One defect of one op.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: Kind,
    /// The op's `domain.name`.
    pub op: String,
    /// The manifest.
    pub file: String,
    /// Where in it (a JSON path, e.g. `variants/vec4/passes/main/dispatch/x`).
    pub path: String,
    pub message: String,
    /// How many drawn calls showed it.
    pub calls: usize,
    pub witness: Option<Witness>,
}
