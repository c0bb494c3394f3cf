//! Random environments for the expression differential test, as the interpreter sees them.
//!
//! A [`RandomEnv`] holds everything a manifest expression may read. [`Interp`] is the
//! interpreter's `Env` over it: `derive` entries are evaluated lazily and memoized per
//! environment, and an inexact integer division is tracked through every derive an expression
//! actually reads (minijinja's `/` is true division, so such a value is not comparable).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use codegen::expr::{self, Env, EvalError, EvalTrace, Ir, Symbol, Value};
use kernel_runtime::DeviceCaps;

/// A small deterministic generator (xorshift64*): failures reproduce from the seed alone, and
/// no dependency upgrade can change the sequence.
pub struct Rng(u64);

impl Rng {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n.max(1)).unwrap_or(u64::MAX);
        usize::try_from(self.next() % n).unwrap_or(0)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = usize::try_from(hi - lo).unwrap_or(0) + 1;
        lo + i64::try_from(self.below(span)).unwrap_or(0)
    }

    /// One element of a non-empty slice.
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Everything a manifest expression may read, as plain values. An absent attribute is
/// undefined (`is defined` is false); limits and features come from a real `DeviceCaps`, so
/// the generated code (which reads its fields) and the interpreter (which asks
/// `DeviceCaps::limit` by WebGPU name) see the same device.
#[derive(Clone)]
pub struct RandomEnv {
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub attrs: BTreeMap<String, Value>,
    pub dtypes: BTreeMap<String, String>,
    pub tunables: BTreeMap<String, i64>,
    pub caps: DeviceCaps,
}

impl RandomEnv {
    /// An empty environment on a portable device.
    pub fn new(tunables: &[(String, i64)]) -> Self {
        RandomEnv {
            shapes: BTreeMap::new(),
            attrs: BTreeMap::new(),
            dtypes: BTreeMap::new(),
            tunables: tunables.iter().cloned().collect(),
            caps: DeviceCaps::portable(),
        }
    }

    /// A limit by WebGPU name, as the generated code widens it (`rt::support::limit`).
    pub fn limit(&self, name: &str) -> Option<i64> {
        self.caps.limit(name).map(kernel_runtime::support::limit)
    }

    /// A one-paragraph description for failure messages (the full `wgpu::Limits` would drown
    /// the interesting part, and the manifests read only these limits).
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let _ = write!(out, "shapes: {:?}\n    attrs: {{", self.shapes);
        for (i, (name, value)) in self.attrs.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}{name}: {value:?}");
        }
        let _ = write!(
            out,
            "}}\n    dtypes: {:?}, tunables: {:?}\n    maxComputeWorkgroupsPerDimension: {}, \
             subgroup sizes: {}..={}, shader-f16: {}, subgroups: {}, timestamp-query: {}",
            self.dtypes,
            self.tunables,
            self.caps.limits.max_compute_workgroups_per_dimension,
            self.caps.subgroup_min_size,
            self.caps.subgroup_max_size,
            self.caps.shader_f16,
            self.caps.subgroups,
            self.caps.timestamp_query,
        );
        out
    }
}

/// A result of the interpreter, with whether an inexact integer division took part in it
/// (directly or in a derive it read).
#[derive(Debug, Clone)]
pub struct Traced {
    pub value: Result<Value, EvalError>,
    pub inexact: bool,
}

/// The interpreter's `Env` over one [`RandomEnv`].
pub struct Interp<'a> {
    env: &'a RandomEnv,
    derives: &'a HashMap<String, Ir>,
    memo: RefCell<HashMap<String, Traced>>,
    /// Set when the expression being evaluated read an inexact derive.
    tainted: Cell<bool>,
}

impl<'a> Interp<'a> {
    pub fn new(env: &'a RandomEnv, derives: &'a HashMap<String, Ir>) -> Self {
        Interp {
            env,
            derives,
            memo: RefCell::new(HashMap::new()),
            tainted: Cell::new(false),
        }
    }

    /// Evaluates `ir`; nested derive evaluations save and restore the taint flag, so each
    /// result's flag covers exactly what that evaluation read.
    pub fn eval(&self, ir: &Ir) -> Traced {
        let outer = self.tainted.replace(false);
        let mut trace = EvalTrace::default();
        let value = expr::eval_traced(ir, self, &mut trace);
        let inexact = trace.inexact_division || self.tainted.get();
        self.tainted.set(outer);
        Traced { value, inexact }
    }

    /// The value of the derive `name`, memoized.
    pub fn derived(&self, name: &str) -> Traced {
        if let Some(done) = self.memo.borrow().get(name) {
            return done.clone();
        }
        let traced = match self.derives.get(name) {
            Some(ir) => self.eval(ir),
            None => Traced {
                value: Err(EvalError::new(format!("test bug: no derive `{name}`"))),
                inexact: false,
            },
        };
        self.memo
            .borrow_mut()
            .insert(name.to_owned(), traced.clone());
        traced
    }
}

impl Env for Interp<'_> {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        let env = self.env;
        Ok(match sym {
            Symbol::Shape(role) => env.shapes.get(role).cloned().map(Value::List),
            Symbol::Rank(role) => env
                .shapes
                .get(role)
                .map(|s| Value::Int(kernel_runtime::support::rank(s))),
            Symbol::Dtype(var) => env.dtypes.get(var).cloned().map(Value::Dtype),
            Symbol::Attr(name) => env.attrs.get(name).cloned(),
            Symbol::Tunable(name) => env.tunables.get(name).copied().map(Value::Int),
            Symbol::Limit(name) => env.limit(name).map(Value::Int),
            Symbol::Derived(name) => {
                let traced = self.derived(name);
                if traced.inexact {
                    self.tainted.set(true);
                }
                Some(traced.value?)
            }
            // The seed manifests are in the seed dialect, which has none of these.
            Symbol::Arg(_)
            | Symbol::Present(_)
            | Symbol::TensorDtype(_)
            | Symbol::AdapterInfo(_) => {
                return Err(EvalError {
                    message: format!("`{sym}` does not occur in the seed dialect"),
                });
            }
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.env.caps.has_feature(name)
    }
}

/// Random limits: mostly the WebGPU default, sometimes so small that dispatch-size conditions
/// flip, sometimes `u32::MAX` so that `limit * limit` overflows an i64 (an error for us, a
/// wide integer for minijinja).
pub fn random_caps(rng: &mut Rng) -> DeviceCaps {
    let mut caps = DeviceCaps::portable();
    caps.limits.max_compute_workgroups_per_dimension = match rng.below(100) {
        0..55 => 65535,
        55..65 => 1,
        65..72 => 2,
        72..78 => 4,
        78..84 => 64,
        84..89 => 0,
        89..94 => 3,
        _ => u32::MAX,
    };
    caps.shader_f16 = rng.chance(50);
    caps.subgroups = rng.chance(50);
    caps.timestamp_query = rng.chance(50);
    // Unreported, variable and fixed ranges (fixed sizes steer BiasSoftmax's row-per-subgroup
    // hint and the GatedRelativePositionBias rule).
    (caps.subgroup_min_size, caps.subgroup_max_size) =
        rng.pick(&[(0, 0), (4, 8), (32, 64), (8, 8), (32, 32), (512, 512)]);
    caps
}

/// Random small dims; 0 occasionally, and (when `huge`) now and then a dim large enough that
/// products overflow an i64.
pub fn random_dims(rng: &mut Rng, rank: usize, huge: bool) -> Vec<i64> {
    (0..rank)
        .map(|_| match rng.below(100) {
            0..6 => 0,
            6..8 if huge => rng.pick(&[1 << 31, 1 << 40, i64::MAX]),
            _ => rng.pick(&[1, 1, 2, 3, 4, 5, 6, 8, 16]),
        })
        .collect()
}

/// `a` with one dim changed (or, for a scalar shape, one dim added).
pub fn nudge(rng: &mut Rng, a: &[i64]) -> Vec<i64> {
    let mut out = a.to_vec();
    if out.is_empty() {
        out.push(rng.range(0, 3));
    } else {
        let i = rng.below(out.len());
        out[i] = (out[i] + rng.pick(&[-1, 1, 2])).max(0);
    }
    out
}
