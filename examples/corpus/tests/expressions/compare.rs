//! The driver: every expression of one op on many random environments, by the interpreter and
//! by minijinja, and (where the typed API holds the environment) the generated module's
//! output shapes, acceptance and plan against the interpreter's; what was compared is tallied
//! and what disagreed is kept with the environment that shows it.

use std::collections::BTreeMap;

use kernel_codegen::GeneratedShader;
use kernel_codegen::expr::builtins::Builtin;
use kernel_codegen::expr::{EvalError, Ir, IrKind, Value};
use kernel_codegen::model::{Dispatch, Expr, Op, Variant};
use kernel_runtime::OpError;

use super::env::{Interp, RandomEnv, Rng};
use super::generated::{self, Failed, Generated};
use super::jinja::{self, Verdict};
use super::plan;

/// Mutations tried per steered environment.
const STEERING: usize = 100;

/// A deliberate fault, for the self-check.
pub enum Fault {
    None,
    /// minijinja evaluates this source instead of the first dispatch size.
    Source(String),
    /// The interpreter's first dispatch size is off by one when compared with the plan.
    PlanValue,
    /// The shader expected of a plan's first pass is another of the pass's shaders.
    Kernel,
}

/// An op's model and the shaders the generator renders for it.
pub struct Package {
    pub op: Op,
    pub shaders: Vec<GeneratedShader>,
}

/// What one op's run compared.
#[derive(Default)]
pub struct Tally {
    pub envs: usize,
    /// Environments the generated module could be given.
    pub typed: usize,
    /// Comparisons with minijinja: equal values, both failed, not comparable.
    pub values: usize,
    pub both_failed: usize,
    pub loose: usize,
    pub disagreements: usize,
    /// Comparisons of the generated module with the interpreter, and how many plans.
    pub generated: usize,
    pub planned: BTreeMap<String, usize>,
    pub plan_mismatches: usize,
    /// Passes of selected plans whose shader was checked, and those that run another shader
    /// than the interpreter's static values select.
    pub kernels: usize,
    pub kernel_mismatches: usize,
    /// Per variant, how often the generated code selected it and its shaders were checked.
    pub selected: BTreeMap<String, usize>,
    /// Expressions (by JSON path) minijinja and the interpreter computed a value for.
    pub valued: BTreeMap<String, usize>,
    pub failures: Vec<String>,
}

impl Tally {
    pub fn fail(&mut self, message: String) {
        if self.failures.len() < 10 {
            self.failures.push(message);
        }
    }

    pub fn absorb(&mut self, other: &Tally) {
        self.envs += other.envs;
        self.typed += other.typed;
        self.values += other.values;
        self.both_failed += other.both_failed;
        self.loose += other.loose;
        self.disagreements += other.disagreements;
        self.generated += other.generated;
        self.plan_mismatches += other.plan_mismatches;
        self.kernels += other.kernels;
        self.kernel_mismatches += other.kernel_mismatches;
        for (k, v) in &other.planned {
            *self.planned.entry(k.clone()).or_default() += v;
        }
    }

    /// One line per op.
    pub fn summary(&self, op: &Op) -> String {
        format!(
            "{:<40} {:>6} envs ({:>5} typed): {:>8} values, {:>6} both failed, {:>5} loose, \
             {:>6} generated, {:>5} shaders; planned {:?}\n",
            op.qualified_name(),
            self.envs,
            self.typed,
            self.values,
            self.both_failed,
            self.loose,
            self.generated,
            self.kernels,
            self.planned
        )
    }

    pub fn totals(&self) -> String {
        format!(
            "total: {} envs ({} typed), {} comparisons with minijinja ({} of values, {} of two \
             failures, {} not comparable), {} of the generated code, {} plans, {} shaders \
             selected\n",
            self.envs,
            self.typed,
            self.values + self.both_failed + self.loose + self.disagreements,
            self.values,
            self.both_failed,
            self.loose,
            self.generated,
            self.planned.values().sum::<usize>(),
            self.kernels
        )
    }

    /// Everything that went wrong: disagreements, expressions never compared on a value, and
    /// variants never planned though the generated code can select them.
    pub fn problems(&self, op: &Op) -> Vec<String> {
        let mut out: Vec<String> = self
            .failures
            .iter()
            .map(|f| format!("{}: {f}", op.qualified_name()))
            .collect();
        if self.disagreements > self.failures.len() {
            out.push(format!(
                "{}: {} disagreements in all",
                op.qualified_name(),
                self.disagreements
            ));
        }
        for variant in &op.variants {
            if self.planned.contains_key(&variant.id) && !self.selected.contains_key(&variant.id) {
                out.push(format!(
                    "{}: variant `{}` was planned but never selected, so its shaders were not \
                     checked",
                    op.qualified_name(),
                    variant.id
                ));
            }
            if !self.planned.contains_key(&variant.id) {
                out.push(format!(
                    "{}: variant `{}` was never planned by the generated code",
                    op.qualified_name(),
                    variant.id
                ));
            }
        }
        for (path, expr) in cases(op).iter().map(|c| (&c.expr.path, c.expr)) {
            if !self.valued.contains_key(path) {
                out.push(format!(
                    "{}: `{path}` (`{}`) was never computed by both sides",
                    op.qualified_name(),
                    expr.source
                ));
            }
        }
        out
    }
}

/// Where an expression sits, which decides the constants it may read.
struct Case<'o> {
    expr: &'o Expr,
    variant: Option<usize>,
}

/// Every expression of `op`: output shapes, then per variant its constants (in order), `when`
/// clauses, intermediates, pass inputs, uniform fields and dispatch sizes.
fn cases(op: &Op) -> Vec<Case<'_>> {
    let mut out = Vec::new();
    for tensor in op.tensors() {
        out.extend(
            tensor
                .shape
                .iter()
                .chain(&tensor.rank_expr)
                .map(|expr| Case {
                    expr,
                    variant: None,
                }),
        );
    }
    out.extend(op.derives.iter().map(|d| Case {
        expr: &d.expr,
        variant: None,
    }));
    for (i, variant) in op.variants.iter().enumerate() {
        let mut exprs: Vec<&Expr> = variant.constants.iter().map(|c| &c.expr).collect();
        exprs.extend(&variant.when);
        exprs.extend(variant.intermediates.iter().map(|m| &m.shape));
        for pass in &variant.passes {
            exprs.extend(pass.inputs.iter().map(|v| &v.expr));
            for binding in &pass.bindings {
                exprs.extend(
                    binding
                        .params
                        .iter()
                        .flat_map(|p| p.fields.iter().map(|f| &f.value)),
                );
            }
            exprs.extend(dispatch_exprs(&pass.dispatch));
        }
        out.extend(exprs.into_iter().map(|expr| Case {
            expr,
            variant: Some(i),
        }));
    }
    out
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

/// Whether `ir` calls `dim`, `outer` or `inner` refusing negative axes (the seed dialect's),
/// so minijinja must call them so too.
fn strict_axes(ir: &Ir) -> bool {
    let mut strict = false;
    ir.walk(&mut |node| {
        strict |= matches!(
            node.kind,
            IrKind::Call(Builtin::Dim | Builtin::Outer | Builtin::Inner, _)
        );
    });
    strict
}

/// Runs `n` environments from `seed` through every expression of `op`.
pub fn run(package: &Package, seed: u64, n: usize, fault: &Fault) -> Tally {
    let op = &package.op;
    let wrapped = jinja::environment(true);
    let strict = jinja::environment(false);
    let cases = cases(op);
    let faulty = match fault {
        Fault::Source(_) => cases.iter().position(|c| c.expr.path.contains("dispatch")),
        _ => None,
    };
    let compiled: Vec<_> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let source = match fault {
                Fault::Source(s) if Some(i) == faulty => s.as_str(),
                _ => c.expr.source.as_str(),
            };
            let mj = if strict_axes(&c.expr.ir) {
                &strict
            } else {
                &wrapped
            };
            mj.compile_expression(source)
        })
        .collect();
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for k in 0..n {
        let target = k % op.variants.len().max(1);
        let mut env = RandomEnv::draw(op, target, &mut rng);
        // Most environments are steered into the target variant; the rest stay where they
        // fell, so rejections and failures are compared too.
        if let Some(variant) = op.variants.get(target).filter(|_| rng.chance(75)) {
            env.steer(op, variant, &mut rng, STEERING);
        }
        let outputs = env.compute_outputs(op);
        let ctx = jinja::context(op, &env);
        let interps: Vec<Interp<'_>> = op
            .variants
            .iter()
            .map(|v| Interp::new(op, &env, Some(v)))
            .collect();
        let top = Interp::new(op, &env, None);
        let mut variant_seen = None;
        for (case, compiled) in cases.iter().zip(&compiled) {
            let interp = case.variant.map_or(&top, |i| &interps[i]);
            if case.variant != variant_seen {
                ctx.clear_constants();
                variant_seen = case.variant;
            }
            // A variant's constant, or a `derive` entry: a name later expressions read.
            let named = match case.variant {
                Some(i) => op.variants[i]
                    .constants
                    .iter()
                    .find(|c| std::ptr::eq(&c.expr, case.expr))
                    .map(|c| c.name.as_str()),
                None => op
                    .derives
                    .iter()
                    .find(|d| std::ptr::eq(&d.expr, case.expr))
                    .map(|d| d.name.as_str()),
            };
            // A `derive` entry through the interpreter's memo (later expressions read it
            // there); a constant by its own expression, which a `derive` of the same name
            // would hide from `constant`.
            let ours = match named {
                Some(name) if case.variant.is_none() => interp.constant(name),
                _ => interp.eval(&case.expr.ir),
            };
            let theirs = match compiled {
                Ok(e) => jinja::eval(e, &ctx, matches!(case.expr.ir.kind, IrKind::ToInt(_))),
                Err(e) => Err(minijinja::Error::new(e.kind(), e.to_string())),
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
                    tally.fail(format!(
                        "`{}` = `{}`: interpreter {:?}, minijinja {:?}\n    {}",
                        case.expr.path,
                        case.expr.source,
                        ours.value,
                        theirs
                            .as_ref()
                            .map(ToString::to_string)
                            .map_err(ToString::to_string),
                        env.describe()
                    ));
                }
            }
            if let Some(name) = named {
                let trusted = verdict == Verdict::Agree && ours.value.is_ok();
                if case.variant.is_some() {
                    if !trusted {
                        interp.distrust(name);
                    }
                    if let Ok(v) = theirs {
                        ctx.define(name, v);
                    }
                } else {
                    // Every variant's interpreter reads a `derive` entry.
                    if !trusted {
                        for i in interps.iter().chain([&top]) {
                            i.distrust(name);
                        }
                    }
                    if let Ok(v) = theirs {
                        ctx.define_derived(name, v);
                    }
                }
            }
        }
        tally.envs += 1;
        if let Some(generated) = generated::run(&op.module, op, &env) {
            tally.typed += 1;
            check_generated(
                package, &env, &outputs, &interps, &generated, fault, &mut tally,
            );
        }
    }
    tally
}

/// The interpreter's acceptance of `variant`: the first clause that is not true.
fn acceptance(variant: &Variant, interp: &Interp<'_>) -> Result<(), Failed> {
    for clause in &variant.when {
        match interp.eval(&clause.ir).value {
            Ok(Value::Bool(true)) => {}
            Ok(_) => {
                return Err(Failed {
                    clause: clause.source.clone(),
                    error: None,
                });
            }
            Err(e) => {
                return Err(Failed {
                    clause: clause.source.clone(),
                    error: Some(e.message),
                });
            }
        }
    }
    Ok(())
}

/// A clause the generated code adds for the element types a pass has no shader for: the
/// model's `when` does not have it.
fn not_built(failed: &Failed) -> bool {
    failed.clause.contains("has shaders for")
}

fn check_generated(
    package: &Package,
    env: &RandomEnv,
    outputs: &[(usize, Result<Vec<i64>, EvalError>)],
    interps: &[Interp<'_>],
    generated: &Generated,
    fault: &Fault,
    tally: &mut Tally,
) {
    let op = &package.op;
    let failed_output = outputs.iter().find_map(|(_, r)| r.as_ref().err());
    tally.generated += 1;
    match (&generated.env, failed_output) {
        (Ok(()), None) => {}
        (Err(message), Some(e)) if message.contains(&e.message) => return,
        (ours, theirs) => {
            tally.fail(format!(
                "output shapes: generated {ours:?}, interpreter {theirs:?}\n    {}",
                env.describe()
            ));
            return;
        }
    }
    let mut selected = None;
    let mut not_built_ids = Vec::new();
    for (v, ((variant, interp), (id, theirs))) in op
        .variants
        .iter()
        .zip(interps)
        .zip(&generated.accepted)
        .enumerate()
    {
        tally.generated += 1;
        let ours = acceptance(variant, interp);
        match (&ours, theirs) {
            (Ok(()), Err(f)) if not_built(f) => not_built_ids.push(*id),
            (ours, theirs) if ours == theirs && variant.id == *id => {
                if ours.is_ok() {
                    selected = selected.or(Some(variant));
                    plan::check(package, v, interp, env, fault, &generated.plans[v], tally);
                }
            }
            (ours, theirs) => tally.fail(format!(
                "variant `{}`: interpreter {ours:?}, generated `{id}` {theirs:?}\n    {}",
                variant.id,
                env.describe()
            )),
        }
    }
    let chosen = match &generated.plan {
        Ok(plan) => Some(plan.variant),
        Err(OpError::Plan { variant, .. }) => Some(*variant),
        Err(OpError::NoVariant { .. }) => None,
        // `validate`: an attribute outside what the manifest allows.
        Err(OpError::Attribute { .. }) => return,
        Err(other) => {
            tally.fail(format!("plan: {other}\n    {}", env.describe()));
            return;
        }
    };
    if chosen != selected.map(|v| v.id.as_str()) {
        tally.fail(format!(
            "selection: interpreter {:?} (not built: {not_built_ids:?}), generated {chosen:?}\n    {}",
            selected.map(|v| &v.id),
            env.describe()
        ));
    } else if let (Ok(plan), Some(v)) = (
        &generated.plan,
        op.variants
            .iter()
            .position(|v| Some(v.id.as_str()) == chosen),
    ) {
        plan::check_kernels(package, v, &interps[v], env, fault, plan, tally);
    }
}
