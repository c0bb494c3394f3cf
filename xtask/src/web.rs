//! `cargo xtask web [--serve]`: builds the browser page (`examples/web`) for wasm32 with
//! wasm-bindgen's glue into `target/web/`, then opens it in headless Chromium and fails on
//! any mismatch, error or missing row, or on a failed case of the Hub's conformance suites the
//! page embeds (`examples/web/build.rs`; each suite's passed, failed and skipped counts are
//! printed); `--serve` serves it for a browser of yours instead.
//! Installs what is missing: the wasm32 target (rustup), wasm-bindgen-cli at the version of
//! the `wasm-bindgen` crate (into `target/tools`), the pinned npm packages, and Debian's
//! `chromium` (apt-get, as root).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::system::{apt_install, can_apt_install, cargo};
use crate::validators::{self, JS_DIR};

const TARGET: &str = "wasm32-unknown-unknown";
const PAGE: &str = "examples/web";
const OUT: &str = "target/web";
const CHROMIUM: &str = "/usr/bin/chromium";

/// Builds the page, then checks it in headless Chromium or serves it.
pub fn run(root: &Path, serve: bool) -> Result<()> {
    build(root)?;
    validators::ensure_node_packages(root)?;
    let script = root.join(JS_DIR).join("browser-check.mjs");
    let out = root.join(OUT);
    let mut node = Command::new("node");
    node.arg(&script).arg(&out).current_dir(root);
    if serve {
        node.arg("--serve");
    } else {
        ensure_chromium()?;
        node.arg("--report").arg(out.join("report.json"));
    }
    let status = node.status().context("starting node")?;
    if !status.success() {
        bail!("the browser check failed ({status}); the report is in {OUT}/report.json");
    }
    Ok(())
}

/// `target/web/`: index.html and `pkg/` (the wasm module and its JS glue).
fn build(root: &Path) -> Result<()> {
    ensure_wasm_target()?;
    let bindgen = ensure_wasm_bindgen(root)?;
    cargo(
        root,
        &[
            "build",
            "--locked",
            "--release",
            "-p",
            "web",
            "--target",
            TARGET,
        ],
    )?;
    let out = root.join(OUT);
    fs::create_dir_all(&out).with_context(|| format!("creating {OUT}"))?;
    fs::copy(root.join(PAGE).join("index.html"), out.join("index.html"))
        .context("copying index.html")?;
    let wasm = root.join(format!("target/{TARGET}/release/web.wasm"));
    let status = Command::new(&bindgen)
        .args(["--target", "web", "--no-typescript", "--out-dir"])
        .arg(out.join("pkg"))
        .arg(&wasm)
        .status()
        .with_context(|| format!("starting {}", bindgen.display()))?;
    if !status.success() {
        bail!("wasm-bindgen failed ({status})");
    }
    eprintln!("web: page built in {OUT}/");
    Ok(())
}

pub fn ensure_wasm_target() -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("running rustup (the wasm32 target is installed with it)")?;
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.trim() == TARGET)
    {
        return Ok(());
    }
    eprintln!("web: installing the {TARGET} target");
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .context("running rustup target add")?;
    if !status.success() {
        bail!("rustup target add {TARGET} failed ({status})");
    }
    Ok(())
}

/// The version of the `wasm-bindgen` crate in Cargo.lock: the CLI must match it exactly.
fn locked_wasm_bindgen_version(root: &Path) -> Result<String> {
    let lock = fs::read_to_string(root.join("Cargo.lock")).context("reading Cargo.lock")?;
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line == "name = \"wasm-bindgen\""
            && let Some(version) = lines.next().and_then(|l| l.strip_prefix("version = \""))
        {
            return Ok(version.trim_end_matches('"').to_owned());
        }
    }
    bail!("Cargo.lock has no wasm-bindgen package")
}

/// `target/tools/bin/wasm-bindgen` at the locked version, installed with cargo when absent.
fn ensure_wasm_bindgen(root: &Path) -> Result<PathBuf> {
    let version = locked_wasm_bindgen_version(root)?;
    let tools = root.join("target/tools");
    let bindgen = tools.join("bin/wasm-bindgen");
    let current = Command::new(&bindgen).arg("--version").output();
    if current.is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).trim() == format!("wasm-bindgen {version}")
    }) {
        return Ok(bindgen);
    }
    eprintln!("web: installing wasm-bindgen-cli {version} into target/tools (a few minutes)");
    // Not `--locked`: the CLI's own lock file may name releases a registry mirror lacks.
    cargo(
        root,
        &[
            "install",
            "wasm-bindgen-cli",
            "--version",
            &version,
            "--root",
            &tools.to_string_lossy(),
        ],
    )?;
    Ok(bindgen)
}

pub fn ensure_chromium() -> Result<()> {
    if Path::new(CHROMIUM).exists() || std::env::var_os("CHROMIUM").is_some() {
        return Ok(());
    }
    if !can_apt_install() {
        bail!(
            "the browser check needs Chromium ({CHROMIUM}; Debian: `apt-get install chromium`), or CHROMIUM=/path/to/chrome"
        );
    }
    eprintln!("web: installing Debian's chromium");
    apt_install(&["chromium"])
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// The browser check fails, naming each problem, on a page that reports a mismatch, has a
    /// missing row and logs a console error (`tests/browser/reports_failures`), while it
    /// accepts the page's good and skipped rows.
    #[test]
    fn browser_check_reports_mismatches_missing_rows_and_console_errors() {
        let root = crate::project_root();
        if let Err(err) = super::ensure_chromium() {
            panic!("{err:#}");
        }
        if let Err(err) = super::validators::ensure_node_packages(&root) {
            panic!("{err:#}");
        }
        let fixture = root.join("xtask/tests/browser/reports_failures");
        let output = Command::new("node")
            .arg(root.join(super::JS_DIR).join("browser-check.mjs"))
            .arg(&fixture)
            .arg("--timeout")
            .arg("60")
            .output()
            .expect("node starts");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        let problems: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("browser check: "))
            .collect();
        let expected = std::fs::read_to_string(fixture.join("expected.txt")).expect("expected.txt");
        assert_eq!(problems, expected.lines().collect::<Vec<_>>(), "{stderr}");
    }
}
