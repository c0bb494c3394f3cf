//! Three-way differential test over every expression of every dialect's ops: the seed
//! packages (`packages/`), the third-party corpus when it is present, and the Hub's three
//! manifests when the `hub` crate was built with them (`hub.rs`).
//!
//! Each op's model comes from the codegen library (`kernel_codegen::models`, hints applied), and its
//! expressions (output shapes, `derive` entries, every variant's `when` clauses, constants,
//! `demoteWhen`, intermediates' shapes, pass inputs, uniform fields and dispatch sizes) are
//! evaluated on random environments by the interpreter (`kernel_codegen::expr::eval_traced`)
//! and by minijinja's own expression evaluator with the dialect's helpers (`jinja.rs`), in
//! the order and the scope the dialect's runtime evaluates them (`steps.rs`, `scope.rs`).
//! Where the op's typed API can hold the environment, the generated module is run on it as
//! well (`generated.rs`): its output shapes, every variant's acceptance (clause and error
//! included), the variant it selects and its plan (dispatch sizes, pipeline overrides,
//! uniform words, intermediates, outputs, shaders) must be what the interpreter computes.
//!
//! Environments are steered towards each variant in turn (`env.rs`), and the test asserts
//! that every expression was compared with minijinja on values it computes (not only on
//! failures), and that every variant the generated code can plan for was planned and
//! selected; a self-check shows that a wrong minijinja source, a wrong plan value and a wrong
//! shader are caught.

// The seed packages' modules always exist; the corpus's only when the corpus was found.
#[cfg(corpus)]
mod calls;
mod compare;
mod env;
mod generated;
mod hub;
mod interp;
mod jinja;
mod plan;
mod repair;
mod scope;
mod steps;

/// Every expression of the seed packages' ops and, when the corpus is present, the corpus's.
#[test]
fn every_expression_three_way() {
    run::every_expression(run::packages(), &run::corpus_envs, 0xc0de_0000, "total");
}

/// Every expression of the Hub's ops, when the hub crate was built with its manifests.
#[test]
fn every_hub_expression_three_way() {
    if let Some(packages) = run::hub_packages("every_hub_expression_three_way") {
        run::every_expression(
            packages,
            &|_| run::HUB_ENVS_PER_VARIANT,
            0x4855_4200,
            "hub total",
        );
    }
}

/// The comparison is not vacuous: a minijinja source that differs from the manifest's, a
/// generated plan value that differs from the interpreter's and a shader other than the one
/// the interpreter's values select are reported, for an op of each dialect.
#[test]
fn deliberate_faults_are_caught() {
    run::deliberate_faults(
        run::packages(),
        "mrotary_embedding",
        "dim(shapes.input, 0) * 2",
    );
    if !corpus::skip_without_corpus("deliberate_faults_are_caught (corpus)") {
        run::deliberate_faults(run::packages(), "rmsnorm", "args.rows * 2");
    }
    if let Some(packages) = run::hub_packages("deliberate_faults_are_caught (Hub)") {
        let wrong = "min(ceilDiv(numel(shapes.c), 64), DISPATCH_FOLD_WIDTH) + 1";
        run::deliberate_faults(packages, "add", wrong);
    }
}

#[test]
fn calls_through_the_typed_api() {
    if !corpus::skip_without_corpus("calls_through_the_typed_api") {
        #[cfg(corpus)]
        calls::check_fixtures();
    }
}

mod run {
    use std::collections::BTreeSet;
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use kernel_codegen::expr::check::Dialect;

    use super::compare::{self, Package, Tally, packages_of};
    use super::{generated, hub};

    /// Environments per variant of each op; the seed packages' contracts couple their sizes
    /// (MRotaryEmbedding's `halfRotaryDim`, section sum and head size), so steering reaches
    /// their variants less often and they get more.
    const ENVS_PER_VARIANT: usize = 200;
    const SEED_ENVS_PER_VARIANT: usize = 1000;
    /// The Hub's MatMul has dozens of variants and a hundred `derive` entries.
    pub const HUB_ENVS_PER_VARIANT: usize = 40;

    pub fn corpus_envs(package: &Package) -> usize {
        if generated::SEED_MODULES.contains(&package.op.module.as_str()) {
            SEED_ENVS_PER_VARIANT
        } else {
            ENVS_PER_VARIANT
        }
    }

    /// The op models of the seed packages and the corpus, and their shaders, generated once
    /// for every test.
    pub fn packages() -> &'static [Package] {
        static PACKAGES: OnceLock<Vec<Package>> = OnceLock::new();
        PACKAGES.get_or_init(generate_packages)
    }

    /// The Hub's op models and their shaders, generated once; `None`, saying why in `test`'s
    /// name, where they are absent.
    pub fn hub_packages(test: &str) -> Option<&'static [Package]> {
        static PACKAGES: OnceLock<Result<Vec<Package>, String>> = OnceLock::new();
        match PACKAGES.get_or_init(hub::packages) {
            Ok(packages) => {
                let modules: BTreeSet<&str> =
                    packages.iter().map(|p| p.op.module.as_str()).collect();
                let listed: BTreeSet<&str> = generated::HUB_MODULES.iter().copied().collect();
                assert_eq!(
                    modules, listed,
                    "generated.rs's `ops!` must list every Hub op"
                );
                Some(packages)
            }
            Err(why) => {
                eprintln!("{test}: skipped, {why}");
                None
            }
        }
    }

    /// The op models of both dialects: the repository's seed packages (with their hints), as
    /// `cargo xtask codegen` reads them, then the corpus's, as its build script does.
    fn generate_packages() -> Vec<Package> {
        let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let root = manifest_dir.join("../..");
        let mut seed = kernel_codegen::Config::new();
        seed.root(&root)
            .packages_in("packages")
            .include_root("packages/_shared")
            .hints_dir("hints")
            .emit_rerun_if_changed(false);
        let mut packages = packages_of(&seed, "the seed packages", Dialect::Seed);
        if corpus::PRESENT {
            let corpus = std::env::var_os("KERNEL_CORPUS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| manifest_dir.join("../../../shared/corpus"));
            let collection = corpus.join("gemma-4");
            let mut config = kernel_codegen::Config::new();
            config
                .packages_in(&collection)
                .include_root(collection.join("_shared_assets"))
                .hints_dir(manifest_dir.join("hints"))
                .emit_rerun_if_changed(false);
            packages.extend(packages_of(&config, "the corpus", Dialect::V1));
        }
        let modules: BTreeSet<&str> = packages.iter().map(|p| p.op.module.as_str()).collect();
        let mut listed: BTreeSet<&str> = generated::SEED_MODULES.iter().copied().collect();
        if corpus::PRESENT {
            listed.extend(generated::CORPUS_MODULES);
        }
        assert_eq!(
            modules, listed,
            "generated.rs's `ops!` must list every op of the seed packages and the corpus"
        );
        packages
    }

    /// Every expression of `packages`' ops on `envs` environments per variant, from seeds
    /// after `seed`; the totals under `label`.
    pub fn every_expression(
        packages: &[Package],
        envs: &dyn Fn(&Package) -> usize,
        seed: u64,
        label: &str,
    ) {
        let mut report = String::new();
        let mut failures = Vec::new();
        let mut total = Tally::default();
        for (i, package) in packages.iter().enumerate() {
            let op = &package.op;
            let n = envs(package) * op.variants.len().max(1);
            let tally = compare::run(package, seed + i as u64, n, &compare::Fault::None);
            report.push_str(&tally.summary(op));
            failures.extend(tally.problems(package));
            total.absorb(&tally);
        }
        eprintln!("{report}{}", total.totals(label));
        assert!(
            failures.is_empty(),
            "{} problems:\n{}",
            failures.len(),
            failures
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    pub fn deliberate_faults(packages: &[Package], module: &str, wrong: &str) {
        let package = packages
            .iter()
            .find(|p| p.op.module == module)
            .unwrap_or_else(|| panic!("no op `{module}`"));
        let op = &package.op;
        let wrong_source = compare::run(package, 7, 600, &compare::Fault::Source(wrong.into()));
        assert!(
            wrong_source.disagreements > 0,
            "a wrong minijinja source went unnoticed:\n{}",
            wrong_source.summary(op)
        );
        let wrong_plan = compare::run(package, 7, 600, &compare::Fault::PlanValue);
        assert!(
            wrong_plan.plan_mismatches > 0,
            "a wrong plan value went unnoticed:\n{}",
            wrong_plan.summary(op)
        );
        let wrong_kernel = compare::run(package, 7, 600, &compare::Fault::Kernel);
        assert!(
            wrong_kernel.kernel_mismatches > 0,
            "a plan's wrong shader went unnoticed:\n{}",
            wrong_kernel.summary(op)
        );
    }
}
