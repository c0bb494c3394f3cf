//! The generator's file handling under fuzzing: a (mutated) input written to a scratch folder
//! and generated through `kernel_codegen::Config`, the way a build script or `kernels-codegen` does,
//! in one of several layouts: absolute paths, paths relative to a root, an output folder
//! holding a user's files, the output folder set to the package itself, a FIFO in place of a
//! template, the op renamed to the root module's name, suggested hints named from the
//! manifest's `domain` (made hostile) with a link where one goes, and `metadata.json` digests
//! of a file through a link to an outside folder and of a FIFO.
//!
//! Must hold: no panic, no hang; the same acceptance as the in-memory generator (paths
//! spelled another way change nothing); a user's files in the output folder are left as they
//! were; an output folder holding inputs is refused with every input unchanged; a special file
//! is an error naming it; a refused run writes nothing; hints are written only directly inside
//! their folder and never through a link; no digest of a file outside a package is printed.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kernel_codegen::config::write_suggested_hints;
use kernel_codegen::{Config, ConfigError, Inputs};

use crate::drive;

/// The layouts, drawn in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Absolute,
    RelativeToRoot,
    OutputIsThePackage,
    FifoTemplate,
    /// The first package's op renamed `Mod`, whose module file would be the root's `mod.rs`.
    OpNamedMod,
    /// Suggested hints for the manifest's own op and for its `domain` made to leave the
    /// folder, with a dangling link where the op's file goes.
    SuggestedHints,
    /// `metadata.json` beside each manifest, with digests of a file reached through a link
    /// to a folder outside the package and of a FIFO.
    MetadataLinks,
}

impl Layout {
    pub const ALL: [Layout; 7] = [
        Layout::Absolute,
        Layout::RelativeToRoot,
        Layout::OutputIsThePackage,
        Layout::FifoTemplate,
        Layout::OpNamedMod,
        Layout::SuggestedHints,
        Layout::MetadataLinks,
    ];
}

/// A user's files kept in the output folder, which must survive every run.
const FOREIGN: &[(&str, &str)] = &[
    ("notes.txt", "keep me\n"),
    ("main.rs", "fn main() {}\n"),
    ("nested/todo.md", "- keep\n"),
];

/// Where `inputs` were written: the scratch root and each package's folder under it.
struct Written {
    root: PathBuf,
    packages: Vec<PathBuf>,
    include_root: Option<PathBuf>,
    hints: Option<PathBuf>,
    templates: Vec<PathBuf>,
}

/// Writes `inputs` under a new scratch folder: packages under `packages/<folder>`, the include
/// root as `shared/`, hints under `hints/` (named by their package's folder, as `Config`
/// matches them).
fn write(inputs: &Inputs) -> std::io::Result<Written> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let root = std::env::temp_dir().join(format!(
        "fuzz-config-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root)?;
    let mut written = Written {
        root: root.clone(),
        packages: Vec::new(),
        include_root: None,
        hints: None,
        templates: Vec::new(),
    };
    let place = |display: &str| -> Option<PathBuf> {
        for package in &inputs.packages {
            if let Some(rest) = display.strip_prefix(&format!("{}/", package.dir)) {
                let folder = package.dir.rsplit('/').next().unwrap_or("package");
                return Some(root.join("packages").join(folder).join(rest));
            }
        }
        let shared = inputs.include_root.as_deref()?;
        let rest = display.strip_prefix(&format!("{shared}/"))?;
        Some(root.join("shared").join(rest))
    };
    for package in &inputs.packages {
        let folder = package.dir.rsplit('/').next().unwrap_or("package");
        let dir = root.join("packages").join(folder);
        fs::create_dir_all(&dir)?;
        fs::write(dir.join("manifest.json"), &package.manifest)?;
        if let Some((_, text)) = &package.hints {
            let hints = root.join("hints");
            fs::create_dir_all(&hints)?;
            fs::write(hints.join(format!("{folder}.hints.json")), text)?;
            written.hints = Some(hints);
        }
        written.packages.push(dir);
    }
    if inputs.include_root.is_some() {
        let shared = root.join("shared");
        fs::create_dir_all(&shared)?;
        written.include_root = Some(shared);
    }
    for (display, text) in &inputs.templates {
        // Templates outside every package and the include root cannot be named by a path.
        let Some(path) = place(display) else { continue };
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&path, text)?;
        written.templates.push(path);
    }
    Ok(written)
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => stack.push(path),
                Ok(m) if m.is_file() => {
                    out.push((path.clone(), fs::read(&path).unwrap_or_default()))
                }
                _ => out.push((path, Vec::new())),
            }
        }
    }
    out.sort();
    out
}

/// Runs `inputs` through `Config` in `layout`; `accepted` is the in-memory generator's
/// verdict on the same inputs. `Err` when something that must hold does not.
pub fn check(
    inputs: &Inputs,
    layout: Layout,
    accepted: bool,
    hang: Duration,
) -> Result<(), String> {
    let written = write(inputs).map_err(|e| format!("cannot write the scratch folder: {e}"))?;
    let result = check_written(&written, layout, accepted, hang);
    let _ = fs::remove_dir_all(&written.root);
    result.map_err(|e| format!("{layout:?}: {e}"))
}

fn check_written(
    w: &Written,
    layout: Layout,
    accepted: bool,
    hang: Duration,
) -> Result<(), String> {
    let out = w.root.join("out");
    fs::create_dir_all(out.join("nested")).map_err(|e| e.to_string())?;
    for (name, text) in FOREIGN {
        fs::write(out.join(name), text).map_err(|e| e.to_string())?;
    }
    let mut config = Config::new();
    config.emit_rerun_if_changed(false);
    let relative = layout == Layout::RelativeToRoot;
    let spell = |path: &Path| -> PathBuf {
        if relative {
            path.strip_prefix(&w.root)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| path.to_path_buf())
        } else {
            path.to_path_buf()
        }
    };
    if relative {
        config.root(&w.root);
    }
    for package in &w.packages {
        config.package(spell(package));
    }
    if let Some(shared) = &w.include_root {
        config.include_root(spell(shared));
    }
    if let Some(hints) = &w.hints {
        config.hints_dir(spell(hints));
    }
    let before = snapshot(&w.root);
    match layout {
        Layout::Absolute | Layout::RelativeToRoot => {
            config.out_dir(spell(&out));
            let result = drive::guarded(hang, move || config.generate())?;
            match (&result, accepted) {
                (Ok(report), true) => {
                    for file in &report.output.files {
                        let text = fs::read_to_string(out.join(&file.path))
                            .map_err(|e| format!("generated {} is not there: {e}", file.path))?;
                        if text != file.contents {
                            return Err(format!("{} differs from what was generated", file.path));
                        }
                    }
                }
                (Err(ConfigError::Codegen { .. }), false) => {}
                (Ok(_), false) => {
                    return Err("accepted, though the generator rejects it".to_owned());
                }
                (Err(e), _) => {
                    return Err(format!(
                        "{} (the in-memory generator {} it)",
                        e,
                        if accepted { "accepts" } else { "rejects" }
                    ));
                }
            }
            for (name, text) in FOREIGN {
                let now = fs::read_to_string(out.join(name)).unwrap_or_default();
                if now != *text {
                    return Err(format!(
                        "the user's {name} in the output folder was changed or removed"
                    ));
                }
            }
        }
        Layout::OutputIsThePackage => {
            let Some(package) = w.packages.first() else {
                return Ok(());
            };
            config.out_dir(package);
            let result = drive::guarded(hang, move || config.generate())?;
            if !matches!(result, Err(ConfigError::OutputHoldsInput { .. })) {
                return Err(format!(
                    "an output folder holding the package was not refused: {result:?}"
                ));
            }
            if snapshot(&w.root) != before {
                return Err("a refused run changed files".to_owned());
            }
        }
        Layout::FifoTemplate => {
            #[cfg(unix)]
            {
                let Some(template) = w.templates.first() else {
                    return Ok(());
                };
                fs::remove_file(template).map_err(|e| e.to_string())?;
                let made = std::process::Command::new("mkfifo").arg(template).status();
                if !made.is_ok_and(|s| s.success()) {
                    return Ok(());
                }
                config.out_dir(&out);
                let result = drive::guarded(hang, move || config.generate())?;
                let named =
                    matches!(&result, Err(ConfigError::Layout { path, .. }) if path == template);
                if !named {
                    return Err(format!(
                        "a FIFO template was not refused by name: {result:?}"
                    ));
                }
            }
        }
        Layout::OpNamedMod => {
            config.out_dir(&out);
            op_named_mod(w, config, &out, accepted, hang)?;
        }
        Layout::SuggestedHints => suggested_hints(w, config, hang)?,
        Layout::MetadataLinks => {
            #[cfg(unix)]
            {
                config.out_dir(&out);
                metadata_links(w, config, hang)?;
            }
        }
    }
    Ok(())
}

/// The manifest of `package` as JSON, when it parses as an object.
fn manifest_json(package: &Path) -> Option<serde_json::Map<String, serde_json::Value>> {
    let text = fs::read_to_string(package.join("manifest.json")).ok()?;
    match serde_json::from_str(&text).ok()? {
        serde_json::Value::Object(map) => Some(map),
        _ => None,
    }
}

/// Renames the first package's op `Mod` over an output folder holding an earlier generated
/// `mod.rs`: refused (at the manifest's `name` when the input was otherwise accepted), and
/// the output folder as it was, without `.partial` files.
fn op_named_mod(
    w: &Written,
    config: Config,
    out: &Path,
    accepted: bool,
    hang: Duration,
) -> Result<(), String> {
    let Some(package) = w.packages.first() else {
        return Ok(());
    };
    let Some(mut manifest) = manifest_json(package) else {
        return Ok(());
    };
    if !manifest
        .get("name")
        .is_some_and(serde_json::Value::is_string)
    {
        return Ok(());
    }
    manifest.insert("name".to_owned(), "Mod".into());
    let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
    fs::write(package.join("manifest.json"), text).map_err(|e| e.to_string())?;
    let earlier = format!("// {} earlier\n", kernel_codegen::GENERATED_MARK);
    fs::write(out.join("mod.rs"), earlier).map_err(|e| e.to_string())?;
    let before = snapshot(out);
    let result = drive::guarded(hang, move || config.generate())?;
    let Err(err) = result else {
        return Err("an op named `Mod` was accepted".to_owned());
    };
    if snapshot(out) != before {
        return Err(format!("a refused run changed the output folder: {err}"));
    }
    let at_name = match &err {
        ConfigError::Codegen { diagnostics } => {
            (diagnostics.0.iter()).any(|d| d.path == "name" && d.message.contains("root module"))
        }
        _ => false,
    };
    if accepted && w.hints.is_none() && !at_name {
        return Err(format!(
            "an op named `Mod` was not refused at `name`: {err}"
        ));
    }
    Ok(())
}

/// The suggested hints of the run's own errors, plus entries for the manifest's op and for
/// its `domain` made to leave the folder, written beside a dangling link where the op's file
/// goes: every refusal typed, and nothing written outside the folder or through the link.
fn suggested_hints(w: &Written, config: Config, hang: Duration) -> Result<(), String> {
    let Some(package) = w.packages.first() else {
        return Ok(());
    };
    let text = |key: &str| {
        manifest_json(package)
            .and_then(|m| m.get(key).and_then(|v| v.as_str()).map(str::to_owned))
            .unwrap_or_default()
    };
    let op = format!("{}.{}", text("domain"), text("name"));
    let mut diagnostics = match drive::guarded(hang, move || config.generate_in_memory())? {
        Err(ConfigError::Codegen { diagnostics }) => diagnostics,
        _ => kernel_codegen::Diagnostics::default(),
    };
    let suggest = |op: &str| {
        let mut diagnostic = kernel_codegen::Diagnostic::new("x", "", "suggests");
        diagnostic.suggestion = Some(Box::new(kernel_codegen::Specialisation {
            op: op.to_owned(),
            variant: "main".to_owned(),
            key: "args.n".to_owned(),
            values: vec![1],
        }));
        diagnostic
    };
    let dir = w.root.join("hints-out/a/b");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let link = dir.join(format!("{op}.hints.json"));
    let plain = link.parent() == Some(dir.as_path());
    #[cfg(unix)]
    if plain {
        let _ = std::os::unix::fs::symlink("../elsewhere.json", &link);
    }
    diagnostics.push(suggest(&op));
    let before = snapshot(&w.root);
    let result = write_suggested_hints(&diagnostics, &dir);
    // A link in place is refused (an op name no file can have fails as it may).
    if plain && result.is_ok() {
        return Err(format!(
            "a link where a hints file goes was not refused: {result:?}"
        ));
    }
    if snapshot(&w.root) != before {
        return Err(format!("a refused hints write changed files: {result:?}"));
    }
    for hostile in [
        format!("../../{op}"),
        format!("{}/{op}", w.root.join("absolute").display()),
        format!("{op}\n"),
    ] {
        let mut diagnostics = diagnostics.clone();
        diagnostics.push(suggest(&hostile));
        let result = write_suggested_hints(&diagnostics, &dir);
        if !matches!(
            result,
            Err(ConfigError::HintsFileName { .. } | ConfigError::Layout { .. })
        ) {
            return Err(format!(
                "hints for op {hostile:?} were not refused: {result:?}"
            ));
        }
        if snapshot(&w.root) != before {
            return Err(format!(
                "hints for op {hostile:?} changed files: {result:?}"
            ));
        }
    }
    Ok(())
}

/// A `metadata.json` beside each manifest listing digests of `out/secret` (through a link to
/// a folder outside the package) and of a FIFO: the outside file's digest is never printed,
/// and each entry is refused with its reason.
#[cfg(unix)]
fn metadata_links(w: &Written, config: Config, hang: Duration) -> Result<(), String> {
    let outside = w.root.join("elsewhere");
    fs::create_dir_all(&outside).map_err(|e| e.to_string())?;
    let secret = "outside the package\n";
    fs::write(outside.join("secret"), secret).map_err(|e| e.to_string())?;
    for package in &w.packages {
        let Some(manifest) = manifest_json(package) else {
            continue;
        };
        let field = |key: &str| manifest.get(key).and_then(|v| v.as_str()).unwrap_or("");
        let metadata = serde_json::json!({
            "name": format!("{}.{}", field("domain"), field("name")),
            "backend": {"type": "webgpu"},
            "digest": {"algorithm": "sha256", "files": {
                "manifest.json": "", "out/secret": "", "fifo": "",
            }},
            "webgpu": {"manifestSpec": "2.1", "variants": {}},
        });
        fs::write(package.join("metadata.json"), metadata.to_string())
            .map_err(|e| e.to_string())?;
        let _ = std::os::unix::fs::symlink(&outside, package.join("out"));
        let _ = std::process::Command::new("mkfifo")
            .arg(package.join("fifo"))
            .status();
    }
    let result = drive::guarded(hang, move || config.generate())?;
    let shown = match &result {
        Ok(report) => format!("{:?}", report.output.notes),
        Err(err) => err.to_string(),
    };
    if shown.contains("`out/secret` has sha256") {
        return Err(format!(
            "a digest through a link out of the package: {shown}"
        ));
    }
    if let Err(ConfigError::Codegen { diagnostics }) = &result {
        for d in &diagnostics.0 {
            let refused = match d.path.as_str() {
                "digest.files.out/secret" => d.message.contains("outside"),
                "digest.files.fifo" => d.message.contains("not a regular file (a FIFO)"),
                _ => true,
            };
            if !refused {
                return Err(format!("a digest entry without its reason: {d}"));
            }
        }
    }
    Ok(())
}
