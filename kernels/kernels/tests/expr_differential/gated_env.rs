//! Random GatedRelativePositionBias environments.
//!
//! Most start from consistent shapes — query `(B, S, N*H)`, query_bias `(N*H)`, rel_pos
//! `(1, N, S, S)`, weight `(H, D)` with `D` even and at most 32, bias `(D)`, eco_a
//! `(1, N, 1, 1)`, `num_heads = N` — chosen so that `headParallel` is reachable both through
//! `headLanesFilled` (fixed subgroup size) and through `longAlignedRows` (variable or
//! unreported size), and then have zero, one or two clauses broken; the rest are wild (any
//! ranks, any dims, any small `num_heads`). A few leave the generated code's typed domain.

use codegen::expr::Value;
use kernel_runtime::DeviceCaps;

use super::generators::{dtypes, int, negate_a_dim, set_shape, shape};
use super::random_env::{RandomEnv, Rng, nudge, random_caps, random_dims};

/// The (min, max) subgroup sizes an adapter may report: unreported, two fixed sizes, and a
/// variable range.
pub const SUBGROUP_SIZES: [(u32, u32); 4] = [(0, 0), (8, 8), (32, 32), (4, 64)];

const ROLES: [&str; 6] = [
    "query_layer",
    "query_bias",
    "rel_pos",
    "weight",
    "bias",
    "eco_a",
];

/// A device: `random_caps` (features, `maxComputeWorkgroupsPerDimension` now and then small
/// enough that `dispatchOk` flips) with one of [`SUBGROUP_SIZES`].
fn gated_caps(rng: &mut Rng) -> DeviceCaps {
    let mut caps = random_caps(rng);
    (caps.subgroup_min_size, caps.subgroup_max_size) = rng.pick(&SUBGROUP_SIZES);
    caps
}

/// A GatedRelativePositionBias environment; about 8% are outside the typed domain.
pub fn gated_bias(rng: &mut Rng, tunables: &[(String, i64)]) -> RandomEnv {
    let mut env = RandomEnv::new(tunables);
    env.caps = gated_caps(rng);
    if rng.chance(80) {
        consistent(rng, &mut env);
        for _ in 0..rng.pick(&[0, 0, 0, 1, 1, 2]) {
            perturb(rng, &mut env);
        }
    } else {
        wild(rng, &mut env);
    }
    dtypes(rng, &mut env, &["T"]);
    if rng.chance(8) {
        out_of_domain(rng, &mut env);
    }
    // The output shape as the generated `Env::new` computes it, where it can be computed.
    let query = shape(&env, "query_layer");
    if let (Some(&Value::Int(heads)), true) = (env.attrs.get("num_heads"), query.len() >= 2) {
        set_shape(
            &mut env,
            "output",
            vec![query[0], heads, query[1], query[1]],
        );
    }
    env
}

/// Shapes every contract holds for. The head size is a multiple of `D` more often than not
/// (`headLanesFilled` needs `H >= 4 D`, `longAlignedRows` `H >= 8 D`), and the sequence is
/// often long and vec4-aligned (`longAlignedRows` needs `S % 4 == 0` and `S >= LONG_ROW`).
fn consistent(rng: &mut Rng, env: &mut RandomEnv) {
    let b = rng.pick(&[1, 1, 2, 3]);
    let n = rng.pick(&[1, 2, 3, 4, 8]);
    let d = rng.pick(&[2, 2, 4, 4, 6, 8, 16, 32]);
    let h = if rng.chance(65) {
        d * rng.pick(&[1, 2, 4, 8, 8, 16])
    } else {
        rng.pick(&[1, 2, 3, 5, 8, 16, 64])
    };
    let s = rng.pick(&[1, 2, 3, 4, 5, 8, 16, 256, 256, 260, 512, 512, 257, 255]);
    set_shape(env, "query_layer", vec![b, s, n * h]);
    set_shape(env, "query_bias", vec![n * h]);
    set_shape(env, "rel_pos", vec![1, n, s, s]);
    set_shape(env, "weight", vec![h, d]);
    set_shape(env, "bias", vec![d]);
    set_shape(env, "eco_a", vec![1, n, 1, 1]);
    env.attrs.insert("num_heads".into(), int(n));
}

/// `dims` with one dim set to `value` (nothing for a scalar shape).
fn with_dim(mut dims: Vec<i64>, axis: usize, value: i64) -> Vec<i64> {
    if let Some(d) = dims.get_mut(axis) {
        *d = value;
    }
    dims
}

/// Breaks one clause (or, for `num_heads` and the query, possibly several).
fn perturb(rng: &mut Rng, env: &mut RandomEnv) {
    let query = shape(env, "query_layer");
    match rng.below(12) {
        0 | 1 => {
            env.attrs.insert("num_heads".into(), int(rng.range(-3, 9)));
        }
        2 => {
            let dims = if rng.chance(70) {
                nudge(rng, &shape(env, "query_bias"))
            } else {
                [shape(env, "query_bias"), vec![1]].concat()
            };
            set_shape(env, "query_bias", dims);
        }
        3 => {
            // rel_pos: another batch, head count, sequence length or rank.
            let rel = shape(env, "rel_pos");
            let dims = match rng.below(4) {
                0 => with_dim(rel, 0, rng.pick(&[0, 2])),
                1 => nudge(rng, &rel),
                2 => rel[1..].to_vec(),
                _ => {
                    let s = query.get(1).copied().unwrap_or(1);
                    with_dim(rel, 3, s + 1)
                }
            };
            set_shape(env, "rel_pos", dims);
        }
        4 => {
            // A weight for another head size.
            let weight = shape(env, "weight");
            let h = weight.first().copied().unwrap_or(0);
            let h = (h + rng.pick(&[-1, 1, 2])).max(0);
            set_shape(env, "weight", with_dim(weight, 0, h));
        }
        5 => {
            // An odd, zero or too large `D`; the bias follows it or not.
            let d = rng.pick(&[0, 1, 3, 5, 31, 33, 34, 34, 64]);
            let weight = shape(env, "weight");
            set_shape(env, "weight", with_dim(weight, 1, d));
            if rng.chance(70) {
                set_shape(env, "bias", vec![d]);
            }
        }
        6 => {
            let dims = if rng.chance(70) {
                nudge(rng, &shape(env, "bias"))
            } else {
                vec![]
            };
            set_shape(env, "bias", dims);
        }
        7 => {
            let eco = shape(env, "eco_a");
            let dims = match rng.below(3) {
                0 => nudge(rng, &eco),
                1 => eco[..eco.len().min(2)].to_vec(),
                _ => vec![eco.get(1).copied().unwrap_or(1)],
            };
            set_shape(env, "eco_a", dims);
        }
        8 => {
            // The query's rank: a dim more or less.
            let mut dims = query;
            if dims.is_empty() || rng.chance(50) {
                dims.push(rng.range(1, 4));
            } else {
                dims.pop();
            }
            set_shape(env, "query_layer", dims);
        }
        9 => {
            // A zero batch or sequence (rel_pos follows), or a zero hidden size.
            let axis = rng.below(3);
            set_shape(env, "query_layer", with_dim(query, axis, 0));
            if axis == 1 {
                let rel = shape(env, "rel_pos");
                set_shape(env, "rel_pos", with_dim(with_dim(rel, 2, 0), 3, 0));
            }
        }
        10 => {
            // A hidden size `num_heads` does not divide (query_bias follows).
            let hidden = query.get(2).copied().unwrap_or(0) + 1;
            set_shape(env, "query_layer", with_dim(query, 2, hidden));
            set_shape(env, "query_bias", vec![hidden]);
        }
        _ => {
            // Any dim of any input a little off, or now and then so large that products
            // overflow an i64 (an error for us and the generated code, not for minijinja).
            let role = rng.pick(&ROLES);
            let mut dims = nudge(rng, &shape(env, role));
            if rng.chance(30) {
                let i = rng.below(dims.len());
                dims[i] = rng.pick(&[1 << 31, 1 << 40, i64::MAX]);
            }
            set_shape(env, role, dims);
        }
    }
}

/// Any ranks (0–5), any small dims (sometimes huge ones), any small `num_heads`.
fn wild(rng: &mut Rng, env: &mut RandomEnv) {
    let huge = rng.chance(10);
    for role in ROLES {
        let rank = rng.below(6);
        let dims = random_dims(rng, rank, huge);
        set_shape(env, role, dims);
    }
    env.attrs.insert("num_heads".into(), int(rng.range(-3, 9)));
}

/// One change the generated code's types cannot represent: no `num_heads`, a negative dim,
/// another dtype, other tunable values.
fn out_of_domain(rng: &mut Rng, env: &mut RandomEnv) {
    match rng.below(5) {
        0 => {
            env.attrs.remove("num_heads");
        }
        1 | 2 => {
            let role = rng.pick(&ROLES);
            negate_a_dim(env, rng, role);
        }
        3 => {
            env.dtypes
                .insert("T".into(), rng.pick(&["u32", "i64"]).to_owned());
        }
        _ => {
            let (name, values) = rng.pick(&[("LONG_ROW", [4, 16]), ("WORKGROUP_SIZE", [1, 64])]);
            env.tunables.insert(name.into(), rng.pick(&values));
        }
    }
}
