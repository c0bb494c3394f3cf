//! The values of template values that name `derive` entries: a Hub variant's derive that reads
//! the manifest's is inlined by the model as the entry's name, and has the entry's values
//! where the entry's own expression has finitely many.

use super::{Pin, Unbounded, pin};
use crate::expr::ast::BinOp;
use crate::expr::{Ir, IrKind, Symbol, Type, Value};
use crate::model::Op;
use serde_json::json;

/// A copy op whose variant derives name manifest derives: with a finite set (`tileRows`),
/// through another derive (`doubled`), without one (`rowsOfA`), and a conditional between the
/// two (`mixed`).
fn op() -> Op {
    crate::copy_op::copy_op(
        json!({
            "tunables": { "WORKGROUP_SIZE": { "default": 64 } },
            "derive": {
                "count": "numel(shapes.c)",
                "tileRows": "128 if count >= 4096 else 64",
                "doubled": "tileRows",
                "rowsOfA": "dim(shapes.a, 0)"
            }
        }),
        json!({
            "when": ["count > 0"],
            "derive": {
                "rows": "tileRows",
                "again": "doubled",
                "free": "rowsOfA",
                "mixed": "tileRows if count > 2 else rowsOfA"
            }
        }),
    )
}

/// How the variant derive `name` can be enumerated.
fn pinned(op: &Op, name: &str) -> Result<Pin, Unbounded> {
    let variant = &op.variants[0];
    let value = (variant.constants.iter())
        .find(|value| value.name == name)
        .unwrap_or_else(|| panic!("no variant derive `{name}`"));
    pin(op, variant, value, None)
}

fn ints(values: &[i64]) -> Pin {
    Pin::Values(values.iter().map(|v| Value::Int(*v)).collect())
}

#[test]
fn a_derive_named_by_a_variant_derive_gives_its_values() {
    let op = op();
    assert_eq!(pinned(&op, "rows"), Ok(ints(&[128, 64])));
    // Through a chain of names, to the conditional at its end.
    assert_eq!(pinned(&op, "again"), Ok(ints(&[128, 64])));
}

#[test]
fn a_derive_without_finitely_many_values_gives_none() {
    let op = op();
    let names = |result: Result<Pin, Unbounded>| result.expect_err("unbounded").names;
    assert_eq!(names(pinned(&op, "free")), ["rowsOfA"]);
    // One branch has no finite set, so the conditional has none; `tileRows` has one, so it
    // is not among the names said to lack one.
    assert_eq!(names(pinned(&op, "mixed")), ["count", "rowsOfA"]);
}

#[test]
fn following_derives_ends_at_a_cycle() {
    // The front end reports a cycle among derives (`derive_cycle.test`); made here by hand,
    // `tileRows` reads `doubled`, which reads `tileRows`.
    let mut op = op();
    let at = |name: &str| op.derives.iter().position(|d| d.name == name).expect(name);
    let (tile_rows, doubled) = (at("tileRows"), at("doubled"));
    let span = op.derives[tile_rows].expr.ir.span;
    let node = |kind: IrKind, ty: Type| Ir { kind, ty, span };
    let rows_of_a = op.derives[at("rowsOfA")].expr.ir.clone();
    let test = node(
        IrKind::Binary(
            BinOp::Gt,
            Box::new(rows_of_a),
            Box::new(node(IrKind::Int(1), Type::Int)),
        ),
        Type::Bool,
    );
    let reads_doubled = node(
        IrKind::Sym(Symbol::Derived("doubled".to_owned())),
        Type::Int,
    );
    op.derives[tile_rows].expr.ir = node(
        IrKind::Cond(
            Box::new(test),
            Box::new(reads_doubled),
            Box::new(node(IrKind::Int(64), Type::Int)),
        ),
        Type::Int,
    );
    assert!(matches!(
        op.derives[doubled].expr.ir.kind,
        IrKind::Sym(Symbol::Derived(ref name)) if name == "tileRows"
    ));
    let unbounded = pinned(&op, "rows").expect_err("a cycle has no values");
    assert_eq!(unbounded.names, ["tileRows"]);
}
