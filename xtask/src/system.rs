//! What commands need from the machine: cargo, and Debian packages installed with apt-get
//! when they are missing and the machine allows it (root, apt-get present), so that CI and the
//! demo run on a fresh Debian machine that has only the Rust toolchain.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};

/// Runs cargo with `args` in the project root, failing on a non-zero exit.
pub fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    cargo_with_env(root, args, &[])
}

/// `cargo` with `env` set for it.
pub fn cargo_with_env(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(env.iter().copied())
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
