//! The interpreter's view of one random environment: `kernel_codegen::expr::eval_traced` with
//! an `Env` that reads the environment, the op's `derive` entries and a variant's constants
//! (memoised), and says which results another side cannot compute the same way.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use kernel_codegen::expr::{self, EvalError, EvalTrace, Ir, Symbol, Value};
use kernel_codegen::model::{Op, Variant};

use super::env::RandomEnv;

/// A result of the interpreter, with whether something not comparable took part in it: an
/// inexact integer division, or a constant that was not itself compared exactly.
#[derive(Debug, Clone)]
pub struct Traced {
    pub value: Result<Value, EvalError>,
    pub inexact: bool,
}

/// The interpreter's `Env` over one [`RandomEnv`], within one variant (whose constants the
/// expressions may read), with the constants memoised.
pub struct Interp<'a> {
    op: &'a Op,
    env: &'a RandomEnv,
    variant: Option<&'a Variant>,
    memo: RefCell<HashMap<String, Traced>>,
    /// Constants another side could not compute the same way: reading one taints the result.
    untrusted: RefCell<Vec<String>>,
    tainted: Cell<bool>,
}

impl<'a> Interp<'a> {
    pub fn new(op: &'a Op, env: &'a RandomEnv, variant: Option<&'a Variant>) -> Self {
        Interp {
            op,
            env,
            variant,
            memo: RefCell::new(HashMap::new()),
            untrusted: RefCell::new(Vec::new()),
            tainted: Cell::new(false),
        }
    }

    /// Marks the constant `name` as not comparable: what reads it is not compared either.
    pub fn distrust(&self, name: &str) {
        self.untrusted.borrow_mut().push(name.to_owned());
    }

    /// Evaluates `ir`; nested constant evaluations save and restore the taint, so each result
    /// says exactly what it read.
    pub fn eval(&self, ir: &Ir) -> Traced {
        let outer = self.tainted.replace(false);
        let mut trace = EvalTrace::default();
        let value = expr::eval_traced(ir, self, &mut trace);
        let inexact = trace.inexact_division || self.tainted.get();
        self.tainted.set(outer);
        Traced { value, inexact }
    }

    /// The value of the constant or `derive` entry `name`, memoised.
    pub fn constant(&self, name: &str) -> Traced {
        if let Some(done) = self.memo.borrow().get(name) {
            return done.clone();
        }
        let ir = self
            .op
            .derives
            .iter()
            .find(|d| d.name == name)
            .map(|d| &d.expr.ir)
            .or_else(|| {
                let variant = self.variant?;
                variant
                    .constants
                    .iter()
                    .find(|c| c.name == name)
                    .map(|c| &c.expr.ir)
            });
        let traced = match ir {
            Some(ir) => self.eval(ir),
            None => Traced {
                value: Err(EvalError::new(format!("test bug: no constant `{name}`"))),
                inexact: false,
            },
        };
        self.memo
            .borrow_mut()
            .insert(name.to_owned(), traced.clone());
        traced
    }

    fn shape(&self, name: &str) -> Option<Vec<i64>> {
        let index = self.op.tensor_index(name)?;
        Some(self.env.shapes.get(index)?.clone().unwrap_or_default())
    }
}

impl expr::Env for Interp<'_> {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        let env = self.env;
        Ok(match sym {
            Symbol::Shape(name) => self.shape(name).map(Value::List),
            Symbol::Rank(name) => self.shape(name).map(|s| Value::Int(s.len() as i64)),
            Symbol::Dtype(var) => env
                .dtypes
                .get(var)
                .map(|d| Value::Dtype(d.wgsl_name().to_owned())),
            Symbol::TensorDtype(name) => self
                .op
                .tensor_index(name)
                .and_then(|i| env.tensor_dtype(self.op, i))
                .map(|d| Value::Str(d.onnx_name().to_owned())),
            Symbol::Attr(name) | Symbol::Arg(name) => env.args.get(name).cloned(),
            Symbol::Present(name) => Some(Value::Bool(match self.op.tensor_index(name) {
                Some(index) => env.given[index],
                None => env.args.contains_key(name),
            })),
            Symbol::Tunable(name) => self.op.tunable(name),
            Symbol::Limit(name) => env
                .caps
                .limit(name)
                .map(|v| Value::Int(kernel_runtime::support::limit(v))),
            Symbol::AdapterInfo(name) => {
                let size = match name.as_str() {
                    "subgroupMaxSize" => env.caps.subgroup_max_size,
                    _ => env.caps.subgroup_min_size,
                };
                (size != 0).then(|| Value::Int(i64::from(size)))
            }
            Symbol::Derived(name) => {
                let traced = self.constant(name);
                if traced.inexact || self.untrusted.borrow().iter().any(|n| n == name) {
                    self.tainted.set(true);
                }
                Some(traced.value?)
            }
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.env.has_feature(name)
    }
}
