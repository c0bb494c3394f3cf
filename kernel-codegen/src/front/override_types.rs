//! Settles the WGSL type of each `schemaVersion: 1` run-time value's override from the shader's
//! uses. The engine those packages come from computes in doubles and prints an integral double
//! without a fraction, so `{{ HALF }}` with `HALF = args.cols / 2` is an integer literal where
//! the value is whole: it may size a workgroup array, bound an `i32` loop counter or set a
//! `u32`. An override has one concrete type, so a value starts as its expression's type (`f32`
//! for a Float, `u32` otherwise) and moves on (`f32` → `u32` → `i32`) while naga blames one of
//! its uses. A Float that becomes an integer is checked at run time to be a whole number in the
//! type's range (`ToInt`, then the runtime's range check), and rejected by name when not.

use std::collections::BTreeSet;
use std::ops::Range;

use naga::valid::{ValidationFlags, Validator};

use crate::expr::Type;
use crate::expr::to_int;
use crate::model::{self, Class, Op, OverrideType, TemplateValue};
use crate::templates::pass::{Rendered, TextFor, render_pass};
use crate::templates::prelude;

/// Retypes the overrides of every pass of `op` whose first rendering naga blames on one.
pub fn settle_override_types(op: &mut Op, env: &minijinja::Environment<'static>) {
    for v in 0..op.variants.len() {
        for p in 0..op.variants[v].passes.len() {
            settle_pass(op, env, v, p);
        }
    }
}

/// Retypes the overrides of pass `p` of variant `v` while naga blames one of them.
pub fn settle_pass(op: &mut Op, env: &minijinja::Environment<'static>, v: usize, p: usize) {
    if !op.templates.values_print_as_literals {
        return;
    }
    let names: Vec<String> = model::dynamic_values(&op.variants[v], &op.variants[v].passes[p])
        .map(|value| value.name.clone())
        .collect();
    if names.is_empty() {
        return;
    }
    let Some((mut text, Err(first))) = failure(op, env, v, p) else {
        return;
    };
    let before: Vec<TemplateValue> = names
        .iter()
        .filter_map(|name| value_mut(op, v, p, name).map(|value| value.clone()))
        .collect();
    let mut blamed = first.clone();
    // Each value moves at most twice.
    for _ in 0..2 * names.len() {
        let Some(range) = blamed.clone() else { break };
        let Some(name) = names_in(op, &names, &text, &range)
            .into_iter()
            .find(|name| value_mut(op, v, p, name).is_some_and(|value| next(value).is_some()))
        else {
            break;
        };
        if let Some(value) = value_mut(op, v, p, &name) {
            *value = next(value).unwrap_or_else(|| value.clone());
        }
        match failure(op, env, v, p) {
            Some((rendered, Err(at))) => (text, blamed) = (rendered, at),
            _ => return,
        }
    }
    // Still failing where it first did: the types were not the problem; the shader's own
    // report is clearer with the values as they were.
    if blamed == first {
        for original in before {
            if let Some(value) = value_mut(op, v, p, &original.name) {
                *value = original;
            }
        }
    }
}

/// The value with its override one step further, if it has one.
fn next(value: &TemplateValue) -> Option<TemplateValue> {
    let mut next = value.clone();
    match value.override_type {
        OverrideType::F32 => {
            next.expr.ir = to_int(value.expr.ir.clone());
            next.override_type = OverrideType::U32;
        }
        OverrideType::U32 if value.expr.ir.ty == Type::Int => {
            next.override_type = OverrideType::I32;
        }
        _ => return None,
    }
    Some(next)
}

/// The dynamic value `name` of pass `p` (a pass input, or a constant of its variant).
fn value_mut<'a>(op: &'a mut Op, v: usize, p: usize, name: &str) -> Option<&'a mut TemplateValue> {
    let variant = &mut op.variants[v];
    variant.passes[p]
        .inputs
        .iter_mut()
        .chain(variant.constants.iter_mut())
        .find(|value| value.name == name && value.class == Class::Dynamic)
}

/// Which of `names` the rendered text in `range` reads, by their override names.
fn names_in(op: &Op, names: &[String], text: &str, range: &Range<usize>) -> Vec<String> {
    let Some(blamed) = text.get(range.clone()) else {
        return Vec::new();
    };
    let words: BTreeSet<&str> = blamed
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    names
        .iter()
        .filter(|name| words.contains(op.override_name(name).as_str()))
        .cloned()
        .collect()
}

/// Whether a shader validates; when not, the narrowest byte range naga blames, if any.
type Validity = Result<(), Option<Range<usize>>>;

/// The pass's first combination rendered, whether it is a valid shader, and where naga blames
/// it when not; `None` when it does not render (reported when the shaders are made).
pub fn failure(
    op: &Op,
    env: &minijinja::Environment<'static>,
    v: usize,
    p: usize,
) -> Option<(String, Validity)> {
    let variant = &op.variants[v];
    let pass = &variant.passes[p];
    let combinations = model::enumerate_combinations(op, variant, pass).ok()?;
    let combination = combinations.first()?;
    let bindings = prelude::resolve_bindings(pass, combination).ok()?;
    let Rendered { text, f16, .. } =
        render_pass(op, env, v, p, combination, &bindings, TextFor::Browser).ok()?;
    let result = first_failure(&text, f16, &combination.features);
    Some((text, result))
}

/// Whether `source` parses and validates; when not, the narrowest byte range naga's first
/// report points at, where it points at one.
fn first_failure(source: &str, f16: bool, features: &BTreeSet<String>) -> Validity {
    let narrowest = |spans: &mut dyn Iterator<Item = naga::Span>| {
        spans
            .filter_map(naga::Span::to_range)
            .min_by_key(|range| range.len())
    };
    let module = naga::front::wgsl::parse_str(source)
        .map_err(|e| narrowest(&mut e.labels().map(|(span, _)| span)))?;
    Validator::new(ValidationFlags::all(), prelude::capabilities(f16, features))
        .validate(&module)
        .map(drop)
        .map_err(|e| narrowest(&mut e.spans().map(|(span, _)| *span)))
}
