//! Writing the hints files the generator's errors suggest (`config::write_suggested_hints`):
//! only directly inside the folder given, under a plain file name, never through a link, a
//! file already there left alone, and every refusal typed and naming the op or the path.

use std::fs;
use std::path::{Path, PathBuf};

use kernel_codegen::config::{HintsFile, suggested_hints_files, write_suggested_hints};
use kernel_codegen::{ConfigError, Diagnostic, Diagnostics, Specialisation};

/// A fresh scratch folder.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("codegen-hints-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// One error per op, each suggesting a hints entry, as `settle` reports an unbounded value.
fn suggesting(ops: &[&str]) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    for op in ops {
        let mut diagnostic = Diagnostic::new("pkg/t.wgsl.jinja", "line 3", "unbounded");
        diagnostic.suggestion = Some(Box::new(Specialisation {
            op: (*op).to_owned(),
            variant: "main".to_owned(),
            key: "args.cols".to_owned(),
            values: vec![1, 2, 4],
        }));
        diagnostics.push(diagnostic);
    }
    diagnostics
}

/// Every path under `dir`, links not followed.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).expect("read folder").flatten() {
            let path = entry.path();
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// FUZZ F-5: an op whose `domain` makes its file name reach another folder is refused,
/// naming the op, and nothing is written, inside the folder or out of it.
#[test]
fn a_file_name_that_leaves_the_folder_is_refused_and_nothing_is_written() {
    let root = scratch("names");
    let dir = root.join("a/b/hints");
    let absolute = root.join("abs").display().to_string();
    for op in [
        "../../escape.Op",
        "../escape.Op",
        "sub/dir.Op",
        "back\\slash.Op",
        absolute.as_str(),
        "nul\0.Op",
        "line\nfeed.Op",
        "carriage\r.Op",
    ] {
        let diagnostics = suggesting(&["com.example.Fine", op]);
        let err = write_suggested_hints(&diagnostics, &dir).expect_err(op);
        let ConfigError::HintsFileName { op: named, .. } = &err else {
            panic!("{op:?}: {err}");
        };
        assert_eq!(named, op);
        assert!(
            err.to_string()
                .contains("written only directly inside their folder"),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'), "shown escaped: {err}");
        assert!(suggested_hints_files(&diagnostics, &dir).is_err(), "{op:?}");
        assert_eq!(
            listing(&root),
            Vec::<PathBuf>::new(),
            "{op:?}: nothing written"
        );
    }
    let _ = fs::remove_dir_all(&root);
}

/// FUZZ F-6: a link where a hints file goes, dangling or not, is refused and not written
/// through, as a link in the way of a generated file is; a regular file is left alone.
#[cfg(unix)]
#[test]
fn a_link_in_place_is_refused_and_a_file_left_alone() {
    let root = scratch("links");
    let dir = root.join("hints");
    fs::create_dir_all(&dir).expect("hints folder");
    let link = dir.join("com.example.A.hints.json");
    std::os::unix::fs::symlink("../elsewhere.json", &link).expect("link");
    let diagnostics = suggesting(&["com.example.A", "com.example.B"]);
    let err = write_suggested_hints(&diagnostics, &dir).expect_err("a dangling link");
    assert!(
        matches!(&err, ConfigError::Layout { path, reason } if path == &link && reason.contains("a link")),
        "{err}"
    );
    assert!(!root.join("elsewhere.json").exists(), "not written through");
    assert!(
        !dir.join("com.example.B.hints.json").exists(),
        "nothing written"
    );

    fs::write(root.join("elsewhere.json"), "{}").expect("target");
    let err = write_suggested_hints(&diagnostics, &dir).expect_err("a link to a file");
    assert!(matches!(&err, ConfigError::Layout { .. }), "{err}");
    assert_eq!(
        fs::read_to_string(root.join("elsewhere.json")).expect("read"),
        "{}"
    );

    fs::remove_file(&link).expect("unlink");
    fs::write(&link, "mine").expect("a file of the user's");
    let done = write_suggested_hints(&diagnostics, &dir).expect("writes");
    let b = dir.join("com.example.B.hints.json");
    assert_eq!(
        done,
        [
            HintsFile::LeftAlone(link.clone()),
            HintsFile::Written(b.clone())
        ]
    );
    assert_eq!(fs::read_to_string(&link).expect("read"), "mine");
    assert!(
        fs::read_to_string(&b)
            .expect("read")
            .contains("\"args.cols\": [1, 2, 4]")
    );
    let _ = fs::remove_dir_all(&root);
}

/// FUZZ F-7: a hints folder that is a file is an error naming it, whatever the folder's
/// name.
#[test]
fn a_hints_folder_that_is_a_file_is_named() {
    let root = scratch("file");
    let dir = root.join("hints");
    fs::write(&dir, "a file").expect("file");
    let err = write_suggested_hints(&suggesting(&["com.example.A"]), &dir).expect_err("a file");
    assert!(
        matches!(&err, ConfigError::Layout { path, .. } if path == &dir),
        "{err}"
    );
    assert!(
        err.to_string().contains("not a folder (a regular file)"),
        "{err}"
    );
    let _ = fs::remove_dir_all(&root);
}
