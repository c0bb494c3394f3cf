//! `metadata.json` beside a Hub package's manifest, checked as the Hub's runtime checks it
//! before it loads a kernel (backend, manifest spec, digest algorithm, the op's name, every
//! variant's templates listed), and every sha256 digest checked against the file it names.
//! The file is the Hub's, not the package author's, so keys this check does not read are
//! left alone.

use base64::Engine as _;
use indexmap::IndexMap;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::Manifest;

/// The manifest spec the Hub's runtime reads (and this front end mirrors).
pub const MANIFEST_SPEC: &str = "2.1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    name: String,
    backend: Backend,
    digest: Digests,
    webgpu: Webgpu,
}

#[derive(Deserialize)]
struct Backend {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Digests {
    algorithm: String,
    files: IndexMap<String, String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Webgpu {
    manifest_spec: String,
    #[serde(default)]
    variants: Option<IndexMap<String, Vec<String>>>,
}

/// The problems of `metadata` (the text of `metadata.json`) for `manifest`, as (JSON path,
/// message) pairs; `file` gives the bytes of a file of the package by its name, or why it
/// cannot (no such file, not a regular file, a link out of the package: the message shown at
/// the file's digest).
pub fn check(
    metadata: &str,
    manifest: &Manifest,
    file: &dyn Fn(&str) -> Result<Vec<u8>, String>,
) -> Vec<(String, String)> {
    let metadata: Metadata = match crate::manifest::parse_strict(metadata) {
        Ok(metadata) => metadata,
        Err(problem) => return vec![problem],
    };
    let mut problems = Vec::new();
    let mut problem = |path: &str, message: String| problems.push((path.to_owned(), message));
    if metadata.backend.kind != "webgpu" {
        problem(
            "backend.type",
            format!("`{}`, not `webgpu`", metadata.backend.kind),
        );
    }
    if metadata.webgpu.manifest_spec != MANIFEST_SPEC {
        problem(
            "webgpu.manifestSpec",
            format!(
                "manifest spec {} is not supported by this runtime (supports {MANIFEST_SPEC})",
                metadata.webgpu.manifest_spec
            ),
        );
    }
    let op = format!("{}.{}", manifest.domain, manifest.name);
    if metadata.name != op {
        problem(
            "name",
            format!("`{}`, but the manifest's op is `{op}`", metadata.name),
        );
    }
    if metadata.digest.algorithm != "sha256" {
        problem(
            "digest.algorithm",
            format!("`{}`, not `sha256`", metadata.digest.algorithm),
        );
    } else {
        if !metadata.digest.files.contains_key("manifest.json") {
            problem("digest.files", "lists no `manifest.json`".to_owned());
        }
        for (name, digest) in &metadata.digest.files {
            let path = format!("digest.files.{name}");
            match file(name) {
                Err(why) => problem(&path, why),
                Ok(bytes) => {
                    let actual =
                        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&bytes));
                    if &actual != digest {
                        problem(
                            &path,
                            format!(
                                "`{name}` has sha256 {actual}, but the metadata says {digest}: the file differs from the one the metadata describes"
                            ),
                        );
                    }
                }
            }
        }
    }
    match &metadata.webgpu.variants {
        None => problem(
            "webgpu.variants",
            "missing: the runtime needs each variant's templates listed".to_owned(),
        ),
        Some(listed) => {
            for variant in &manifest.variants {
                let path = format!("webgpu.variants.{}", variant.id);
                let Some(templates) = listed.get(&variant.id) else {
                    problem(&path, format!("variant `{}` is not listed", variant.id));
                    continue;
                };
                for pass in &variant.passes {
                    if !templates.contains(&pass.shader) {
                        problem(
                            &path,
                            format!(
                                "pass `{}`'s template `{}` is not listed",
                                pass.id, pass.shader
                            ),
                        );
                    }
                }
                for template in templates {
                    if !metadata.digest.files.contains_key(template) {
                        problem(
                            &path,
                            format!("`{template}` has no digest in `digest.files`"),
                        );
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    // In tests a panic is the failure report.
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn digest(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(bytes))
    }

    const MANIFEST: &str = r#"{
        "domain": "com.example", "name": "Copy", "sinceVersion": 1,
        "inputs": {"x": {"dtype": "float32"}},
        "outputs": {"y": {"dtype": "float32", "shape": "shapes.x"}},
        "variants": [{"id": "main", "when": ["true"], "passes": [
            {"id": "p", "name": "copy", "shader": "copy.wgsl.jinja",
             "bindings": [], "dispatch": {"x": "1"}}]}]
    }"#;

    fn metadata(spec: &str, manifest_digest: &str, template_digest: &str) -> String {
        format!(
            r#"{{"name": "com.example.Copy", "id": "x", "version": 1,
               "backend": {{"type": "webgpu"}},
               "digest": {{"algorithm": "sha256", "files": {{"manifest.json": "{manifest_digest}", "copy.wgsl.jinja": "{template_digest}"}}}},
               "webgpu": {{"manifestSpec": "{spec}", "variants": {{"main": ["copy.wgsl.jinja"]}}}}}}"#
        )
    }

    #[test]
    fn digests_spec_and_listing_are_checked() {
        let manifest = super::super::parse(MANIFEST).unwrap();
        let template = b"template text";
        let files = |name: &str| match name {
            "manifest.json" => Ok(MANIFEST.as_bytes().to_vec()),
            "copy.wgsl.jinja" => Ok(template.to_vec()),
            _ => Err(format!("the package has no file `{name}`")),
        };
        let good = metadata("2.1", &digest(MANIFEST.as_bytes()), &digest(template));
        assert_eq!(check(&good, &manifest, &files), vec![]);
        let stale = metadata("1.0", &digest(MANIFEST.as_bytes()), &digest(b"other"));
        let problems = check(&stale, &manifest, &files);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(
            problems[0],
            (
                "webgpu.manifestSpec".to_owned(),
                "manifest spec 1.0 is not supported by this runtime (supports 2.1)".to_owned()
            )
        );
        assert_eq!(problems[1].0, "digest.files.copy.wgsl.jinja");
        assert!(problems[1].1.starts_with("`copy.wgsl.jinja` has sha256 "));
    }

    #[test]
    fn a_variant_or_template_missing_from_the_listing_is_named() {
        let manifest = super::super::parse(MANIFEST).unwrap();
        let unlisted = r#"{"name": "com.example.Other", "backend": {"type": "webgpu"},
            "digest": {"algorithm": "sha256", "files": {}},
            "webgpu": {"manifestSpec": "2.1", "variants": {}}}"#;
        let problems = check(unlisted, &manifest, &|_| Err("no file".to_owned()));
        let paths: Vec<&str> = problems.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["name", "digest.files", "webgpu.variants.main"]);
    }
}
