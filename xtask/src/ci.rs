//! `cargo xtask ci`: what CI runs, in the order that fails fastest. It installs Mesa's software
//! Vulkan driver (lavapipe) when no Vulkan driver is present and the machine allows it, so GPU
//! tests run on a fresh Debian machine that only has the Rust toolchain; likewise `spirv-tools`
//! and Node.js for the shader validators of the codegen check.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};

use crate::codegen::{Mode, Validators};
use crate::validators;

pub fn run(root: &Path) -> Result<()> {
    ensure_vulkan_driver()?;
    step("formatting", || cargo(root, &["fmt", "--all", "--check"]))?;
    step(
        "generated code is fresh; shaders pass naga, spirv-val and Tint",
        || {
            ensure_shader_validators(root)?;
            super::codegen::run(root, Mode::Check(Validators::ALL))
        },
    )?;
    step("clippy", || {
        cargo(
            root,
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
        )
    })?;
    step("tests", || {
        // xtask's tests run the browser check on a fixture page.
        super::web::ensure_chromium()?;
        cargo(root, &["test", "--workspace", "--locked"])
    })?;
    // Both fuzz targets for a bounded time; a failing input is printed as a regression
    // fixture (`fuzz/tests/regressions/`) and fails the step. Six accepted outputs of the
    // generator are then compiled (`cargo check`).
    step("fuzzing (bounded)", || {
        cargo(
            root,
            &[
                "run",
                "--locked",
                "-p",
                "fuzz",
                "--",
                "all",
                "--seconds",
                "60",
                "--jobs",
                "2",
                "--check-sample",
                "6",
            ],
        )
    })?;
    // The benchmark harness on small shapes, each checked against the float64 reference, so
    // it cannot rot; the test profile is enough (dependencies are optimised there).
    step("benchmark harness (quick)", || {
        cargo(
            root,
            &[
                "run",
                "--locked",
                "-p",
                "examples",
                "--bin",
                "bench",
                "--",
                "--quick",
                "--repetitions",
                "20",
            ],
        )
    })?;
    // The runtime and the generated crate on the web target: lint-clean there too (its code
    // differs by `cfg`), then the page in headless Chromium on SwiftShader's WebGPU adapter.
    step("wasm32: clippy", || {
        super::web::ensure_wasm_target()?;
        cargo(
            root,
            &[
                "clippy",
                "--locked",
                "--target",
                "wasm32-unknown-unknown",
                "-p",
                "kernel-runtime",
                "-p",
                "kernels",
                "-p",
                "web",
                "--",
                "-D",
                "warnings",
            ],
        )
    })?;
    step("browser page in headless Chromium", || {
        super::web::run(root, false)
    })?;
    eprintln!("ci: all steps passed");
    Ok(())
}

fn step(name: &str, f: impl FnOnce() -> Result<()>) -> Result<()> {
    eprintln!("ci: {name}");
    let started = std::time::Instant::now();
    f().with_context(|| format!("ci step `{name}` failed"))?;
    eprintln!("ci: {name}: ok ({:.1?})", started.elapsed());
    Ok(())
}

/// Runs cargo with `args` in the project root, failing on a non-zero exit.
pub fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("starting {cargo}"))?;
    if !status.success() {
        bail!("`cargo {}` exited with {status}", args.join(" "));
    }
    Ok(())
}

const ICD_DIRS: &[&str] = &[
    "/usr/share/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
];

fn has_vulkan_driver() -> bool {
    let loader = [
        "/usr/lib/x86_64-linux-gnu/libvulkan.so.1",
        "/usr/lib/aarch64-linux-gnu/libvulkan.so.1",
        "/usr/lib/libvulkan.so.1",
        "/usr/lib64/libvulkan.so.1",
    ]
    .iter()
    .any(|p| Path::new(p).exists());
    let icd = ICD_DIRS
        .iter()
        .any(|dir| std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()));
    let explicit = std::env::var_os("VK_DRIVER_FILES")
        .or_else(|| std::env::var_os("VK_ICD_FILENAMES"))
        .is_some();
    loader && (icd || explicit)
}

/// Installs `mesa-vulkan-drivers` with apt-get when no Vulkan driver is present and we may.
pub fn ensure_vulkan_driver() -> Result<()> {
    if has_vulkan_driver() {
        return Ok(());
    }
    if !can_apt_install() {
        eprintln!(
            "ci: no Vulkan driver found and cannot install one here (needs apt-get as root); GPU tests will report that no adapter exists"
        );
        return Ok(());
    }
    eprintln!("ci: no Vulkan driver found; installing Mesa's software driver (lavapipe)");
    apt_install(&["mesa-vulkan-drivers", "libvulkan1"])
}

/// Installs what the shader validators need and is missing: `spirv-tools` (spirv-val), Node.js
/// and npm (Debian's `nodejs npm`) with apt-get as root, then `xtask/js/node_modules`.
fn ensure_shader_validators(root: &Path) -> Result<()> {
    let mut missing = Vec::new();
    if !validators::runs("spirv-val") {
        missing.push("spirv-tools");
    }
    if !validators::runs("node") {
        missing.extend(["nodejs", "npm"]);
    } else if !validators::runs("npm") {
        missing.push("npm");
    }
    if !missing.is_empty() {
        if !can_apt_install() {
            bail!(
                "the shader validators need {} (cannot install here: needs apt-get as root)",
                missing.join(", ")
            );
        }
        eprintln!(
            "ci: installing {} for the shader validators",
            missing.join(", ")
        );
        apt_install(&missing)?;
    }
    validators::ensure_node_packages(root)
}

/// Whether [`apt_install`] may run: apt-get exists and we are root.
pub fn can_apt_install() -> bool {
    let apt = Path::new("/usr/bin/apt-get").exists();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    apt && root
}

/// `apt-get install --no-install-recommends` of `packages`, after one `apt-get update` per run.
pub fn apt_install(packages: &[&str]) -> Result<()> {
    static UPDATED: AtomicBool = AtomicBool::new(false);
    if !UPDATED.swap(true, Ordering::Relaxed) {
        let update = Command::new("apt-get")
            .args(["-q", "update"])
            .status()
            .context("running apt-get update")?;
        if !update.success() {
            bail!("apt-get update failed ({update})");
        }
    }
    let install = Command::new("apt-get")
        .args(["install", "--no-install-recommends"])
        .args(["-q", "-y", "-o", "Dpkg::Use-Pty=0"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .context("running apt-get install")?;
    if !install.success() {
        bail!("installing {} failed ({install})", packages.join(" "));
    }
    Ok(())
}
