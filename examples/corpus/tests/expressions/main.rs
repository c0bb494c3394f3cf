//! Three-way differential test over every expression of both dialects' ops: the seed
//! packages (`packages/`) and, when it is present, the third-party corpus.
//!
//! Each op's model comes from the codegen library (`kernel_codegen::models`, hints applied), and its
//! expressions (output shapes, every variant's `when` clauses, constants, intermediates' shapes,
//! pass inputs, uniform fields and dispatch sizes) are evaluated on random environments by the
//! interpreter (`kernel_codegen::expr::eval_traced`) and by minijinja's own expression evaluator with the
//! dialect's helpers (`jinja.rs`). Where the op's typed API can hold the environment, the
//! generated module is run on it as well (`generated.rs`): its output shapes, every variant's
//! acceptance (clause and error included) and its plan (variant, dispatch sizes, pipeline
//! overrides, uniform words, intermediates, outputs) must be what the interpreter computes.
//!
//! Environments are steered towards each variant in turn (`env.rs`), and the test asserts
//! that every expression was compared with minijinja on values it computes (not only on
//! failures), and that every variant the generated code can plan for was planned; a
//! self-check shows that a wrong minijinja source and a wrong plan value are caught.

// The seed packages' modules always exist; the corpus's only when the corpus was found.
#[cfg(corpus)]
mod calls;
mod compare;
mod env;
mod generated;
mod jinja;
mod plan;
mod repair;

/// Every expression of both dialects' ops: the seed packages always, the corpus's when the
/// corpus is present.
#[test]
fn every_expression_three_way() {
    run::every_expression();
}

/// The comparison is not vacuous: a minijinja source that differs from the manifest's, and a
/// generated plan value that differs from the interpreter's, are both reported, for an op of
/// each dialect.
#[test]
fn deliberate_faults_are_caught() {
    run::deliberate_faults("mrotary_embedding", "dim(shapes.input, 0) * 2");
    if !corpus::skip_without_corpus("deliberate_faults_are_caught (corpus)") {
        run::deliberate_faults("rmsnorm", "args.rows * 2");
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
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use super::compare::{self, Package, Tally};
    use super::generated;

    /// Environments per variant of each op; the seed packages' contracts couple their sizes
    /// (MRotaryEmbedding's `halfRotaryDim`, section sum and head size), so steering reaches
    /// their variants less often and they get more.
    const ENVS_PER_VARIANT: usize = 200;
    const SEED_ENVS_PER_VARIANT: usize = 1000;

    /// The models of the packages `config` reads, as the generator builds them, with the
    /// shaders it renders for each.
    fn packages_of(config: &kernel_codegen::Config, what: &str) -> Vec<Package> {
        let (inputs, _) = config
            .read_inputs()
            .unwrap_or_else(|e| panic!("reading {what}: {e}"));
        let ops =
            kernel_codegen::models(&inputs).unwrap_or_else(|d| panic!("{what}'s models: {d}"));
        let output =
            kernel_codegen::generate(&inputs).unwrap_or_else(|d| panic!("generating {what}: {d}"));
        ops.into_iter()
            .map(|op| {
                let name = op.qualified_name();
                let shaders = output
                    .shaders
                    .iter()
                    .filter(|s| s.op == name)
                    .cloned()
                    .collect();
                Package { op, shaders }
            })
            .collect()
    }

    /// The op models of both dialects and their shaders, generated once for every test.
    fn packages() -> &'static [Package] {
        static PACKAGES: OnceLock<Vec<Package>> = OnceLock::new();
        PACKAGES.get_or_init(generate_packages)
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
        let mut packages = packages_of(&seed, "the seed packages");
        if corpus::PRESENT {
            packages.extend(corpus_packages(&manifest_dir));
        }
        packages
    }

    fn corpus_packages(manifest_dir: &Path) -> Vec<Package> {
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
        packages_of(&config, "the corpus")
    }

    pub fn every_expression() {
        let packages = packages();
        let modules: BTreeSet<&str> = packages.iter().map(|p| p.op.module.as_str()).collect();
        let mut listed: BTreeSet<&str> = generated::SEED_MODULES.iter().copied().collect();
        if corpus::PRESENT {
            listed.extend(generated::CORPUS_MODULES);
        }
        assert_eq!(
            modules, listed,
            "generated.rs's `ops!` must list every op of the seed packages and the corpus"
        );
        let mut report = String::new();
        let mut failures = Vec::new();
        let mut total = Tally::default();
        for (i, package) in packages.iter().enumerate() {
            let op = &package.op;
            let per_variant = if generated::SEED_MODULES.contains(&op.module.as_str()) {
                SEED_ENVS_PER_VARIANT
            } else {
                ENVS_PER_VARIANT
            };
            let envs = per_variant * op.variants.len().max(1);
            let tally = compare::run(package, 0xc0de_0000 + i as u64, envs, &compare::Fault::None);
            report.push_str(&tally.summary(op));
            failures.extend(tally.problems(op));
            total.absorb(&tally);
        }
        eprintln!("{report}{}", total.totals());
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

    pub fn deliberate_faults(module: &str, wrong: &str) {
        let packages = packages();
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
