//! The Hub's own manifests (`ai.onnx.{Add,Softmax,MatMul}.manifest.json` in `../shared/hub`,
//! or `$KERNEL_HUB_DIR`), read by the Hub-dialect mirror (`manifest::hub`). Skips, saying so,
//! when the folder is absent. The counts are those of the study beside the manifests
//! (`HUB-DIALECT.md`): the mirror keeps every variant, pass, derive entry and clause.

use std::fs;
use std::path::PathBuf;

use kernel_codegen::manifest::hub::{self, BindingRef, Manifest};
use serde_json::{Value, json};

/// The folder of the Hub's manifests, when present.
fn hub_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("KERNEL_HUB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/hub"),
    };
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no Hub manifests at {} (set KERNEL_HUB_DIR)",
            dir.display()
        );
        None
    }
}

/// The manifest of `op` as it is on the Hub.
fn text(dir: &std::path::Path, op: &str) -> String {
    let path = dir.join(format!("ai.onnx.{op}.manifest.json"));
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the study counts of one manifest.
#[derive(Debug, PartialEq, Eq)]
struct Counts {
    variants: usize,
    passes: usize,
    templates: usize,
    binding_handles: usize,
    manifest_derive: usize,
    variant_derive: usize,
    pass_derive: usize,
    when_clauses: usize,
}

fn counts(m: &Manifest) -> Counts {
    let passes: Vec<_> = m.variants.iter().flat_map(|v| &v.passes).collect();
    let mut templates: Vec<_> = passes.iter().map(|p| p.shader.as_str()).collect();
    templates.sort_unstable();
    templates.dedup();
    Counts {
        variants: m.variants.len(),
        passes: passes.len(),
        templates: templates.len(),
        binding_handles: m.bindings.len(),
        manifest_derive: m.derive.len(),
        variant_derive: m.variants.iter().map(|v| v.derive.len()).sum(),
        pass_derive: passes.iter().map(|p| p.derive.len()).sum(),
        when_clauses: m.variants.iter().map(|v| v.when.len()).sum(),
    }
}

#[test]
fn the_hub_manifests_parse_strictly_and_keep_everything() {
    let Some(dir) = hub_dir() else { return };
    // (op, variants, passes, templates, handles, manifest/variant/pass derive, when clauses)
    let table = [
        ("Add", [5, 5, 3, 11, 0, 11, 28, 24]),
        ("Softmax", [12, 16, 9, 11, 24, 25, 35, 62]),
        ("MatMul", [49, 54, 15, 19, 99, 189, 93, 372]),
    ];
    let (mut handle_refs, mut inline) = (0, 0);
    for (op, [v, p, t, h, md, vd, pd, w]) in table {
        let manifest = hub::parse(&text(&dir, op))
            .unwrap_or_else(|(path, message)| panic!("{op}: {path}: {message}"));
        assert_eq!(manifest.name, op);
        let want = Counts {
            variants: v,
            passes: p,
            templates: t,
            binding_handles: h,
            manifest_derive: md,
            variant_derive: vd,
            pass_derive: pd,
            when_clauses: w,
        };
        assert_eq!(counts(&manifest), want, "{op}");
        for entry in manifest
            .variants
            .iter()
            .flat_map(|v| &v.passes)
            .flat_map(|p| &p.bindings)
        {
            match entry {
                BindingRef::Handle(handle) => {
                    assert!(manifest.bindings.contains_key(handle), "{op}: `{handle}`");
                    handle_refs += 1;
                }
                BindingRef::Inline(_) => inline += 1,
            }
        }
    }
    // "All 267 string references in the three files resolve to a handle"; 12 inline entries.
    assert_eq!((handle_refs, inline), (267, 12));
}

#[test]
fn each_hub_manifest_reads_into_a_declaration_of_the_hub_dialect() {
    let Some(dir) = hub_dir() else { return };
    // Variants, passes, and the binding entries of all passes together, as the files have them.
    let expected = [
        ("Add", 5, 5, 20),
        ("Softmax", 12, 16, 52),
        ("MatMul", 49, 54, 207),
    ];
    for (op, variants, passes, bindings) in expected {
        let declared = match kernel_codegen::manifest::read(&text(&dir, op)) {
            Ok(declared) => declared,
            Err(problems) => panic!("{op}: {problems:?}"),
        };
        assert_eq!(declared.dialect, kernel_codegen::manifest::Dialect::Hub);
        assert_eq!(declared.variants.len(), variants, "{op}");
        let all_passes = declared.variants.iter().flat_map(|v| &v.passes);
        assert_eq!(all_passes.clone().count(), passes, "{op}");
        let entries: usize = all_passes
            .map(|p| match &p.bindings {
                kernel_codegen::manifest::BindingsRef::Inline(list) => list.len(),
                kernel_codegen::manifest::BindingsRef::Set(_) => 0,
            })
            .sum();
        assert_eq!(entries, bindings, "{op}");
    }
}

/// `op`'s manifest with `edit` made to its JSON, as (path, message) of its parse error.
fn error_after(dir: &std::path::Path, op: &str, edit: impl FnOnce(&mut Value)) -> (String, String) {
    let mut value: Value = serde_json::from_str(&text(dir, op)).expect("JSON");
    edit(&mut value);
    let text = serde_json::to_string_pretty(&value).expect("prints");
    hub::parse(&text).expect_err("the edit is an error")
}

/// An edit of one op's manifest, the path of the error it makes and how the message starts.
type EditCase = (&'static str, fn(&mut Value), &'static str, &'static str);

#[test]
fn edits_of_the_hub_manifests_fail_at_their_paths_in_the_runtimes_words() {
    let Some(dir) = hub_dir() else { return };
    let cases: [EditCase; 5] = [
        (
            "Softmax",
            |m| m["attributes"]["axis"] = json!(-1),
            "attributes.axis",
            "spec 2.0 removed: write {default}",
        ),
        (
            "Softmax",
            |m| m["tunables"]["BLOCK_COLS"] = json!(4096),
            "tunables.BLOCK_COLS",
            "spec 2.0 removed: write {default}",
        ),
        (
            "MatMul",
            |m| m["variants"][38]["passes"][0]["dispatch"]["gridStride"] = json!(true),
            "variants[38].passes[0].dispatch.gridStride",
            "spec 2.0 removed: write x = min(<count>, device.limits.maxComputeWorkgroupsPerDimension)",
        ),
        (
            "Add",
            |m| m["variants"][4]["constants"] = json!({"lanes": 4}),
            "variants[4].constants",
            "spec 2.0 removed: write derive",
        ),
        (
            "MatMul",
            |m| m["variants"][37]["passes"][0]["bindings"][0]["semantic"] = json!("A"),
            "variants[37].passes[0].bindings[0].semantic",
            "spec 2.0 removed: write arg",
        ),
    ];
    for (op, edit, want_path, want) in cases {
        let (path, message) = error_after(&dir, op, edit);
        assert_eq!(path, want_path, "{op}: {message}");
        assert!(message.starts_with(want), "{op}: {path}: {message}");
    }
    let (path, message) = error_after(&dir, "MatMul", |m| {
        m["variants"][13]["requires"]["subgroupMatrixConfigs"][1]["rows"] = json!(8)
    });
    assert_eq!(path, "variants[13].requires.subgroupMatrixConfigs[1].rows");
    assert!(message.starts_with("unknown field `rows`"), "{message}");
}
