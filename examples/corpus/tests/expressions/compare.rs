//! The driver: every expression of one op on many random environments, by the interpreter and
//! by minijinja, and (where the typed API holds the environment) the generated module's
//! output shapes, acceptance and plan against the interpreter's; what was compared is tallied
//! and what disagreed is kept with the environment that shows it.

use std::collections::BTreeMap;

use codegen::expr::builtins::Builtin;
use codegen::expr::{EvalError, Ir, IrKind, Value};
use codegen::model::{Dispatch, Expr, Op, Variant};
use kernel_runtime::OpError;

use super::env::{Interp, RandomEnv, Rng, Traced};
use super::generated::{self, Failed, Generated};
use super::jinja::{self, Verdict};

/// Mutations tried per steered environment.
const STEERING: usize = 100;

/// A deliberate fault, for the self-check.
pub enum Fault {
    None,
    /// minijinja evaluates this source instead of the first dispatch size.
    Source(String),
    /// The interpreter's first dispatch size is off by one when compared with the plan.
    PlanValue,
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
    /// Expressions (by JSON path) minijinja and the interpreter computed a value for.
    pub valued: BTreeMap<String, usize>,
    pub failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, message: String) {
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
        for (k, v) in &other.planned {
            *self.planned.entry(k.clone()).or_default() += v;
        }
    }

    /// One line per op.
    pub fn summary(&self, op: &Op) -> String {
        format!(
            "{:<40} {:>6} envs ({:>5} typed): {:>8} values, {:>6} both failed, {:>5} loose, \
             {:>6} generated; planned {:?}\n",
            op.qualified_name(),
            self.envs,
            self.typed,
            self.values,
            self.both_failed,
            self.loose,
            self.generated,
            self.planned
        )
    }

    pub fn totals(&self) -> String {
        format!(
            "total: {} envs ({} typed), {} comparisons with minijinja ({} of values, {} of two \
             failures, {} not comparable), {} of the generated code, {} plans\n",
            self.envs,
            self.typed,
            self.values + self.both_failed + self.loose + self.disagreements,
            self.values,
            self.both_failed,
            self.loose,
            self.generated,
            self.planned.values().sum::<usize>()
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
pub fn run(op: &Op, seed: u64, n: usize, fault: &Fault) -> Tally {
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
            check_generated(op, &env, &outputs, &interps, &generated, fault, &mut tally);
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
    op: &Op,
    env: &RandomEnv,
    outputs: &[(usize, Result<Vec<i64>, EvalError>)],
    interps: &[Interp<'_>],
    generated: &Generated,
    fault: &Fault,
    tally: &mut Tally,
) {
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
                    check_plan(op, variant, interp, env, fault, &generated.plans[v], tally);
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
    }
}

/// Compares the generated plan of an accepted variant with the interpreter's values.
fn check_plan(
    op: &Op,
    variant: &Variant,
    interp: &Interp<'_>,
    env: &RandomEnv,
    fault: &Fault,
    plan: &Result<kernel_runtime::Plan, String>,
    tally: &mut Tally,
) {
    tally.generated += 1;
    match plan {
        Ok(plan) => {
            *tally.planned.entry(variant.id.clone()).or_default() += 1;
            let got = actual_plan(plan);
            let expected = expected_plan(op, variant, interp, env, fault, &got);
            if expected != got {
                tally.plan_mismatches += 1;
                tally.fail(format!(
                    "plan of `{}`:\n    interpreter {expected:?}\n    generated   {got:?}\n    {}",
                    variant.id,
                    env.describe()
                ));
            }
        }
        Err(error) if !plan_can_fail(op, variant, interp) => tally.fail(format!(
            "plan of `{}` failed ({error}) where every value is in range\n    {}",
            variant.id,
            env.describe()
        )),
        Err(_) => *tally.planned.entry(variant.id.clone()).or_default() += 1,
    }
}

/// A pass's dispatch sizes, overrides by name and uniform words.
type PassNumbers = (Vec<i64>, Vec<(String, f64)>, Vec<u32>);

/// A plan as plain numbers: per pass its dispatch, overrides and uniform words (as the
/// interpreter's values convert to them), then intermediates' lengths and outputs' shapes.
#[derive(Debug, PartialEq)]
struct PlanNumbers {
    passes: Vec<PassNumbers>,
    intermediates: Vec<i64>,
    outputs: Vec<Vec<i64>>,
}

fn int(traced: &Traced) -> i64 {
    match &traced.value {
        Ok(Value::Int(v)) => *v,
        Ok(Value::Bool(b)) => i64::from(*b),
        _ => i64::MIN,
    }
}

fn float(traced: &Traced) -> f64 {
    match &traced.value {
        Ok(Value::Int(v)) => *v as f64,
        Ok(Value::Float(v)) => *v,
        Ok(Value::Bool(b)) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

/// The plan the interpreter computes; of the variant's dynamic values, those `got`'s passes
/// take as overrides (a pass's shader declares only the ones its template reads).
fn expected_plan(
    op: &Op,
    variant: &Variant,
    interp: &Interp<'_>,
    env: &RandomEnv,
    fault: &Fault,
    got: &PlanNumbers,
) -> PlanNumbers {
    let mut passes = Vec::new();
    for (p, pass) in variant.passes.iter().enumerate() {
        let mut dispatch: Vec<i64> = match &pass.dispatch {
            Dispatch::Grid { x, y, z } => [Some(x), y.as_ref(), z.as_ref()]
                .into_iter()
                .map(|e| e.map_or(1, |e| int(&interp.eval(&e.ir))))
                .collect(),
            other => dispatch_exprs(other)
                .into_iter()
                .map(|e| int(&interp.eval(&e.ir)))
                .collect(),
        };
        if p == 0 && matches!(fault, Fault::PlanValue) {
            dispatch[0] += 1;
        }
        let taken: Vec<&String> = got
            .passes
            .get(p)
            .map(|g| g.1.iter().map(|(n, _)| n).collect())
            .unwrap_or_default();
        let mut overrides = Vec::new();
        for value in pass.inputs.iter().chain(&variant.constants) {
            let name = op.override_name(&value.name);
            if value.class != codegen::model::Class::Dynamic
                || !taken.contains(&&name)
                || overrides.iter().any(|(n, _)| *n == name)
            {
                continue;
            }
            let traced = match variant.constants.iter().find(|c| std::ptr::eq(*c, value)) {
                Some(c) => interp.constant(&c.name),
                None => interp.eval(&value.expr.ir),
            };
            overrides.push((name, float(&traced)));
        }
        overrides.sort_by(|a, b| a.0.cmp(&b.0));
        let mut words = Vec::new();
        for field in pass
            .bindings
            .iter()
            .flat_map(|b| b.params.iter().flat_map(|s| &s.fields))
        {
            let traced = interp.eval(&field.value.ir);
            words.push(match field.wgsl_type {
                "f32" => (float(&traced) as f32).to_bits(),
                "i32" => int(&traced) as i32 as u32,
                _ => int(&traced) as u32,
            });
        }
        passes.push((dispatch, overrides, words));
    }
    let intermediates = variant
        .intermediates
        .iter()
        .map(|m| match interp.eval(&m.shape.ir).value {
            Ok(Value::List(dims)) => dims.iter().product(),
            Ok(Value::Int(n)) => n,
            _ => i64::MIN,
        })
        .collect();
    let outputs = op
        .tensors()
        .zip(&env.shapes)
        .skip(op.inputs.len())
        .map(|(_, s)| s.clone().unwrap_or_default())
        .collect();
    PlanNumbers {
        passes,
        intermediates,
        outputs,
    }
}

fn actual_plan(plan: &kernel_runtime::Plan) -> PlanNumbers {
    let passes = plan
        .passes
        .iter()
        .map(|pass| {
            let dispatch = match pass.dispatch {
                kernel_runtime::Dispatch::Grid { x, y, z } => vec![x as i64, y as i64, z as i64],
                kernel_runtime::Dispatch::Workgroups(n) => vec![n as i64],
                kernel_runtime::Dispatch::Threads {
                    threads,
                    workgroup_size,
                }
                | kernel_runtime::Dispatch::GridStride {
                    items: threads,
                    workgroup_size,
                } => {
                    vec![threads as i64, i64::from(workgroup_size)]
                }
            };
            let mut overrides: Vec<(String, f64)> = pass
                .overrides
                .iter()
                .map(|(n, v)| ((*n).to_owned(), *v))
                .collect();
            overrides.sort_by(|a, b| a.0.cmp(&b.0));
            let words = pass
                .params
                .chunks(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            (dispatch, overrides, words)
        })
        .collect();
    PlanNumbers {
        passes,
        intermediates: plan.intermediates.iter().map(|m| m.len as i64).collect(),
        outputs: plan
            .outputs
            .iter()
            .map(|o| o.shape.iter().map(|d| *d as i64).collect())
            .collect(),
    }
}

/// Whether some value of the variant's plan fails in the interpreter or is out of the range of
/// what carries it (a negative count, a word beyond 32 bits), so that the plan may fail.
fn plan_can_fail(op: &Op, variant: &Variant, interp: &Interp<'_>) -> bool {
    let mut exprs: Vec<&Expr> = variant.intermediates.iter().map(|m| &m.shape).collect();
    for pass in &variant.passes {
        exprs.extend(dispatch_exprs(&pass.dispatch));
        exprs.extend(pass.bindings.iter().flat_map(|b| {
            b.params
                .iter()
                .flat_map(|s| s.fields.iter().map(|f| &f.value))
        }));
        exprs.extend(pass.inputs.iter().map(|v| &v.expr));
    }
    exprs.extend(variant.constants.iter().map(|c| &c.expr));
    exprs.extend(op.outputs.iter().filter_map(|t| t.shape.as_ref()));
    exprs.iter().any(|e| match interp.eval(&e.ir).value {
        Err(_) => true,
        Ok(Value::Int(v)) => !(0..=i64::from(u32::MAX)).contains(&v),
        Ok(Value::Float(v)) => !v.is_finite() || v < 0.0 || v > f64::from(u32::MAX),
        Ok(Value::List(dims)) => dims.iter().any(|d| *d < 0),
        Ok(_) => false,
    })
}
