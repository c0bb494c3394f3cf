//! The output folder and the files around it: which files there the generator wrote (and so
//! may replace or remove), the rule that it holds none of the generator's inputs, and how
//! inputs are read (regular files of bounded size only, links confined to their folder).
//!
//! A generator that removes "files it no longer generates" by listing its output folder
//! deletes whatever else a user keeps there, or a package's own manifest when the output
//! folder is pointed at it. Here a file counts as generated only when its first line is the
//! header every generated file starts with, and a folder holding an input is refused.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::GENERATED_MARK;
use crate::config_error::ConfigError;

/// The most bytes an input file (manifest, template, hints) may have.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// Whether `text` starts with a generated file's header (`// @generated …` in Rust,
/// `# @generated …` in shader tables).
fn is_generated(text: &str) -> bool {
    let first = text.lines().next().unwrap_or("");
    ["// ", "# "].iter().any(|marker| {
        first
            .strip_prefix(marker)
            .is_some_and(|rest| rest.starts_with(GENERATED_MARK))
    })
}

/// What is at `path` in the output folder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Existing {
    Nothing,
    /// A regular file with the generated header: the generator's own.
    Generated,
    /// Anything else: a user's file, a link, a folder or a special file.
    Foreign,
}

/// Classifies `path` without following links and without opening anything but a regular file
/// (opening a FIFO would wait for a writer).
pub(crate) fn existing(path: &Path) -> Result<Existing, ConfigError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Nothing),
        Err(error) => return Err(io(path, error)),
    };
    if !meta.is_file() {
        return Ok(Existing::Foreign);
    }
    let mut head = Vec::with_capacity(128);
    fs::File::open(path)
        .and_then(|file| file.take(128).read_to_end(&mut head))
        .map_err(|error| io(path, error))?;
    let head = String::from_utf8_lossy(&head);
    Ok(if is_generated(&head) {
        Existing::Generated
    } else {
        Existing::Foreign
    })
}

/// Whether the regular file at `path` holds exactly `contents`.
pub(crate) fn holds(path: &Path, contents: &str) -> Result<bool, ConfigError> {
    let bytes = fs::read(path).map_err(|error| io(path, error))?;
    Ok(bytes == contents.as_bytes())
}

/// Reads an input file: a regular file (or a link to one inside `confine`) of at most
/// [`MAX_INPUT_BYTES`] bytes.
pub(crate) fn read_input(path: &Path, confine: &Path) -> Result<String, ConfigError> {
    let meta = fs::symlink_metadata(path).map_err(|error| io(path, error))?;
    if meta.file_type().is_symlink() {
        let target = fs::canonicalize(path).map_err(|error| io(path, error))?;
        let folder = fs::canonicalize(confine).map_err(|error| io(confine, error))?;
        if !target.starts_with(&folder) {
            return Err(ConfigError::Layout {
                path: path.to_path_buf(),
                reason: format!(
                    "a link to {}, outside {}: inputs are read only from their own folder",
                    target.display(),
                    confine.display()
                ),
            });
        }
    }
    let meta = fs::metadata(path).map_err(|error| io(path, error))?;
    if !meta.is_file() {
        return Err(ConfigError::Layout {
            path: path.to_path_buf(),
            reason: format!("not a regular file ({})", kind_of(&meta)),
        });
    }
    read_bounded(path, MAX_INPUT_BYTES)
}

fn read_bounded(path: &Path, limit: u64) -> Result<String, ConfigError> {
    let mut bytes = Vec::new();
    fs::File::open(path)
        .and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|error| io(path, error))?;
    if bytes.len() as u64 > limit {
        return Err(ConfigError::Layout {
            path: path.to_path_buf(),
            reason: format!(
                "larger than {} MiB, the most an input may have",
                limit >> 20
            ),
        });
    }
    String::from_utf8(bytes).map_err(|_| ConfigError::Layout {
        path: path.to_path_buf(),
        reason: "not UTF-8 text".to_owned(),
    })
}

fn kind_of(meta: &fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let kind = meta.file_type();
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    if meta.is_dir() {
        "a folder"
    } else {
        "a special file"
    }
}

/// Refuses an output folder that is, or contains, one of the inputs `read`: writing there
/// would replace or remove them.
pub(crate) fn check_holds_no_input(out_dir: &Path, read: &[PathBuf]) -> Result<(), ConfigError> {
    let out = absolute(out_dir);
    for input in read {
        let input_abs = absolute(input);
        if input_abs.starts_with(&out) {
            return Err(ConfigError::OutputHoldsInput {
                out_dir: out_dir.to_path_buf(),
                input: input.clone(),
            });
        }
    }
    Ok(())
}

/// `path` made absolute with links resolved as far as it exists (the rest appended as
/// written, with `.` and `..` applied), so two spellings of one folder compare equal.
fn absolute(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(mut real) = fs::canonicalize(&existing) {
            real.extend(rest.iter().rev());
            return real;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
        }
    }
}

pub(crate) fn io(path: &Path, error: std::io::Error) -> ConfigError {
    ConfigError::Io {
        path: path.to_path_buf(),
        error,
    }
}
