//! Random environments for an op of any dialect, drawn from its model.
//!
//! An environment is steered towards one variant at a time: arguments and type variables take
//! the values that variant's `when` bounds them to most of the time, and sizes come from a
//! small pool shared by arguments and dimensions, so that equalities between them
//! (`dim(shapes.wT, 0) == args.dim`) hold often enough for every variant to be selected.
//! Absent optional tensors have the empty shape, as in the generated `Env`. What sizes, ranks
//! and devices are drawn from is the dialect's [`Profile`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kernel_codegen::expr::{EvalError, Ir, Type, Value};
use kernel_codegen::model::{AttrRepr, DType, DTypeRef, IntWidth, Op, StaticVar, Variant};
use kernel_runtime::DeviceCaps;

use super::interp::Interp;

pub use kernel_codegen::check::Rng;
use kernel_codegen::check::repair::when_conjuncts;

/// What the environments of a dialect's ops are drawn from: what its manifests compare with
/// differs (the Hub's thresholds, its rank-0 and rank-5 broadcasts, its negative axes, the
/// device limits its variants test).
#[derive(Debug)]
pub struct Profile {
    /// The sizes the pool of an environment is drawn from.
    pub sizes: &'static [i64],
    /// The ranks of a tensor whose rank is not declared.
    pub ranks: &'static [usize],
    /// The small integers an integer argument often takes.
    pub small_ints: &'static [i64],
    /// A device: its capabilities, and the features a package may test for that they cannot
    /// express (no wgpu device offers them).
    pub device: fn(&mut Rng) -> (DeviceCaps, Vec<&'static str>),
    /// Mutations tried per steered environment.
    pub steering: usize,
    /// Whether repairs also set an ordering's side to its bound and reach into a `derive`
    /// entry on a side of an `or` (`RandomEnv::repair`), and a random change is followed by
    /// repairs. The corpus's repairs are equalities only, and alone, so that its environments
    /// stay those its coverage was established on.
    pub thorough_repair: bool,
    /// Whether steering goes on past the target variant's acceptance, until the variants
    /// before it are rejected or demoted: where variants overlap (the Hub's), a later one is
    /// otherwise rarely selected, and its shaders never checked.
    pub steer_past_earlier: bool,
}

/// The seed packages' and the corpus's: sizes are powers of two, the odd sizes real models
/// have, and a few that are neither.
pub const CORPUS: Profile = Profile {
    sizes: &[
        1, 2, 3, 4, 5, 8, 12, 16, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 2560, 4096,
        8192, 16384,
    ],
    ranks: &[1, 1, 2, 2, 3, 4],
    small_ints: &[1, 2, 3, 4, 8],
    device: |rng| (random_caps(rng), Vec::new()),
    steering: 100,
    thorough_repair: false,
    steer_past_earlier: false,
};

/// Everything an expression of the op may read, as plain values. `shapes` is indexed like
/// `inputs ++ outputs`; `None` is an absent optional tensor or a computed output.
#[derive(Clone, Debug)]
pub struct RandomEnv {
    /// The scalar args that are given.
    pub args: BTreeMap<String, Value>,
    pub shapes: Vec<Option<Vec<i64>>>,
    /// Whether the call gives tensor `i`: an optional input or output may be left out (an
    /// optional computed output still has the shape its expression gives).
    pub given: Vec<bool>,
    /// Type variable → element type.
    pub dtypes: BTreeMap<String, DType>,
    pub caps: DeviceCaps,
    /// Features the device has beyond what `caps` can say: the typed API cannot be given it.
    pub unavailable: Vec<&'static str>,
    pub profile: &'static Profile,
}

impl RandomEnv {
    /// An environment steered towards `target` (an index into `op.variants`).
    pub fn draw(op: &Op, profile: &'static Profile, target: usize, rng: &mut Rng) -> Self {
        let bounds = op.variants.get(target).map(|v| &v.bounds);
        let bounded = |var: StaticVar| bounds.and_then(|b| b.get(&var)).filter(|v| !v.is_empty());
        let pool: Vec<i64> = (0..3).map(|_| rng.pick(profile.sizes)).collect();
        let mut args = BTreeMap::new();
        for attr in &op.attributes {
            if attr.is_optional() && rng.chance(30) {
                continue;
            }
            let value = match bounded(StaticVar::Attr(attr.name.clone())) {
                Some(values) if rng.chance(85) => rng.pick(values),
                _ => random_arg(attr, profile, &pool, rng),
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
            if let Some(first) = allowed.first() {
                let dtype = if allowed.len() > 1 {
                    rng.pick(&allowed)
                } else {
                    *first
                };
                dtypes.insert(var.name.clone(), dtype);
            }
        }
        // Sizes the arguments took join the pool, so shapes can agree with them.
        let mut sizes = pool.clone();
        sizes.extend(args.values().filter_map(|v| match v {
            Value::Int(n) if *n > 0 => Some(*n),
            _ => None,
        }));
        let given: Vec<bool> = op
            .tensors()
            .map(|t| !(t.optional && rng.chance(30)))
            .collect();
        let shapes = op
            .tensors()
            .zip(&given)
            .map(|(t, given)| {
                if t.is_computed_output() || !given {
                    return None;
                }
                let rank = t
                    .rank
                    .map_or_else(|| rng.pick(profile.ranks), |r| r as usize);
                Some((0..rank).map(|_| random_dim(&sizes, rng)).collect())
            })
            .collect();
        let (caps, unavailable) = (profile.device)(rng);
        RandomEnv {
            args,
            shapes,
            given,
            dtypes,
            caps,
            unavailable,
            profile,
        }
    }

    /// Local search towards an environment `variant` accepts: mutations of one value at a time
    /// (an argument, a dimension, a rank, a presence, an element type, a device property) are
    /// kept when no fewer of the variant's `when` conjuncts hold, for up to `attempts` tries.
    /// Random drawing alone rarely meets conditions such as `numel(shapes.xT) >= args.rows *
    /// args.dim and dim(shapes.wT, 0) == args.dim` together. Where the profile says so, then
    /// towards one where no variant before it is selected either.
    pub fn steer(&mut self, op: &Op, variant: &Variant, rng: &mut Rng, attempts: usize) {
        let conjuncts: Vec<_> = (when_conjuncts(op, variant).into_iter())
            .map(|(ir, _)| ir)
            .collect();
        let past = self.profile.steer_past_earlier;
        let earlier = match op.variants.iter().position(|v| std::ptr::eq(v, variant)) {
            Some(index) if past => &op.variants[..index],
            _ => &[],
        };
        let score = |env: &mut RandomEnv| {
            env.compute_outputs(op);
            let interp = Interp::new(op, env, Some(variant));
            let holds = |c: &Ir| matches!(interp.eval(c).value, Ok(Value::Bool(true)));
            let demoted = |v: &Variant| v.demote_when.iter().any(|c| holds(&c.ir));
            // Every variant before the target rejected or demoted, and the target not
            // demoted. The Hub's clauses read no variant's constants by name, so one
            // interpreter serves every variant's.
            let passed = (earlier.iter())
                .filter(|v| !v.when.iter().all(|c| holds(&c.ir)) || demoted(v))
                .count()
                + usize::from(past && !demoted(variant));
            (conjuncts.iter().filter(|c| holds(c)).count(), passed)
        };
        let mut best = score(self);
        for _ in 0..attempts {
            if best == (conjuncts.len(), earlier.len() + usize::from(past)) {
                return;
            }
            let mut next = self.clone();
            // Clauses are coupled (a size that one equality sets, another reads), so a
            // proposal may chain a few repairs before it is scored.
            let repairs = if rng.chance(50) { 1 + rng.below(4) } else { 0 };
            let repaired = (0..repairs).fold(false, |any, _| {
                next.repair(op, variant, &conjuncts, rng) || any
            });
            if !repaired {
                next.mutate(op, rng);
                // A change that breaks an equality (a batch dimension of one of MatMul's
                // operands) is scored with the equality mended.
                if self.profile.thorough_repair {
                    for _ in 0..rng.below(3) {
                        next.repair(op, variant, &conjuncts, rng);
                    }
                }
            }
            let got = score(&mut next);
            if got >= best {
                *self = next;
                best = got;
            }
        }
    }

    /// Changes one value.
    fn mutate(&mut self, op: &Op, rng: &mut Rng) {
        let sizes = self.profile.sizes;
        let known: Vec<i64> = self
            .args
            .values()
            .filter_map(|v| match v {
                Value::Int(n) if *n > 0 => Some(*n),
                _ => None,
            })
            .chain(
                self.shapes
                    .iter()
                    .flatten()
                    .flatten()
                    .copied()
                    .filter(|d| *d > 0),
            )
            .collect();
        let size = |rng: &mut Rng| match rng.below(10) {
            0..4 if !known.is_empty() => rng.pick(&known),
            4..6 if !known.is_empty() => rng
                .pick(&known)
                .saturating_mul(rng.pick(&known))
                .min(1 << 24),
            6 if !known.is_empty() => (rng.pick(&known) / rng.pick(&[2, 4, 8, 32])).max(1),
            7 => rng.pick(&[1, 2, 4, 8, 32]),
            _ => rng.pick(sizes),
        };
        match rng.below(10) {
            0..4 => {
                let Some(attr) = op.attributes.get(rng.below(op.attributes.len())) else {
                    return;
                };
                match self.args.get(&attr.name) {
                    // An attribute with declared values mostly keeps to them (below), as
                    // the typed API only holds those.
                    Some(Value::Int(_))
                        if attr.one_of.is_none() && attr.allowed.is_none() && rng.chance(85) =>
                    {
                        let v = size(rng);
                        self.args.insert(attr.name.clone(), Value::Int(v));
                    }
                    Some(_) if attr.is_optional() && rng.chance(30) => {
                        self.args.remove(&attr.name);
                    }
                    _ => {
                        let v = random_arg(attr, self.profile, sizes, rng);
                        self.args.insert(attr.name.clone(), v);
                    }
                }
            }
            4..8 => {
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
                if declared.is_none() && rng.chance(15) {
                    if shape.len() > 1 && rng.chance(50) {
                        shape.pop();
                    } else {
                        shape.push(v);
                    }
                } else if !shape.is_empty() {
                    let axis = rng.below(shape.len());
                    shape[axis] = v;
                }
            }
            8 => {
                let i = rng.below(self.given.len());
                if op.tensors().nth(i).is_some_and(|t| t.optional) {
                    self.given[i] = !self.given[i];
                    let computed = op.tensors().nth(i).is_some_and(|t| t.is_computed_output());
                    if !computed {
                        self.shapes[i] = if self.given[i] {
                            let rank =
                                op.tensors().nth(i).and_then(|t| t.rank).unwrap_or(1) as usize;
                            Some((0..rank).map(|_| size(rng)).collect())
                        } else {
                            None
                        };
                    }
                }
            }
            _ => {
                if rng.chance(50) {
                    if let Some(var) = op.type_vars.get(rng.below(op.type_vars.len()))
                        && !var.allowed.is_empty()
                    {
                        self.dtypes.insert(var.name.clone(), rng.pick(&var.allowed));
                    }
                } else {
                    (self.caps, self.unavailable) = (self.profile.device)(rng);
                }
            }
        }
    }

    /// Whether the device has the feature `name`.
    pub fn has_feature(&self, name: &str) -> bool {
        self.caps.has_feature(name) || self.unavailable.contains(&name)
    }

    /// The element type of tensor `index` (of `inputs ++ outputs`).
    pub fn tensor_dtype(&self, op: &Op, index: usize) -> Option<DType> {
        match &op.tensors().nth(index)?.dtype {
            DTypeRef::Var(var) => self.dtypes.get(var).copied(),
            DTypeRef::Fixed(d) => Some(*d),
        }
    }

    /// Fills in the shapes of computed outputs from their expressions; a failure is kept as
    /// the output's result.
    pub fn compute_outputs(&mut self, op: &Op) -> Vec<(usize, Result<Vec<i64>, EvalError>)> {
        let mut results = Vec::new();
        for (index, tensor) in op.tensors().enumerate() {
            let Some(shape) = tensor
                .shape
                .as_ref()
                .filter(|_| tensor.is_computed_output())
            else {
                continue;
            };
            let value = Interp::new(op, self, None).eval(&shape.ir).value;
            let result = match value {
                Ok(Value::List(dims)) => Ok(dims),
                Ok(Value::Int(n)) => Ok(vec![n]),
                Ok(other) => Err(EvalError::new(format!("shape is {other}, not a list"))),
                Err(e) => Err(e),
            };
            if let Ok(dims) = &result {
                self.shapes[index] = Some(dims.clone());
            }
            results.push((index, result));
        }
        results
    }

    /// A few lines for failure messages.
    pub fn describe(&self) -> String {
        let mut out = format!(
            "args {:?}\n    shapes {:?}, given {:?}\n    dtypes {{",
            self.args, self.shapes, self.given
        );
        for (var, d) in &self.dtypes {
            let _ = write!(out, " {var}: {}", d.wgsl_name());
        }
        let _ = write!(
            out,
            " }}\n    shader-f16 {}, subgroups {}, subgroup sizes {}..={}, \
             maxComputeWorkgroupsPerDimension {}",
            self.caps.shader_f16,
            self.caps.subgroups,
            self.caps.subgroup_min_size,
            self.caps.subgroup_max_size,
            self.caps.limits.max_compute_workgroups_per_dimension
        );
        if !self.unavailable.is_empty() {
            let _ = write!(out, ", {:?}", self.unavailable);
        }
        out
    }
}

fn random_dim(sizes: &[i64], rng: &mut Rng) -> i64 {
    match rng.below(100) {
        0..3 => 0,
        3..10 => rng.pick(&[1, 2, 4]),
        10..18 => rng.pick(sizes) * rng.pick(&[2, 4, 8]),
        _ => rng.pick(sizes),
    }
}

/// A value of `attr`'s expression type, not necessarily one the typed API can hold (a
/// negative `u32` now and then is outside its domain, which the caller notices).
fn random_arg(
    attr: &kernel_codegen::model::Attribute,
    profile: &Profile,
    pool: &[i64],
    rng: &mut Rng,
) -> Value {
    if let Some(one_of) = attr.one_of.as_ref().filter(|v| !v.is_empty()) {
        return Value::Str(rng.pick(one_of));
    }
    if let Some(allowed) = attr.allowed.as_ref().filter(|v| !v.is_empty())
        && rng.chance(90)
    {
        return Value::Int(rng.pick(allowed));
    }
    match (attr.repr, attr.ty) {
        (AttrRepr::Truth, _) | (_, Type::Bool) => Value::Bool(rng.chance(50)),
        (AttrRepr::Bool, _) => Value::Int(rng.pick(&[0, 1])),
        (AttrRepr::F32, _) | (_, Type::Float) => {
            let v: f32 = rng.pick(&[1e-6, 1e-5, 0.5, 1.0, 0.125, 2.0, -1.0, 0.0, 30.0]);
            Value::Float(f64::from(v))
        }
        (AttrRepr::Str, _) => Value::Str(rng.pick(&["", "a", "none"]).to_owned()),
        (AttrRepr::IntList, _) => Value::List((0..rng.below(4)).map(|_| rng.pick(pool)).collect()),
        (AttrRepr::I64, _) => Value::Int(match rng.below(100) {
            0..8 => 0,
            8..12 if attr.int_width == IntWidth::I32 => -rng.pick(pool),
            12..14 => rng.pick(&[1 << 31, 1 << 32, -1]),
            14..30 => rng.pick(profile.small_ints),
            _ => rng.pick(pool),
        }),
    }
}

/// Mostly a default device; sometimes small dispatch limits, with and without the optional
/// features, with unreported, variable and fixed subgroup sizes.
pub fn random_caps(rng: &mut Rng) -> DeviceCaps {
    let mut caps = DeviceCaps::portable();
    caps.limits.max_compute_workgroups_per_dimension =
        rng.pick(&[65535, 65535, 65535, 65535, 1, 4, 64, 1024]);
    caps.shader_f16 = rng.chance(50);
    caps.subgroups = rng.chance(60);
    caps.timestamp_query = rng.chance(50);
    (caps.subgroup_min_size, caps.subgroup_max_size) = rng.pick(&[
        (0, 0),
        (4, 8),
        (8, 8),
        (32, 32),
        (32, 64),
        (4, 128),
        (64, 64),
    ]);
    // Tensor-core devices: larger workgroup memory, and subgroup matrices with some of the
    // configurations vendors offer (NVIDIA's 16 × 16 × 16, Apple's 8 × 8 × 8).
    if rng.chance(40) {
        caps.limits.max_compute_workgroup_storage_size = rng.pick(&[32768, 49152]);
    }
    if rng.chance(50) {
        caps.subgroup_matrix = true;
        caps.subgroup_matrix_configs = [
            "subgroup-matrix-f16-f32-16x16x16",
            "subgroup-matrix-f16-f16-16x16x16",
            "subgroup-matrix-f16-f32-8x8x8",
            "subgroup-matrix-f16-f16-8x8x8",
            "subgroup-matrix-f32-f32-8x8x8",
        ]
        .iter()
        .filter(|_| rng.chance(75))
        .filter_map(|name| kernel_runtime::SubgroupMatrixConfig::from_feature_name(name))
        .collect();
    }
    caps
}
