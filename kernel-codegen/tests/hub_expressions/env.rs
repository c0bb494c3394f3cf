//! Random environments for a Hub op, drawn from its model, and the interpreter's view of one.
//!
//! An environment is steered towards one variant at a time: attributes and type variables take
//! the values that variant's `when` bounds them to most of the time, and dimensions come from
//! a small pool, so that the equalities MatMul's clauses test (`dim(shapes.a, 1) ==
//! dim(shapes.b, 0)`) hold often enough for every variant's expressions to be reached with
//! the shapes they are written for. The device is drawn too: features (Chromium's subgroup
//! matrices among them, so the variants that require them are reached), a few limits and the
//! adapter's subgroup sizes, reported or not.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use kernel_codegen::expr::ast::BinOp;
use kernel_codegen::expr::builtins::FEATURES_HUB;
use kernel_codegen::expr::{self, EvalError, EvalTrace, Ir, IrKind, Symbol, Type, Value};
use kernel_codegen::model::{AttrRepr, DType, DTypeRef, Op, StaticVar, Variant};

/// splitmix64: a failure reproduces from the seed alone.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % (n.max(1) as u64)) as usize
    }

    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Dimensions are drawn from these: powers of two, sizes real models have, the thresholds the
/// manifests compare with (8192, 65536) and sizes just past them, and a few that are neither.
const SIZES: &[i64] = &[
    1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 33, 48, 64, 96, 128, 129, 256, 320, 512, 1000, 1024, 1536,
    2048, 4096, 8192, 8196, 16384, 65536, 65537,
];

/// What `device.*` answers.
#[derive(Clone, Debug)]
pub struct Caps {
    pub features: BTreeSet<&'static str>,
    /// The limits the environment sets; the others are WebGPU's defaults ([`Caps::limit`]).
    pub limits: BTreeMap<&'static str, i64>,
    /// 0: not reported by the adapter.
    pub subgroup_min_size: i64,
    pub subgroup_max_size: i64,
}

impl Caps {
    /// A limit: the environment's, else WebGPU's default, else a value large enough for any
    /// expression that reads it.
    pub fn limit(&self, name: &str) -> i64 {
        if let Some(v) = self.limits.get(name) {
            return *v;
        }
        match name {
            "maxComputeWorkgroupsPerDimension" => 65535,
            "maxComputeInvocationsPerWorkgroup" | "maxComputeWorkgroupSizeX" => 256,
            "maxComputeWorkgroupSizeY" => 256,
            "maxComputeWorkgroupSizeZ" => 64,
            "maxComputeWorkgroupStorageSize" => 16384,
            "maxStorageBufferBindingSize" => 1 << 27,
            "maxBufferSize" => 1 << 28,
            "subgroupMinSize" => self.subgroup_min_size,
            "subgroupMaxSize" => self.subgroup_max_size,
            _ => 1 << 20,
        }
    }

    fn random(rng: &mut Rng) -> Self {
        let mut features = BTreeSet::new();
        for feature in FEATURES_HUB {
            if rng.chance(55) {
                features.insert(*feature);
            }
        }
        let mut limits = BTreeMap::new();
        limits.insert(
            "maxComputeWorkgroupsPerDimension",
            rng.pick(&[65535, 65535, 65535, 1, 4, 64, 1024, 100000]),
        );
        if rng.chance(40) {
            // An H200 under wgpu: larger than WebGPU's defaults.
            limits.insert("maxComputeInvocationsPerWorkgroup", 1024);
            limits.insert("maxComputeWorkgroupSizeX", 1024);
            limits.insert("maxComputeWorkgroupSizeY", 1024);
            limits.insert("maxComputeWorkgroupStorageSize", rng.pick(&[32768, 49152]));
        } else if rng.chance(20) {
            limits.insert("maxComputeInvocationsPerWorkgroup", 64);
            limits.insert("maxComputeWorkgroupStorageSize", 4096);
        }
        if rng.chance(15) {
            limits.insert("maxStorageBufferBindingSize", rng.pick(&[1024, 1 << 16]));
            limits.insert("maxBufferSize", rng.pick(&[4096, 1 << 16]));
        }
        let (min, max) = rng.pick(&[
            (0, 0),
            (4, 8),
            (8, 8),
            (16, 64),
            (32, 32),
            (32, 64),
            (4, 128),
            (64, 64),
        ]);
        Caps {
            features,
            limits,
            subgroup_min_size: min,
            subgroup_max_size: max,
        }
    }
}

/// Everything an expression of the op may read. `shapes` is indexed like `inputs ++ outputs`;
/// a computed output's shape is filled in by [`RandomEnv::compute_outputs`].
#[derive(Clone, Debug)]
pub struct RandomEnv {
    /// Attributes given by the call (a defaulted one takes its default when left out).
    pub args: BTreeMap<String, Value>,
    pub shapes: Vec<Option<Vec<i64>>>,
    /// Type variable → element type.
    pub dtypes: BTreeMap<String, DType>,
    pub caps: Caps,
}

impl RandomEnv {
    /// An environment steered towards `target` (an index into `op.variants`).
    pub fn draw(op: &Op, target: usize, rng: &mut Rng) -> Self {
        let bounds = op.variants.get(target).map(|v| &v.bounds);
        let bounded = |var: StaticVar| bounds.and_then(|b| b.get(&var)).filter(|v| !v.is_empty());
        let pool: Vec<i64> = (0..3).map(|_| rng.pick(SIZES)).collect();
        let mut args = BTreeMap::new();
        for attr in &op.attributes {
            let value = match bounded(StaticVar::Attr(attr.name.clone())) {
                Some(values) if rng.chance(85) => rng.pick(values),
                _ => random_arg(attr, rng),
            };
            args.insert(attr.name.clone(), value);
        }
        let mut dtypes = BTreeMap::new();
        for var in &op.type_vars {
            let allowed: Vec<DType> = match bounded(StaticVar::Dtype(var.name.clone())) {
                Some(values) if rng.chance(85) => values
                    .iter()
                    .filter_map(|v| match v {
                        Value::Dtype(d) | Value::Str(d) => DType::parse(d),
                        _ => None,
                    })
                    .collect(),
                _ => var.allowed.clone(),
            };
            let allowed = if allowed.is_empty() {
                var.allowed.clone()
            } else {
                allowed
            };
            if !allowed.is_empty() {
                dtypes.insert(var.name.clone(), rng.pick(&allowed));
            }
        }
        let shapes = op
            .tensors()
            .map(|t| {
                if t.is_computed_output() {
                    return None;
                }
                let rank = t
                    .rank
                    .map_or_else(|| rng.pick(&[0, 1, 1, 2, 2, 2, 3, 3, 4, 5]), |r| r as usize);
                Some((0..rank).map(|_| random_dim(&pool, rng)).collect())
            })
            .collect();
        RandomEnv {
            args,
            shapes,
            dtypes,
            caps: Caps::random(rng),
        }
    }

    /// Local search towards an environment `variant` accepts: one value changed at a time (an
    /// attribute, a dimension, a rank, an element type, the device), kept when no fewer of the
    /// variant's `when` conjuncts hold, for up to `attempts` tries.
    pub fn steer(&mut self, op: &Op, variant: &Variant, rng: &mut Rng, attempts: usize) {
        let mut conjuncts = Vec::new();
        for clause in &variant.when {
            flatten_and(op, &clause.ir, &mut conjuncts);
        }
        let score = |env: &mut RandomEnv| {
            env.compute_outputs(op);
            let interp = Interp::new(op, env);
            conjuncts
                .iter()
                .filter(|c| matches!(interp.eval(c).value, Ok(Value::Bool(true))))
                .count()
        };
        let mut best = score(self);
        for _ in 0..attempts {
            if best == conjuncts.len() {
                return;
            }
            let mut next = self.clone();
            for _ in 0..1 + rng.below(3) {
                next.mutate(op, rng);
            }
            let got = score(&mut next);
            if got >= best {
                *self = next;
                best = got;
            }
        }
    }

    /// Changes one value; a dimension mostly to one another tensor already has, so that the
    /// shapes the clauses relate come to agree.
    fn mutate(&mut self, op: &Op, rng: &mut Rng) {
        let known: Vec<i64> = self
            .shapes
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|d| *d > 0)
            .collect();
        let size = |rng: &mut Rng| match rng.below(10) {
            0..5 if !known.is_empty() => rng.pick(&known),
            5 if !known.is_empty() => (rng.pick(&known) * 4).min(1 << 24),
            6 => rng.pick(&[1, 2, 4, 8, 32]),
            _ => rng.pick(SIZES),
        };
        match rng.below(10) {
            0 if !op.attributes.is_empty() => {
                let attr = &op.attributes[rng.below(op.attributes.len())];
                self.args.insert(attr.name.clone(), random_arg(attr, rng));
            }
            1 => {
                if let Some(var) = op.type_vars.get(rng.below(op.type_vars.len()))
                    && !var.allowed.is_empty()
                {
                    self.dtypes.insert(var.name.clone(), rng.pick(&var.allowed));
                }
            }
            2 => self.caps = Caps::random(rng),
            _ => {
                let inputs: Vec<usize> = (0..self.shapes.len())
                    .filter(|i| self.shapes[*i].is_some())
                    .collect();
                if inputs.is_empty() {
                    return;
                }
                let i = rng.pick(&inputs);
                let declared = op.tensors().nth(i).and_then(|t| t.rank);
                let v = size(rng);
                let Some(shape) = self.shapes[i].as_mut() else {
                    return;
                };
                if declared.is_none() && (shape.is_empty() || rng.chance(20)) {
                    if !shape.is_empty() && rng.chance(50) {
                        shape.remove(0);
                    } else {
                        shape.insert(0, v);
                    }
                } else {
                    let axis = rng.below(shape.len());
                    shape[axis] = v;
                }
            }
        }
    }

    /// The element type of tensor `index` (of `inputs ++ outputs`).
    pub fn tensor_dtype(&self, op: &Op, index: usize) -> Option<DType> {
        match &op.tensors().nth(index)?.dtype {
            DTypeRef::Var(var) => self.dtypes.get(var).copied(),
            DTypeRef::Fixed(d) => Some(*d),
        }
    }

    /// Fills in the shapes of computed outputs from their expressions (by the interpreter, as
    /// the runtime allocates outputs before anything else reads them); a failure leaves the
    /// output's shape empty.
    pub fn compute_outputs(&mut self, op: &Op) {
        for (index, tensor) in op.tensors().enumerate() {
            let Some(shape) = tensor
                .shape
                .as_ref()
                .filter(|_| tensor.is_computed_output())
            else {
                continue;
            };
            self.shapes[index] = None;
            let value = Interp::new(op, self).eval(&shape.ir).value;
            self.shapes[index] = match value {
                Ok(Value::List(dims)) => Some(dims),
                _ => None,
            };
        }
    }

    /// A few lines for failure messages.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "args {:?}\n    shapes {:?}\n    dtypes {{",
            self.args, self.shapes
        );
        for (var, d) in &self.dtypes {
            let _ = write!(out, " {var}: {}", d.onnx_name());
        }
        let _ = write!(
            out,
            " }}\n    features {:?}, limits {:?}, subgroup sizes {}..={}",
            self.caps.features,
            self.caps.limits,
            self.caps.subgroup_min_size,
            self.caps.subgroup_max_size,
        );
        out
    }
}

/// The conjuncts of `ir`, through `and` and into the `derive` entries it names (MatMul's
/// clauses are mostly one manifest derive each, itself a conjunction), so steering is scored
/// clause by clause.
fn flatten_and<'i>(op: &'i Op, ir: &'i Ir, out: &mut Vec<&'i Ir>) {
    match &ir.kind {
        IrKind::Binary(BinOp::And, l, r) => {
            flatten_and(op, l, out);
            flatten_and(op, r, out);
        }
        IrKind::Truthy(x) => flatten_and(op, x, out),
        IrKind::Sym(Symbol::Derived(name)) => match op.derived(name) {
            Some(derived) if derived.expr.ir.ty == Type::Bool => {
                flatten_and(op, &derived.expr.ir, out);
            }
            _ => out.push(ir),
        },
        _ => out.push(ir),
    }
}

fn random_dim(pool: &[i64], rng: &mut Rng) -> i64 {
    match rng.below(100) {
        0..3 => 0,
        3..12 => 1,
        12..20 => rng.pick(&[2, 4]),
        20..60 => rng.pick(pool),
        _ => rng.pick(SIZES),
    }
}

/// A value of `attr`'s type: mostly its default or a small one, now and then one outside what
/// the op accepts (an axis past the rank).
fn random_arg(attr: &kernel_codegen::model::Attribute, rng: &mut Rng) -> Value {
    if let Some(one_of) = attr.one_of.as_ref().filter(|v| !v.is_empty()) {
        return Value::Str(rng.pick(one_of));
    }
    if let Some(allowed) = attr.allowed.as_ref().filter(|v| !v.is_empty()) {
        return Value::Int(rng.pick(allowed));
    }
    match (attr.repr, attr.ty) {
        (AttrRepr::Truth, _) | (_, Type::Bool) => Value::Bool(rng.chance(50)),
        (AttrRepr::Bool, _) => Value::Int(rng.pick(&[0, 1])),
        (AttrRepr::F32, _) | (_, Type::Float) => Value::Float(rng.pick(&[1e-5, 0.5, 1.0, -1.0])),
        (AttrRepr::Str, _) => Value::Str(rng.pick(&["", "a"]).to_owned()),
        (AttrRepr::IntList, _) => Value::List((0..rng.below(4)).map(|_| rng.pick(SIZES)).collect()),
        (AttrRepr::I64, _) => Value::Int(rng.pick(&[-1, -1, -1, -2, -3, 0, 0, 1, 2, 3, 4, -5, 7])),
    }
}

/// A result of the interpreter, with whether something not comparable took part in it (a
/// `derive` entry that was not itself compared exactly).
#[derive(Debug, Clone)]
pub struct Traced {
    pub value: Result<Value, EvalError>,
    pub inexact: bool,
}

/// The interpreter's `Env` over one [`RandomEnv`], with the op's `derive` entries memoised.
/// The model inlines a variant's and a pass's derives into the expressions that read them,
/// so only the manifest's are names here.
pub struct Interp<'a> {
    op: &'a Op,
    env: &'a RandomEnv,
    memo: RefCell<HashMap<String, Traced>>,
    /// Entries another side could not compute the same way: reading one taints the result.
    untrusted: RefCell<Vec<String>>,
    tainted: Cell<bool>,
}

impl<'a> Interp<'a> {
    pub fn new(op: &'a Op, env: &'a RandomEnv) -> Self {
        Interp {
            op,
            env,
            memo: RefCell::new(HashMap::new()),
            untrusted: RefCell::new(Vec::new()),
            tainted: Cell::new(false),
        }
    }

    /// Marks the entry `name` as not comparable: what reads it is not compared either.
    pub fn distrust(&self, name: &str) {
        self.untrusted.borrow_mut().push(name.to_owned());
    }

    /// Evaluates `ir`; nested evaluations save and restore the taint, so each result says
    /// exactly what it read.
    pub fn eval(&self, ir: &Ir) -> Traced {
        let outer = self.tainted.replace(false);
        let mut trace = EvalTrace::default();
        let value = expr::eval_traced(ir, self, &mut trace);
        let inexact = trace.inexact_division || self.tainted.get();
        self.tainted.set(outer);
        Traced { value, inexact }
    }

    /// The value of the `derive` entry `name`, memoised.
    pub fn derived(&self, name: &str) -> Traced {
        if let Some(done) = self.memo.borrow().get(name) {
            return done.clone();
        }
        let traced = match self.op.derived(name) {
            Some(derived) => self.eval(&derived.expr.ir),
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
            Symbol::Present(name) => Some(Value::Bool(
                self.op.tensor_index(name).is_some() || env.args.contains_key(name),
            )),
            // The model writes tunables as literals; an op-level one is the op's.
            Symbol::Tunable(name) => self.op.tunable(name),
            Symbol::Limit(name) => Some(Value::Int(env.caps.limit(name))),
            Symbol::AdapterInfo(name) => {
                let size = env.caps.limit(name);
                (size != 0).then_some(Value::Int(size))
            }
            Symbol::Derived(name) => {
                let traced = self.derived(name);
                if traced.inexact || self.untrusted.borrow().iter().any(|n| n == name) {
                    self.tainted.set(true);
                }
                Some(traced.value?)
            }
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.env.caps.features.contains(name)
    }
}
