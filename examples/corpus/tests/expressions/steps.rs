//! Every expression of an op, in the order its dialect's runtime evaluates them, as the steps
//! the comparison walks: an expression to compare, and the moves between scopes (a variant,
//! its tunables merged in, a pass) that change what later expressions read by name.

use kernel_codegen::expr::ast::BinOp;
use kernel_codegen::expr::{Ir, IrKind};
use kernel_codegen::model::{Dispatch, Expr, Op, TemplateValue};

use super::compare::Package;
use super::scope::Level;

/// One expression to compare: the model's expression, the IR whose value is the source's
/// (see [`compared_ir`]), whether the model wants a whole number, the variant it is in (whose
/// constants it may read), and the named value it defines.
pub struct Case<'o> {
    pub expr: &'o Expr,
    pub ir: &'o Ir,
    pub whole: bool,
    pub variant: Option<usize>,
    pub defines: Option<(Level, &'o str)>,
}

/// The runtime's order of evaluation, as steps.
pub enum Step<'o> {
    EnterVariant,
    MergeTunables(usize),
    EnterPass,
    Eval(Case<'o>),
}

fn case<'o>(expr: &'o Expr, variant: Option<usize>, defines: Option<(Level, &'o str)>) -> Step<'o> {
    Step::Eval(Case {
        expr,
        ir: &expr.ir,
        whole: matches!(expr.ir.kind, IrKind::ToInt(_)),
        variant,
        defines,
    })
}

/// A Hub template value as a step: a list known per call is compared once, as the list its
/// axes come from; a value the template only compares with literals, as the value its classes
/// are taken of.
fn value_step<'o>(value: &'o TemplateValue, v: usize, level: Level) -> Option<Step<'o>> {
    let (ir, name) = match &value.axis_of {
        Some((list, 0)) => match &value.expr.ir.kind {
            IrKind::Call(_, args) => (args.first()?, list.as_str()),
            _ => return None,
        },
        Some(_) => return None,
        None => (compared_ir(&value.expr.ir), value.name.as_str()),
    };
    Some(Step::Eval(Case {
        expr: &value.expr,
        ir,
        whole: matches!(ir.kind, IrKind::ToInt(_)),
        variant: Some(v),
        defines: Some((level, name)),
    }))
}

/// The IR whose value the source has: a value settled by its classes
/// (`model::domains::by_classes`: `p0 - 1 if x < p0 else (p0 if x == p0 else …)`) computes
/// the representative of the class `x` is in, and `x` is the source's expression.
fn compared_ir(ir: &Ir) -> &Ir {
    let literal = |ir: &Ir| match ir.kind {
        IrKind::Int(v) => Some(v as f64),
        IrKind::Float(v) => Some(v),
        _ => None,
    };
    if let IrKind::Cond(test, below, rest) = &ir.kind
        && let IrKind::Binary(BinOp::Lt, x, first) = &test.kind
        && let (Some(p0), Some(rep)) = (literal(first), literal(below))
        && rep == p0 - 1.0
        && let IrKind::Cond(at, same, _) = &rest.kind
        && let IrKind::Binary(BinOp::Eq, y, point) = &at.kind
        && x == y
        && literal(point) == Some(p0)
        && literal(same) == Some(p0)
    {
        return x;
    }
    ir
}

pub fn dispatch_exprs(dispatch: &Dispatch) -> Vec<&Expr> {
    match dispatch {
        Dispatch::Grid { x, y, z } => [Some(x), y.as_ref(), z.as_ref()]
            .into_iter()
            .flatten()
            .collect(),
        Dispatch::Workgroups(n) => vec![n],
        Dispatch::Threads {
            threads,
            workgroup_size,
        }
        | Dispatch::GridStride {
            items: threads,
            workgroup_size,
        } => {
            vec![threads, workgroup_size]
        }
    }
}

/// Every expression of the package's op: output shapes and ranks, the `derive` entries (in the
/// manifest's order where the package has one: the model keeps them in dependency order, the
/// Hub's runtime in the file's), then per variant and pass what it evaluates.
///
/// A corpus variant has its constants, `when` clauses, intermediates, and per pass its inputs,
/// uniform fields and dispatch sizes; the Hub's runtime evaluates a variant's `when` first,
/// merges its tunables in, then its derives (which it defines), `demoteWhen` and
/// intermediates, and per pass the pass's derives (which it defines), uniform fields and
/// dispatch sizes.
pub fn steps(package: &Package) -> Vec<Step<'_>> {
    let op: &Op = &package.op;
    let hub = package.is_hub();
    let mut out = Vec::new();
    for tensor in op.tensors() {
        out.extend(
            tensor
                .shape
                .iter()
                .chain(&tensor.rank_expr)
                .map(|e| case(e, None, None)),
        );
    }
    let position = |name: &str| package.derive_order.iter().position(|n| n == name);
    let mut derives: Vec<_> = op.derives.iter().collect();
    derives.sort_by_key(|d| position(&d.name));
    out.extend(
        derives
            .into_iter()
            .map(|d| case(&d.expr, None, Some((Level::Manifest, d.name.as_str())))),
    );
    for (v, variant) in op.variants.iter().enumerate() {
        out.push(Step::EnterVariant);
        let at = |e| case(e, Some(v), None);
        if !hub {
            out.extend(
                variant
                    .constants
                    .iter()
                    .map(|c| case(&c.expr, Some(v), Some((Level::Variant, c.name.as_str())))),
            );
        }
        out.extend(variant.when.iter().map(at));
        if hub {
            out.push(Step::MergeTunables(v));
            out.extend((variant.constants.iter()).filter_map(|c| value_step(c, v, Level::Variant)));
        }
        out.extend(variant.demote_when.iter().map(at));
        out.extend(variant.intermediates.iter().map(|m| at(&m.shape)));
        for pass in &variant.passes {
            if hub {
                out.push(Step::EnterPass);
                out.extend((pass.inputs.iter()).filter_map(|i| value_step(i, v, Level::Pass)));
            } else {
                out.extend(pass.inputs.iter().map(|i| at(&i.expr)));
            }
            for binding in &pass.bindings {
                let fields = binding.params.iter().flat_map(|p| &p.fields);
                out.extend(fields.map(|f| at(&f.value)));
            }
            out.extend(dispatch_exprs(&pass.dispatch).into_iter().map(at));
        }
    }
    out
}
