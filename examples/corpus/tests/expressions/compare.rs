//! The driver: every expression of one op on many random environments, by the interpreter and
//! by minijinja (in the order the dialect's runtime evaluates them), and (where the typed API
//! holds the environment) the generated module's output shapes, acceptance, selection and
//! plan against the interpreter's; what was compared is tallied and what disagreed is kept
//! with the environment that shows it.

use std::collections::BTreeMap;

use kernel_codegen::GeneratedShader;
use kernel_codegen::expr::builtins::Builtin;
use kernel_codegen::expr::{EvalError, Ir, IrKind, Value, check::Dialect};
use kernel_codegen::model::{Op, Variant};
use kernel_runtime::OpError;

use super::env::{self, Profile, RandomEnv, Rng};
use super::generated::{self, Failed, Generated};
use super::interp::Interp;
use super::jinja::{self, Verdict};
use super::scope::{self, Level};
use super::steps::{self, Step};
use super::{hub, plan};

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

/// An op's model, the shaders the generator renders for it, and how its manifest is read.
pub struct Package {
    pub op: Op,
    pub shaders: Vec<GeneratedShader>,
    pub dialect: Dialect,
    /// The `derive` entries in the manifest's order, where the runtime evaluates them so
    /// (the Hub's); empty otherwise.
    pub derive_order: Vec<String>,
}

impl Package {
    pub fn is_hub(&self) -> bool {
        self.dialect == Dialect::Hub
    }

    /// What the op's environments are drawn from.
    pub fn profile(&self) -> &'static Profile {
        if self.is_hub() {
            &hub::PROFILE
        } else {
            &env::CORPUS
        }
    }
}

/// The models of the packages `config` reads, as the generator builds them, with the shaders
/// it renders for each.
pub fn packages_of(config: &kernel_codegen::Config, what: &str, dialect: Dialect) -> Vec<Package> {
    let (inputs, _) = config
        .read_inputs()
        .unwrap_or_else(|e| panic!("reading {what}: {e}"));
    let ops = kernel_codegen::models(&inputs).unwrap_or_else(|d| panic!("{what}'s models: {d}"));
    let output =
        kernel_codegen::generate(&inputs).unwrap_or_else(|d| panic!("generating {what}: {d}"));
    ops.into_iter()
        .map(|op| {
            let name = op.qualified_name();
            let shaders: Vec<_> = (output.shaders.iter())
                .filter(|s| s.op == name)
                .cloned()
                .collect();
            // As the generated code selects: with the subgroup-matrix configurations its
            // shaders multiply required.
            let built: Vec<_> = shaders.iter().map(|s| s.shader.clone()).collect();
            let op = kernel_codegen::require_subgroup_matrix_configs(&op, &built).into_owned();
            Package {
                op,
                shaders,
                dialect,
                derive_order: Vec::new(),
            }
        })
        .collect()
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
    /// The variants the generated code selected where their plan fails (as the interpreter
    /// says it may): Softmax's `stable_3pass` is selected only for rows of no columns.
    pub selected_failing: BTreeMap<String, usize>,
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

    /// The totals of a run, after `label`.
    pub fn totals(&self, label: &str) -> String {
        format!(
            "{label}: {} envs ({} typed), {} comparisons with minijinja ({} of values, {} of two \
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
    pub fn problems(&self, package: &Package) -> Vec<String> {
        let op = &package.op;
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
            if self.planned.contains_key(&variant.id)
                && !self.selected.contains_key(&variant.id)
                && !self.selected_failing.contains_key(&variant.id)
            {
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
        for step in steps::steps(package) {
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

/// Runs `n` environments from `seed` through every expression of the package's op.
pub fn run(package: &Package, seed: u64, n: usize, fault: &Fault) -> Tally {
    let op = &package.op;
    let hub = package.is_hub();
    let wrapped = jinja::environment(true, hub);
    let strict = jinja::environment(false, hub);
    let steps = steps::steps(package);
    let is_dispatch = |s: &Step<'_>| matches!(s, Step::Eval(c) if c.expr.path.contains("dispatch"));
    let faulty = match fault {
        Fault::Source(_) => steps.iter().position(is_dispatch),
        _ => None,
    };
    let compiled: Vec<_> = (steps.iter().enumerate())
        .map(|(i, step)| {
            let Step::Eval(c) = step else { return None };
            let source = match fault {
                Fault::Source(s) if Some(i) == faulty => s.as_str(),
                _ => c.expr.source.as_str(),
            };
            let mj = if strict_axes(&c.expr.ir) {
                &strict
            } else {
                &wrapped
            };
            Some(mj.compile_expression(source))
        })
        .collect();
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for k in 0..n {
        let target = k % op.variants.len().max(1);
        let mut env = RandomEnv::draw(op, package.profile(), target, &mut rng);
        // Most environments are steered into the target variant; the rest stay where they
        // fell, so rejections and failures are compared too.
        if let Some(variant) = op.variants.get(target).filter(|_| rng.chance(75)) {
            env.steer(op, variant, &mut rng, package.profile().steering);
        }
        let outputs = env.compute_outputs(op);
        let ctx = scope::context(op, &env, hub);
        let interps: Vec<Interp<'_>> = op
            .variants
            .iter()
            .map(|v| Interp::new(op, &env, Some(v)))
            .collect();
        let top = Interp::new(op, &env, None);
        for (step, compiled) in steps.iter().zip(&compiled) {
            let (Step::Eval(case), Some(compiled)) = (step, compiled) else {
                match step {
                    Step::EnterVariant => ctx.enter_variant(op),
                    Step::MergeTunables(v) => ctx.merge_tunables(op, &op.variants[*v].tunables),
                    Step::EnterPass => ctx.enter_pass(),
                    Step::Eval(_) => {}
                }
                continue;
            };
            let interp = case.variant.map_or(&top, |i| &interps[i]);
            // A `derive` entry through the interpreter's memo (later expressions read it
            // there); anything else by its own expression, which a `derive` of the same name
            // would hide from `constant`.
            let ours = match case.defines {
                Some((Level::Manifest, name)) => interp.constant(name),
                _ => interp.eval(case.ir),
            };
            let theirs = match compiled {
                Ok(e) => jinja::eval(e, &ctx, case.whole),
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
            if let Some((level, name)) = case.defines {
                if verdict != Verdict::Agree || ours.value.is_err() {
                    match level {
                        // Every variant's interpreter reads a `derive` entry.
                        Level::Manifest => {
                            interps.iter().chain([&top]).for_each(|i| i.distrust(name))
                        }
                        // The interpreter reads a corpus variant's constant by name; the Hub's
                        // model inlines a variant's and a pass's derives into what reads them.
                        Level::Variant if !hub => interp.distrust(name),
                        Level::Variant | Level::Pass => {}
                    }
                }
                if let Ok(v) = theirs {
                    ctx.define(level, name, v);
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

/// A clause the generated code adds for a Hub variant's `supersededBy`: it holds where a
/// variant that supersedes this one is accepted.
fn superseded(op: &Op, variant: &Variant, failed: &Failed, ours: &[Result<(), Failed>]) -> bool {
    failed.clause.contains("superseded")
        && variant.superseded_by.iter().any(|id| {
            (op.variants.iter().zip(ours))
                .any(|(other, accepted)| other.id == *id && accepted.is_ok())
        })
}

/// Whether a Hub variant's `demoteWhen` holds: it is selected only when no variant after it
/// is eligible and not demoted.
fn demoted(variant: &Variant, interp: &Interp<'_>) -> bool {
    (variant.demote_when.iter()).any(|c| matches!(interp.eval(&c.ir).value, Ok(Value::Bool(true))))
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
    let ours: Vec<_> = (op.variants.iter().zip(interps))
        .map(|(variant, interp)| acceptance(variant, interp))
        .collect();
    let mut eligible = Vec::new();
    let mut not_built_ids = Vec::new();
    for (v, ((variant, interp), (id, theirs))) in op
        .variants
        .iter()
        .zip(interps)
        .zip(&generated.accepted)
        .enumerate()
    {
        tally.generated += 1;
        match (&ours[v], theirs) {
            (Ok(()), Err(f)) if not_built(f) => not_built_ids.push(*id),
            (Ok(()), Err(f)) if superseded(op, variant, f, &ours) => {
                plan::check(package, v, interp, env, fault, &generated.plans[v], tally);
            }
            (ours, theirs) if ours == theirs && variant.id == *id => {
                if ours.is_ok() {
                    eligible.push(v);
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
    // The first eligible variant that is not demoted, else the first demoted one.
    let selected = (eligible.iter())
        .find(|&&v| !demoted(&op.variants[v], &interps[v]))
        .or(eligible.first())
        .copied();
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
    if chosen != selected.map(|v| op.variants[v].id.as_str()) {
        tally.fail(format!(
            "selection: interpreter {:?} (not built: {not_built_ids:?}), generated {chosen:?}\n    {}",
            selected.map(|v| &op.variants[v].id),
            env.describe()
        ));
    } else if let (Some(v), Some(id)) = (selected, chosen) {
        match &generated.plan {
            Ok(plan) => plan::check_kernels(package, v, &interps[v], env, fault, plan, tally),
            Err(_) => *tally.selected_failing.entry(id.to_owned()).or_default() += 1,
        }
    }
}
