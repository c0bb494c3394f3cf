//! The generator's file handling under fuzzing: a (mutated) input written to a scratch folder
//! and generated through `kernel_codegen::Config`, the way a build script or `kernels-codegen` does,
//! in one of several layouts: absolute paths, paths relative to a root, an output folder
//! holding a user's files, the output folder set to the package itself, a FIFO in place of a
//! template.
//!
//! Must hold: no panic, no hang; the same acceptance as the in-memory generator (paths
//! spelled another way change nothing); a user's files in the output folder are left as they
//! were; an output folder holding inputs is refused with every input unchanged; a special file
//! is an error naming it.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kernel_codegen::{Config, ConfigError, Inputs};

use crate::drive;

/// The layouts, drawn in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Absolute,
    RelativeToRoot,
    OutputIsThePackage,
    FifoTemplate,
}

impl Layout {
    pub const ALL: [Layout; 4] = [
        Layout::Absolute,
        Layout::RelativeToRoot,
        Layout::OutputIsThePackage,
        Layout::FifoTemplate,
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
    }
    Ok(())
}
