//! `run-op`'s files: an input is read only when it is a regular file and its safetensors
//! header names each tensor once; an output replaces nothing but a regular file (never a
//! device, a FIFO, a link or an input of the same call), through a partial file of its own.

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::Path;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

/// What kind of thing is at `path` when it is not a regular file (links not followed).
fn not_regular(path: &Path) -> Option<&'static str> {
    let meta = fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_symlink() {
        return Some("a symbolic link");
    }
    if kind.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// Reads the input file at `path`: a regular file, or a link to one.
pub fn read_input(path: &Path) -> Result<Vec<u8>, String> {
    let meta = fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        let kind = not_regular(&fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
            .unwrap_or("not a regular file");
        return Err(format!(
            "cannot read {}: {kind}, not a regular file",
            path.display()
        ));
    }
    fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The first tensor name a safetensors header repeats, if any (the safetensors crate keeps
/// the last of them, so the file would mean something other than it says).
pub fn repeated_tensor(bytes: &[u8]) -> Option<String> {
    let len = usize::try_from(u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?)).ok()?;
    let header = bytes.get(8..8usize.checked_add(len)?)?;
    let mut de = serde_json::Deserializer::from_slice(header);
    de.deserialize_map(FirstRepeat).ok().flatten()
}

struct FirstRepeat;

impl<'de> Visitor<'de> for FirstRepeat {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // The whole map is read (serde_json checks that it ends), keeping the first repeat.
        let mut seen = std::collections::HashSet::new();
        let mut first = None;
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            if !seen.insert(key.clone()) {
                first.get_or_insert(key);
            }
        }
        Ok(first)
    }
}

/// Refuses an output path that would replace something other than a regular file, or one of
/// the `inputs` of the call.
pub fn check_output(path: &Path, inputs: &[&Path]) -> Result<(), String> {
    if let Some(kind) = not_regular(path) {
        return Err(format!(
            "--output {} is {kind}; give the path of a regular file (it is written beside and renamed over)",
            path.display()
        ));
    }
    if let Ok(out) = fs::canonicalize(path) {
        for input in inputs {
            if fs::canonicalize(input).is_ok_and(|i| i == out) {
                return Err(format!(
                    "--output {} is the input file {}; write the outputs elsewhere",
                    path.display(),
                    input.display()
                ));
            }
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` through `.NAME.partial` beside it, renamed into place, so a failed
/// write leaves no partial file; a partial file left by someone else is not overwritten.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let file_name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let partial = path.with_file_name(format!(".{file_name}.partial"));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&partial)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                format!(
                    "cannot write {}: {} exists (left by another run?); remove it first",
                    path.display(),
                    partial.display()
                )
            } else {
                format!("cannot write {}: {e}", path.display())
            }
        })?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            fs::rename(&partial, path)
        });
    written.map_err(|e| {
        let _ = fs::remove_file(&partial);
        format!("cannot write {}: {e}", path.display())
    })
}
