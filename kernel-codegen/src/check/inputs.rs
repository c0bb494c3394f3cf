//! The inputs an op is checked on: within its declared dtypes, ranks and attributes, with
//! sizes at the boundaries where plans go wrong (0, 1, odd sizes, powers of two and their
//! neighbours, the numbers the op's own expressions compare with, sizes past the device
//! limits). Drawn from a fixed seed, so a finding reproduces.
//!
//! Sizes of one input come from a small pool of its own, so that equalities between them
//! (`dim(shapes.b, 0) == K`) hold as often as real calls make them hold.

use std::collections::{BTreeMap, BTreeSet};

use crate::expr::{Ir, IrKind, Symbol, Type, Value};
use crate::model::{AttrValue, DType, DTypeRef, Op};

/// One call of an op: dtypes of its type variables, shapes of its tensors (inputs, then
/// outputs; `None` for an absent optional tensor and for outputs the op computes) and the
/// values of its attributes.
#[derive(Debug, Clone)]
pub struct Input {
    pub dtypes: BTreeMap<String, DType>,
    pub shapes: Vec<Option<Vec<i64>>>,
    pub attrs: BTreeMap<String, Value>,
}

impl Input {
    /// The distinct sizes of this call: its dimensions and non-negative integer attributes.
    pub fn sizes(&self) -> BTreeSet<i64> {
        let dims = self.shapes.iter().flatten().flatten().copied();
        let ints = self.attrs.values().filter_map(|v| match v {
            Value::Int(k) if *k >= 0 => Some(*k),
            _ => None,
        });
        dims.chain(ints).collect()
    }

    /// This call with every dimension and integer attribute equal to `from` set to `to`: a
    /// neighbour that keeps the equalities between its sizes (a shared `K`, a count that
    /// matches a dimension).
    pub fn with_size(&self, from: i64, to: i64) -> Input {
        let swap = |k: i64| if k == from { to } else { k };
        Input {
            dtypes: self.dtypes.clone(),
            shapes: self
                .shapes
                .iter()
                .map(|s| {
                    s.as_ref()
                        .map(|dims| dims.iter().map(|&d| swap(d)).collect())
                })
                .collect(),
            attrs: self
                .attrs
                .iter()
                .map(|(name, v)| {
                    let v = match v {
                        Value::Int(k) => Value::Int(swap(*k)),
                        other => other.clone(),
                    };
                    (name.clone(), v)
                })
                .collect(),
        }
    }

    /// The dtype tensor `index` holds in this call.
    pub fn tensor_dtype(&self, op: &Op, index: usize) -> Option<DType> {
        match &op.tensors().nth(index)?.dtype {
            DTypeRef::Fixed(d) => Some(*d),
            DTypeRef::Var(var) => self.dtypes.get(var).copied(),
        }
    }
}

/// splitmix64: the same inputs on every machine, whatever the dependencies.
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

/// Sizes where plans and shaders change behaviour, whatever the op.
const BOUNDARY_SIZES: &[i64] = &[
    0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
    1000, 1023, 1024, 1025, 4096, 65_535, 65_536, 65_537, 4_194_305,
];

/// The largest rank drawn for a tensor whose rank is not declared, unless the op's
/// expressions compare ranks with larger numbers.
const MAX_RANK: i64 = 4;

/// What the inputs of one op are drawn from.
pub struct Space {
    sizes: Vec<i64>,
    ranks: Vec<usize>,
    small_ints: Vec<i64>,
}

impl Space {
    /// The boundary sizes, and the integers the op's expressions mention with their
    /// neighbours (a clause `K % 8 == 0` adds 7, 8 and 9; `ranks.x <= 8` adds rank 9).
    pub fn of(op: &Op) -> Space {
        let mut literals = BTreeSet::new();
        let mut rank_literals = BTreeSet::new();
        for ir in expressions(op) {
            collect_literals(ir, &mut literals, &mut rank_literals);
        }
        let mut sizes: BTreeSet<i64> = BOUNDARY_SIZES.iter().copied().collect();
        for &k in &literals {
            for v in [k - 1, k, k + 1] {
                if (0..=1 << 24).contains(&v) {
                    sizes.insert(v);
                }
            }
        }
        let mut ranks: BTreeSet<usize> = (0..=MAX_RANK as usize).collect();
        for &k in &rank_literals {
            for v in [k - 1, k, k + 1] {
                if let Ok(v) = usize::try_from(v)
                    && v <= 16
                {
                    ranks.insert(v);
                }
            }
        }
        let mut small_ints: BTreeSet<i64> = [-2, -1, 0, 1, 2, 3].into_iter().collect();
        small_ints.extend(literals.iter().filter(|k| k.abs() <= 64));
        Space {
            sizes: sizes.into_iter().collect(),
            ranks: ranks.into_iter().collect(),
            small_ints: small_ints.into_iter().collect(),
        }
    }

    /// One input, drawn.
    pub fn draw(&self, op: &Op, rng: &mut Rng) -> Input {
        let dtypes = op
            .type_vars
            .iter()
            .filter(|v| !v.allowed.is_empty())
            .map(|v| (v.name.clone(), rng.pick(&v.allowed)))
            .collect();
        // Most dimensions come from a pool of three sizes, so that they agree often.
        let pool: Vec<i64> = (0..3).map(|_| rng.pick(&self.sizes)).collect();
        let size = |rng: &mut Rng| {
            if rng.chance(80) {
                rng.pick(&pool)
            } else {
                rng.pick(&self.sizes)
            }
        };
        // Elementwise and broadcasting ops take tensors of one shape or of a shape's suffix:
        // a tensor often copies one drawn before it.
        let mut drawn: Vec<Vec<i64>> = Vec::new();
        let shapes = op
            .tensors()
            .map(|t| {
                let computed =
                    t.shape.is_some() && !t.provided && op.outputs.iter().any(|o| o.role == t.role);
                if computed || (t.optional && rng.chance(40)) {
                    return None;
                }
                if !drawn.is_empty() && rng.chance(40) {
                    let earlier = rng.pick(&drawn);
                    let keep = match t.rank {
                        Some(r) => r as usize,
                        None if rng.chance(70) => earlier.len(),
                        None => rng.below(earlier.len() + 1),
                    };
                    if keep <= earlier.len() {
                        let copy = earlier[earlier.len() - keep..].to_vec();
                        drawn.push(copy.clone());
                        return Some(copy);
                    }
                }
                let rank = match t.rank {
                    Some(r) => r as usize,
                    None => rng.pick(&self.ranks),
                };
                let shape: Vec<i64> = (0..rank).map(|_| size(rng)).collect();
                drawn.push(shape.clone());
                Some(shape)
            })
            .collect();
        let attrs = op
            .attributes
            .iter()
            .filter_map(|a| {
                let value = self.attribute(a, rng)?;
                Some((a.name.clone(), value))
            })
            .collect();
        Input {
            dtypes,
            shapes,
            attrs,
        }
    }

    /// A value of attribute `a`; `None` leaves an optional attribute out.
    fn attribute(&self, a: &crate::model::Attribute, rng: &mut Rng) -> Option<Value> {
        let default = a.default.as_ref().map(attr_value);
        if !a.required && default.is_none() && rng.chance(30) {
            return None;
        }
        if let Some(default) = &default
            && rng.chance(30)
        {
            return Some(default.clone());
        }
        Some(match a.ty {
            Type::Int => Value::Int(match &a.allowed {
                Some(allowed) if !allowed.is_empty() => rng.pick(allowed),
                // Sizes too, at times: an argument that is a count or a width (`args.cols`)
                // meets the same boundaries as a dimension.
                _ if rng.chance(25) => rng.pick(&self.sizes),
                // A `u32` argument is never negative in the typed API.
                _ if a.int_width == crate::model::IntWidth::U32 => rng.pick(&self.small_ints).abs(),
                _ => rng.pick(&self.small_ints),
            }),
            Type::Float => Value::Float(rng.pick(&[0.0, 1.0, 0.5, -1.0, 1e-5])),
            Type::Bool => Value::Bool(rng.chance(50)),
            Type::Str => match &a.one_of {
                Some(options) if !options.is_empty() => Value::Str(rng.pick(options)),
                _ => default?,
            },
            Type::List => {
                let len = rng.below(4);
                Value::List((0..len).map(|_| rng.pick(&self.small_ints)).collect())
            }
            Type::Dtype => default?,
        })
    }
}

/// A manifest's attribute value as the expression language reads it.
pub fn attr_value(value: &AttrValue) -> Value {
    match value {
        AttrValue::Int(i) => Value::Int(*i),
        AttrValue::Float(f) => Value::Float(*f),
        AttrValue::Ints(items) => Value::List(items.clone()),
        AttrValue::Str(s) => Value::Str(s.clone()),
    }
}

/// Every expression of the op: output shapes, `derive` entries, and each variant's
/// conditions, constants and plan.
fn expressions(op: &Op) -> impl Iterator<Item = &Ir> {
    let outputs = op
        .outputs
        .iter()
        .flat_map(|t| t.shape.iter().chain(&t.rank_expr));
    let derives = op.derives.iter().map(|d| &d.expr);
    let variants = op.variants.iter().flat_map(|v| {
        let passes = v.passes.iter().flat_map(|p| {
            p.inputs.iter().map(|i| &i.expr).chain(
                p.bindings
                    .iter()
                    .filter_map(|b| b.params.as_ref())
                    .flat_map(|s| s.fields.iter().map(|f| &f.value)),
            )
        });
        v.when
            .iter()
            .chain(&v.demote_when)
            .chain(v.constants.iter().map(|c| &c.expr))
            .chain(v.intermediates.iter().map(|i| &i.shape))
            .chain(passes)
    });
    outputs.chain(derives).chain(variants).map(|e| &e.ir)
}

/// Integer literals anywhere in `ir`; those compared with a rank also go to `ranks`.
fn collect_literals(ir: &Ir, ints: &mut BTreeSet<i64>, ranks: &mut BTreeSet<i64>) {
    if let IrKind::Int(k) = ir.kind {
        ints.insert(k);
    }
    if let IrKind::Binary(_, lhs, rhs) | IrKind::LooseCompare(_, lhs, rhs) = &ir.kind {
        for (a, b) in [(lhs, rhs), (rhs, lhs)] {
            if let (IrKind::Sym(Symbol::Rank(_)), IrKind::Int(k)) = (&a.kind, &b.kind) {
                ranks.insert(*k);
            }
        }
    }
    for child in ir.children() {
        collect_literals(child, ints, ranks);
    }
}
