//! Shadowing proved from the IR, not only seen in drawn calls: a variant whose `when` has
//! every conjunct of a variant ranked before it never runs, whatever the call and device.

use super::repair;
use crate::expr::{Ir, Span, Symbol};
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
    let mut conjuncts = Vec::new();
    for clause in &variant.when {
        repair::flatten_and(op, &clause.ir, &mut conjuncts);
    }
    let own_name =
        |name: &str| op.derived(name).is_none() || variant.constants.iter().any(|c| c.name == name);
    conjuncts
        .into_iter()
        .map(|c| {
            let local = c
                .symbols()
                .iter()
                .any(|s| matches!(s, Symbol::Derived(name) if own_name(name)));
            (!local).then(|| c.clone().respanned(Span::default()))
        })
        .collect()
}
