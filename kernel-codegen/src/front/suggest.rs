//! Keeps, of each hints entry an error suggests (`settle`: a starting set of values for a value
//! with no finite domain), the values with which the variant builds: for each value, a copy of
//! the op with the key bound to it is settled again and its passes' first renderings validated
//! by naga, so the entry an error prints makes the package generate when pasted.

use super::override_types;
use super::settle;
use crate::diag::{Diagnostics, Specialisation};
use crate::expr::Value;
use crate::model::{Op, StaticVar};
use crate::templates::TemplatePaths;

/// Narrows the suggestions of `op`'s diagnostics to the values that build; a suggestion left
/// with none is dropped (its error then says in words what an entry looks like).
pub fn try_suggestions(
    op: &Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
    diagnostics: &mut Diagnostics,
) {
    let op_name = format!("{}.{}", op.domain, op.name);
    let mut tried: Vec<(Specialisation, Vec<i64>)> = Vec::new();
    for diagnostic in &mut diagnostics.0 {
        let Some(suggestion) = &mut diagnostic.suggestion else {
            continue;
        };
        if suggestion.op != op_name {
            continue;
        }
        // One value's errors at several lines share the suggestion: try it once.
        let builds = match tried.iter().find(|(s, _)| s == &**suggestion) {
            Some((_, builds)) => builds.clone(),
            None => {
                let builds: Vec<i64> = suggestion
                    .values
                    .iter()
                    .copied()
                    .filter(|&value| builds_with(op, env, paths, suggestion, value))
                    .collect();
                tried.push(((**suggestion).clone(), builds.clone()));
                builds
            }
        };
        if builds.is_empty() {
            diagnostic.without_suggestion();
        } else {
            suggestion.values = builds;
        }
    }
}

/// Whether the suggestion's variant settles and validates with its key at `value`.
fn builds_with(
    op: &Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
    suggestion: &Specialisation,
    value: i64,
) -> bool {
    let Some(v) = op.variants.iter().position(|v| v.id == suggestion.variant) else {
        return false;
    };
    let mut trial = op.clone();
    let variant = &mut trial.variants[v];
    let bounded =
        (suggestion.key.strip_prefix("args.")).or_else(|| suggestion.key.strip_prefix("attrs."));
    match bounded {
        // As the hints do it: the arg or attribute is bounded (the hints add a `when` clause).
        Some(arg) => {
            variant
                .bounds
                .insert(StaticVar::Attr(arg.to_owned()), vec![Value::Int(value)]);
        }
        None => {
            variant
                .specialise
                .insert(suggestion.key.clone(), vec![Value::Int(value)]);
        }
    }
    (0..trial.variants[v].passes.len()).all(|p| {
        settle::settle_pass(&mut trial, env, paths, v, p).is_empty() && {
            override_types::settle_pass(&mut trial, env, v, p);
            matches!(
                override_types::failure(&trial, env, v, p),
                Some((_, Ok(())))
            )
        }
    })
}
