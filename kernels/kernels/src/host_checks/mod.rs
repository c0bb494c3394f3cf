//! Hand-written host-side contract checks that need tensor values, which manifest expressions
//! cannot see. Codegen wires `<module>::check` into an op when `<module>.rs` exists here.

pub mod mrotary_embedding;
