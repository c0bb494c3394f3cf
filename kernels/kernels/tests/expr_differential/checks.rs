//! What every run of the differential test shares: the manifests under test with their
//! generators and typed mappings, running one, the report, and the common assertions.

use codegen::model::Op;

use super::harness::{self, Generated, Mutation, Tally};
use super::random_env::{RandomEnv, Rng};
use super::{gated_env, generators, typed};

/// At least this many environments per manifest are compared three-way.
pub const ENVS: usize = 10_000;

/// The op model's tunables, name and value.
pub type Tunables = [(String, i64)];

/// One manifest under test: where it is, how to draw its environments, and how to map one
/// into the generated code's typed `Env`.
pub struct Manifest {
    pub file: &'static str,
    pub text: &'static str,
    /// The op's implementation hints, which may add `derive` entries the generated code has.
    pub hints: Option<&'static str>,
    pub generate: fn(&mut Rng, &Tunables) -> RandomEnv,
    pub generated: fn(&RandomEnv, &Tunables) -> Option<Generated>,
}

pub const MROPE: Manifest = Manifest {
    file: "packages/com.microsoft.MRotaryEmbedding/manifest.json",
    text: include_str!("../../../../packages/com.microsoft.MRotaryEmbedding/manifest.json"),
    hints: Some(include_str!(
        "../../../../hints/com.microsoft.MRotaryEmbedding.hints.json"
    )),
    generate: generators::mrope,
    generated: typed::mrope_generated,
};

pub const BIAS: Manifest = Manifest {
    file: "packages/com.microsoft.BiasSoftmax/manifest.json",
    text: include_str!("../../../../packages/com.microsoft.BiasSoftmax/manifest.json"),
    hints: Some(include_str!(
        "../../../../hints/com.microsoft.BiasSoftmax.hints.json"
    )),
    generate: generators::bias_softmax,
    generated: typed::bias_generated,
};

pub const GATED: Manifest = Manifest {
    file: "packages/com.microsoft.GatedRelativePositionBias/manifest.json",
    text: include_str!(
        "../../../../packages/com.microsoft.GatedRelativePositionBias/manifest.json"
    ),
    hints: None,
    generate: gated_env::gated_bias,
    generated: typed::gated_generated,
};

impl Manifest {
    /// The validated op model.
    pub fn load(&self) -> Op {
        let mut manifest = codegen::manifest::parse(self.text)
            .unwrap_or_else(|(path, e)| panic!("{}: {path}: {e}", self.file));
        if let Some(text) = self.hints {
            let hints = codegen::hints::parse("hints", text).unwrap_or_else(|d| panic!("{d}"));
            let mut diagnostics = codegen::Diagnostics::default();
            codegen::hints::apply("hints", &hints, &mut manifest, &mut diagnostics);
            assert!(diagnostics.is_empty(), "{diagnostics}");
        }
        codegen::model::build_op(self.file, &manifest)
            .unwrap_or_else(|d| panic!("{}: {d}", self.file))
    }

    /// Runs `n` environments from `seed` through every expression of `op`; `observe` sees
    /// each environment the generated code evaluated, with its results.
    pub fn run(
        &self,
        op: &Op,
        seed: u64,
        n: usize,
        mutation: &Mutation,
        observe: &dyn Fn(&RandomEnv, &Generated),
    ) -> Tally {
        let tunables = op.tunables.clone();
        harness::run(
            op,
            seed,
            n,
            &|rng| (self.generate)(rng, &tunables),
            &|env| {
                let generated = (self.generated)(env, &tunables)?;
                observe(env, &generated);
                Some(generated)
            },
            mutation,
        )
    }
}

/// The name-keyed entry points cover the model's derives (in the generated code's
/// dependency order, so compared as sets) and its variants (in selection order).
pub fn check_entry_points(op: &Op, derived_names: &[&str], variant_ids: &[&str]) {
    let mut ours: Vec<&str> = op.derives.iter().map(|d| d.name.as_str()).collect();
    let mut theirs = derived_names.to_vec();
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(theirs, ours, "{}: DERIVED_NAMES", op.name);
    let variants: Vec<&str> = op.variants.iter().map(|v| v.id.as_str()).collect();
    assert_eq!(variant_ids, variants.as_slice(), "{}: VARIANT_IDS", op.name);
}

pub fn percent(part: usize, whole: usize) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// A one-paragraph account of a run, printed and used in assertion messages.
pub fn summary(name: &str, t: &Tally) -> String {
    let line = |what: &str, c: &harness::Counts| {
        format!(
            "\n  {what:<7} exact {:>7}, loose (inexact division) {:>6}, ours-only error {:>5}",
            c.exact, c.loose, c.ours_only
        )
    };
    format!(
        "{name}: {} environments ({} three-way), {} exact comparisons with the generated code \
         ({} of them failures on both sides), accepted {:?} (three-way {:?}), {} failures{}{}{}{}",
        t.envs,
        t.three_way_envs,
        t.generated,
        t.generated_errors,
        t.accepted,
        t.accepted_three_way,
        t.failure_count,
        line("derive", &t.derive),
        line("when", &t.when),
        line("accept", &t.accept),
        line("other", &t.other),
    )
}

/// The assertions every run shares: no disagreement, most comparisons exact, and every
/// `derive` / `when` compared exactly often and (for conditions) seen both true and false.
pub fn check_common(name: &str, t: &Tally) {
    let report = summary(name, t);
    println!("{report}");
    // Per expression (with --nocapture): how often it was compared exactly, and what it gave.
    for (label, s) in &t.labels {
        println!(
            "    {label:<60} exact {:>6}  true {:>6}  false {:>6}  error {:>6}",
            s.exact, s.trues, s.falses, s.errors
        );
    }
    assert!(
        t.failures.is_empty(),
        "{report}\n\nfirst disagreements:\n{}",
        t.failures.join("\n\n")
    );
    for c in [&t.derive, &t.when, &t.accept] {
        assert!(
            c.exact >= 5 * (c.loose + c.ours_only) && c.exact >= t.envs,
            "too few exact comparisons\n{report}"
        );
    }
    for (label, s) in &t.labels {
        if label.starts_with("derive.") || label.contains(".when[") {
            assert!(
                s.exact >= t.envs / 2,
                "{label}: only {} exact comparisons\n{report}",
                s.exact
            );
            assert!(
                !s.is_bool || (s.trues > 0 && s.falses > 0),
                "{label}: never both true and false ({s:?})\n{report}"
            );
        }
    }
}

/// The three-way share of a run: at least [`ENVS`] environments in the typed domain, at least
/// `min_two_way` outside it, and in every three-way one each derive and each variant's
/// acceptance compared with the generated code.
pub fn check_three_way(name: &str, op: &Op, t: &Tally, min_two_way: usize) {
    let report = summary(name, t);
    assert!(
        t.three_way_envs >= ENVS && t.envs - t.three_way_envs >= min_two_way,
        "the typed / untyped split is off\n{report}"
    );
    assert_eq!(
        t.generated,
        t.three_way_envs * (op.derives.len() + op.variants.len()),
        "{report}"
    );
}
