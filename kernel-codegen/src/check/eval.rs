//! One call of an op on one device, evaluated as the generated code evaluates it: output
//! shapes, each variant's `when`, the ranking (`demoteWhen`, `supersededBy`) and the selected
//! variants' plans, by the interpreter the generated code is tested against.

use std::cell::RefCell;
use std::collections::HashMap;

use super::devices::Device;
use super::inputs::Input;
use crate::expr::{self, EvalError, Ir, Symbol, Value};
use crate::model::{Op, Variant};

/// The interpreter's environment for one call: the input, the device, the op's `derive`
/// entries and, within a variant, its constants and (`plan`: after its `when`) its tunables.
pub struct CallEnv<'a> {
    op: &'a Op,
    input: &'a Input,
    device: &'a Device,
    variant: Option<&'a Variant>,
    plan: bool,
    memo: RefCell<HashMap<String, Result<Value, EvalError>>>,
}

impl<'a> CallEnv<'a> {
    /// The environment of the op's own expressions (output shapes, `derive`, `when`).
    pub fn new(op: &'a Op, input: &'a Input, device: &'a Device) -> Self {
        CallEnv {
            op,
            input,
            device,
            variant: None,
            plan: false,
            memo: RefCell::new(HashMap::new()),
        }
    }

    /// The environment of `variant`'s `when` (`plan` false) or of its plan (`plan` true,
    /// where the variant's own tunables apply).
    pub fn within(&self, variant: &'a Variant, plan: bool) -> Self {
        CallEnv {
            variant: Some(variant),
            plan,
            memo: RefCell::new(HashMap::new()),
            ..CallEnv::new(self.op, self.input, self.device)
        }
    }

    pub fn eval(&self, ir: &Ir) -> Result<Value, EvalError> {
        expr::eval(ir, self)
    }

    /// Whether every clause holds; `Err` names the first clause that fails to evaluate.
    pub fn holds(&self, clauses: &[crate::model::Expr]) -> Result<bool, (usize, EvalError)> {
        for (i, clause) in clauses.iter().enumerate() {
            match self.eval(&clause.ir) {
                Ok(Value::Bool(true)) => {}
                Ok(_) => return Ok(false),
                Err(e) => return Err((i, e)),
            }
        }
        Ok(true)
    }

    /// The value of the variant's template value `name` (a constant or a pass input).
    pub fn eval_named(&self, name: &str) -> Option<Result<Value, EvalError>> {
        let variant = self.variant?;
        let value = variant
            .constants
            .iter()
            .chain(variant.passes.iter().flat_map(|p| &p.inputs))
            .find(|v| v.name == name)?;
        Some(self.eval(&value.expr.ir))
    }

    fn constant(&self, name: &str) -> Result<Value, EvalError> {
        if let Some(done) = self.memo.borrow().get(name) {
            return done.clone();
        }
        let ir = self.op.derived(name).map(|d| &d.expr.ir).or_else(|| {
            let variant = self.variant?;
            let constant = variant.constants.iter().find(|c| c.name == name)?;
            Some(&constant.expr.ir)
        });
        let value = match ir {
            Some(ir) => self.eval(ir),
            None => Err(EvalError::new(format!("`{name}` is not defined here"))),
        };
        self.memo
            .borrow_mut()
            .insert(name.to_owned(), value.clone());
        value
    }

    /// Tensor `index`'s shape on this call (inputs, then outputs): given, or computed by its
    /// output shape expression (memoised); `None` for an absent tensor.
    pub fn tensor_shape(&self, index: usize) -> Option<Result<Vec<i64>, EvalError>> {
        if let Some(Some(shape)) = self.input.shapes.get(index) {
            return Some(Ok(shape.clone()));
        }
        let tensor = self.op.tensors().nth(index)?;
        let expr = tensor
            .shape
            .as_ref()
            .filter(|_| index >= self.op.inputs.len())?;
        let key = format!("shapes.{}", tensor.role);
        let value = match self.memo.borrow().get(&key) {
            Some(done) => done.clone(),
            None => self.eval(&expr.ir),
        };
        self.memo.borrow_mut().insert(key, value.clone());
        Some(value.and_then(|v| match v {
            Value::List(dims) => Ok(dims),
            other => Err(EvalError::new(format!(
                "the shape of `{}` is {other}, not a list",
                tensor.role
            ))),
        }))
    }

    /// A tensor's shape by role; an absent optional tensor has the empty shape, as in the
    /// generated `Env`.
    fn shape(&self, role: &str) -> Result<Option<Vec<i64>>, EvalError> {
        let Some(index) = self.op.tensor_index(role) else {
            return Ok(None);
        };
        match self.tensor_shape(index) {
            Some(shape) => shape.map(Some),
            None => Ok(Some(Vec::new())),
        }
    }

    fn given(&self, index: usize) -> bool {
        matches!(self.input.shapes.get(index), Some(Some(_)))
    }
}

impl expr::Env for CallEnv<'_> {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        Ok(match sym {
            Symbol::Shape(role) => self.shape(role)?.map(Value::List),
            Symbol::Rank(role) => self.shape(role)?.map(|s| Value::Int(s.len() as i64)),
            Symbol::Dtype(var) => self
                .input
                .dtypes
                .get(var)
                .map(|d| Value::Dtype(d.wgsl_name().to_owned())),
            Symbol::TensorDtype(role) => self
                .op
                .tensor_index(role)
                .and_then(|i| self.input.tensor_dtype(self.op, i))
                .map(|d| Value::Str(d.onnx_name().to_owned())),
            Symbol::Attr(name) | Symbol::Arg(name) => self.input.attrs.get(name).cloned(),
            Symbol::Present(name) => Some(Value::Bool(match self.op.tensor_index(name) {
                Some(index) => self.given(index),
                None => self.input.attrs.contains_key(name),
            })),
            Symbol::Tunable(name) => {
                let own = self
                    .variant
                    .filter(|_| self.plan)
                    .and_then(|v| v.tunables.iter().find(|(n, _)| n == name))
                    .map(|(_, v)| v.clone());
                own.or_else(|| self.op.tunable(name))
            }
            // The adapter's subgroup sizes are read as limits too (0 when it has none), as
            // the runtime's `DeviceCaps` answers them.
            Symbol::Limit(name) => match name.as_str() {
                "subgroupMinSize" => Some(Value::Int(self.device.subgroup_min_size)),
                "subgroupMaxSize" => Some(Value::Int(self.device.subgroup_max_size)),
                _ => self.device.limit(name).map(Value::Int),
            },
            Symbol::AdapterInfo(name) => {
                let size = match name.as_str() {
                    "subgroupMaxSize" => self.device.subgroup_max_size,
                    _ => self.device.subgroup_min_size,
                };
                (size != 0).then_some(Value::Int(size))
            }
            Symbol::Derived(name) => Some(self.constant(name)?),
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.device.has_feature(name)
    }
}

/// How the op's variants answer one call.
pub struct Selection {
    /// The variants (indices into `op.variants`) whose `when` holds.
    pub accepted: Vec<usize>,
    /// The one the runtime runs, if any.
    pub selected: Option<usize>,
    /// Per variant, the first clause of its `when` that failed to evaluate.
    pub errors: Vec<(usize, usize, EvalError)>,
}

/// The variants in the order the runtime tries them: by priority, highest first, ties in
/// manifest order.
pub fn ranked(op: &Op) -> Vec<usize> {
    let mut order: Vec<usize> = (0..op.variants.len()).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(op.variants[v].priority));
    order
}

/// Selects as the runtime's `select_ranked` does: the first variant in rank order whose
/// `when` holds, that no accepted variant supersedes and no `demoteWhen` condition demotes;
/// otherwise the first demoted one.
pub fn select(op: &Op, env: &CallEnv<'_>, order: &[usize]) -> Selection {
    let mut accepted = Vec::new();
    let mut errors = Vec::new();
    for &v in order {
        let variant = &op.variants[v];
        match env.within(variant, false).holds(&variant.when) {
            Ok(true) => accepted.push(v),
            Ok(false) => {}
            Err((clause, e)) => errors.push((v, clause, e)),
        }
    }
    let mut demoted = None;
    let mut selected = None;
    for &v in &accepted {
        let variant = &op.variants[v];
        let superseded = variant
            .superseded_by
            .iter()
            .any(|id| accepted.iter().any(|&a| op.variants[a].id == *id));
        if superseded {
            continue;
        }
        let scoped = env.within(variant, false);
        let demote = variant
            .demote_when
            .iter()
            .map(|c| scoped.eval(&c.ir))
            .collect::<Vec<_>>();
        if demote.iter().any(Result::is_err) {
            continue;
        }
        if demote.iter().any(|d| matches!(d, Ok(Value::Bool(true)))) {
            demoted.get_or_insert(v);
            continue;
        }
        selected = Some(v);
        break;
    }
    Selection {
        accepted,
        selected: selected.or(demoted),
        errors,
    }
}
