//! What the generated conformance tests call (`build.rs` writes one test per case of every
//! `packages/<op>/test.json`, of the Hub's suites beside their manifests and of the suites
//! written for the Hub's ops in `examples/hub/packages/<op>/test.json`): [`case`] runs one case through the op's registry entry on each
//! context of [`contexts`] and checks it against the case's data or the op's float64 reference
//! ([`reference()`], from `kernels_tools::reference`); [`every_variant_is_reached`] plans every case
//! that runs on GPUs and asserts that each variant the device can build is selected by one,
//! except the variants no call selects on that device (the table `UNSELECTABLE`, each with
//! why, which it prints).
//!
//! The helpers panic with the failure's report: they are the body of a test.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use kernel_runtime::registry::OpEntry;
use kernel_runtime::support::AttrValue;
use kernel_runtime::{Context, DeviceCaps};
use test_support::conformance::{self, Suite};
use test_support::conformance_run::{self, CaseReport, Checked, RefInput, Reference};

/// A float64 reference as a plain function, so the table below is data.
type ReferenceFn = fn(&[RefInput<'_>], &[(String, AttrValue)]) -> Result<Vec<Vec<f64>>, String>;

/// The float64 reference of each op that has one, by qualified name. Each op has one output,
/// which `kernels_tools::reference::by_op` computes from the inputs by role.
const REFERENCES: &[(&str, ReferenceFn)] = &[
    ("com.microsoft.BiasSoftmax", |inputs, attrs| {
        by_op("com.microsoft.BiasSoftmax", inputs, attrs)
    }),
    (
        "com.microsoft.GatedRelativePositionBias",
        |inputs, attrs| by_op("com.microsoft.GatedRelativePositionBias", inputs, attrs),
    ),
    ("com.microsoft.MRotaryEmbedding", |inputs, attrs| {
        by_op("com.microsoft.MRotaryEmbedding", inputs, attrs)
    }),
    ("ai.onnx.Add", |inputs, attrs| {
        by_op("ai.onnx.Add", inputs, attrs)
    }),
    ("ai.onnx.Softmax", |inputs, attrs| {
        by_op("ai.onnx.Softmax", inputs, attrs)
    }),
    ("ai.onnx.MatMul", |inputs, attrs| {
        by_op("ai.onnx.MatMul", inputs, attrs)
    }),
];

/// `kernels_tools::reference::by_op` for `op`, its one output as the only one.
fn by_op(
    op: &str,
    inputs: &[RefInput<'_>],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<Vec<f64>>, String> {
    conformance_run::one_output_reference(inputs, attrs, |inputs, attrs| {
        kernels_tools::reference::by_op(op, inputs, attrs)
    })
}

/// The float64 reference registered for `op`, if any.
pub fn reference(op: &str) -> Option<&'static Reference> {
    REFERENCES
        .iter()
        .find(|(name, _)| *name == op)
        .map(|(_, f)| f as &'static Reference)
}

/// The contexts every case runs on, with a label: the adapter's default device and, where it
/// has `subgroups`, a device on the same adapter without them, so that the variants only a
/// device without subgroups selects (GatedRelativePositionBias's `row_head_tree`, the
/// fallbacks of shaders that combine subgroups) are run and reached too.
pub fn contexts() -> Vec<(&'static str, &'static Context)> {
    static NO_SUBGROUPS: OnceLock<Context> = OnceLock::new();
    let default = test_support::shared();
    let mut contexts = vec![("default device", default)];
    if default.caps().subgroups {
        let without = NO_SUBGROUPS.get_or_init(|| test_support::context_without(&["subgroups"]));
        contexts.push(("device without subgroups", without));
    }
    contexts
}

/// The registry entry of `op` (its qualified name): the seed packages' (`kernels`) or the
/// Hub's (`hub`).
fn entry(op: &str) -> &'static OpEntry {
    let all = || kernels::OPS.iter().chain(hub::ops());
    all()
        .find(|entry| entry.qualified_name == op)
        .unwrap_or_else(|| {
            let known: Vec<&str> = all().map(|e| e.qualified_name).collect();
            panic!(
                "no op `{op}` in the registries (they have {}): generate it (`cargo xtask codegen`, or the Hub manifests beside the repository)",
                known.join(", ")
            )
        })
}

/// The suite at `path`, read as the build script read it. Reading resolves every case's inputs
/// (fills of up to a few hundred thousand elements), so each file is read once per test binary
/// and shared by its tests rather than read again by each.
fn suite(path: &str) -> Arc<Suite> {
    static READ: OnceLock<Mutex<BTreeMap<String, Arc<Suite>>>> = OnceLock::new();
    let mut read = READ
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let suite = read.entry(path.to_owned()).or_insert_with(|| {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        Arc::new(conformance::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}")))
    });
    Arc::clone(suite)
}

/// One line on a passed case: the variant, and what each output was checked against.
fn summary(report: &CaseReport) -> String {
    let outputs: Vec<String> = report
        .outputs
        .iter()
        .map(|o| match o.checked {
            Checked::Data => format!("`{}` against the case's data, worst {:e}", o.key, o.worst),
            Checked::Reference => format!("`{}` against the reference, worst {:e}", o.key, o.worst),
            Checked::ShapeOnly => format!("`{}`: shape only, no reference", o.key),
        })
        .collect();
    format!("variant `{}`: {}", report.variant, outputs.join("; "))
}

/// Runs case `name` of the suite at `path` for op `op` on every context of [`contexts`] and
/// fails the calling test with every failure's report.
pub fn case(op: &str, path: &str, name: &str) {
    test_support::bound();
    let entry = entry(op);
    let suite = suite(path);
    let Some(case) = suite.cases.iter().find(|c| c.name == name) else {
        panic!("{path}: no case `{name}`: run the build again (`cargo test` does)");
    };
    // The reference sees only the case (its rounded inputs and attributes), never the device:
    // computed for the first context and reused for the others, since in a debug build the
    // float64 reference of a large case costs more than running it. The closure owns what it
    // computed, as `Reference` is a `'static` trait object.
    let once = reference(op).map(|reference| {
        let computed: OnceLock<Result<Vec<Vec<f64>>, String>> = OnceLock::new();
        move |inputs: &[RefInput<'_>], attrs: &[(String, AttrValue)]| {
            computed.get_or_init(|| reference(inputs, attrs)).clone()
        }
    });
    let reference = once.as_ref().map(|f| f as &Reference);
    let mut failures = Vec::new();
    for (label, ctx) in contexts() {
        if let Some(feature) = conformance_run::missing_feature(ctx, case) {
            println!("{label}: not run, the device has no {feature}");
            continue;
        }
        match conformance_run::run_case(ctx, entry, case, reference) {
            Ok(report) => println!("{label}: {}", summary(&report)),
            Err(failure) => failures.push(format!("{label}: {failure}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A variant that no call selects on some devices, so that no case of a suite can reach it
/// there: where [`Unselectable::on`] holds for a context's capabilities,
/// [`every_variant_is_reached`] does not ask a case to select it, and prints the reason.
struct Unselectable {
    /// The op's qualified name.
    op: &'static str,
    variant: &'static str,
    /// Whether no call selects the variant on a device of these capabilities.
    on: fn(&DeviceCaps) -> bool,
    reason: &'static str,
}

/// The variants no call selects on a device with WebGPU's default limits (or on the devices
/// [`Unselectable::on`] names), each with why. The table is exact: a case that selects a listed
/// variant on a device the entry covers fails [`every_variant_is_reached`], as does an entry
/// naming no variant of its op, so an entry cannot outlive its reason.
const UNSELECTABLE: &[Unselectable] = &[
    Unselectable {
        op: "ai.onnx.Softmax",
        variant: "strided_online_lane_large_inner",
        on: default_dispatch,
        reason: "ranked below `strided_online_coop`, which takes the same axes and gives way only where its dispatch does not fit, and with 65535 workgroups per dimension (folded over two) it fits any tensor a device can hold: only a lowered `maxComputeWorkgroupsPerDimension` selects this",
    },
    Unselectable {
        op: "ai.onnx.Softmax",
        variant: "strided_online_capacity_fallback",
        on: default_dispatch,
        reason: "ranked last, below `strided_online_coop`, so selected only where the cooperative dispatch does not fit, which takes `maxComputeWorkgroupsPerDimension` lowered below WebGPU's 65535",
    },
    Unselectable {
        op: "ai.onnx.Softmax",
        variant: "stable_3pass",
        on: any_device,
        reason: "every call it accepts, `online_local_nosg` or `online_wg` (ranked above it) accepts too, except rows of no element, which it cannot plan (its sizes divide by the row length)",
    },
    Unselectable {
        op: "ai.onnx.Softmax",
        variant: "online_subgroup_rows_vec4",
        on: |caps| caps.subgroup_min_size < 16,
        reason: "needs subgroups of at least 16 lanes (`subgroupMinSize >= 16`), and this adapter's smallest subgroup is narrower or unreported",
    },
    Unselectable {
        op: "ai.onnx.MatMul",
        variant: "folded_rows_notrans_f32_vec4_tiled_reg",
        on: |caps| {
            let (min, max) = (caps.subgroup_min_size, caps.subgroup_max_size);
            (min != 0 || max != 0) && !(min <= 32 && 32 <= max)
        },
        reason: "needs subgroup sizes that admit 32 lanes (`subgroupWidth32NotExcluded`), and this adapter reports a range without 32",
    },
];

/// Every device.
fn any_device(_: &DeviceCaps) -> bool {
    true
}

/// A device with at least WebGPU's default workgroups per dimension (65535): every device.
fn default_dispatch(caps: &DeviceCaps) -> bool {
    caps.limits.max_compute_workgroups_per_dimension
        >= DeviceCaps::portable()
            .limits
            .max_compute_workgroups_per_dimension
}

/// Plans every case of the suite at `path` that runs on GPUs, on every context of
/// [`contexts`], and fails unless each variant of `op` that one of them can build is selected
/// by some case (or a case fails to plan). A variant the table `UNSELECTABLE` lists for a
/// context is not asked of it, and a case that selects one there fails the test. The variant
/// ids are the registry entry's.
pub fn every_variant_is_reached(op: &str, path: &str) {
    test_support::bound();
    let entry = entry(op);
    let suite = suite(path);
    let mut failures = Vec::new();
    let listed: Vec<&Unselectable> = UNSELECTABLE.iter().filter(|u| u.op == op).collect();
    for unknown in listed
        .iter()
        .filter(|u| !entry.variants.contains(&u.variant))
    {
        failures.push(format!(
            "UNSELECTABLE lists `{}`, which is no variant of {op}: remove the entry",
            unknown.variant
        ));
    }
    // `asked`: the variants some context builds where no entry covers them, which a case must
    // select; `excused`: those an entry covers on a context that builds them, with its reason.
    let mut asked: BTreeSet<&str> = BTreeSet::new();
    let mut excused: BTreeMap<&str, &str> = BTreeMap::new();
    let mut built_anywhere: BTreeSet<&str> = BTreeSet::new();
    let mut reached: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    // The cases that select a variant on a context where an entry says no call does.
    let mut contradicted: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (label, ctx) in contexts() {
        let caps = ctx.caps();
        println!(
            "{label}: features [{}], subgroup sizes {}..{}, {} workgroups per dimension",
            caps.feature_names().join(", "),
            caps.subgroup_min_size,
            caps.subgroup_max_size,
            caps.limits.max_compute_workgroups_per_dimension
        );
        let here: BTreeMap<&str, &str> = listed
            .iter()
            .filter(|u| (u.on)(caps))
            .map(|u| (u.variant, u.reason))
            .collect();
        for variant in conformance_run::buildable_variants(ctx, entry) {
            built_anywhere.insert(variant);
            match here.get(variant) {
                Some(reason) => {
                    excused.insert(variant, reason);
                }
                None => {
                    asked.insert(variant);
                }
            }
        }
        for case in suite.cases.iter().filter(|c| c.skip_gpu.is_none()) {
            if conformance_run::missing_feature(ctx, case).is_some() {
                continue;
            }
            match conformance_run::plan_case(ctx, entry, case) {
                Ok(variant) => {
                    if here.contains_key(variant) {
                        contradicted
                            .entry(variant)
                            .or_default()
                            .push(format!("`{}` ({label})", case.name));
                    }
                    reached
                        .entry(variant)
                        .or_default()
                        .push(format!("{} ({label})", case.name));
                }
                Err(failure) => failures.push(format!("{label}: {failure}")),
            }
        }
    }
    for (variant, cases) in &contradicted {
        let reason = listed
            .iter()
            .find(|u| u.variant == *variant)
            .map_or("", |u| u.reason);
        failures.push(format!(
            "UNSELECTABLE says no call selects `{variant}` ({reason}), yet {} select it: correct or remove the entry",
            cases.join(", ")
        ));
    }
    for variant in entry.variants {
        let cases = reached.get(variant).map_or(0, Vec::len);
        let note = if !built_anywhere.contains(variant) {
            " (no device here builds it)".to_owned()
        } else if let (0, false, Some(reason)) =
            (cases, asked.contains(variant), excused.get(variant))
        {
            format!(" (selected by no call here: {reason})")
        } else {
            String::new()
        };
        println!("{variant}: {cases} case runs{note}");
    }
    let missed: Vec<&str> = entry
        .variants
        .iter()
        .copied()
        .filter(|v| asked.contains(v) && !reached.contains_key(v))
        .collect();
    if !missed.is_empty() {
        failures.push(format!(
            "no case of {path} selects {} (built here), on any of the contexts",
            missed.join(", ")
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
