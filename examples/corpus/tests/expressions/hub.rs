//! What is the Hub's own in the comparison: its three manifests (`ai.onnx.{Add,Softmax,MatMul}`
//! in `../shared/hub`, or `$KERNEL_HUB_DIR`, with the templates of `examples/hub/packages`),
//! read as the `hub` crate's build script reads them, and what its environments are drawn
//! from.
//!
//! The generated side is the `hub` crate's modules, so the Hub's part runs where that crate
//! was built with the manifests, and says why it is skipped where it was not.

use std::path::{Path, PathBuf};

use kernel_codegen::expr::builtins::UNAVAILABLE_FEATURES;
use kernel_codegen::expr::check::Dialect;
use kernel_runtime::DeviceCaps;

use super::compare::{self, Package};
use super::env::{Profile, Rng, random_caps};

/// Sizes are drawn from these: powers of two, sizes real models have, the thresholds the
/// manifests compare with (8192, 65536) and sizes just past them, a few that are neither, and
/// 0 (Softmax's `stable_3pass` is selected only for rows of no columns).
/// Ranks reach 0 and 5 (the broadcasts Add and MatMul take), and an axis is often negative.
pub const PROFILE: Profile = Profile {
    sizes: &[
        0, 1, 2, 3, 4, 5, 7, 8, 12, 16, 31, 32, 33, 48, 64, 96, 128, 129, 256, 320, 512, 1000,
        1024, 1536, 2048, 4096, 8192, 8196, 16384, 65536, 65537,
    ],
    ranks: &[0, 1, 1, 2, 2, 2, 3, 3, 4, 5],
    small_ints: &[-1, -1, -2, -3, 1, 2, 3, 4],
    device,
    // MatMul's variants are many, and their clauses couple four shapes.
    steering: 300,
    thorough_repair: true,
    steer_past_earlier: true,
};

/// The corpus's devices, and the limits the Hub's variants test: an H200 under wgpu (larger
/// than WebGPU's defaults), small workgroups, small buffers, the subgroup size ranges MatMul
/// tells apart (`variableSubgroup16To32`, `narrowSubgroupRange`), and now and then the features
/// no wgpu device offers (`subgroup-size-control`, which MatMul's `canPinSubgroupSize32`
/// reads), which only the interpreter and minijinja can be given.
fn device(rng: &mut Rng) -> (DeviceCaps, Vec<&'static str>) {
    let mut caps = random_caps(rng);
    let l = &mut caps.limits;
    if rng.chance(10) {
        l.max_compute_workgroups_per_dimension = 100_000;
    }
    if rng.chance(40) {
        l.max_compute_invocations_per_workgroup = 1024;
        l.max_compute_workgroup_size_x = 1024;
        l.max_compute_workgroup_size_y = 1024;
        l.max_compute_workgroup_storage_size = rng.pick(&[32768, 49152]);
    } else if rng.chance(20) {
        l.max_compute_invocations_per_workgroup = 64;
        l.max_compute_workgroup_storage_size = 4096;
    }
    if rng.chance(15) {
        l.max_storage_buffer_binding_size = rng.pick(&[1024, 1 << 16]);
        l.max_buffer_size = rng.pick(&[4096, 1 << 16]);
    }
    if rng.chance(25) {
        (caps.subgroup_min_size, caps.subgroup_max_size) = rng.pick(&[(16, 32), (16, 64), (8, 16)]);
    }
    let unavailable = if rng.chance(20) {
        (UNAVAILABLE_FEATURES.iter().copied())
            .filter(|_| rng.chance(60))
            .collect()
    } else {
        Vec::new()
    };
    (caps, unavailable)
}

/// The folder of the Hub's manifests.
fn hub_dir() -> PathBuf {
    std::env::var_os("KERNEL_HUB_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/hub"),
        PathBuf::from,
    )
}

/// The models of the ops the `hub` crate was built with, read from the same manifests and
/// templates, with each manifest's `derive` entries in the file's order; why not, where the
/// crate was built without them or they are gone.
pub fn packages() -> Result<Vec<Package>, String> {
    let ops: Vec<&str> = hub::ops().iter().map(|e| e.qualified_name).collect();
    if ops.is_empty() {
        return Err(format!(
            "the hub crate was built without the Hub's manifests (none at {}; set \
             KERNEL_HUB_DIR)",
            hub_dir().display()
        ));
    }
    let dir = hub_dir();
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hub/packages");
    let mut config = kernel_codegen::Config::new();
    config.emit_rerun_if_changed(false);
    let mut orders = Vec::new();
    for op in &ops {
        let manifest = dir.join(format!("{op}.manifest.json"));
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("{}: {e} (set KERNEL_HUB_DIR)", manifest.display()))?;
        config.package_apart(&manifest, templates.join(op));
        orders.push((op.to_string(), derive_order(&text)));
    }
    let mut packages = compare::packages_of(&config, "the Hub's packages", Dialect::Hub);
    for package in &mut packages {
        let name = package.op.qualified_name();
        if let Some((_, order)) = orders.iter().find(|(op, _)| *op == name) {
            package.derive_order.clone_from(order);
        }
    }
    Ok(packages)
}

/// The names of a manifest's top-level `derive` entries, in the file's order.
fn derive_order(manifest: &str) -> Vec<String> {
    let json: serde_json::Value =
        serde_json::from_str(manifest).unwrap_or_else(|e| panic!("a manifest: {e}"));
    (json.get("derive").and_then(|d| d.as_object()))
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default()
}
