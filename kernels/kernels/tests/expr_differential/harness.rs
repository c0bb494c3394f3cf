//! The differential driver: evaluates every `derive`, every `when` and (two-way only) every
//! other expression of an op on many random environments with the interpreter, with
//! minijinja and, where the op is generated and the environment is in its typed domain, with
//! the generated Rust; compares the results and tallies what was compared how.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use codegen::expr::{EvalError, Ir, Symbol, Type, Value};
use codegen::model::{Dispatch, Expr, Op};
use kernel_runtime::EvalError as RtError;
use kernel_runtime::support::ExprValue;
use minijinja::value::{Value as Mj, ValueKind};
use minijinja::{Environment, Error as MjError, Expression};

use super::minijinja_side::{self as mj, Verdict};
use super::random_env::{Interp, RandomEnv, Rng, Traced};

/// What the generated code computed for one environment.
pub struct Generated {
    /// `derived_value(name)` for every `DERIVED_NAMES` entry.
    pub derived: BTreeMap<String, Result<ExprValue, RtError>>,
    /// `accepts(id)` for every `VARIANT_IDS` entry: the error of the first failing
    /// condition, if it failed by erroring.
    pub accepted: BTreeMap<String, Result<(), Option<String>>>,
}

/// A deliberate fault, for the self-check that the comparison can fail.
#[derive(Default)]
pub struct Mutation {
    /// (label, source): minijinja evaluates `source` instead of the expression `label`.
    pub minijinja: Option<(String, String)>,
    /// (ours, theirs): the interpreter's derive `ours` is compared with the generated `theirs`.
    pub generated: Option<(String, String)>,
    /// (ours, theirs): the interpreter's acceptance of variant `ours` is compared with the
    /// generated acceptance of variant `theirs`.
    pub generated_accept: Option<(String, String)>,
}

/// How many comparisons of one category were exact, and how many were not comparable.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub exact: usize,
    pub loose: usize,
    pub ours_only: usize,
}

impl Counts {
    fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Agree | Verdict::Disagree => self.exact += 1,
            Verdict::Loose => self.loose += 1,
            Verdict::OursOnly => self.ours_only += 1,
        }
    }
}

/// Per-expression statistics over the exact comparisons with minijinja.
#[derive(Debug, Default, Clone, Copy)]
pub struct LabelStats {
    pub exact: usize,
    pub trues: usize,
    pub falses: usize,
    pub errors: usize,
    pub is_bool: bool,
}

/// Everything one run compared.
#[derive(Debug, Default)]
pub struct Tally {
    pub envs: usize,
    pub three_way_envs: usize,
    pub derive: Counts,
    pub when: Counts,
    pub other: Counts,
    pub accept: Counts,
    /// Exact comparisons of the generated code with the interpreter (derives + acceptance).
    pub generated: usize,
    /// Of those, how many were failures on both sides (with the same message).
    pub generated_errors: usize,
    /// Environments the interpreter accepts, per variant: all / three-way ones.
    pub accepted: BTreeMap<String, usize>,
    pub accepted_three_way: BTreeMap<String, usize>,
    pub labels: BTreeMap<String, LabelStats>,
    pub failures: Vec<String>,
    pub failure_count: usize,
}

/// One `when` condition's results, kept for its variant's acceptance.
struct WhenResult {
    ours: Traced,
    theirs: Result<Mj, MjError>,
    verdict: Verdict,
}

enum Kind {
    Derive(String),
    /// A condition of the variant with this id.
    When(String),
    Other,
}

struct Case<'s> {
    label: String,
    source: &'s str,
    ir: &'s Ir,
    kind: Kind,
    compiled: Expression<'s, 's>,
}

/// Every expression of the op that is neither a `derive` nor a `when`, once per source text.
fn other_exprs(op: &Op) -> Vec<&Expr> {
    let mut out: Vec<&Expr> = Vec::new();
    for tensor in op.tensors() {
        out.extend(tensor.shape.iter().chain(&tensor.rank_expr));
    }
    for variant in &op.variants {
        out.extend(variant.constants.iter().map(|c| &c.expr));
        out.extend(variant.intermediates.iter().map(|i| &i.shape));
        for pass in &variant.passes {
            out.extend(pass.inputs.iter().map(|i| &i.expr));
            match &pass.dispatch {
                Dispatch::Threads {
                    threads: a,
                    workgroup_size: b,
                }
                | Dispatch::GridStride {
                    items: a,
                    workgroup_size: b,
                } => out.extend([a, b]),
                Dispatch::Workgroups(a) => out.push(a),
                Dispatch::Grid { x, y, z } => out.extend(std::iter::once(x).chain(y).chain(z)),
            }
            for binding in &pass.bindings {
                out.extend(
                    binding
                        .params
                        .iter()
                        .flat_map(|p| &p.fields)
                        .map(|f| &f.value),
                );
            }
        }
    }
    let mut seen = BTreeSet::new();
    out.retain(|e| seen.insert(e.source.as_str()));
    out
}

/// Our acceptance of a variant from its `when` results: the first condition that is not
/// true decides, with its error if it failed by erroring.
fn accept_ours(results: &[Traced]) -> Result<(), Option<String>> {
    for r in results {
        match &r.value {
            Ok(Value::Bool(true)) => {}
            Ok(Value::Bool(false)) => return Err(None),
            Ok(other) => return Err(Some(format!("not a Bool: {other:?}"))),
            Err(e) => return Err(Some(e.message.clone())),
        }
    }
    Ok(())
}

fn accept_mj<'r>(mut results: impl Iterator<Item = &'r Result<Mj, MjError>>) -> bool {
    results.all(|r| {
        r.as_ref()
            .is_ok_and(|v| v.kind() == ValueKind::Bool && v.is_true())
    })
}

/// Whether the interpreter's result and the generated code's are the same, errors included
/// (they share the runtime's functions, so even the messages must match).
pub fn same_generated(
    ours: &Result<Value, EvalError>,
    theirs: &Result<ExprValue, RtError>,
) -> bool {
    match (ours, theirs) {
        (Ok(Value::Int(a)), Ok(ExprValue::Int(b))) => a == b,
        (Ok(Value::Float(a)), Ok(ExprValue::Float(b))) => a.to_bits() == b.to_bits(),
        (Ok(Value::Bool(a)), Ok(ExprValue::Bool(b))) => a == b,
        (Ok(Value::Str(a) | Value::Dtype(a)), Ok(ExprValue::Str(b))) => a == b,
        (Ok(Value::List(a)), Ok(ExprValue::List(b))) => a == b,
        (Err(a), Err(b)) => a.message == b.message,
        _ => false,
    }
}

fn show_mj(r: &Result<Mj, MjError>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e})"),
    }
}

/// Every expression of `op`, compiled for minijinja (with the replacement source of a
/// mutation): the derives in dependency order, then the `when` lists, then the rest.
fn cases<'s>(env: &'s Environment<'s>, op: &'s Op, mutation: &'s Mutation) -> Vec<Case<'s>> {
    let mut todo: Vec<(String, &Expr, Kind)> = Vec::new();
    for d in &op.derives {
        let kind = Kind::Derive(d.name.clone());
        todo.push((format!("derive.{}", d.name), &d.expr, kind));
    }
    for v in &op.variants {
        for (i, w) in v.when.iter().enumerate() {
            todo.push((format!("{}.when[{i}]", v.id), w, Kind::When(v.id.clone())));
        }
    }
    for e in other_exprs(op) {
        todo.push((e.path.clone(), e, Kind::Other));
    }
    todo.into_iter()
        .map(|(label, expr, kind)| {
            let source = match &mutation.minijinja {
                Some((l, s)) if *l == label => s.as_str(),
                _ => expr.source.as_str(),
            };
            let compiled = env
                .compile_expression(source)
                .unwrap_or_else(|e| panic!("{}: {label}: minijinja: {e}", op.name));
            Case {
                label,
                source,
                ir: &expr.ir,
                kind,
                compiled,
            }
        })
        .collect()
}

/// One random environment, seen by the three evaluators.
struct OneEnv<'a> {
    op: &'a Op,
    index: usize,
    env: &'a RandomEnv,
    interp: Interp<'a>,
    ctx: Mj,
    generated: Option<Generated>,
    mutation: &'a Mutation,
}

impl OneEnv<'_> {
    /// Records a disagreement; the first few are kept in full for the assertion message.
    fn failure(&self, tally: &mut Tally, header: &str, what: &str) {
        tally.failure_count += 1;
        if tally.failures.len() < 25 {
            tally.failures.push(format!(
                "{} env #{}: {header}\n{what}\n    {}",
                self.op.name,
                self.index,
                self.env.describe()
            ));
        }
    }

    /// The generated code's value of the derive `name` (or, under a mutation, of another).
    fn generated_derive(&self, name: &str) -> Option<Result<ExprValue, RtError>> {
        let read = match &self.mutation.generated {
            Some((ours, theirs)) if ours == name => theirs.as_str(),
            _ => name,
        };
        let g = self.generated.as_ref()?;
        Some(
            g.derived
                .get(read)
                .cloned()
                .unwrap_or_else(|| Err(RtError::new(format!("no generated derive `{read}`")))),
        )
    }

    /// Evaluates one expression every way it can be, compares, and tallies.
    fn case(&self, case: &Case<'_>, tally: &mut Tally) -> WhenResult {
        let ours = match &case.kind {
            Kind::Derive(name) => self.interp.derived(name),
            Kind::When(_) | Kind::Other => self.interp.eval(case.ir),
        };
        let theirs = mj::eval(&case.compiled, &self.ctx);
        let verdict = mj::compare(&ours, &theirs);
        let gen_value = match &case.kind {
            Kind::Derive(name) => self.generated_derive(name),
            _ => None,
        };
        if let Kind::Derive(name) = &case.kind
            && let Ok(v) = &theirs
        {
            mj::define(&self.ctx, name, v.clone());
        }
        match case.kind {
            Kind::Derive(_) => tally.derive.add(verdict),
            Kind::When(_) => tally.when.add(verdict),
            Kind::Other => tally.other.add(verdict),
        }
        let gen_ok = gen_value
            .as_ref()
            .is_none_or(|g| same_generated(&ours.value, g));
        tally.generated += usize::from(gen_value.is_some());
        tally.generated_errors += usize::from(gen_ok && matches!(gen_value, Some(Err(_))));
        if verdict == Verdict::Disagree || !gen_ok {
            let what = format!(
                "    interpreter: {:?} (inexact division: {})\n    generated:   {}\n    \
                 minijinja:   {}",
                ours.value,
                ours.inexact,
                gen_value
                    .as_ref()
                    .map_or("-".to_owned(), |g| format!("{g:?}")),
                show_mj(&theirs)
            );
            let header = format!("{}: `{}`", case.label, case.source);
            self.failure(tally, &header, &what);
        }
        let stats = tally.labels.entry(case.label.clone()).or_default();
        stats.is_bool = case.ir.ty == Type::Bool;
        if matches!(verdict, Verdict::Agree | Verdict::Disagree) {
            stats.exact += 1;
            match &ours.value {
                Ok(Value::Bool(true)) => stats.trues += 1,
                Ok(Value::Bool(false)) => stats.falses += 1,
                Ok(_) => {}
                Err(_) => stats.errors += 1,
            }
        }
        WhenResult {
            ours,
            theirs,
            verdict,
        }
    }

    /// Compares a variant's acceptance (the conjunction of its `when` list, in order).
    fn acceptance(&self, variant: &str, results: &[WhenResult], tally: &mut Tally) {
        let ours: Vec<Traced> = results.iter().map(|r| r.ours.clone()).collect();
        let ours_accept = accept_ours(&ours);
        if ours_accept.is_ok() {
            *tally.accepted.entry(variant.to_owned()).or_default() += 1;
            if self.generated.is_some() {
                *tally
                    .accepted_three_way
                    .entry(variant.to_owned())
                    .or_default() += 1;
            }
        }
        // Only the conditions our evaluation reached decide; any of them not comparable
        // makes the conjunction not comparable.
        let reached = results
            .iter()
            .position(|r| !matches!(r.ours.value, Ok(Value::Bool(true))))
            .map_or(results.len(), |p| p + 1);
        let mj_accept = accept_mj(results.iter().map(|r| &r.theirs));
        let verdict = match results[..reached]
            .iter()
            .find(|r| matches!(r.verdict, Verdict::Loose | Verdict::OursOnly))
        {
            Some(r) => r.verdict,
            None if mj_accept == ours_accept.is_ok() => Verdict::Agree,
            None => Verdict::Disagree,
        };
        tally.accept.add(verdict);
        let read = match &self.mutation.generated_accept {
            Some((ours, theirs)) if ours == variant => theirs.as_str(),
            _ => variant,
        };
        let gen_accept = self
            .generated
            .as_ref()
            .map(|g| g.accepted.get(read).cloned());
        if gen_accept.is_some() {
            tally.generated += 1;
            tally.generated_errors += usize::from(matches!(ours_accept, Err(Some(_))));
        }
        let gen_ok = gen_accept
            .as_ref()
            .is_none_or(|g| g.as_ref() == Some(&ours_accept));
        if verdict == Verdict::Disagree || !gen_ok {
            let mut what = format!(
                "    interpreter: {ours_accept:?}\n    generated:   {gen_accept:?}\n    \
                 minijinja:   {mj_accept}"
            );
            for (i, r) in results.iter().enumerate() {
                let _ = write!(
                    what,
                    "\n      when[{i}]: ours {:?}, minijinja {}",
                    r.ours.value,
                    show_mj(&r.theirs)
                );
            }
            self.failure(tally, &format!("variant `{variant}` acceptance"), &what);
        }
    }
}

/// Runs `n` environments of `generate` through every expression of `op`.
pub fn run(
    op: &Op,
    seed: u64,
    n: usize,
    generate: &dyn Fn(&mut Rng) -> RandomEnv,
    generated: &dyn Fn(&RandomEnv) -> Option<Generated>,
    mutation: &Mutation,
) -> Tally {
    let env_mj = mj::environment();
    let cases = cases(&env_mj, op, mutation);
    let derives: HashMap<String, Ir> = op
        .derives
        .iter()
        .map(|d| (d.name.clone(), d.expr.ir.clone()))
        .collect();
    let limit_names: BTreeSet<String> = cases
        .iter()
        .flat_map(|c| c.ir.symbols())
        .filter_map(|sym| match sym {
            Symbol::Limit(name) => Some(name),
            _ => None,
        })
        .collect();
    let mut tally = Tally::default();
    let mut rng = Rng::new(seed);
    for index in 0..n {
        let env = generate(&mut rng);
        let one = OneEnv {
            op,
            index,
            env: &env,
            interp: Interp::new(&env, &derives),
            ctx: mj::context(&env, &limit_names),
            generated: generated(&env),
            mutation,
        };
        tally.envs += 1;
        tally.three_way_envs += usize::from(one.generated.is_some());
        let mut whens: BTreeMap<&str, Vec<WhenResult>> = BTreeMap::new();
        for case in &cases {
            let result = one.case(case, &mut tally);
            if let Kind::When(variant) = &case.kind {
                whens.entry(variant.as_str()).or_default().push(result);
            }
        }
        for variant in &op.variants {
            let results = whens.remove(variant.id.as_str()).unwrap_or_default();
            one.acceptance(&variant.id, &results, &mut tally);
        }
    }
    tally
}
