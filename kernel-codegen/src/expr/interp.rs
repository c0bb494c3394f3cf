//! Evaluates typed IR against an environment: used by codegen for build-time values (static
//! template inputs) and by tests as the reference for the lowered Rust.
//!
//! Every integer operation and shape builtin goes through `super::runtime`, the same source file
//! the generated code calls, so the two agree on results and error messages by construction.
//! The IR says everything the dialect decided (truthiness, loose comparisons, true division,
//! wrapped axes), so evaluation does not depend on where an expression came from.

use std::fmt;

use super::ast::{BinOp, UnaryOp};
use super::builtins::{Builtin, SHADER_F16};
use super::runtime as rt;
use super::{EvalError, Ir, IrKind, Symbol, Type};

/// A runtime value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An Int.
    Int(i64),
    /// A Float.
    Float(f64),
    /// A Bool.
    Bool(bool),
    /// A Str.
    Str(String),
    /// A Dtype, by WGSL name (`f32`, `f16`, `u32`, `i64`).
    Dtype(String),
    /// A List of integers.
    List(Vec<i64>),
}

/// A [`Value`] as a map key: equal exactly when the values are identical (a Float by its
/// bits, as its text would tell them apart), and ordered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueKey {
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(String),
    Dtype(String),
    List(Vec<i64>),
}

impl Value {
    /// The value as a map key.
    pub fn key(&self) -> ValueKey {
        match self {
            Value::Int(v) => ValueKey::Int(*v),
            Value::Float(v) => ValueKey::Float(v.to_bits()),
            Value::Bool(v) => ValueKey::Bool(*v),
            Value::Str(v) => ValueKey::Str(v.clone()),
            Value::Dtype(v) => ValueKey::Dtype(v.clone()),
            Value::List(v) => ValueKey::List(v.clone()),
        }
    }

    /// The value's type.
    pub fn ty(&self) -> Type {
        match self {
            Value::Int(_) => Type::Int,
            Value::Float(_) => Type::Float,
            Value::Bool(_) => Type::Bool,
            Value::Str(_) => Type::Str,
            Value::Dtype(_) => Type::Dtype,
            Value::List(_) => Type::List,
        }
    }
}

impl fmt::Display for Value {
    /// Writes the value as the language would spell it: floats always with a `.` or exponent,
    /// strings quoted, dtypes bare (`f16`), lists as `[2, 3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v:?}"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(v) => write!(f, "{v:?}"),
            Value::Dtype(v) => f.write_str(v),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Supplies symbol values and device features to the interpreter.
pub trait Env {
    /// The value of `sym`; `Ok(None)` when it is undefined (an optional attribute that was not
    /// given). Implementors evaluate derived symbols themselves (typically by calling [`eval`]
    /// on the derive's IR), which is why this can fail.
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError>;

    /// Whether the device has the feature `name` (WebGPU spelling, e.g. `shader-f16`).
    fn has_feature(&self, name: &str) -> bool;
}

/// Facts recorded during evaluation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EvalTrace {
    /// Some Int `/` had a non-zero remainder. minijinja's `/` is true division, so a result
    /// that went through an inexact division is not comparable with minijinja's.
    pub inexact_division: bool,
}

/// Evaluates `ir` in `env`.
pub fn eval(ir: &Ir, env: &dyn Env) -> Result<Value, EvalError> {
    eval_traced(ir, env, &mut EvalTrace::default())
}

/// Evaluates `ir` in `env`, recording facts about the evaluation in `trace`.
pub fn eval_traced(ir: &Ir, env: &dyn Env, trace: &mut EvalTrace) -> Result<Value, EvalError> {
    Interp { env, trace }.eval(ir)
}

/// An internal inconsistency: the IR was checked, so a wrong-typed operand means the checker
/// and the interpreter disagree, or the environment returned a value of the wrong type.
fn mismatch(what: &str, value: &Value) -> EvalError {
    EvalError::new(format!(
        "internal error: {what} produced a {} value",
        value.ty()
    ))
}

/// Checks an environment value against the checked type of `sym` (promoting an Int to Float).
fn typed(sym: &Symbol, ty: Type, value: Value) -> Result<Value, EvalError> {
    match (ty, value) {
        (Type::Float, Value::Int(v)) => Ok(Value::Float(rt::to_float(v))),
        (ty, value) if value.ty() == ty => Ok(value),
        (ty, value) => Err(EvalError::new(format!(
            "`{sym}` should be {ty} but the environment gave a {} value",
            value.ty()
        ))),
    }
}

struct Interp<'a> {
    env: &'a dyn Env,
    trace: &'a mut EvalTrace,
}

/// Jinja truthiness of a value (V1).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Int(v) => rt::truthy_int(*v),
        Value::Float(v) => rt::truthy_float(*v),
        Value::Bool(v) => *v,
        Value::Str(v) | Value::Dtype(v) => rt::truthy_str(v),
        Value::List(v) => rt::truthy_list(v),
    }
}

/// A Str, Dtype or Int operand of `~` as text.
fn text(value: Value) -> Result<String, EvalError> {
    match value {
        Value::Str(v) | Value::Dtype(v) => Ok(v),
        Value::Int(v) => Ok(rt::int_to_str(v)),
        other => Err(mismatch("an operand of `~`", &other)),
    }
}

impl Interp<'_> {
    fn int(&mut self, ir: &Ir) -> Result<i64, EvalError> {
        match self.eval(ir)? {
            Value::Int(v) => Ok(v),
            other => Err(mismatch("an Int operand", &other)),
        }
    }

    fn float(&mut self, ir: &Ir) -> Result<f64, EvalError> {
        match self.eval(ir)? {
            Value::Float(v) => Ok(v),
            other => Err(mismatch("a Float operand", &other)),
        }
    }

    fn bool(&mut self, ir: &Ir) -> Result<bool, EvalError> {
        match self.eval(ir)? {
            Value::Bool(v) => Ok(v),
            other => Err(mismatch("a Bool operand", &other)),
        }
    }

    fn list_value(&mut self, ir: &Ir) -> Result<Vec<i64>, EvalError> {
        match self.eval(ir)? {
            Value::List(v) => Ok(v),
            other => Err(mismatch("a List operand", &other)),
        }
    }

    /// Reads a symbol, checking the environment's value against the checked type. An Int
    /// where a Float is expected is accepted (JSON writes `1` for a float attribute of 1.0).
    fn symbol(&mut self, sym: &Symbol, ty: Type) -> Result<Value, EvalError> {
        let Some(value) = self.env.get(sym)? else {
            return Err(rt::not_given(&sym.to_string()));
        };
        typed(sym, ty, value)
    }

    /// Truthiness of `x`; an undefined symbol is false rather than an error.
    fn truthy(&mut self, x: &Ir) -> Result<bool, EvalError> {
        let value = match &x.kind {
            IrKind::Sym(sym) if !matches!(sym, Symbol::Derived(_)) => match self.env.get(sym)? {
                Some(value) => typed(sym, x.ty, value)?,
                None => return Ok(false),
            },
            _ => self.eval(x)?,
        };
        Ok(truthy(&value))
    }

    /// An operand of V1's comparisons: `None` when it is an undefined symbol.
    fn operand(&mut self, x: &Ir) -> Result<Option<Value>, EvalError> {
        if let Some(sym) = x.undefined_operand()
            && self.env.get(sym)?.is_none()
        {
            return Ok(None);
        }
        self.eval(x).map(Some)
    }

    /// A Dtype or Str operand (the dtype-like builtins' argument).
    fn text(&mut self, ir: &Ir) -> Result<String, EvalError> {
        match self.eval(ir)? {
            Value::Dtype(v) | Value::Str(v) => Ok(v),
            other => Err(mismatch("a dtype operand", &other)),
        }
    }

    /// Evaluates one node; heavy cases live in their own methods to keep this recursive
    /// function's stack frame small.
    fn eval(&mut self, ir: &Ir) -> Result<Value, EvalError> {
        match &ir.kind {
            IrKind::Int(v) => Ok(Value::Int(*v)),
            IrKind::Float(v) => Ok(Value::Float(*v)),
            IrKind::Bool(v) => Ok(Value::Bool(*v)),
            IrKind::Str(v) => Ok(Value::Str(v.clone())),
            IrKind::List(items) => self.list(items),
            IrKind::Sym(sym) => self.symbol(sym, ir.ty),
            IrKind::Feature(name) => Ok(Value::Bool(self.env.has_feature(name))),
            IrKind::IsDefined(sym, negated) => self.is_defined(sym, *negated),
            IrKind::Call(builtin, args) => self.call(*builtin, args, ir.ty),
            IrKind::Length(list) => Ok(Value::Int(rt::length(&self.list_value(list)?)?)),
            IrKind::Index(list, index) => {
                let list = self.list_value(list)?;
                Ok(Value::Int(rt::index(&list, self.int(index)?)?))
            }
            IrKind::ToFloat(x) => Ok(Value::Float(rt::to_float(self.int(x)?))),
            IrKind::ToInt(x) => Ok(Value::Int(rt::to_int_exact(self.float(x)?)?)),
            IrKind::Truthy(x) => Ok(Value::Bool(self.truthy(x)?)),
            IrKind::Unary(UnaryOp::Neg, x) => match self.eval(x)? {
                Value::Int(v) => Ok(Value::Int(rt::neg(v)?)),
                Value::Float(v) => Ok(Value::Float(-v)),
                other => Err(mismatch("a negated operand", &other)),
            },
            IrKind::Unary(UnaryOp::Not, x) => Ok(Value::Bool(!self.bool(x)?)),
            IrKind::Binary(op, lhs, rhs) => self.binary(*op, lhs, rhs),
            IrKind::LooseCompare(op, lhs, rhs) => self.loose_compare(*op, lhs, rhs),
            IrKind::Cond(cond, then, otherwise) => {
                if self.bool(cond)? {
                    self.eval(then)
                } else {
                    self.eval(otherwise)
                }
            }
        }
    }

    /// `sym is [not] defined`. A `derive` entry always exists, so it is not evaluated (the
    /// lowered code does not evaluate it either).
    fn is_defined(&mut self, sym: &Symbol, negated: bool) -> Result<Value, EvalError> {
        let defined = match sym {
            Symbol::Derived(_) => true,
            _ => self.env.get(sym)?.is_some(),
        };
        Ok(Value::Bool(defined != negated))
    }

    fn list(&mut self, items: &[Ir]) -> Result<Value, EvalError> {
        let items = items
            .iter()
            .map(|i| self.int(i))
            .collect::<Result<_, _>>()?;
        Ok(Value::List(items))
    }

    fn call(&mut self, builtin: Builtin, args: &[Ir], ty: Type) -> Result<Value, EvalError> {
        let arg = |i: usize| {
            args.get(i).ok_or_else(|| {
                EvalError::new(format!(
                    "internal error: {}() is missing an argument",
                    builtin.name()
                ))
            })
        };
        Ok(match builtin {
            Builtin::Dim
            | Builtin::DimWrapped
            | Builtin::Outer
            | Builtin::OuterWrapped
            | Builtin::Inner
            | Builtin::InnerWrapped
            | Builtin::Rows
            | Builtin::Cols => {
                let shape = self.list_value(arg(0)?)?;
                let axis = self.int(arg(1)?)?;
                let f = match builtin {
                    Builtin::DimWrapped => rt::dim_wrapped,
                    Builtin::Dim => rt::dim,
                    Builtin::OuterWrapped => rt::outer_wrapped,
                    Builtin::Outer => rt::outer,
                    Builtin::InnerWrapped => rt::inner_wrapped,
                    Builtin::Inner => rt::inner,
                    Builtin::Rows => rt::rows,
                    _ => rt::cols,
                };
                Value::Int(f(&shape, axis)?)
            }
            Builtin::Rank => Value::Int(rt::rank(&self.list_value(arg(0)?)?)?),
            Builtin::BroadcastShape | Builtin::MatmulShape => {
                let (a, b) = (self.list_value(arg(0)?)?, self.list_value(arg(1)?)?);
                Value::List(if builtin == Builtin::BroadcastShape {
                    rt::broadcast_shape(&a, &b)?
                } else {
                    rt::matmul_shape(&a, &b)?
                })
            }
            Builtin::AlignedDim => Value::Int(rt::aligned_dim(
                &self.list_value(arg(0)?)?,
                self.int(arg(1)?)?,
                self.int(arg(2)?)?,
            )?),
            Builtin::Prefix => {
                Value::List(rt::prefix(&self.list_value(arg(0)?)?, self.int(arg(1)?)?))
            }
            Builtin::ListSum => Value::Int(rt::list_sum(&self.list_value(arg(0)?)?)?),
            Builtin::ListMin => Value::Int(rt::list_min(&self.list_value(arg(0)?)?)?),
            Builtin::ListMax => Value::Int(rt::list_max(&self.list_value(arg(0)?)?)?),
            Builtin::ListConcat => Value::List(rt::list_concat(
                &self.list_value(arg(0)?)?,
                &self.list_value(arg(1)?)?,
            )),
            Builtin::Slice => Value::List(rt::slice(
                &self.list_value(arg(0)?)?,
                self.int(arg(1)?)?,
                self.int(arg(2)?)?,
            )),
            Builtin::Broadcastable => Value::Bool(rt::broadcastable(
                &self.list_value(arg(0)?)?,
                &self.list_value(arg(1)?)?,
            )),
            Builtin::HasAxis => {
                let axes = self.list_value(arg(0)?)?;
                let (axis, rank) = (self.int(arg(1)?)?, self.int(arg(2)?)?);
                Value::Bool(rt::has_axis(&axes, axis, rank)?)
            }
            Builtin::Ceil | Builtin::Floor | Builtin::Pow2Ceil => {
                let x = arg(0)?;
                Value::Int(match (builtin, x.ty) {
                    (Builtin::Pow2Ceil, Type::Int) => rt::pow2ceil(self.int(x)?)?,
                    (Builtin::Pow2Ceil, _) => rt::pow2ceil_float(self.float(x)?)?,
                    (_, Type::Int) => self.int(x)?,
                    (Builtin::Ceil, _) => rt::ceil(self.float(x)?)?,
                    _ => rt::floor(self.float(x)?)?,
                })
            }
            Builtin::Pow if ty == Type::Int => {
                Value::Int(rt::pow(self.int(arg(0)?)?, self.int(arg(1)?)?)?)
            }
            Builtin::Pow => Value::Float(rt::pow_float(self.float(arg(0)?)?, self.float(arg(1)?)?)),
            Builtin::NumberText => Value::Str(rt::js_number_to_str(self.float(arg(0)?)?)),
            Builtin::Abs if ty == Type::Int => Value::Int(rt::abs(self.int(arg(0)?)?)?),
            Builtin::Abs => Value::Float(rt::abs_float(self.float(arg(0)?)?)),
            Builtin::Remainder if ty == Type::Int => {
                Value::Int(rt::remainder(self.int(arg(0)?)?, self.int(arg(1)?)?)?)
            }
            Builtin::Remainder => Value::Float(rt::remainder_float(
                self.float(arg(0)?)?,
                self.float(arg(1)?)?,
            )?),
            Builtin::DtypeBytes => Value::Int(rt::dtype_bytes(&self.text(arg(0)?)?)?),
            Builtin::OnnxDtypeCode => Value::Int(rt::onnx_dtype_code(&self.text(arg(0)?)?)?),
            Builtin::Log2Ceil => Value::Int(rt::log2ceil(self.int(arg(0)?)?)?),
            Builtin::IsUniqueIntList => {
                Value::Bool(rt::is_unique_int_list(&self.list_value(arg(0)?)?))
            }
            Builtin::PermuteShape => Value::List(rt::permute_shape(
                &self.list_value(arg(0)?)?,
                &self.list_value(arg(1)?)?,
            )?),
            Builtin::F16Allowed => Value::Bool(rt::f16_allowed(
                &self.text(arg(0)?)?,
                self.env.has_feature(SHADER_F16),
            )),
            Builtin::Has | Builtin::Pick => {
                return Err(EvalError::new(format!(
                    "internal error: {}() should have been rewritten by the checker",
                    builtin.name()
                )));
            }
            Builtin::Numel => Value::Int(rt::numel(&self.list_value(arg(0)?)?)?),
            Builtin::CeilDiv => Value::Int(rt::ceil_div(self.int(arg(0)?)?, self.int(arg(1)?)?)?),
            Builtin::SameShape => Value::Bool(rt::same_shape(
                &self.list_value(arg(0)?)?,
                &self.list_value(arg(1)?)?,
            )),
            Builtin::F16Ok => match self.eval(arg(0)?)? {
                Value::Dtype(d) | Value::Str(d) => {
                    Value::Bool(rt::f16_ok(&d, self.env.has_feature(SHADER_F16)))
                }
                other => return Err(mismatch("the f16Ok() argument", &other)),
            },
            Builtin::Max | Builtin::Min => {
                let want_max = builtin == Builtin::Max;
                // Every argument is evaluated, left to right, as Jinja does. Floats fold with
                // `f64::max` / `f64::min`, exactly as the lowered code does.
                if ty == Type::Float {
                    let mut best = self.float(arg(0)?)?;
                    for a in &args[1..] {
                        let v = self.float(a)?;
                        best = if want_max { best.max(v) } else { best.min(v) };
                    }
                    Value::Float(best)
                } else {
                    let mut best = self.int(arg(0)?)?;
                    for a in &args[1..] {
                        let v = self.int(a)?;
                        best = if want_max { best.max(v) } else { best.min(v) };
                    }
                    Value::Int(best)
                }
            }
        })
    }

    /// A comparison where an undefined operand (see `undefined_operand`) equals only another
    /// undefined one and is ordered against nothing.
    fn loose_compare(&mut self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Result<Value, EvalError> {
        match (self.operand(lhs)?, self.operand(rhs)?) {
            (Some(l), Some(r)) => apply(op, l, r, self.trace),
            (l, r) if matches!(op, BinOp::Eq | BinOp::Ne) => Ok(Value::Bool(
                (l.is_none() && r.is_none()) == (op == BinOp::Eq),
            )),
            _ => Ok(Value::Bool(false)),
        }
    }

    fn binary(&mut self, op: BinOp, lhs: &Ir, rhs: &Ir) -> Result<Value, EvalError> {
        // `and` / `or` short-circuit: the right side may be an error when the left decides
        // (`false and dim(shapes.x, 9) > 0`).
        match op {
            BinOp::And => Ok(Value::Bool(self.bool(lhs)? && self.bool(rhs)?)),
            BinOp::Or => Ok(Value::Bool(self.bool(lhs)? || self.bool(rhs)?)),
            BinOp::In | BinOp::NotIn => {
                let found = match (self.eval(lhs)?, self.eval(rhs)?) {
                    (Value::Int(v), Value::List(list)) => rt::contains(&list, v),
                    (Value::Str(v) | Value::Dtype(v), Value::Str(hay)) => {
                        rt::contains_str(&hay, &v)
                    }
                    (_, other) => return Err(mismatch("an operand of `in`", &other)),
                };
                Ok(Value::Bool(found != (op == BinOp::NotIn)))
            }
            BinOp::Concat => {
                let l = text(self.eval(lhs)?)?;
                let r = text(self.eval(rhs)?)?;
                Ok(Value::Str(rt::concat(&l, &r)))
            }
            _ => {
                let l = self.eval(lhs)?;
                let r = self.eval(rhs)?;
                apply(op, l, r, self.trace)
            }
        }
    }
}

/// Applies a strict binary operator to evaluated operands (kept out of the recursive functions
/// so that their stack frames stay small).
fn apply(op: BinOp, l: Value, r: Value, trace: &mut EvalTrace) -> Result<Value, EvalError> {
    Ok(match (l, r) {
        (Value::Int(a), Value::Int(b)) => match op {
            BinOp::Add => Value::Int(rt::add(a, b)?),
            BinOp::Sub => Value::Int(rt::sub(a, b)?),
            BinOp::Mul => Value::Int(rt::mul(a, b)?),
            BinOp::Div => {
                let q = rt::div(a, b)?;
                if a % b != 0 {
                    trace.inexact_division = true;
                }
                Value::Int(q)
            }
            BinOp::FloorDiv => Value::Int(rt::floor_div(a, b)?),
            BinOp::Rem => Value::Int(rt::rem(a, b)?),
            BinOp::Pow => Value::Int(rt::pow(a, b)?),
            _ => Value::Bool(compare(op, a.cmp(&b))),
        },
        (Value::Float(a), Value::Float(b)) => match op {
            BinOp::Add => Value::Float(a + b),
            BinOp::Sub => Value::Float(a - b),
            BinOp::Mul => Value::Float(a * b),
            BinOp::Div => Value::Float(rt::div_float(a, b)?),
            BinOp::FloorDiv => Value::Float(rt::floor_div_float(a, b)?),
            BinOp::Rem => Value::Float(rt::rem_float(a, b)?),
            BinOp::Pow => Value::Float(rt::pow_float(a, b)),
            // NaN compares unequal and unordered, as in Rust and Python.
            _ => Value::Bool(match a.partial_cmp(&b) {
                Some(ord) => compare(op, ord),
                None => op == BinOp::Ne,
            }),
        },
        (l, r) => {
            let equal = match (&l, &r) {
                (Value::Bool(a), Value::Bool(b)) => a == b,
                (Value::Str(a) | Value::Dtype(a), Value::Str(b) | Value::Dtype(b)) => a == b,
                (Value::List(a), Value::List(b)) => a == b,
                _ => return Err(mismatch(&format!("an operand of `{}`", op.symbol()), &r)),
            };
            match op {
                BinOp::Eq => Value::Bool(equal),
                BinOp::Ne => Value::Bool(!equal),
                _ => return Err(mismatch(&format!("an operand of `{}`", op.symbol()), &l)),
            }
        }
    })
}

/// Applies a comparison operator to an ordering.
fn compare(op: BinOp, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    match op {
        BinOp::Eq => ord == Equal,
        BinOp::Ne => ord != Equal,
        BinOp::Lt => ord == Less,
        BinOp::Le => ord != Greater,
        BinOp::Gt => ord == Greater,
        BinOp::Ge => ord != Less,
        _ => false,
    }
}
