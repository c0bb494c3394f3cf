//! `cargo xtask ci`: what CI runs, in the order that fails fastest. It installs Mesa's software
//! Vulkan driver (lavapipe) when no Vulkan driver is present and the machine allows it, so GPU
//! tests run on a fresh Debian machine that only has the Rust toolchain; likewise `spirv-tools`
//! and Node.js for the shader validators of the codegen check.

use anyhow::{Context, Result, bail};
use std::path::Path;

use crate::codegen::{Mode, Validators};
use crate::system::{apt_install, can_apt_install, cargo, cargo_with_env, ensure_vulkan_driver};
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
    // The Hub's packages, where their manifests are beside the repository.
    if super::hub::manifests_present(root) {
        step(
            "Hub packages: shaders pass naga, its back ends, spirv-val and Tint",
            || super::hub::run(root, true, true),
        )?;
    }
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
    // Rustdoc with warnings denied: broken or private links in the crates' docs and in the
    // generated modules' docs fail here.
    step("docs", || {
        cargo_with_env(
            root,
            &["doc", "--workspace", "--no-deps", "--locked"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    })?;
    // The crates a user depends on package as crates.io would take them (path dependencies
    // carry versions, nothing is missing from the package); `--no-verify`, since building
    // them again from the packages would repeat the build above.
    step("packaging", || {
        cargo(
            root,
            &[
                "package",
                "--no-verify",
                "--allow-dirty",
                "--locked",
                "-p",
                "kernel-abi",
                "-p",
                "kernel-runtime",
                "-p",
                "kernel-codegen",
                "-p",
                "kernels-codegen",
            ],
        )
    })?;
    step("tests", || {
        // xtask's tests run the browser check on a fixture page.
        super::web::ensure_chromium()?;
        cargo(root, &["test", "--workspace", "--locked"])
    })?;
    // The seed packages stay free of the defects `kernels-codegen check` finds.
    step("package check (seed packages, warnings denied)", || {
        cargo(
            root,
            &[
                "run",
                "--quiet",
                "--locked",
                "-p",
                "kernels-codegen",
                "--",
                "check",
                "packages",
                "--include-root",
                "packages/_shared",
                "--hints",
                "hints",
                "--deny",
                "warnings",
            ],
        )
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
                "kernels-tools",
                "--bin",
                "bench",
                "--",
                "--quick",
                "--repetitions",
                "20",
            ],
        )
    })?;
    // The decode section of the harness on the small decoder, so that it cannot rot either
    // (one line saying it left the decoder out where the corpus is absent).
    step("decode timing (small)", || {
        cargo(
            root,
            &[
                "run",
                "--locked",
                "-p",
                "gemma-decoder",
                "--bin",
                "gemma-decode",
                "--",
                "--config",
                "small",
                "--tokens",
                "16",
                "--copy",
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
