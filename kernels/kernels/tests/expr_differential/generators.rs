//! Per-manifest random environment generators.
//!
//! Purely random shapes almost never satisfy a variant's `when` list, so each generator starts
//! most environments from a consistent configuration aimed at one variant and then perturbs
//! zero, one or two things; the rest are wild (any rank, any dims). The test asserts that every
//! variant is accepted often enough for its conditions to be compared while true as well.

use codegen::expr::Value;

use super::random_env::{RandomEnv, Rng, nudge, random_caps, random_dims};

/// The WGSL name of a random float type of `T`; the index type `M` is fixed.
pub fn dtypes(rng: &mut Rng, env: &mut RandomEnv, vars: &[&str]) {
    for var in vars {
        let dtype = if *var == "M" {
            "i64"
        } else {
            rng.pick(&["f32", "f16"])
        };
        env.dtypes.insert((*var).to_owned(), dtype.to_owned());
    }
}

pub fn set_shape(env: &mut RandomEnv, role: &str, dims: Vec<i64>) {
    env.shapes.insert(role.to_owned(), dims);
}

pub fn shape(env: &RandomEnv, role: &str) -> Vec<i64> {
    env.shapes.get(role).cloned().unwrap_or_default()
}

/// Makes one dimension of `role` negative (or gives a rank-0 shape one), which no contract
/// accepts and shapes from real tensors never have.
pub fn negate_a_dim(env: &mut RandomEnv, rng: &mut Rng, role: &str) {
    let mut dims = shape(env, role);
    if dims.is_empty() {
        dims.push(-1);
    } else {
        let i = rng.below(dims.len());
        dims[i] = -dims[i] - 1;
    }
    set_shape(env, role, dims);
}

pub fn int(v: i64) -> Value {
    Value::Int(v)
}

/// An MRotaryEmbedding environment. About 80% stay in the generated code's typed domain
/// (flags 0/1, every attribute given, dims non-negative, `T` f32/f16); the rest are pushed out
/// of it for the two-way comparison.
pub fn mrope(rng: &mut Rng, tunables: &[(String, i64)]) -> RandomEnv {
    let mut env = RandomEnv::new(tunables);
    env.caps = random_caps(rng);
    if rng.chance(65) {
        mrope_consistent(rng, &mut env);
        for _ in 0..rng.pick(&[0, 0, 0, 1, 1, 2]) {
            mrope_perturb(rng, &mut env);
        }
    } else {
        mrope_wild(rng, &mut env);
    }
    dtypes(rng, &mut env, &["T", "M"]);
    if rng.chance(20) {
        mrope_out_of_domain(rng, &mut env);
    }
    env
}

fn scale(rng: &mut Rng) -> Value {
    // Values an f32 holds exactly, and now and then the integer a JSON manifest would write.
    match rng.below(6) {
        0 => int(1),
        1 => int(-2),
        _ => Value::Float(f64::from(rng.pick(&[1.0f32, 0.5, -2.0, 0.1, 3.3]))),
    }
}

/// Random section lists: any length 0–4, values including negatives.
fn random_sections(rng: &mut Rng) -> Vec<i64> {
    let len = rng.pick(&[0, 1, 2, 3, 3, 3, 4]);
    (0..len).map(|_| rng.range(-2, 5)).collect()
}

/// A configuration every `when` condition of one variant (rank 3 or 4) holds for, apart from
/// the device (`f16Ok`, `pairDispatchOk`).
fn mrope_consistent(rng: &mut Rng, env: &mut RandomEnv) {
    let rank4 = rng.chance(50);
    let (b, s, n) = (
        rng.pick(&[1, 2, 3]),
        rng.pick(&[1, 2, 4, 5]),
        rng.pick(&[1, 2, 3, 4]),
    );
    let hs = rng.pick(&[2, 4, 6, 8, 10, 16, 3, 5, 7]);
    // An odd head size needs a smaller even rotary dim; an even one may rotate fully (0).
    let rot = if hs % 2 == 1 || rng.chance(40) {
        2 * rng.range(1, hs / 2)
    } else {
        0
    };
    let half = if rot == 0 { hs } else { rot } / 2;
    let heads = match (rank4, rot > 0) {
        (false, _) => n,
        (true, true) => rng.pick(&[n, 1, 7]),
        (true, false) => rng.pick(&[0, n, 2]),
    };
    let input = if rank4 {
        vec![b, n, s, hs]
    } else {
        vec![b, s, n * hs]
    };
    let cos = vec![rng.pick(&[1, 4, 16]), half];
    let t = rng.range(0, half);
    let h = rng.range(0, half - t);
    set_shape(env, "input", input.clone());
    set_shape(env, "output", input);
    set_shape(env, "position_ids", vec![3, b, s]);
    set_shape(env, "cos_cache", cos.clone());
    set_shape(env, "sin_cache", cos);
    let attrs = [
        ("interleaved", int(rng.range(0, 1))),
        ("mrope_layout", int(rng.range(0, 1))),
        ("is_packed_batching", int(i64::from(rng.chance(5)))),
        ("num_heads", int(heads)),
        ("rotary_embedding_dim", int(rot)),
        ("mrope_section", Value::List(vec![t, h, half - t - h])),
        ("scale", scale(rng)),
    ];
    env.attrs = attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
}

/// One change that keeps the environment in the typed domain.
fn mrope_perturb(rng: &mut Rng, env: &mut RandomEnv) {
    let role = rng.pick(&["input", "output", "position_ids", "cos_cache", "sin_cache"]);
    match rng.below(12) {
        0 | 1 => {
            let dims = nudge(rng, &shape(env, role));
            set_shape(env, role, dims);
        }
        2 => {
            // Another rank: a dim more or less.
            let mut dims = shape(env, role);
            if dims.is_empty() || rng.chance(50) {
                dims.push(rng.range(1, 4));
            } else {
                dims.pop();
            }
            set_shape(env, role, dims);
        }
        3 => {
            let dims = nudge(rng, &shape(env, "input"));
            set_shape(env, "output", dims);
        }
        4 => {
            env.attrs.insert("num_heads".into(), int(rng.range(-2, 6)));
        }
        5 => {
            env.attrs
                .insert("rotary_embedding_dim".into(), int(rng.range(-2, 10)));
        }
        6 => {
            env.attrs
                .insert("mrope_section".into(), Value::List(random_sections(rng)));
        }
        7 => {
            if let Some(Value::List(s)) = env.attrs.get_mut("mrope_section")
                && !s.is_empty()
            {
                let i = rng.below(s.len());
                s[i] += rng.pick(&[-1, 1]);
            }
        }
        8 => {
            let flag = rng.pick(&["interleaved", "mrope_layout", "is_packed_batching"]);
            env.attrs.insert(flag.into(), int(rng.range(0, 1)));
        }
        _ => {
            // Both caches change together, so that only the section sum or the rotary dim
            // contract breaks.
            let cos = nudge(rng, &shape(env, "cos_cache"));
            set_shape(env, "cos_cache", cos.clone());
            set_shape(env, "sin_cache", cos);
        }
    }
}

/// Any ranks (0–5), any small dims (sometimes huge ones), attributes over small ranges.
fn mrope_wild(rng: &mut Rng, env: &mut RandomEnv) {
    for role in ["input", "position_ids", "cos_cache", "sin_cache"] {
        let rank = rng.below(6);
        let dims = random_dims(rng, rank, true);
        set_shape(env, role, dims);
    }
    let output = if rng.chance(80) {
        shape(env, "input")
    } else {
        let rank = rng.below(6);
        random_dims(rng, rank, false)
    };
    set_shape(env, "output", output);
    let attrs = [
        ("interleaved", int(rng.range(0, 1))),
        ("mrope_layout", int(rng.range(0, 1))),
        ("is_packed_batching", int(rng.range(0, 1))),
        ("num_heads", int(rng.range(-2, 5))),
        ("rotary_embedding_dim", int(rng.range(-2, 9))),
        ("mrope_section", Value::List(random_sections(rng))),
        ("scale", scale(rng)),
    ];
    env.attrs = attrs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
}

/// One change the generated code's types cannot represent (flags other than 0/1, a missing
/// attribute, a negative dim, another dtype, an inexact f32 scale, another tunable value).
fn mrope_out_of_domain(rng: &mut Rng, env: &mut RandomEnv) {
    match rng.below(8) {
        0 | 1 => {
            let flag = rng.pick(&["interleaved", "mrope_layout", "is_packed_batching"]);
            env.attrs.insert(flag.into(), int(rng.pick(&[2, -1, 3])));
        }
        2 | 3 => {
            let name = rng.pick(&[
                "num_heads",
                "num_heads",
                "mrope_section",
                "mrope_section",
                "interleaved",
                "mrope_layout",
                "rotary_embedding_dim",
                "scale",
            ]);
            env.attrs.remove(name);
        }
        4 => {
            let role = rng.pick(&["input", "position_ids", "cos_cache", "sin_cache", "output"]);
            negate_a_dim(env, rng, role);
        }
        5 => {
            env.dtypes
                .insert("T".into(), rng.pick(&["u32", "i64"]).to_owned());
        }
        6 => {
            env.attrs.insert("scale".into(), Value::Float(0.1));
        }
        _ => {
            env.tunables
                .insert("WORKGROUP_SIZE".into(), rng.pick(&[1, 64]));
        }
    }
}

/// The divisors of `n` (just `[1]` for `n <= 1`).
fn divisors(n: i64) -> Vec<i64> {
    (1..=n.max(1)).filter(|d| n.max(1) % d == 0).collect()
}

/// A BiasSoftmax environment: long rows (≥ 65536 elements through one big dim), packed short
/// rows (≤ 8 elements, ≥ 64 rows), or anything; the bias mostly in a valid layout.
pub fn bias_softmax(rng: &mut Rng, tunables: &[(String, i64)]) -> RandomEnv {
    let mut env = RandomEnv::new(tunables);
    env.caps = random_caps(rng);
    let mode = rng.below(100);
    let (data, axis) = match mode {
        0..20 => {
            let rank = rng.range(1, 4);
            let axis = rng.range(0, rank - 1);
            let big = usize::try_from(rng.range(axis, rank - 1)).unwrap_or(0);
            let mut data: Vec<i64> = (0..rank).map(|_| rng.pick(&[1, 1, 2, 3])).collect();
            data[big] = rng.pick(&[65536, 65537, 131072, 70000]);
            (data, axis)
        }
        20..45 => {
            let rank = rng.range(2, 5);
            let axis = rng.range(1, rank - 1);
            let mut data: Vec<i64> = (0..rank).map(|_| 1).collect();
            let rows = rng.pick(&[64, 96, 128, 256, 63, 4096]);
            let split = rng.pick(&[1, 2, 4, 8]);
            let first = usize::try_from(rng.range(0, axis - 1)).unwrap_or(0);
            if rows % split == 0 && first + 1 < usize::try_from(axis).unwrap_or(0) {
                data[first] = rows / split;
                data[first + 1] = split;
            } else {
                data[first] = rows;
            }
            let last = rng.range(axis, rank - 1);
            data[usize::try_from(last).unwrap_or(0)] = rng.pick(&[1, 2, 3, 4, 5, 7, 8, 9]);
            (data, axis)
        }
        _ => {
            let rank = rng.range(0, 5);
            let huge = rng.chance(10);
            let mut data = random_dims(rng, usize::try_from(rank).unwrap_or(0), huge);
            // Now and then a negative dim, so that `numel(shapes.data) >= 0` can fail.
            if !data.is_empty() && rng.chance(4) {
                let i = rng.below(data.len());
                data[i] = -data[i] - 1;
            }
            (data, rng.range(-rank - 1, rank))
        }
    };
    let rank = i64::try_from(data.len()).unwrap_or(0);
    // The attribute: the normalized axis or its negative spelling; wild mode already chose.
    let axis_attr = if mode < 45 && rng.chance(40) {
        axis - rank
    } else {
        axis
    };
    let split = usize::try_from(axis.clamp(0, rank)).unwrap_or(0);
    let bias = bias_shape(rng, &data, split);
    let output = match rng.below(100) {
        0..88 => data.clone(),
        88..94 => data.iter().rev().copied().collect(),
        _ => nudge(rng, &data),
    };
    set_shape(&mut env, "data", data);
    set_shape(&mut env, "bias", bias);
    set_shape(&mut env, "output", output);
    if !rng.chance(3) {
        env.attrs.insert("axis".into(), int(axis_attr));
    }
    match rng.below(100) {
        0..3 => {}
        3..6 => {
            env.attrs.insert("is_inner_broadcast".into(), int(2));
        }
        _ => {
            env.attrs
                .insert("is_inner_broadcast".into(), int(rng.range(0, 1)));
        }
    }
    dtypes(rng, &mut env, &["T"]);
    env
}

/// A bias for `data` split into rows at `split`: mostly `g` groups of whole rows with `g`
/// dividing the row count, spelled in several shapes; sometimes broken.
fn bias_shape(rng: &mut Rng, data: &[i64], split: usize) -> Vec<i64> {
    let batch: i64 = data[..split]
        .iter()
        .fold(1i64, |acc, d| acc.saturating_mul(*d));
    let block: i64 = data[split..]
        .iter()
        .fold(1i64, |acc, d| acc.saturating_mul(*d));
    let small = batch <= 4096;
    let g = if small { rng.pick(&divisors(batch)) } else { 1 };
    let suffix = &data[split..];
    match rng.below(100) {
        0..40 => [&[g][..], suffix].concat(),
        40..55 => vec![g.saturating_mul(block)],
        55..65 => [&[1, g][..], suffix].concat(),
        65..72 => data.to_vec(),
        72..80 => {
            let mut bias = [&[g][..], suffix].concat();
            let i = rng.below(bias.len());
            bias[i] += 1;
            bias
        }
        80..88 => vec![g + 1, 1],
        _ => {
            let rank = rng.below(4);
            random_dims(rng, rank, false)
        }
    }
}
