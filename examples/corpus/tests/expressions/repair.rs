//! Steering by repair: a clause of a variant's `when` that is false is made true where it says
//! how (`kernel_codegen::check::repair`, which `kernels-codegen check` steers with too), so
//! tight contracts such as the seed packages'
//! `sameShape(shapes.rel_pos, [1, attrs.num_heads, seqLen, seqLen])` hold after a few steps,
//! which random changes alone rarely reach. `RandomEnv::steer` keeps a repair only when no
//! more clauses fail than before. A thorough profile's repairs (the Hub's) also meet an
//! ordering at its bound (MatMul's `dim(shapes.a, ranks.a - 2) >= 64`).

use kernel_codegen::check::repair::{Fix, fix_of};
use kernel_codegen::expr::{Ir, Value};
use kernel_codegen::model::{Op, Variant};

use super::env::{RandomEnv, Rng};
use super::interp::Interp;

impl RandomEnv {
    /// Makes one failing clause of `conjuncts` (the variant's `when`, flattened) true where
    /// it says how; whether anything changed.
    pub fn repair(&mut self, op: &Op, variant: &Variant, conjuncts: &[&Ir], rng: &mut Rng) -> bool {
        self.compute_outputs(op);
        let fixes: Vec<Fix> = {
            let interp = Interp::new(op, self, Some(variant));
            conjuncts
                .iter()
                .filter(|c| !matches!(interp.eval(c).value, Ok(Value::Bool(true))))
                .filter_map(|c| fix_of(op, c, &interp, self.profile.thorough_repair))
                .collect()
        };
        if fixes.is_empty() {
            return false;
        }
        fixes[rng.below(fixes.len())].apply(&mut self.shapes, &mut self.args, rng)
    }
}
