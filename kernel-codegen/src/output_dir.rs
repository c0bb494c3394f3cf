//! The output folder and the files around it: which files there the generator wrote (and so
//! may replace or remove), how a run's files go in (all or none), the rule that it holds none
//! of the generator's inputs, how inputs are read (regular files of bounded size only, links
//! confined to their folder), and how suggested hints files go into a hints folder.
//!
//! A generator that removes "files it no longer generates" by listing its output folder
//! deletes whatever else a user keeps there, or a package's own manifest when the output
//! folder is pointed at it. Here a file counts as generated only when its first line is the
//! header every generated file starts with, and a folder holding an input is refused.

use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use crate::config_error::ConfigError;
use crate::{Diagnostics, GENERATED_MARK};

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

/// Writes `files` (each a path relative to `out_dir` and its contents) all or none: each is
/// written beside its place first, and only when every one is written are they renamed into
/// place; a rename that fails puts back the files renamed before it. A full disk, a folder in
/// the way or one path given twice leaves the folder as it was, without `.partial` files.
pub(crate) fn write_all(out_dir: &Path, files: &[(&str, &str)]) -> Result<(), ConfigError> {
    let mut seen = std::collections::BTreeSet::new();
    if let Some((path, _)) = files.iter().find(|(path, _)| !seen.insert(*path)) {
        // Two files for one place: the second rename would find the first's staging gone.
        return Err(ConfigError::Layout {
            path: out_dir.join(path),
            reason: "generated twice in one run; nothing was written".to_owned(),
        });
    }
    // (staged file, its place, what the place held before: to put back)
    let mut staged: Vec<(PathBuf, PathBuf, Option<Vec<u8>>)> = Vec::new();
    let mut failed = None;
    for (path, contents) in files {
        let target = out_dir.join(path);
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
        let temp = target.with_file_name(format!(".{}.partial", name.unwrap_or_default()));
        let parent = target.parent().map(Path::to_path_buf).unwrap_or_default();
        let written = fs::create_dir_all(&parent)
            .map_err(|error| io(&parent, error))
            .and_then(|()| {
                if fs::symlink_metadata(&temp).is_ok_and(|m| !m.is_file()) {
                    return Err(ConfigError::Layout {
                        path: temp.clone(),
                        reason: "in the way of a file being written, and not a regular file"
                            .to_owned(),
                    });
                }
                let previous = match existing(&target)? {
                    Existing::Generated => Some(fs::read(&target).map_err(|e| io(&target, e))?),
                    _ => None,
                };
                fs::write(&temp, contents).map_err(|error| io(&temp, error))?;
                Ok(previous)
            });
        match written {
            Ok(previous) => staged.push((temp, target, previous)),
            Err(err) => {
                if fs::symlink_metadata(&temp).is_ok_and(|m| m.is_file()) {
                    let _ = fs::remove_file(&temp);
                }
                failed = Some(err);
                break;
            }
        }
    }
    if let Some(err) = failed {
        for (temp, _, _) in &staged {
            let _ = fs::remove_file(temp);
        }
        return Err(err);
    }
    for (i, (temp, target, _)) in staged.iter().enumerate() {
        if let Err(error) = fs::rename(temp, target) {
            undo(&staged[..i]);
            for (temp, _, _) in &staged[i..] {
                let _ = fs::remove_file(temp);
            }
            return Err(io(target, error));
        }
    }
    Ok(())
}

/// Puts back what the places of `renamed` held before (best effort: this runs after an error,
/// which is what gets reported).
fn undo(renamed: &[(PathBuf, PathBuf, Option<Vec<u8>>)]) {
    for (temp, target, previous) in renamed {
        match previous {
            Some(bytes) => {
                if fs::write(temp, bytes).is_ok() && fs::rename(temp, target).is_err() {
                    let _ = fs::remove_file(temp);
                }
            }
            None => {
                let _ = fs::remove_file(target);
            }
        }
    }
}

/// Whether the regular file at `path` holds exactly `contents`.
pub(crate) fn holds(path: &Path, contents: &str) -> Result<bool, ConfigError> {
    let bytes = fs::read(path).map_err(|error| io(path, error))?;
    Ok(bytes == contents.as_bytes())
}

/// Reads an input file: a regular file (or a link to one inside `confine`) of at most
/// [`MAX_INPUT_BYTES`] bytes.
pub(crate) fn read_input(path: &Path, confine: &Path) -> Result<String, ConfigError> {
    check_confined(path, confine)?;
    let meta = fs::metadata(path).map_err(|error| io(path, error))?;
    if !meta.is_file() {
        return Err(ConfigError::Layout {
            path: path.to_path_buf(),
            reason: format!("not a regular file ({})", kind_of(&meta)),
        });
    }
    read_bounded(path, MAX_INPUT_BYTES)
}

/// Refuses `path` when a link on the way to it, below `confine`, leads out of `confine`: a
/// link to a folder elsewhere (`etc -> /etc`) carries `etc/passwd` out of the package though
/// the file's own name is no link.
fn check_confined(path: &Path, confine: &Path) -> Result<(), ConfigError> {
    let below = match path.strip_prefix(confine) {
        Ok(below) => below,
        // Not spelled under its folder: only the file itself can be told apart as a link.
        Err(_) => Path::new(""),
    };
    let mut ways: Vec<PathBuf> = Vec::new();
    let mut at = confine.to_path_buf();
    for part in below.components() {
        at.push(part);
        ways.push(at.clone());
    }
    if ways.last().is_none_or(|last| last != path) {
        ways.push(path.to_path_buf());
    }
    let mut folder = None;
    for way in ways {
        let meta = fs::symlink_metadata(&way).map_err(|error| io(&way, error))?;
        if !meta.file_type().is_symlink() {
            continue;
        }
        let target = fs::canonicalize(&way).map_err(|error| io(&way, error))?;
        if folder.is_none() {
            let base = if confine.as_os_str().is_empty() {
                Path::new(".")
            } else {
                confine
            };
            folder = Some(fs::canonicalize(base).map_err(|error| io(confine, error))?);
        }
        if folder
            .as_ref()
            .is_some_and(|folder| !target.starts_with(folder))
        {
            return Err(ConfigError::Layout {
                path: way,
                reason: format!(
                    "a link to {}, outside {}: inputs are read only from their own folder",
                    target.display(),
                    confine.display()
                ),
            });
        }
    }
    Ok(())
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

/// What became of one suggested hints file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HintsFile {
    /// Written, new, at this path.
    Written(PathBuf),
    /// A regular file was already there: left alone (the suggestion is merged by hand).
    LeftAlone(PathBuf),
}

/// The hints files `diagnostics` suggest (see [`Diagnostics::suggested_hints`]), each with
/// its path in `dir`; nothing is read or written. A file name that is not one plain name
/// (the op's `domain` and `name` come from a manifest, which could make it `../../x` or an
/// absolute path) is refused, naming the op.
pub fn suggested_hints_files(
    diagnostics: &Diagnostics,
    dir: &Path,
) -> Result<Vec<(PathBuf, String)>, ConfigError> {
    let mut files = Vec::new();
    for (name, text) in diagnostics.suggested_hints() {
        if let Some(reason) = not_a_plain_name(&name) {
            // The name is `<op>.hints.json`.
            let op = name.strip_suffix(".hints.json").unwrap_or(&name);
            return Err(ConfigError::HintsFileName {
                op: op.to_owned(),
                name: name.clone(),
                reason,
            });
        }
        files.push((dir.join(name), text));
    }
    Ok(files)
}

/// Why `name` is not one plain file name: a name that reaches another folder, or one a
/// terminal would show as something else.
fn not_a_plain_name(name: &str) -> Option<&'static str> {
    if name.chars().any(char::is_control) {
        return Some("holds a control character");
    }
    if name.contains(['/', '\\']) {
        return Some("holds a path separator");
    }
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(std::path::Component::Normal(part)), None) if part == name => None,
        _ => Some("is not one plain file name"),
    }
}

/// Writes the hints files `diagnostics` suggest into `dir` (created if missing), leaving a
/// regular file already there alone. Nothing is written through a link: one where a file goes
/// is refused, as the output folder refuses one in the way of a generated file, and each file
/// is created only where nothing is (so a link made meanwhile is not followed either). Every
/// name and place is checked before anything is written; a write that fails removes what
/// this call wrote.
pub fn write_suggested_hints(
    diagnostics: &Diagnostics,
    dir: &Path,
) -> Result<Vec<HintsFile>, ConfigError> {
    let files = suggested_hints_files(diagnostics, dir)?;
    if let Ok(meta) = fs::metadata(dir)
        && !meta.is_dir()
    {
        return Err(ConfigError::Layout {
            path: dir.to_path_buf(),
            reason: format!(
                "not a folder ({}), so the suggested hints files cannot go in it",
                if meta.is_file() {
                    "a regular file"
                } else {
                    kind_of(&meta)
                }
            ),
        });
    }
    let mut to_write = Vec::new();
    let mut done = Vec::new();
    for (path, text) in &files {
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => to_write.push((path, text)),
            Err(error) => return Err(io(path, error)),
            Ok(meta) if meta.is_file() => done.push(HintsFile::LeftAlone(path.clone())),
            Ok(meta) => {
                let what = if meta.file_type().is_symlink() {
                    "a link"
                } else {
                    kind_of(&meta)
                };
                return Err(ConfigError::Layout {
                    path: path.clone(),
                    reason: format!(
                        "{what} where a suggested hints file goes: hints are never written through or over one; remove it, or choose another folder"
                    ),
                });
            }
        }
    }
    if !to_write.is_empty() {
        fs::create_dir_all(dir).map_err(|error| io(dir, error))?;
    }
    let mut written: Vec<&PathBuf> = Vec::new();
    for (path, text) in to_write {
        if let Err(err) = create_new(path, text) {
            for path in written {
                let _ = fs::remove_file(path);
            }
            return Err(err);
        }
        written.push(path);
        done.push(HintsFile::Written(path.clone()));
    }
    Ok(done)
}

/// Writes a new file at `path`, failing on anything already there, a dangling link included;
/// a write that fails midway removes the file.
fn create_new(path: &Path, text: &str) -> Result<(), ConfigError> {
    use std::io::Write as _;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|error| io(path, error))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|error| {
            let _ = fs::remove_file(path);
            io(path, error)
        })
}

#[cfg(test)]
mod tests {
    // In tests a panic is the failure report.
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("output-dir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = (fs::read_dir(dir).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// FUZZ F-4: a rename that fails after others succeeded puts the earlier files back, and
    /// no `.partial` file stays.
    #[test]
    fn a_failed_rename_puts_back_the_files_renamed_before_it() {
        let dir = scratch("rename");
        let old = format!("// {GENERATED_MARK} earlier\n");
        fs::write(dir.join("a.rs"), &old).unwrap();
        // A folder holding a file cannot be renamed over: the second rename fails.
        fs::create_dir_all(dir.join("b.rs/inside")).unwrap();
        let err = write_all(
            &dir,
            &[("a.rs", "new a"), ("b.rs", "new b"), ("c.rs", "new c")],
        )
        .expect_err("b.rs cannot be replaced");
        assert!(
            matches!(&err, ConfigError::Io { path, .. } if path.ends_with("b.rs")),
            "{err}"
        );
        assert_eq!(fs::read_to_string(dir.join("a.rs")).unwrap(), old);
        assert_eq!(
            names(&dir),
            ["a.rs", "b.rs"],
            "no partial file, no new c.rs"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    /// FUZZ F-4: one path given twice (an op module named as the root module) is refused
    /// before anything is written.
    #[test]
    fn a_path_given_twice_writes_nothing() {
        let dir = scratch("twice");
        let old = format!("// {GENERATED_MARK} earlier\n");
        fs::write(dir.join("mod.rs"), &old).unwrap();
        let err = write_all(&dir, &[("mod.rs", "root"), ("x.rs", "x"), ("mod.rs", "op")])
            .expect_err("mod.rs twice");
        assert!(err.to_string().contains("generated twice"), "{err}");
        assert_eq!(fs::read_to_string(dir.join("mod.rs")).unwrap(), old);
        assert_eq!(names(&dir), ["mod.rs"]);
        let _ = fs::remove_dir_all(&dir);
    }

    /// FUZZ F-9: a link to a folder outside, on the way to a file, is refused though the
    /// file's own name is no link.
    #[cfg(unix)]
    #[test]
    fn a_link_to_a_folder_outside_on_the_way_is_refused() {
        let dir = scratch("way");
        let package = dir.join("package");
        fs::create_dir_all(package.join("inner")).unwrap();
        fs::create_dir_all(dir.join("elsewhere")).unwrap();
        fs::write(dir.join("elsewhere/secret"), "secret").unwrap();
        fs::write(package.join("inner/kept"), "kept").unwrap();
        std::os::unix::fs::symlink("../elsewhere", package.join("out")).unwrap();
        std::os::unix::fs::symlink("inner", package.join("in")).unwrap();
        let err = read_input(&package.join("out/secret"), &package).expect_err("outside");
        assert!(
            matches!(&err, ConfigError::Layout { path, reason } if path.ends_with("package/out") && reason.contains("outside")),
            "{err}"
        );
        assert_eq!(
            read_input(&package.join("in/kept"), &package).unwrap(),
            "kept"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
