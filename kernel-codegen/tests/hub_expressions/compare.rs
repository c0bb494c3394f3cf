//! The driver: every expression of one Hub op on many random environments, by the interpreter
//! and by minijinja, in the order the Hub's runtime evaluates them; what was compared is
//! tallied and what disagreed is kept with the environment that shows it.

use std::collections::BTreeMap;

use kernel_codegen::expr::ast::BinOp;
use kernel_codegen::expr::{Ir, IrKind};
use kernel_codegen::model::{Dispatch, Expr, Op, TemplateValue};

use super::env::{Interp, RandomEnv, Rng};
use super::jinja::{self, Level, Verdict};

/// Mutations tried per steered environment.
const STEERING: usize = 60;

/// A deliberate fault, for the self-check.
pub enum Fault {
    None,
    /// minijinja evaluates this source instead of the first dispatch size.
    Source(String),
}

/// What one op's run compared.
#[derive(Default)]
pub struct Tally {
    pub envs: usize,
    /// Comparisons: equal values, both failed, not comparable, different.
    pub values: usize,
    pub both_failed: usize,
    pub loose: usize,
    pub disagreements: usize,
    /// Expressions (by JSON path) both sides computed a value for, and how often.
    pub valued: BTreeMap<String, usize>,
    pub failures: Vec<String>,
}

impl Tally {
    /// Keeps the first failure of each expression, up to ten.
    fn fail(&mut self, path: &str, message: String) {
        if self.failures.len() < 10
            && !self
                .failures
                .iter()
                .any(|f| f.starts_with(&format!("`{path}`")))
        {
            self.failures.push(message);
        }
    }

    pub fn absorb(&mut self, other: &Tally) {
        self.envs += other.envs;
        self.values += other.values;
        self.both_failed += other.both_failed;
        self.loose += other.loose;
        self.disagreements += other.disagreements;
    }

    /// One line per op.
    pub fn summary(&self, op: &Op) -> String {
        format!(
            "{:<20} {:>5} envs: {:>8} values, {:>7} both failed, {:>5} loose, {:>3} disagreements, \
             {} expressions valued\n",
            op.qualified_name(),
            self.envs,
            self.values,
            self.both_failed,
            self.loose,
            self.disagreements,
            self.valued.len(),
        )
    }

    /// Everything that went wrong: disagreements, and expressions never compared on a value.
    pub fn problems(&self, op: &Op) -> Vec<String> {
        let mut out: Vec<String> = (self.failures.iter())
            .map(|f| format!("{}: {f}", op.qualified_name()))
            .collect();
        if self.disagreements > self.failures.len() {
            out.push(format!(
                "{}: {} disagreements in all",
                op.qualified_name(),
                self.disagreements
            ));
        }
        for step in steps(op, &[]) {
            if let Step::Eval(case) = step
                && !self.valued.contains_key(&case.expr.path)
            {
                out.push(format!(
                    "{}: `{}` (`{}`) was never computed by both sides",
                    op.qualified_name(),
                    case.expr.path,
                    case.expr.source
                ));
            }
        }
        out
    }
}

/// One expression to compare: the model's expression, the IR whose value is the source's
/// (see [`compared_ir`]), whether the model wants a whole number, and the derive it defines.
pub struct Case<'o> {
    pub expr: &'o Expr,
    ir: &'o Ir,
    whole: bool,
    defines: Option<(Level, &'o str)>,
}

/// The runtime's order of evaluation, as steps.
pub enum Step<'o> {
    EnterVariant,
    MergeTunables(usize),
    EnterPass,
    Eval(Case<'o>),
}

fn case<'o>(expr: &'o Expr, defines: Option<(Level, &'o str)>) -> Step<'o> {
    Step::Eval(Case {
        expr,
        ir: &expr.ir,
        whole: matches!(expr.ir.kind, IrKind::ToInt(_)),
        defines,
    })
}

/// A template value as a step: a list known per call is compared once, as the list its axes
/// come from; a value the template only compares with literals, as the value its classes
/// are taken of.
fn value_step<'o>(value: &'o TemplateValue, level: Level) -> Option<Step<'o>> {
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

fn dispatch_exprs(dispatch: &Dispatch) -> Vec<&Expr> {
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
        } => vec![threads, workgroup_size],
    }
}

/// Every expression of `op` in the runtime's order: output shapes and ranks, the manifest's
/// derives in `manifest_order` (the file's; the model keeps them in dependency order), then
/// per variant its `when`, its tunables merged in, its derives, `demoteWhen`, intermediates,
/// and per pass the pass's derives, uniform fields and dispatch sizes.
pub fn steps<'o>(op: &'o Op, manifest_order: &[String]) -> Vec<Step<'o>> {
    let mut out = Vec::new();
    for tensor in op.tensors() {
        out.extend(
            tensor
                .shape
                .iter()
                .chain(&tensor.rank_expr)
                .map(|e| case(e, None)),
        );
    }
    let position = |name: &str| manifest_order.iter().position(|n| n == name);
    let mut derives: Vec<_> = op.derives.iter().collect();
    derives.sort_by_key(|d| position(&d.name));
    out.extend(
        derives
            .into_iter()
            .map(|d| case(&d.expr, Some((Level::Manifest, d.name.as_str())))),
    );
    for (v, variant) in op.variants.iter().enumerate() {
        out.push(Step::EnterVariant);
        out.extend(variant.when.iter().map(|e| case(e, None)));
        out.push(Step::MergeTunables(v));
        out.extend((variant.constants.iter()).filter_map(|c| value_step(c, Level::Variant)));
        out.extend(variant.demote_when.iter().map(|e| case(e, None)));
        out.extend(variant.intermediates.iter().map(|m| case(&m.shape, None)));
        for pass in &variant.passes {
            out.push(Step::EnterPass);
            out.extend(
                pass.inputs
                    .iter()
                    .filter_map(|i| value_step(i, Level::Pass)),
            );
            for binding in &pass.bindings {
                let fields = binding.params.iter().flat_map(|p| &p.fields);
                out.extend(fields.map(|f| case(&f.value, None)));
            }
            out.extend(
                dispatch_exprs(&pass.dispatch)
                    .into_iter()
                    .map(|e| case(e, None)),
            );
        }
    }
    out
}

/// Runs `n` environments from `seed` through every expression of `op`.
pub fn run(op: &Op, manifest_order: &[String], seed: u64, n: usize, fault: &Fault) -> Tally {
    let mj = jinja::environment();
    let steps = steps(op, manifest_order);
    let faulty = steps.iter().position(|s| match s {
        Step::Eval(c) => matches!(fault, Fault::Source(_)) && c.expr.path.contains("dispatch"),
        _ => false,
    });
    let compiled: Vec<_> = (steps.iter().enumerate())
        .map(|(i, step)| match (step, fault) {
            (Step::Eval(_), Fault::Source(wrong)) if Some(i) == faulty => {
                Some(mj.compile_expression(wrong.as_str()))
            }
            (Step::Eval(c), _) => Some(mj.compile_expression(c.expr.source.as_str())),
            _ => None,
        })
        .collect();
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for k in 0..n {
        let target = k % op.variants.len().max(1);
        let mut env = RandomEnv::draw(op, target, &mut rng);
        // Most environments are steered into the target variant; the rest stay where they
        // fell, so rejections and failures are compared too.
        if let Some(variant) = op.variants.get(target).filter(|_| rng.chance(80)) {
            env.steer(op, variant, &mut rng, STEERING);
        }
        env.compute_outputs(op);
        let ctx = jinja::context(op, &env);
        let interp = Interp::new(op, &env);
        for (step, compiled) in steps.iter().zip(&compiled) {
            let case = match step {
                Step::EnterVariant => {
                    ctx.enter_variant(op);
                    continue;
                }
                Step::MergeTunables(v) => {
                    ctx.merge_tunables(op, &op.variants[*v].tunables);
                    continue;
                }
                Step::EnterPass => {
                    ctx.enter_pass();
                    continue;
                }
                Step::Eval(case) => case,
            };
            // A manifest derive through the interpreter's memo, which later expressions
            // read; anything else by its own expression (the model inlines the variant's
            // and the pass's derives into what reads them).
            let ours = match case.defines {
                Some((Level::Manifest, name)) => interp.derived(name),
                _ => interp.eval(case.ir),
            };
            let theirs = match compiled {
                Some(Ok(e)) => jinja::eval(e, &ctx, case.whole),
                Some(Err(e)) => Err(minijinja::Error::new(e.kind(), e.to_string())),
                None => continue,
            };
            let verdict = jinja::compare(&ours, &theirs);
            match (verdict, &ours.value) {
                (Verdict::Agree, Ok(_)) => {
                    tally.values += 1;
                    *tally.valued.entry(case.expr.path.clone()).or_default() += 1;
                }
                (Verdict::Agree, Err(_)) => tally.both_failed += 1,
                (Verdict::Loose, _) => tally.loose += 1,
                (Verdict::Disagree, _) => {
                    tally.disagreements += 1;
                    tally.fail(
                        &case.expr.path,
                        format!(
                            "`{}` = `{}`: interpreter {:?}, minijinja {:?}\n    {}",
                            case.expr.path,
                            case.expr.source,
                            ours.value,
                            theirs
                                .as_ref()
                                .map(ToString::to_string)
                                .map_err(ToString::to_string),
                            env.describe()
                        ),
                    );
                }
            }
            if let Some((level, name)) = case.defines {
                if level == Level::Manifest && !(verdict == Verdict::Agree && ours.value.is_ok()) {
                    interp.distrust(name);
                }
                if let Ok(v) = theirs {
                    ctx.define(level, name, v);
                }
            }
        }
        tally.envs += 1;
    }
    tally
}
