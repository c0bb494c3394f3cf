//! The build-script API, in the manner of prost-build: a [`Config`] names package folders, the
//! include root, hints, host checks, the runtime path and the output folder; [`Config::generate`]
//! reads them, runs the pure [`crate::generate`] and writes what changed, and
//! [`Config::check`] only compares. This is the one place codegen touches the file system.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), kernel_codegen::ConfigError> {
//!     // Into `$OUT_DIR/kernels`, printing `cargo:rerun-if-changed` for every input.
//!     kernel_codegen::Config::new()
//!         .packages_in("kernels")
//!         .include_root("kernels/_shared")
//!         .generate()?;
//!     Ok(())
//! }
//! // lib.rs: pub mod kernels { include!(concat!(env!("OUT_DIR"), "/kernels/mod.rs")); }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

pub use crate::config_error::ConfigError;
use crate::output_dir::{self, Existing};
pub use crate::output_dir::{HintsFile, suggested_hints_files, write_suggested_hints};
use crate::{Inputs, Output, Package};

/// What a run read, generated and changed.
#[derive(Debug)]
pub struct Report {
    /// The generator's result (files, shaders, notes).
    pub output: Output,
    /// Packages read.
    pub packages: usize,
    /// Files written (with [`Config::generate`]) or found stale (with [`Config::check`]).
    pub written: Vec<String>,
    /// Files the generator wrote earlier that the run no longer generates: removed, or
    /// listed.
    pub removed: Vec<String>,
    /// Other files in the output folder (without the `@generated` header): left alone.
    pub foreign: Vec<String>,
    /// Every input file read, for `cargo:rerun-if-changed`.
    pub inputs: Vec<PathBuf>,
}

/// Where packages, templates and hints come from, and where the generated module goes.
#[derive(Debug, Clone, Default)]
pub struct Config {
    root: Option<PathBuf>,
    packages: Vec<PathBuf>,
    /// Packages whose manifest is a file of its own: (manifest, template folder).
    manifests_apart: Vec<(PathBuf, PathBuf)>,
    package_roots: Vec<PathBuf>,
    include_root: Option<PathBuf>,
    hints_dirs: Vec<PathBuf>,
    host_checks: BTreeMap<String, String>,
    runtime_path: Option<String>,
    out_dir: Option<PathBuf>,
    rerun_if_changed: Option<bool>,
    translate: bool,
    strict: bool,
}

impl Config {
    pub fn new() -> Self {
        Self::default()
    }

    /// The folder relative paths given to this config are relative to (default: the current
    /// folder). Diagnostics and generated headers name files relative to it.
    pub fn root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.root = Some(dir.into());
        self
    }

    fn path(&self, path: &Path) -> PathBuf {
        match &self.root {
            Some(root) => root.join(path),
            None => path.to_path_buf(),
        }
    }

    /// `path` as diagnostics and generated headers show it: relative to the root,
    /// `/`-separated, without `.` parts, repeated or trailing separators (absolute paths stay
    /// absolute), so the include rules can compare folders as text.
    fn display(&self, path: &Path) -> String {
        let shown = self
            .root
            .as_deref()
            .and_then(|root| path.strip_prefix(root).ok())
            .unwrap_or(path);
        let mut text = String::new();
        for part in shown.components() {
            match part {
                std::path::Component::RootDir => text.push('/'),
                std::path::Component::CurDir => {}
                other => {
                    if !text.is_empty() && !text.ends_with('/') {
                        text.push('/');
                    }
                    text.push_str(&other.as_os_str().to_string_lossy());
                }
            }
        }
        text
    }

    /// One package: a folder holding `manifest.json` and the templates it names.
    pub fn package(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.packages.push(dir.into());
        self
    }

    /// One package whose manifest is kept apart from its templates: `manifest` (a JSON file
    /// of any name, read unchanged) with the templates in `templates`. For a manifest from
    /// elsewhere, such as a Hub package's, whose templates are written here. Hints match it
    /// by the template folder's name.
    pub fn package_apart(
        &mut self,
        manifest: impl Into<PathBuf>,
        templates: impl Into<PathBuf>,
    ) -> &mut Self {
        self.manifests_apart
            .push((manifest.into(), templates.into()));
        self
    }

    /// Every package directly inside `dir` (each subfolder with a `manifest.json`), in name
    /// order; subfolders without one (an include root, say) are skipped.
    pub fn packages_in(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.package_roots.push(dir.into());
        self
    }

    /// The folder shared templates are included from.
    pub fn include_root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.include_root = Some(dir.into());
        self
    }

    /// A folder of implementation hints, `<domain>.<name>.hints.json` per op: kept beside the
    /// packages, so a package from elsewhere stays unchanged.
    pub fn hints_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.hints_dirs.push(dir.into());
        self
    }

    /// Registers a hand-written host-side check for `op` (`domain.name`): the Rust path of a
    /// `fn(&[ArgView], &Attrs) -> Result<(), OpError>` the generated `plan` calls.
    pub fn host_check(&mut self, op: impl Into<String>, path: impl Into<String>) -> &mut Self {
        self.host_checks.insert(op.into(), path.into());
        self
    }

    /// The path of the runtime crate in generated code (default `::kernel_runtime`).
    pub fn runtime_path(&mut self, path: impl Into<String>) -> &mut Self {
        self.runtime_path = Some(path.into());
        self
    }

    /// The folder the generated `mod.rs`, op modules and shaders go to (default
    /// `$OUT_DIR/kernels`).
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for every input (default: when `OUT_DIR`
    /// is set, that is, inside a build script). They are printed when the run ends, after
    /// the error of a run that fails, so the error leads the build script's output.
    pub fn emit_rerun_if_changed(&mut self, on: bool) -> &mut Self {
        self.rerun_if_changed = Some(on);
        self
    }

    /// Whether to translate every shader with naga's native back ends as well (default: off;
    /// see [`Inputs::translate`]).
    pub fn translations(&mut self, on: bool) -> &mut Self {
        self.translate = on;
        self
    }

    /// Whether a static combination of a pass that does not render or validate fails the run
    /// (default: off; it is left out with a warning, see [`Inputs::strict`]). Inside a build
    /// script the warnings are printed as `cargo:warning`.
    pub fn strict(&mut self, on: bool) -> &mut Self {
        self.strict = on;
        self
    }

    /// Reads every input into the pure generator's [`Inputs`]; also returns the files read.
    ///
    /// Only regular files of at most 16 MiB are read; a link is followed only to a file inside
    /// the folder it was found in.
    pub fn read_inputs(&self) -> Result<(Inputs, Vec<PathBuf>), ConfigError> {
        let mut read = Vec::new();
        let inputs = self.read_into(&mut read, &mut Vec::new())?;
        Ok((inputs, read))
    }

    /// [`Config::read_inputs`], recording each file as it is read (so a failed run can still
    /// name what it read) and what is worth a note (hints for a package not in this build).
    fn read_into(
        &self,
        read: &mut Vec<PathBuf>,
        notes: &mut Vec<String>,
    ) -> Result<Inputs, ConfigError> {
        // (folder, the manifest where it is not the folder's `manifest.json`)
        let mut dirs: Vec<(PathBuf, Option<PathBuf>)> = (self.packages.iter())
            .map(|p| (package_folder(&self.path(p)), None))
            .chain(
                (self.manifests_apart.iter())
                    .map(|(manifest, dir)| (self.path(dir), Some(self.path(manifest)))),
            )
            .collect();
        for root in &self.package_roots {
            let root = self.path(root);
            read.push(root.clone());
            // Any entry named manifest.json marks a package: a folder or a special file in
            // its place is then an error at reading rather than a package skipped.
            let found: Vec<PathBuf> = list_dir(&root)?
                .into_iter()
                .filter(|p| p.is_dir())
                .map(|p| package_folder(&p))
                .filter(|p| fs::symlink_metadata(p.join("manifest.json")).is_ok())
                .collect();
            dirs.extend(found.into_iter().map(|dir| (dir, None)));
        }
        if dirs.is_empty() {
            let mut searched: Vec<PathBuf> =
                self.package_roots.iter().map(|p| self.path(p)).collect();
            searched.extend(self.packages.iter().map(|p| self.path(p)));
            searched.extend(self.manifests_apart.iter().map(|(m, _)| self.path(m)));
            return Err(ConfigError::NoPackages { searched });
        }
        let mut hints = BTreeMap::new();
        for dir in &self.hints_dirs {
            let dir = self.path(dir);
            read.push(dir.clone());
            for path in list_dir(&dir)? {
                let Some(op) = file_name(&path).strip_suffix(".hints.json") else {
                    continue;
                };
                let text = read_file(&path, &dir, read)?;
                hints.insert(op.to_owned(), (self.display(&path), text));
            }
        }
        let mut inputs = Inputs {
            include_root: self
                .include_root
                .as_deref()
                .map(|r| self.display(&self.path(r))),
            host_checks: self.host_checks.clone(),
            runtime_path: self.runtime_path.clone().unwrap_or_default(),
            translate: self.translate,
            strict: self.strict,
            ..Inputs::default()
        };
        let mut used_hints = BTreeSet::new();
        let mut metadata_problems = crate::diag::Diagnostics::default();
        for (dir, apart) in &dirs {
            let manifest = match apart {
                // Read where it is, confined to its own folder.
                Some(file) => {
                    let folder = file.parent().unwrap_or(Path::new("."));
                    read_file(file, folder, read)?
                }
                None => read_file(&dir.join("manifest.json"), dir, read)?,
            };
            for path in list_files(dir)? {
                if file_name(&path).ends_with(".jinja") {
                    let text = read_file(&path, dir, read)?;
                    inputs.templates.insert(self.display(&path), text);
                }
            }
            if apart.is_none() {
                self.check_metadata(dir, &manifest, read, &mut metadata_problems);
            }
            // Hints are matched by folder name (`<domain>.<name>`, the Hub's layout; for a
            // Hub repository, the repository's folder).
            let op = hints_name(dir);
            let package_hints = hints.get(op).cloned();
            if package_hints.is_some() {
                used_hints.insert(op.to_owned());
            }
            inputs.packages.push(Package {
                dir: self.display(dir),
                manifest,
                hints: package_hints,
                manifest_file: apart.as_deref().map(|file| self.display(file)),
            });
        }
        if !metadata_problems.0.is_empty() {
            return Err(ConfigError::Codegen {
                diagnostics: metadata_problems,
            });
        }
        // One hints folder may serve several builds, each of some of its packages.
        for (op, (path, _)) in hints.iter().filter(|(op, _)| !used_hints.contains(*op)) {
            notes.push(format!(
                "{path}: not used, no package folder named `{op}` in this build"
            ));
        }
        if let Some(root) = &self.include_root {
            let root = self.path(root);
            read.push(root.clone());
            for path in list_files(&root)? {
                if file_name(&path).ends_with(".jinja") {
                    let text = read_file(&path, &root, read)?;
                    inputs.templates.insert(self.display(&path), text);
                }
            }
        }
        Ok(inputs)
    }

    /// Checks the `metadata.json` a package folder laid out as a Hub repository holds beside
    /// its manifest, as the Hub's runtime does before loading it: each problem a diagnostic
    /// at the metadata's JSON path (a digest that differs names its file).
    fn check_metadata(
        &self,
        dir: &Path,
        manifest: &str,
        read: &mut Vec<PathBuf>,
        problems: &mut crate::diag::Diagnostics,
    ) {
        let path = dir.join("metadata.json");
        if fs::symlink_metadata(&path).is_err() {
            return;
        }
        let shown = self.display(&path);
        let text = match read_file(&path, dir, read) {
            Ok(text) => text,
            Err(err) => {
                // The diagnostic names the file already.
                problems.push(crate::diag::Diagnostic::new(&shown, "", err.reason()));
                return;
            }
        };
        // A manifest that does not parse is reported by the generator.
        let Ok(hub) = crate::manifest::hub::parse(manifest) else {
            return;
        };
        // Read as templates are (every link on the way confined to the package), so a
        // digest is never computed for, nor printed of, a file outside it.
        let file = |name: &str| -> Result<Vec<u8>, String> {
            let relative = Path::new(name);
            let inside = relative
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            let absent = format!("the package has no file `{name}`");
            if !inside {
                return Err(absent);
            }
            let path = dir.join(relative);
            match output_dir::read_input(&path, dir) {
                Ok(text) => Ok(text.into_bytes()),
                Err(ConfigError::Io { error, .. })
                    if error.kind() == std::io::ErrorKind::NotFound =>
                {
                    Err(absent)
                }
                Err(ConfigError::Layout { path: at, reason }) if at == path => {
                    Err(format!("`{name}`: {reason}"))
                }
                Err(err) => Err(format!("`{name}`: {err}")),
            }
        };
        for (at, message) in crate::manifest::hub::metadata::check(&text, &hub, &file) {
            problems.push(crate::diag::Diagnostic::new(&shown, at, message));
        }
    }

    /// Generates and writes the files that changed into the output folder, removing the
    /// files there that the generator wrote earlier and no longer generates; prints
    /// `cargo:rerun-if-changed` when asked.
    ///
    /// Files the generator did not write (without its `@generated` header) are never
    /// replaced or removed: one in the way of a generated file is an error, the others are
    /// left alone and listed in [`Report::foreign`]. An output folder holding an input is
    /// refused.
    pub fn generate(&self) -> Result<Report, ConfigError> {
        self.telling_cargo(|read| {
            let out_dir = self.output_folder()?;
            let (report, in_the_way) = self.run(Some(&out_dir), read)?;
            if let Some(path) = in_the_way.into_iter().next() {
                return Err(ConfigError::NotGenerated { path });
            }
            let stale: BTreeSet<&str> = report.written.iter().map(String::as_str).collect();
            let files: Vec<(&str, &str)> = (report.output.files.iter())
                .filter(|f| stale.contains(f.path.as_str()))
                .map(|f| (f.path.as_str(), f.contents.as_str()))
                .collect();
            output_dir::write_all(&out_dir, &files)?;
            for path in &report.removed {
                let target = out_dir.join(path);
                fs::remove_file(&target).map_err(|error| output_dir::io(&target, error))?;
                // Folders the removal emptied go too; this fails while one still holds files.
                let mut folder = target.parent();
                while let Some(dir) = folder.filter(|d| d.starts_with(&out_dir) && *d != out_dir) {
                    if fs::remove_dir(dir).is_err() {
                        break;
                    }
                    folder = dir.parent();
                }
            }
            Ok(report)
        })
    }

    /// Generates in memory and compares with the output folder: `Err(Stale)` naming every
    /// file that differs, and every file the generator wrote that it no longer generates.
    pub fn check(&self) -> Result<Report, ConfigError> {
        self.telling_cargo(|read| {
            let out_dir = self.output_folder()?;
            let (report, _) = self.run(Some(&out_dir), read)?;
            if !report.written.is_empty() || !report.removed.is_empty() {
                return Err(ConfigError::Stale {
                    stale: report.written,
                    orphaned: report.removed,
                });
            }
            Ok(report)
        })
    }

    /// Reads and generates without an output folder, writing nothing and comparing with
    /// nothing: whether the packages build, and if not, the errors (with the hints files
    /// they suggest). The report lists no written, removed or foreign files.
    pub fn generate_in_memory(&self) -> Result<Report, ConfigError> {
        self.telling_cargo(|read| Ok(self.run(None, read)?.0))
    }

    /// Reads and generates the packages (in memory) and checks every op for defects its
    /// users would meet ([`crate::check`]): variants that never run, valid calls no variant
    /// accepts, plans that fail, bindings smaller than their element type (each with a
    /// witness call), and combinations left out because they do not render or validate.
    pub fn check_packages(
        &self,
        options: crate::check::Options,
    ) -> Result<Vec<crate::check::OpReport>, ConfigError> {
        let (inputs, _) = self.read_inputs()?;
        let codegen = |diagnostics| ConfigError::Codegen { diagnostics };
        let ops = crate::models(&inputs).map_err(codegen)?;
        let output = crate::generate(&inputs).map_err(codegen)?;
        let mut reports = crate::check::check_ops(&ops, options);
        for finding in crate::check::left_out_findings(&ops, &output.left_out) {
            if let Some(report) = reports.iter_mut().find(|r| r.op == finding.op) {
                report.findings.push(finding);
            }
        }
        Ok(reports)
    }

    fn output_folder(&self) -> Result<PathBuf, ConfigError> {
        Ok(match &self.out_dir {
            Some(dir) => self.path(dir),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(ConfigError::NoOutDir)?)
                .join("kernels"),
        })
    }

    /// Runs `body` with the list of files it reads, then prints `cargo:rerun-if-changed` for
    /// each when asked, after the run's warnings (`cargo:warning`, which cargo shows for a
    /// build script that succeeds). Cargo shows a failed build script's output as one block,
    /// where a hundred rerun lines would bury the error: the error is printed first.
    fn telling_cargo(
        &self,
        body: impl FnOnce(&mut Vec<PathBuf>) -> Result<Report, ConfigError>,
    ) -> Result<Report, ConfigError> {
        let mut read = Vec::new();
        let result = body(&mut read);
        let emit = (self.rerun_if_changed).unwrap_or_else(|| std::env::var_os("OUT_DIR").is_some());
        if emit {
            match &result {
                Err(err) => println!("error: {err}\n"),
                Ok(report) => {
                    for warning in &report.output.warnings {
                        for line in warning.lines() {
                            println!("cargo:warning={line}");
                        }
                    }
                }
            }
            for path in &read {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        result
    }

    /// Reads, generates and diffs against the output folder when there is one: the report
    /// (with the paths whose contents differ as `written`) and the files not written by the
    /// generator that are where a generated file goes.
    fn run(
        &self,
        out_dir: Option<&Path>,
        read: &mut Vec<PathBuf>,
    ) -> Result<(Report, Vec<PathBuf>), ConfigError> {
        let mut notes = Vec::new();
        let inputs = self.read_into(read, &mut notes)?;
        if let Some(out_dir) = out_dir {
            output_dir::check_holds_no_input(out_dir, read)?;
        }
        let mut output =
            crate::generate(&inputs).map_err(|diagnostics| ConfigError::Codegen { diagnostics })?;
        output.notes.extend(notes);
        let mut report = Report {
            packages: inputs.packages.len(),
            output,
            written: Vec::new(),
            removed: Vec::new(),
            foreign: Vec::new(),
            inputs: read.clone(),
        };
        let Some(out_dir) = out_dir else {
            return Ok((report, Vec::new()));
        };
        let wanted: BTreeSet<&str> = (report.output.files.iter())
            .map(|f| f.path.as_str())
            .collect();
        let on_disk = if out_dir.exists() {
            list_files(out_dir)?
        } else {
            Vec::new()
        };
        for path in &on_disk {
            let Ok(relative) = path.strip_prefix(out_dir) else {
                continue;
            };
            let relative = relative.to_string_lossy().replace('\\', "/");
            if wanted.contains(relative.as_str()) {
                continue;
            }
            match output_dir::existing(path)? {
                Existing::Generated => report.removed.push(relative),
                Existing::Foreign => report.foreign.push(relative),
                Existing::Nothing => {}
            }
        }
        let mut in_the_way = Vec::new();
        for file in &report.output.files {
            let target = out_dir.join(&file.path);
            match output_dir::existing(&target)? {
                Existing::Generated if output_dir::holds(&target, &file.contents)? => continue,
                Existing::Foreign => in_the_way.push(target),
                _ => {}
            }
            report.written.push(file.path.clone());
        }
        Ok((report, in_the_way))
    }
}

fn read_file(path: &Path, confine: &Path, read: &mut Vec<PathBuf>) -> Result<String, ConfigError> {
    read.push(path.to_path_buf());
    output_dir::read_input(path, confine)
}

/// Where a package's manifest is: `dir` itself, or, for a folder laid out as a Hub repository
/// (no `manifest.json` of its own), its `build/webgpu/`.
fn package_folder(dir: &Path) -> PathBuf {
    let hub = dir.join("build").join("webgpu");
    if fs::symlink_metadata(dir.join("manifest.json")).is_err()
        && fs::symlink_metadata(hub.join("manifest.json")).is_ok()
    {
        hub
    } else {
        dir.to_path_buf()
    }
}

/// The name hints are matched by: the package folder's, or the Hub repository's for its
/// `build/webgpu/` folder.
fn hints_name(dir: &Path) -> &str {
    match (dir.parent(), file_name(dir)) {
        (Some(build), "webgpu") if file_name(build) == "build" => {
            build.parent().map_or("webgpu", file_name)
        }
        _ => file_name(dir),
    }
}

/// The entries of `dir`, sorted.
fn list_dir(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let entries = fs::read_dir(dir).map_err(|error| output_dir::io(dir, error))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|error| output_dir::io(dir, error))?;
        out.push(entry.path());
    }
    out.sort();
    Ok(out)
}

/// Every file under `dir`, recursively, sorted; links to folders are not entered.
fn list_files(dir: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for path in list_dir(&current)? {
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}
