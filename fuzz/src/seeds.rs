//! The real inputs mutations start from: the repository's seed packages with their hints,
//! each package of the third-party corpus (`$KERNEL_CORPUS_DIR`, else `../shared/corpus`)
//! with the project's hints for it, when the corpus is present, and each of the Hub's
//! packages (`$KERNEL_HUB_DIR`, else `../shared/hub`) with the templates of
//! `examples/hub/packages`, when the Hub's manifests are present.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kernel_codegen::Inputs;

/// The name of the seed that holds the repository's seed packages together.
pub const SEED_PACKAGES: &str = "seed packages";

/// One starting point: a name for reports and the generator's inputs.
#[derive(Debug, Clone)]
pub struct Seed {
    pub name: String,
    pub inputs: Inputs,
}

/// The repository root: `$FUZZ_REPO_ROOT`, else the folder above this crate's (so a built
/// `fuzz` binary can run from a copy of the repository elsewhere).
pub fn repo_root() -> PathBuf {
    if let Some(root) = std::env::var_os("FUZZ_REPO_ROOT") {
        return PathBuf::from(root);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The seed packages, read as `cargo xtask codegen` reads them, display paths relative to
/// the repository root (`packages/com.microsoft.BiasSoftmax/manifest.json`).
pub fn seed_packages() -> Result<Inputs> {
    let mut config = kernel_codegen::Config::new();
    config
        .root(repo_root())
        .packages_in("packages")
        .include_root("packages/_shared")
        .hints_dir("hints")
        .translations(true)
        .emit_rerun_if_changed(false);
    let (inputs, _) = config.read_inputs().context("reading the seed packages")?;
    Ok(inputs)
}

/// The corpus collection folder, when it is there.
pub fn corpus_collection() -> Option<PathBuf> {
    let dir = std::env::var_os("KERNEL_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/corpus"))
        .join("gemma-4");
    dir.is_dir().then_some(dir)
}

/// Every corpus package on its own, with the project's hints for it.
fn corpus_packages(collection: &Path) -> Result<Vec<Seed>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(collection)
        .with_context(|| format!("reading {}", collection.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    dirs.sort();
    let hints = repo_root().join("examples/corpus/hints");
    let mut seeds = Vec::new();
    for dir in dirs {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut config = kernel_codegen::Config::new();
        config
            .root(collection)
            .package(&dir)
            .include_root(collection.join("_shared_assets"))
            .emit_rerun_if_changed(false);
        // Only this package's hints: the generator refuses hints without their package.
        let own = hints.join(format!("{name}.hints.json"));
        let (mut inputs, _) = config
            .read_inputs()
            .with_context(|| format!("reading corpus package {name}"))?;
        if own.is_file() {
            let text = std::fs::read_to_string(&own)
                .with_context(|| format!("reading {}", own.display()))?;
            inputs.packages[0].hints = Some((format!("hints/{name}.hints.json"), text));
        }
        seeds.push(Seed { name, inputs });
    }
    Ok(seeds)
}

/// The folder of the Hub's manifests (`<op>.manifest.json`), when it is there.
fn hub_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("KERNEL_HUB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/hub"));
    dir.is_dir().then_some(dir)
}

/// Every Hub op that has both a manifest in `hub` and templates in `examples/hub/packages`,
/// read as the `hub` crate's build script reads it, each a seed named after the op. Display
/// paths do not depend on where the manifests are, so that a printed case reproduces
/// anywhere: the templates' are relative to the repository, the manifest's is
/// `hub/<op>.manifest.json`.
fn hub_packages(hub: &Path) -> Result<Vec<Seed>> {
    let root = repo_root();
    let templates = Path::new("examples/hub/packages");
    let mut ops: Vec<String> = std::fs::read_dir(root.join(templates))
        .with_context(|| format!("reading {}", root.join(templates).display()))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|op| hub.join(format!("{op}.manifest.json")).is_file())
        .collect();
    ops.sort();
    let mut seeds = Vec::new();
    for op in ops {
        let mut config = kernel_codegen::Config::new();
        config
            .root(&root)
            .package_apart(hub.join(format!("{op}.manifest.json")), templates.join(&op))
            .emit_rerun_if_changed(false);
        let (mut inputs, _) = config
            .read_inputs()
            .with_context(|| format!("reading the Hub package {op}"))?;
        for package in &mut inputs.packages {
            package.manifest_file = Some(format!("hub/{op}.manifest.json"));
        }
        seeds.push(Seed { name: op, inputs });
    }
    Ok(seeds)
}

/// The seeds besides the repository's seed packages: the corpus's and the Hub's packages,
/// those that are present.
fn outside_seeds() -> Result<Vec<Seed>> {
    let mut seeds = Vec::new();
    if let Some(collection) = corpus_collection() {
        seeds.extend(corpus_packages(&collection)?);
    }
    if let Some(hub) = hub_dir() {
        seeds.extend(hub_packages(&hub)?);
    }
    Ok(seeds)
}

/// The seed packages together, then every corpus package and every Hub package present.
pub fn all() -> Result<Vec<Seed>> {
    let mut seeds = vec![Seed {
        name: SEED_PACKAGES.to_owned(),
        inputs: seed_packages()?,
    }];
    seeds.extend(outside_seeds()?);
    Ok(seeds)
}

/// The seed a case starts from: the seed packages, or the Hub package (an op with templates
/// in `examples/hub/packages`) or corpus package it names; `None` when its Hub manifest or
/// the corpus is not here.
pub fn for_case(from: Option<&str>) -> Result<Option<Inputs>> {
    let Some(name) = from else {
        return Ok(Some(seed_packages()?));
    };
    let hub_op = repo_root()
        .join("examples/hub/packages")
        .join(name)
        .is_dir();
    let seeds = if hub_op {
        match hub_dir().filter(|hub| hub.join(format!("{name}.manifest.json")).is_file()) {
            Some(hub) => hub_packages(&hub)?,
            None => return Ok(None),
        }
    } else {
        match corpus_collection() {
            Some(collection) => corpus_packages(&collection)?,
            None => return Ok(None),
        }
    };
    let source = if hub_op { "Hub" } else { "corpus" };
    let seed = seeds
        .into_iter()
        .find(|s| s.name == name)
        .with_context(|| format!("no {source} package `{name}`"))?;
    Ok(Some(seed.inputs))
}
