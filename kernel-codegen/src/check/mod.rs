//! `check`: a package's defects found at build time, before its users meet them. Every op is
//! called, in the interpreter the generated code is tested against, on inputs drawn at the
//! boundaries of its declared dtypes, ranks and attributes (`inputs.rs`) and on devices from
//! WebGPU's defaults to tensor-core GPUs (`devices.rs`); what the variants answer is collected
//! into findings, each with a witness (a call that shows it):
//!
//! 1. [`Kind::Shadowed`]: a variant accepted calls but never ran: variants ranked before it
//!    took every one.
//! 2. [`Kind::Uncovered`]: valid calls (the op's output shapes evaluate) that no variant
//!    accepts, grouped into regions by what rejects them.
//! 3. [`Kind::PlanFails`]: a call a variant accepts on which its plan fails (a value that does
//!    not evaluate, a negative or fractional size, a uniform out of range, a dispatch past the
//!    device limits).
//! 4. [`Kind::BindingTooSmall`]: a binding that reads a tensor in groups of 2 or 4 elements on
//!    a call where the tensor holds fewer, or not a multiple.
//!
//! 5. [`Kind::LeftOut`]: static combinations of a pass the generator leaves out because they
//!    do not render or validate ([`left_out_findings`], from [`crate::Output::left_out`]).
//! 6. [`Kind::Unselectable`]: a variant a condition on tunables and device limits alone rules
//!    out on every device: the tunables' values are never selected.
//!
//! A variant no drawn call reached ([`Kind::Unreached`]) and a value a hints file builds
//! shaders for that no call accepted by its variant took ([`Kind::UnusedHintValue`]) are
//! notes: the drawing may have missed them.

mod contract;
mod devices;
mod eval;
mod findings;
mod inputs;
mod plan;
pub mod repair;
mod shadow;

use std::collections::BTreeMap;

use crate::expr::Value;
use crate::model::Op;
use eval::CallEnv;
pub use inputs::Rng;
use inputs::{Input, Space};

pub use findings::{Finding, Kind, Witness};

/// How thoroughly ops are checked.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Inputs drawn per op (each evaluated on every device).
    pub inputs_per_op: usize,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            inputs_per_op: 3000,
            seed: 0x6368_6563_6b00,
        }
    }
}

/// What checking one op found, and how many calls it took.
#[derive(Debug, Clone)]
pub struct OpReport {
    pub op: String,
    pub findings: Vec<Finding>,
    /// Calls evaluated (inputs × devices), and how many of them were valid.
    pub calls: usize,
    pub valid: usize,
}

/// Checks every op.
pub fn check_ops(ops: &[Op], options: Options) -> Vec<OpReport> {
    ops.iter().map(|op| check_op(op, options)).collect()
}

/// What one variant saw over all calls.
#[derive(Default)]
struct VariantStats {
    accepted: usize,
    /// Accepted calls per device (indices into `devices::all()`).
    accepted_on: Vec<usize>,
    selected: usize,
    /// Who ran instead when it accepted and was not selected.
    instead: BTreeMap<usize, usize>,
    first_accepted: Option<Witness>,
    /// The first calls it accepted and the device each was on: a call is the same call on
    /// every device, so these are tried first where the variant is steered.
    samples: Vec<(Input, usize)>,
}

/// Collects the findings of one kind at one place into one, counting calls: the message and
/// the witness are the first call's.
#[derive(Default)]
struct Collector {
    found: BTreeMap<(Kind, String), (usize, String, Option<Witness>)>,
}

impl Collector {
    /// Counts one call showing a finding. The witness kept is the first call on which the
    /// variant concerned also runs (`ran_instead` is `None`), or else the first call.
    fn add(
        &mut self,
        kind: Kind,
        path: String,
        message: String,
        witness: impl FnOnce() -> Witness,
    ) {
        let entry = self
            .found
            .entry((kind, path))
            .or_insert((0, message.clone(), None));
        entry.0 += 1;
        let better = match &entry.2 {
            None => true,
            Some(kept) => kept.ran_instead.is_some(),
        };
        if better {
            let witness = witness();
            if entry.2.is_none() || witness.ran_instead.is_none() {
                entry.1 = message;
                entry.2 = Some(witness);
            }
        }
    }

    /// Counts each `when` clause that failed to evaluate on a call.
    fn when_errors(&mut self, op: &Op, selection: &eval::Selection, witness: impl Fn() -> Witness) {
        for &(v, clause, ref error) in &selection.errors {
            let clause = &op.variants[v].when[clause];
            self.add(
                Kind::PlanFails,
                clause.path.clone(),
                format!("`{}` fails to evaluate: {error}", clause.source),
                &witness,
            );
        }
    }
}

/// Calls drawn per device for a variant few drawn calls reached there, each steered
/// towards it, until it accepts [`STEERED_ENOUGH`] of them.
const STEERED_DRAWS: usize = 60;

/// Accepted calls per variant and device below which the variant is steered towards.
const STEERED_ENOUGH: usize = 3;

/// The sizes of an accepted call probed with boundary values.
const PROBED_SIZES: usize = 8;

/// Repair rounds per steered call.
const STEERING_ROUNDS: usize = 12;

/// What every call of one op is checked against.
struct Call<'a> {
    op: &'a Op,
    order: &'a [usize],
}

/// What the calls of one op showed so far.
struct Tally {
    stats: Vec<VariantStats>,
    /// (variant, hinted value's name) → the values accepted calls gave it.
    hint_values: BTreeMap<(usize, String), std::collections::BTreeSet<String>>,
    collector: Collector,
    contract: contract::Contract,
    /// Calls no variant accepted, and on which device: whether each is within the contract
    /// is known once every call has been drawn.
    unaccepted: Vec<(Input, usize)>,
    calls: usize,
    valid: usize,
}

impl Tally {
    /// Evaluates one call on one device and records what it shows.
    fn record(&mut self, call: &Call<'_>, input: &Input, device: (usize, &devices::Device)) {
        let (d, device) = device;
        let Call { op, order } = *call;
        self.calls += 1;
        let env = CallEnv::new(op, input, device);
        if !is_valid(op, input, device, &env) {
            return;
        }
        self.valid += 1;
        let witness = || Witness::new(op, input, device);
        let selection = eval::select(op, &env, order);
        // A `when` that fails to evaluate on a call no variant takes is reported only if the
        // call is within the contract, which is known at the end.
        if selection.selected.is_some() {
            self.collector.when_errors(op, &selection, witness);
        }
        if !selection.accepted.is_empty() {
            self.contract.accepted(op, &env);
        }
        for &v in &selection.accepted {
            let s = &mut self.stats[v];
            s.accepted += 1;
            s.accepted_on[d] += 1;
            if s.first_accepted.is_none() {
                s.first_accepted = Some(witness());
            }
            if s.samples.len() < STEERED_ENOUGH {
                s.samples.push((input.clone(), d));
            }
            match selection.selected {
                Some(chosen) if chosen == v => s.selected += 1,
                Some(chosen) => *s.instead.entry(chosen).or_default() += 1,
                None => {}
            }
            let variant = &op.variants[v];
            for name in variant.specialise.keys() {
                let parameter = name
                    .strip_prefix("args.")
                    .or_else(|| name.strip_prefix("attrs."));
                let value = match parameter {
                    Some(arg) => input.attrs.get(arg).cloned(),
                    None => env
                        .within(variant, true)
                        .eval_named(name)
                        .and_then(Result::ok),
                };
                if let Some(value) = value {
                    let seen = self.hint_values.entry((v, name.clone())).or_default();
                    seen.insert(value.to_string());
                }
            }
            let ran_instead = selection
                .selected
                .filter(|&chosen| chosen != v)
                .map(|chosen| op.variants[chosen].id.clone());
            for p in plan::problems(op, v, device, &env) {
                let kind = if p.binding {
                    Kind::BindingTooSmall
                } else {
                    Kind::PlanFails
                };
                let witness = || Witness {
                    ran_instead: ran_instead.clone(),
                    outputs_empty: outputs_empty(op, &env),
                    ..witness()
                };
                self.collector.add(kind, p.path, p.message, witness);
            }
        }
        if selection.selected.is_none() {
            self.unaccepted.push((input.clone(), d));
        }
    }
}

/// `input` repaired towards variant `v`'s `when` on `device`: a round applies one repair of
/// a failing clause and keeps it unless fewer clauses hold after it.
fn steer(op: &Op, v: usize, mut input: Input, device: &devices::Device, rng: &mut Rng) -> Input {
    let variant = &op.variants[v];
    let conjuncts: Vec<&crate::expr::Ir> = (repair::when_conjuncts(op, variant).into_iter())
        .map(|(ir, _)| ir)
        .collect();
    let score = |input: &Input| {
        let env = CallEnv::new(op, input, device);
        let env = env.within(variant, false);
        conjuncts
            .iter()
            .filter(|c| matches!(env.eval(c), Ok(Value::Bool(true))))
            .count()
    };
    let mut best = score(&input);
    for _ in 0..STEERING_ROUNDS {
        if best == conjuncts.len() {
            break;
        }
        let fixes: Vec<repair::Fix> = {
            let env = CallEnv::new(op, &input, device);
            let env = env.within(variant, false);
            conjuncts
                .iter()
                .filter(|c| !matches!(env.eval(c), Ok(Value::Bool(true))))
                .filter_map(|c| repair::fix_of(op, c, &env, true))
                .collect()
        };
        if fixes.is_empty() {
            break;
        }
        let mut next = input.clone();
        let fix = &fixes[rng.below(fixes.len())];
        if !fix.apply(&mut next.shapes, &mut next.attrs, rng) {
            continue;
        }
        let got = score(&next);
        if got >= best {
            input = next;
            best = got;
        }
    }
    input
}

/// Checks one op.
pub fn check_op(op: &Op, options: Options) -> OpReport {
    let name = format!("{}.{}", op.domain, op.name);
    let space = Space::of(op);
    let devices = devices::all();
    let order = eval::ranked(op);
    let mut rng = Rng::new(options.seed ^ fnv1a(&name));
    let mut tally = Tally {
        stats: (0..op.variants.len())
            .map(|_| VariantStats {
                accepted_on: vec![0; devices.len()],
                ..VariantStats::default()
            })
            .collect(),
        hint_values: BTreeMap::new(),
        collector: Collector::default(),
        contract: contract::Contract::of(op),
        unaccepted: Vec::new(),
        calls: 0,
        valid: 0,
    };
    let call = Call { op, order: &order };
    for _ in 0..options.inputs_per_op {
        let input = space.draw(op, &mut rng);
        for device in devices.iter().enumerate() {
            tally.record(&call, &input, device);
        }
    }
    // A variant few drawn calls reached on a device is steered towards there: calls are
    // repaired, clause by clause, until its `when` holds. Whether it is shadowed is then
    // judged on every device it can run on, not only where random calls happened to reach it.
    for v in 0..op.variants.len() {
        let variant = &op.variants[v];
        for (d, device) in devices.iter().enumerate() {
            let mut reached = tally.stats[v].accepted_on[d];
            for _ in 0..STEERED_DRAWS {
                if reached >= STEERED_ENOUGH {
                    break;
                }
                let input = steer(op, v, space.draw(op, &mut rng), device, &mut rng);
                let env = CallEnv::new(op, &input, device);
                if env.within(variant, false).holds(&variant.when) == Ok(true)
                    && is_valid(op, &input, device, &env)
                {
                    reached += 1;
                    tally.record(&call, &input, (d, device));
                }
            }
        }
    }
    // Near the calls each variant accepted: the same call on the other devices (where
    // steering may have failed), and on its own device with each of its sizes set to 0, 1
    // or 3 wherever it occurs (an empty `K` shared by both operands).
    for v in 0..op.variants.len() {
        for (sample, on) in tally.stats[v].samples.clone() {
            for (d, device) in devices.iter().enumerate() {
                if d != on {
                    tally.record(&call, &sample, (d, device));
                }
            }
            for size in sample.sizes().into_iter().take(PROBED_SIZES) {
                for to in [0, 1, 3] {
                    if to != size {
                        tally.record(&call, &sample.with_size(size, to), (on, &devices[on]));
                    }
                }
            }
        }
    }
    let Tally {
        stats,
        hint_values,
        mut collector,
        contract,
        unaccepted,
        calls,
        valid,
    } = tally;
    let mut findings = Vec::new();
    let file = op.file.clone();
    let finding = |kind, path: String, message: String, calls, witness| Finding {
        kind,
        op: name.clone(),
        file: file.clone(),
        path,
        message,
        calls,
        witness,
    };
    let proved = shadow::proved(op, &order);
    // Any call will do where a condition reads none of it.
    let any_call = space.draw(op, &mut rng);
    let device_envs: Vec<CallEnv<'_>> = devices
        .iter()
        .map(|device| CallEnv::new(op, &any_call, device))
        .collect();
    for (v, s) in stats.iter().enumerate() {
        let id = &op.variants[v].id;
        let path = variant_path(&op.variants[v]);
        if let Some(&(_, by)) = proved.iter().find(|(shadowed, _)| *shadowed == v)
            && s.selected == 0
        {
            findings.push(finding(
                Kind::Shadowed,
                path,
                format!(
                    "variant `{id}` never runs: `{}`, ranked before it, has no condition it lacks, so it takes every call `{id}` accepts ({} drawn)",
                    op.variants[by].id, s.accepted
                ),
                s.accepted,
                s.first_accepted.clone(),
            ));
        } else if s.accepted == 0
            && let Some((clause, tunables)) = shadow::blocked_by_tunables(op, v, &device_envs)
        {
            findings.push(finding(
                Kind::Unselectable,
                path,
                format!(
                    "variant `{id}` never runs: `{clause}` fails on every device checked, whatever the call; it reads the tunables {}",
                    tunables.join(", ")
                ),
                0,
                None,
            ));
        } else if s.accepted == 0 {
            findings.push(finding(
                Kind::Unreached,
                path,
                format!("variant `{id}` accepted none of the {valid} valid calls drawn"),
                0,
                None,
            ));
        } else if s.selected == 0 {
            let instead: Vec<String> = s
                .instead
                .iter()
                .map(|(&w, n)| format!("`{}` ({n})", op.variants[w].id))
                .collect();
            findings.push(finding(
                Kind::Shadowed,
                path,
                format!(
                    "variant `{id}` accepted {} calls and ran none: {} ran instead",
                    s.accepted,
                    instead.join(", ")
                ),
                s.accepted,
                s.first_accepted.clone(),
            ));
        }
    }
    for (v, variant) in op.variants.iter().enumerate() {
        for (name, values) in &variant.specialise {
            let seen = hint_values.get(&(v, name.clone()));
            let unused: Vec<String> = values
                .iter()
                .map(ToString::to_string)
                .filter(|value| !seen.is_some_and(|s| s.contains(value)))
                .collect();
            if !unused.is_empty() && stats[v].accepted > 0 {
                let mut note = finding(
                    Kind::UnusedHintValue,
                    format!("{}.specialise.{name}", variant_path(variant)),
                    format!(
                        "the hints build variant `{}` for `{name}` = {}, which none of the {} calls it accepted took",
                        variant.id,
                        unused.join(", "),
                        stats[v].accepted
                    ),
                    0,
                    None,
                );
                // The set is the hints file's, where it is one.
                if let Some(source) =
                    (op.hint_sources.iter()).find(|h| h.variant == variant.id && h.name == *name)
                {
                    note.file.clone_from(&source.file);
                    note.path.clone_from(&source.path);
                }
                findings.push(note);
            }
        }
    }
    // Regions by what rejects their calls, judged against the contract every accepted call
    // showed.
    let mut uncovered: BTreeMap<String, contract::Region> = BTreeMap::new();
    for (input, d) in &unaccepted {
        let device = &devices[*d];
        let env = CallEnv::new(op, input, device);
        if let Some(why) = contract.rejections(op, &env, &order) {
            let selection = eval::select(op, &env, &order);
            collector.when_errors(op, &selection, || Witness::new(op, input, device));
            uncovered
                .entry(why)
                .or_insert_with(|| contract::Region::new(op, Witness::new(op, input, device)))
                .add(op, input);
        }
    }
    for (why, region) in uncovered {
        findings.push(finding(
            Kind::Uncovered,
            "variants".to_owned(),
            format!(
                "no variant accepts calls within the op's contract with {}: {why}",
                region.describe(op)
            ),
            region.calls,
            Some(region.witness),
        ));
    }
    for ((kind, path), (n, message, witness)) in collector.found {
        findings.push(finding(kind, path, message, n, witness));
    }
    OpReport {
        op: name,
        findings,
        calls,
        valid,
    }
}

/// Whether every output of the call is empty and none is written in place.
fn outputs_empty(op: &Op, env: &CallEnv<'_>) -> bool {
    let inputs = op.inputs.len();
    !op.inputs.iter().any(|t| t.in_place)
        && !op.outputs.is_empty()
        && (0..op.outputs.len())
            .all(|k| matches!(env.tensor_shape(inputs + k), Some(Ok(dims)) if dims.contains(&0)))
}

/// A call is valid when every tensor fits in one buffer of the device, float16 tensors meet
/// a device with `shader-f16`, and the op's output shapes evaluate to sizes: what the
/// manifest itself admits.
fn is_valid(op: &Op, input: &Input, device: &devices::Device, env: &CallEnv<'_>) -> bool {
    let max = device.max_buffer_bytes();
    let fits = |shape: &[i64], bytes: usize| {
        shape
            .iter()
            .try_fold(bytes as i64, |n, &d| n.checked_mul(d))
            .is_some_and(|n| n <= max)
    };
    for i in 0..op.tensors().count() {
        let dtype = input.tensor_dtype(op, i);
        // No shader can read float16 on a device without `shader-f16`: such a call is the
        // device's limit, not the op's.
        if dtype == Some(crate::model::DType::F16)
            && !device.has_feature(kernel_abi::device::FEATURE_SHADER_F16)
        {
            return false;
        }
        let bytes = dtype.map_or(4, |d| d.storage_bytes());
        let shape = match env.tensor_shape(i) {
            None => continue,
            Some(Ok(dims)) if dims.iter().all(|&d| d >= 0) => dims,
            Some(_) => return false,
        };
        if !fits(&shape, bytes) {
            return false;
        }
    }
    true
}

/// FNV-1a of a name: a stable seed per op, so each op draws its own inputs.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Where a variant is in its manifest: the path its `when` clauses are under (the model
/// orders variants by priority, not as the manifest lists them).
fn variant_path(variant: &crate::model::Variant) -> String {
    variant
        .when
        .first()
        .and_then(|c| c.path.split_once(".when").map(|(head, _)| head.to_owned()))
        .unwrap_or_else(|| format!("variants (`{}`)", variant.id))
}

/// One finding per pass that has static combinations the generator left out (they do not
/// render or validate): which values (six, then a count) and the first one's error.
pub fn left_out_findings(ops: &[Op], left_out: &[crate::LeftOutCombination]) -> Vec<Finding> {
    let mut by_pass: BTreeMap<(String, String, String), Vec<&crate::LeftOutCombination>> =
        BTreeMap::new();
    for l in left_out {
        let key = (l.op.clone(), l.variant.clone(), l.pass.clone());
        by_pass.entry(key).or_default().push(l);
    }
    by_pass
        .into_iter()
        .map(|((op_name, variant, pass), combos)| {
            let op = ops.iter().find(|o| format!("{}.{}", o.domain, o.name) == op_name);
            let path = op
                .and_then(|o| o.variants.iter().find(|v| v.id == variant))
                .map_or_else(|| format!("variants (`{variant}`)"), variant_path);
            let mut values: Vec<String> =
                combos.iter().take(6).map(|c| format!("({})", c.values)).collect();
            if combos.len() > 6 {
                values.push(format!("and {} more", combos.len() - 6));
            }
            let first = combos[0].reason.lines().next().unwrap_or_default();
            Finding {
                kind: Kind::LeftOut,
                op: op_name,
                file: op.map(|o| o.file.clone()).unwrap_or_default(),
                path: format!("{path}, pass `{pass}`"),
                message: format!(
                    "{} static combination(s) of variant `{variant}` are not built (a call that selects one fails): {}; the first: {first}",
                    combos.len(),
                    values.join(", ")
                ),
                calls: 0,
                witness: None,
            }
        })
        .collect()
}
