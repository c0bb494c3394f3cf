//! Variants that can never run, proved from the IR rather than only seen in drawn calls: one
//! whose `when` has every conjunct of a variant ranked before it, and one a condition on
//! tunables and device limits alone rules out on every device.

use super::contract::without_spans;
use super::eval::CallEnv;
use super::repair;
use crate::expr::{Ir, IrKind, Symbol};
use crate::model::{Op, Variant};

/// For each variant another one shadows by structure: (shadowed, the variant that runs
/// instead). The earlier variant must not be demoted or superseded (then the later one may
/// run after all), and every conjunct it has must mean the same in both variants: a name a
/// variant defines for itself may differ between them, so a conjunct that reads one proves
/// nothing.
pub(super) fn proved(op: &Op, order: &[usize]) -> Vec<(usize, usize)> {
    let conjuncts: Vec<Vec<Option<Ir>>> = op
        .variants
        .iter()
        .map(|variant| comparable_conjuncts(op, variant))
        .collect();
    let mut found = Vec::new();
    for (rank, &later) in order.iter().enumerate() {
        let own = &conjuncts[later];
        let earlier = order[..rank].iter().copied().find(|&earlier| {
            let variant = &op.variants[earlier];
            variant.demote_when.is_empty()
                && variant.superseded_by.is_empty()
                && conjuncts[earlier]
                    .iter()
                    .all(|c| c.is_some() && own.contains(c))
        });
        if let Some(earlier) = earlier {
            found.push((later, earlier));
        }
    }
    found
}

/// The variant's conjuncts without spans; `None` for one that reads a name the variant
/// defines itself.
fn comparable_conjuncts(op: &Op, variant: &Variant) -> Vec<Option<Ir>> {
    let own_name =
        |name: &str| op.derived(name).is_none() || variant.constants.iter().any(|c| c.name == name);
    repair::when_conjuncts(op, variant)
        .into_iter()
        .map(|(c, _)| {
            let local = c
                .symbols()
                .iter()
                .any(|s| matches!(s, Symbol::Derived(name) if own_name(name)));
            (!local).then(|| without_spans(c))
        })
        .collect()
}

/// For a variant no call reached: a conjunct that reads no part of a call (only tunables,
/// device limits and features, and `derive` entries made of them) and fails on every device,
/// with the tunables it reads: the tunables' values keep the variant from ever running.
pub(super) fn blocked_by_tunables(
    op: &Op,
    v: usize,
    envs: &[CallEnv<'_>],
) -> Option<(String, Vec<String>)> {
    let variant = &op.variants[v];
    repair::when_conjuncts(op, variant)
        .into_iter()
        .find_map(|(c, source)| {
            let mut tunables = Vec::new();
            if !call_free(op, variant, c, source, &mut tunables) || tunables.is_empty() {
                return None;
            }
            let fails = envs.iter().all(|env| {
                matches!(
                    env.within(variant, false).eval(c),
                    Ok(crate::expr::Value::Bool(false))
                )
            });
            let text = source.get(c.span.start..c.span.end).unwrap_or(source);
            fails.then(|| (text.to_owned(), tunables))
        })
}

/// Whether `ir` (of `source`) reads nothing of a call, collecting the tunables it reads. The
/// front end writes a tunable as its value, spanning the reference (`tunables.TILE`).
fn call_free(
    op: &Op,
    variant: &Variant,
    ir: &Ir,
    source: &str,
    tunables: &mut Vec<String>,
) -> bool {
    let mut free = true;
    ir.walk(&mut |node| match &node.kind {
        IrKind::Int(_) | IrKind::Float(_) => {
            let text = source.get(node.span.start..node.span.end).unwrap_or("");
            if let Some(name) = text.strip_prefix("tunables.")
                && !tunables.iter().any(|t| t == name)
            {
                tunables.push(name.to_owned());
            }
        }
        IrKind::Sym(Symbol::Limit(_) | Symbol::AdapterInfo(_)) => {}
        IrKind::Sym(Symbol::Derived(name))
            if !variant.constants.iter().any(|c| c.name == *name) =>
        {
            free &= op
                .derived(name)
                .is_some_and(|d| call_free(op, variant, &d.expr.ir, &d.expr.source, tunables));
        }
        IrKind::Sym(_) | IrKind::IsDefined(..) => free = false,
        _ => {}
    });
    free
}
