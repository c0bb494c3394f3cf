//! Hub packages on real folders: a repository laid out as the Hub lays it out
//! (`build/webgpu/` with `manifest.json`, templates and `metadata.json`) is read as it is, its
//! metadata checked as the Hub's runtime checks it, and a manifest kept apart from the
//! templates written for it is read where it is.

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use kernel_codegen::{Config, ConfigError};
use sha2::{Digest as _, Sha256};

/// The error fixtures' Hub seed: its manifest and template.
fn seed() -> (String, String) {
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/errors/seeds/hub-add");
    let read = |name: &str| fs::read_to_string(seed.join(name)).expect("seed is readable");
    (read("manifest.json"), read("add.wgsl.jinja"))
}

fn digest(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(text.as_bytes()))
}

/// A fresh folder holding `ai.onnx.Add` as a Hub repository, with metadata that matches it.
fn repository(name: &str) -> (PathBuf, PathBuf) {
    let root = std::env::temp_dir().join(format!("codegen-hub-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let build = root.join("packages/ai.onnx.Add/build/webgpu");
    fs::create_dir_all(&build).expect("folders");
    let (manifest, template) = seed();
    fs::write(build.join("manifest.json"), &manifest).expect("write");
    fs::write(build.join("add.wgsl.jinja"), &template).expect("write");
    let metadata = serde_json::json!({
        "name": "ai.onnx.Add",
        "id": "_ai_onnx_add_webgpu_0000000",
        "version": 1,
        "backend": {"type": "webgpu"},
        "digest": {"algorithm": "sha256", "files": {
            "manifest.json": digest(&manifest),
            "add.wgsl.jinja": digest(&template),
        }},
        "webgpu": {"manifestSpec": "2.1", "variants": {
            "vec4": ["add.wgsl.jinja"], "scalar": ["add.wgsl.jinja"],
        }},
    });
    let text = serde_json::to_string_pretty(&metadata).expect("prints");
    fs::write(build.join("metadata.json"), text).expect("write");
    (root, build)
}

fn config(root: &Path) -> Config {
    let mut config = Config::new();
    config
        .root(root)
        .packages_in("packages")
        .out_dir("out")
        .emit_rerun_if_changed(false);
    config
}

#[test]
fn a_hub_repository_is_read_as_laid_out() {
    let (root, _) = repository("layout");
    let report = config(&root).generate().expect("generates");
    assert_eq!(report.packages, 1);
    assert!(root.join("out/add.rs").is_file());
}

#[test]
fn a_template_that_differs_from_its_digest_is_named() {
    let (root, build) = repository("digest");
    let template = build.join("add.wgsl.jinja");
    let edited = fs::read_to_string(&template).expect("read") + "\n// edited\n";
    fs::write(&template, edited).expect("write");
    let Err(ConfigError::Codegen { diagnostics }) = config(&root).generate() else {
        panic!("a digest that differs is an error");
    };
    let shown = diagnostics.to_string();
    assert!(
        shown.contains(
            "packages/ai.onnx.Add/build/webgpu/metadata.json: digest.files.add.wgsl.jinja: `add.wgsl.jinja` has sha256"
        ),
        "{shown}"
    );
    assert_eq!(diagnostics.0.len(), 1, "{shown}");
}

#[test]
fn metadata_for_another_op_or_spec_is_refused_at_its_paths() {
    let (root, build) = repository("spec");
    let path = build.join("metadata.json");
    let text = fs::read_to_string(&path).expect("read");
    let text = text
        .replace("\"2.1\"", "\"1.0\"")
        .replace("\"ai.onnx.Add\"", "\"ai.onnx.Sub\"");
    fs::write(&path, text).expect("write");
    let Err(ConfigError::Codegen { diagnostics }) = config(&root).generate() else {
        panic!("wrong metadata is an error");
    };
    let paths: Vec<&str> = diagnostics.0.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["webgpu.manifestSpec", "name"]);
}

#[test]
fn a_manifest_kept_apart_is_read_with_the_templates_written_for_it() {
    let root = std::env::temp_dir().join(format!("codegen-hub-apart-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    let (manifest, template) = seed();
    fs::create_dir_all(root.join("hub")).expect("folders");
    fs::create_dir_all(root.join("templates/ai.onnx.Add")).expect("folders");
    fs::write(root.join("hub/ai.onnx.Add.manifest.json"), manifest).expect("write");
    fs::write(root.join("templates/ai.onnx.Add/add.wgsl.jinja"), template).expect("write");
    let report = Config::new()
        .root(&root)
        .package_apart("hub/ai.onnx.Add.manifest.json", "templates/ai.onnx.Add")
        .out_dir("out")
        .emit_rerun_if_changed(false)
        .generate()
        .expect("generates");
    assert_eq!(report.packages, 1);
    let generated = fs::read_to_string(root.join("out/add.rs")).expect("generated");
    assert!(
        generated.contains("hub/ai.onnx.Add.manifest.json"),
        "the generated header names the manifest where it is"
    );
}

/// Adds `entries` (name → digest) to the metadata's `digest.files`.
fn list_digests(build: &Path, entries: &[(&str, &str)]) {
    let path = build.join("metadata.json");
    let mut metadata: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).expect("read")).expect("parses");
    for (name, digest) in entries {
        metadata["digest"]["files"][*name] = serde_json::json!(digest);
    }
    fs::write(
        &path,
        serde_json::to_string_pretty(&metadata).expect("prints"),
    )
    .expect("write");
}

/// The diagnostics of a run that must fail at the metadata.
fn metadata_errors(root: &Path) -> kernel_codegen::Diagnostics {
    match config(root).generate() {
        Err(ConfigError::Codegen { diagnostics }) => diagnostics,
        other => panic!("expected metadata errors, got {other:?}"),
    }
}

/// FUZZ F-9: a digest entry reached through a link to a folder outside the package is
/// refused at the link, and the outside file's digest is never computed or printed.
#[cfg(unix)]
#[test]
fn a_digest_through_a_folder_link_out_of_the_package_is_refused() {
    let (root, build) = repository("folder-link");
    fs::create_dir_all(root.join("elsewhere")).expect("folder");
    fs::write(root.join("elsewhere/secret"), "outside text").expect("write");
    std::os::unix::fs::symlink("../../../../elsewhere", build.join("etc")).expect("link");
    list_digests(&build, &[("etc/secret", "AAAA")]);
    let diagnostics = metadata_errors(&root);
    let shown = diagnostics.to_string();
    let [diagnostic] = &diagnostics.0[..] else {
        panic!("one error: {shown}");
    };
    assert_eq!(diagnostic.path, "digest.files.etc/secret");
    assert!(
        diagnostic.message.contains("webgpu/etc: a link to")
            && diagnostic.message.contains("outside"),
        "{shown}"
    );
    assert!(
        !shown.contains(&digest("outside text")),
        "no outside digest: {shown}"
    );
}

/// FUZZ F-14: a digest entry naming a folder, a FIFO or a file over the input bound gets the
/// reason the template reader gives, not "no file"; a name that is not there still does.
#[cfg(unix)]
#[test]
fn a_digest_of_a_file_that_cannot_be_read_says_why() {
    let (root, build) = repository("unreadable");
    fs::create_dir_all(build.join("folder")).expect("folder");
    let status = std::process::Command::new("mkfifo")
        .arg(build.join("fifo"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    let large = fs::File::create(build.join("large")).expect("create");
    large.set_len((16 << 20) + 1).expect("grow");
    list_digests(
        &build,
        &[
            ("folder", "A"),
            ("fifo", "A"),
            ("large", "A"),
            ("absent", "A"),
        ],
    );
    let diagnostics = metadata_errors(&root);
    let mut messages: Vec<(&str, &str)> = (diagnostics.0.iter())
        .map(|d| (d.path.as_str(), d.message.as_str()))
        .collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            ("digest.files.absent", "the package has no file `absent`"),
            ("digest.files.fifo", "`fifo`: not a regular file (a FIFO)"),
            (
                "digest.files.folder",
                "`folder`: not a regular file (a folder)"
            ),
            (
                "digest.files.large",
                "`large`: larger than 16 MiB, the most an input may have"
            ),
        ]
    );
}

/// FUZZ F-10: an error reading `metadata.json` names the file once.
#[test]
fn a_metadata_read_error_names_the_file_once() {
    let (root, build) = repository("metadata-once");
    let path = build.join("metadata.json");
    fs::remove_file(&path).expect("remove");
    fs::create_dir(&path).expect("a folder named metadata.json");
    let shown = metadata_errors(&root).to_string();
    assert_eq!(shown.matches("metadata.json").count(), 1, "{shown}");
    assert!(shown.contains("not a regular file (a folder)"), "{shown}");
}
