//! The untyped registry over every corpus op: an op it cannot serve (a tensor written in
//! place, an optional one, an output the caller provides) is refused with the role that needs
//! the typed API and why; the others get as far as checking their inputs.

#![cfg(corpus)]
// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use corpus::kernels::OPS;
use corpus::runtime::OpError;

#[test]
fn every_op_refused_by_the_untyped_entry_says_which_tensor_and_why() {
    let ctx = corpus::context();
    let mut refused = 0;
    for entry in OPS {
        // A served op stops at its attributes or at the inputs it was not given.
        let error = entry.plan(&ctx, &[], &[]).unwrap_err();
        let OpError::Input { input, rule, .. } = &error else {
            continue;
        };
        if !rule.contains("untyped entry") {
            continue;
        }
        refused += 1;
        let role = entry
            .inputs
            .iter()
            .chain(entry.outputs)
            .any(|r| r.role == input);
        let type_var = rule.contains("type variable");
        assert!(role || type_var, "{}: `{input}`: {rule}", entry.name);
        assert!(
            rule.starts_with(&format!("`{input}` ")),
            "{}: {rule}",
            entry.name
        );
    }
    assert!(refused > 0);
}
