//! The generated Rust as the third evaluator: each op's random environment mapped into the
//! generated code's typed `Env` (or `None` outside its typed domain), and every derived value
//! and variant acceptance read through the name-keyed entry points (`DERIVED_NAMES`,
//! `derived_value`, `VARIANT_IDS`, `VARIANTS`).
//!
//! The typed domain of every op: the manifest's tunables (the generated code has them inlined),
//! every attribute given with a value its Rust type represents, input dims non-negative (they
//! come from `usize`), and `T` a float type.

use codegen::expr::Value;
use kernel_runtime::support::{ExprValue, Failure};
use kernel_runtime::{DType, EvalError as RtError};
use kernels::bias_softmax as bias;
use kernels::gated_relative_position_bias as gated;
use kernels::mrotary_embedding as mrope;

use super::harness::Generated;
use super::random_env::RandomEnv;

/// Every derived value and variant acceptance of one op's generated code, by name.
fn collect(
    names: &[&str],
    ids: &[&str],
    derived: impl Fn(&str) -> Option<Result<ExprValue, RtError>>,
    accepts: impl Fn(&str) -> Option<Result<(), Failure>>,
) -> Generated {
    let derived = names
        .iter()
        .map(|name| {
            let value =
                derived(name).unwrap_or_else(|| Err(RtError::new("derived_value: unknown name")));
            ((*name).to_owned(), value)
        })
        .collect();
    let accepted = ids
        .iter()
        .map(|id| {
            let result = match accepts(id) {
                Some(Ok(())) => Ok(()),
                Some(Err(f)) => Err(f.error.map(|e| e.message)),
                None => Err(Some("accepts: unknown variant".to_owned())),
            };
            ((*id).to_owned(), result)
        })
        .collect();
    Generated { derived, accepted }
}

/// Whether `env` has exactly the manifest's tunables and `count` attributes.
fn plain(env: &RandomEnv, tunables: &[(String, i64)], count: usize) -> bool {
    env.tunables.len() == tunables.len()
        && tunables.iter().all(|(k, v)| env.tunables.get(k) == Some(v))
        && env.attrs.len() == count
}

/// The shape of an input `role`, if it is given and has no negative dim.
fn dims(env: &RandomEnv, role: &str) -> Option<Vec<i64>> {
    env.shapes
        .get(role)
        .filter(|s| s.iter().all(|d| *d >= 0))
        .cloned()
}

/// `T` as a float `DType`.
fn float_t(env: &RandomEnv) -> Option<DType> {
    match env.dtypes.get("T").map(String::as_str) {
        Some("f32") => Some(DType::F32),
        Some("f16") => Some(DType::F16),
        _ => None,
    }
}

fn int_attr(env: &RandomEnv, name: &str) -> Option<i64> {
    match env.attrs.get(name) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

/// The generated MRotaryEmbedding `Env` inputs for `env`: its flags must be 0 or 1, and its
/// scale an exact f32.
fn mrope_typed(
    env: &RandomEnv,
    tunables: &[(String, i64)],
) -> Option<(mrope::EnvShapes, mrope::DTypes, mrope::Attrs)> {
    if !plain(env, tunables, mrope::ENTRY.attributes.len()) {
        return None;
    }
    let shapes = mrope::EnvShapes {
        input: dims(env, "input")?,
        position_ids: dims(env, "position_ids")?,
        cos_cache: dims(env, "cos_cache")?,
        sin_cache: dims(env, "sin_cache")?,
        output: dims(env, "output")?,
    };
    let flag = |name: &str| match int_attr(env, name) {
        Some(0) => Some(false),
        Some(1) => Some(true),
        _ => None,
    };
    let scale = match env.attrs.get("scale")? {
        Value::Float(f) if f64::from(*f as f32) == *f => *f as f32,
        Value::Int(i) if (*i as f32) as i64 == *i => *i as f32,
        _ => return None,
    };
    let Value::List(section) = env.attrs.get("mrope_section")? else {
        return None;
    };
    let attrs = mrope::Attrs {
        interleaved: flag("interleaved")?,
        is_packed_batching: flag("is_packed_batching")?,
        mrope_layout: flag("mrope_layout")?,
        mrope_section: section.clone(),
        num_heads: int_attr(env, "num_heads")?,
        rotary_embedding_dim: int_attr(env, "rotary_embedding_dim")?,
        scale,
    };
    Some((shapes, mrope::DTypes { t: float_t(env)? }, attrs))
}

/// Every derived value and variant acceptance of the generated MRotaryEmbedding code.
pub fn mrope_generated(env: &RandomEnv, tunables: &[(String, i64)]) -> Option<Generated> {
    let (shapes, dtypes, attrs) = mrope_typed(env, tunables)?;
    let genv = mrope::Env {
        shapes,
        dtypes,
        attrs: &attrs,
        caps: &env.caps,
    };
    Some(collect(
        mrope::DERIVED_NAMES,
        mrope::VARIANT_IDS,
        |name| mrope::derived_value(name, &genv),
        |id| kernel_runtime::when::accepts(&mrope::VARIANTS, id, &genv),
    ))
}

/// The generated BiasSoftmax `Env` inputs for `env`. `is_inner_broadcast` is a `bool` in the
/// typed API and the manifest only ever tests `attrs.is_inner_broadcast != 0`, so any integer
/// maps to `!= 0` (the interpreter and minijinja see the integer).
fn bias_typed(
    env: &RandomEnv,
    tunables: &[(String, i64)],
) -> Option<(bias::EnvShapes, bias::DTypes, bias::Attrs)> {
    if !plain(env, tunables, bias::ENTRY.attributes.len()) {
        return None;
    }
    let shapes = bias::EnvShapes {
        data: dims(env, "data")?,
        bias: dims(env, "bias")?,
        output: dims(env, "output")?,
    };
    let attrs = bias::Attrs {
        axis: int_attr(env, "axis")?,
        is_inner_broadcast: int_attr(env, "is_inner_broadcast")? != 0,
    };
    Some((shapes, bias::DTypes { t: float_t(env)? }, attrs))
}

/// Every derived value and variant acceptance of the generated BiasSoftmax code.
pub fn bias_generated(env: &RandomEnv, tunables: &[(String, i64)]) -> Option<Generated> {
    let (shapes, dtypes, attrs) = bias_typed(env, tunables)?;
    let genv = bias::Env {
        shapes,
        dtypes,
        attrs: &attrs,
        caps: &env.caps,
    };
    Some(collect(
        bias::DERIVED_NAMES,
        bias::VARIANT_IDS,
        |name| bias::derived_value(name, &genv),
        |id| kernel_runtime::when::accepts(&bias::VARIANTS, id, &genv),
    ))
}

/// The generated GatedRelativePositionBias `Env` inputs for `env`. The output shape is an
/// expression of the inputs (`[batch, num_heads, seq, seq]`, so it may hold a negative
/// `num_heads`); no expression the test compares reads it, and an environment without one
/// gets an empty shape.
fn gated_typed(
    env: &RandomEnv,
    tunables: &[(String, i64)],
) -> Option<(gated::EnvShapes, gated::DTypes, gated::Attrs)> {
    if !plain(env, tunables, gated::ENTRY.attributes.len()) {
        return None;
    }
    let shapes = gated::EnvShapes {
        query_layer: dims(env, "query_layer")?,
        query_bias: dims(env, "query_bias")?,
        rel_pos: dims(env, "rel_pos")?,
        weight: dims(env, "weight")?,
        bias: dims(env, "bias")?,
        eco_a: dims(env, "eco_a")?,
        output: env.shapes.get("output").cloned().unwrap_or_default(),
    };
    let attrs = gated::Attrs {
        num_heads: int_attr(env, "num_heads")?,
    };
    Some((shapes, gated::DTypes { t: float_t(env)? }, attrs))
}

/// Every derived value and variant acceptance of the generated GatedRelativePositionBias code.
pub fn gated_generated(env: &RandomEnv, tunables: &[(String, i64)]) -> Option<Generated> {
    let (shapes, dtypes, attrs) = gated_typed(env, tunables)?;
    let genv = gated::Env {
        shapes,
        dtypes,
        attrs: &attrs,
        caps: &env.caps,
    };
    Some(collect(
        gated::DERIVED_NAMES,
        gated::VARIANT_IDS,
        |name| gated::derived_value(name, &genv),
        |id| kernel_runtime::when::accepts(&gated::VARIANTS, id, &genv),
    ))
}
