//! Mutations of a generator's inputs, as lines of text: what the fuzzer generates, what it
//! prints when a target fails, and what regression fixtures are written in.
//!
//! ```text
//! packages com.microsoft.GatedRelativePositionBias
//! set packages/com.microsoft.GatedRelativePositionBias/manifest.json /variants/2/id "a-b"
//! insert-line packages/_shared/macros/bias-softmax-access.wgsl.jinja 51 "{% filter upper %}"
//! ```
//!
//! JSON edits take an RFC 6901 pointer and raw JSON text, written into the file as given (so
//! `1e39` or `18446744073709551617` reach the generator's parser unchanged); text edits work
//! on lines (1-based) of any file; `create` adds a file the inputs lack (a template, or a
//! package's `hints.json`), before the other edits.

use std::collections::BTreeMap;
use std::fmt;

use kernel_codegen::Inputs;
use serde_json::Value;

/// One edit of one input file (its display path, as in [`kernel_codegen::Inputs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Replaces (or adds, in an object) the value at `pointer` with the raw JSON `raw`.
    Set {
        file: String,
        pointer: String,
        raw: String,
    },
    /// Removes the object key or array element at `pointer`.
    Remove {
        file: String,
        pointer: String,
    },
    /// Renames the object key at `pointer`, keeping its place.
    Rename {
        file: String,
        pointer: String,
        key: String,
    },
    /// Inserts a copy of the array element at `pointer` right after it.
    Duplicate {
        file: String,
        pointer: String,
    },
    /// Repeats the object key at `pointer` later in the same object, with the raw value `raw`.
    DuplicateKey {
        file: String,
        pointer: String,
        raw: String,
    },
    /// Appends text to the file.
    Append {
        file: String,
        text: String,
    },
    /// Keeps the first `bytes` bytes of the file (rounded down to a character boundary).
    Truncate {
        file: String,
        bytes: usize,
    },
    DeleteLine {
        file: String,
        line: usize,
    },
    /// Inserts a line before line `line` (one past the last line appends).
    InsertLine {
        file: String,
        line: usize,
        text: String,
    },
    ReplaceLine {
        file: String,
        line: usize,
        text: String,
    },
    /// Adds a file the inputs do not have: `<package folder>/hints.json` becomes that
    /// package's hints, any other name a template. Applied before the other edits, so they
    /// may change it.
    Create {
        file: String,
        text: String,
    },
}

/// A mutated input set: the seed it starts from (the seed packages when `None`, else a
/// corpus package by name: `from com.xenova.RMSNorm`), which packages to keep (all when
/// `None`) and the edits, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Case {
    pub from: Option<String>,
    pub packages: Option<Vec<String>>,
    pub edits: Vec<Edit>,
}

/// A mutation that cannot be applied to the inputs, or a line that is not a mutation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MutationError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("no input file `{0}`")]
    NoFile(String),
    #[error("no package `{0}` among the inputs")]
    NoPackage(String),
    #[error("{file}: {message}")]
    Apply { file: String, message: String },
    #[error("`{0}` is already an input file")]
    Exists(String),
}

impl Edit {
    pub fn file(&self) -> &str {
        match self {
            Edit::Set { file, .. }
            | Edit::Remove { file, .. }
            | Edit::Rename { file, .. }
            | Edit::Duplicate { file, .. }
            | Edit::DuplicateKey { file, .. }
            | Edit::Append { file, .. }
            | Edit::Truncate { file, .. }
            | Edit::DeleteLine { file, .. }
            | Edit::InsertLine { file, .. }
            | Edit::ReplaceLine { file, .. }
            | Edit::Create { file, .. } => file,
        }
    }

    /// The JSON pointer of a JSON edit; `None` for line edits.
    fn pointer(&self) -> Option<&str> {
        match self {
            Edit::Set { pointer, .. }
            | Edit::Remove { pointer, .. }
            | Edit::Rename { pointer, .. }
            | Edit::Duplicate { pointer, .. }
            | Edit::DuplicateKey { pointer, .. } => Some(pointer),
            _ => None,
        }
    }

    fn is_structural(&self) -> bool {
        self.pointer().is_some()
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

impl fmt::Display for Edit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Edit::Set { file, pointer, raw } => write!(f, "set {file} {pointer} {raw}"),
            Edit::Remove { file, pointer } => write!(f, "remove {file} {pointer}"),
            Edit::Rename { file, pointer, key } => {
                write!(f, "rename {file} {pointer} {}", quoted(key))
            }
            Edit::Duplicate { file, pointer } => write!(f, "duplicate {file} {pointer}"),
            Edit::DuplicateKey { file, pointer, raw } => {
                write!(f, "duplicate-key {file} {pointer} {raw}")
            }
            Edit::Append { file, text } => write!(f, "append {file} {}", quoted(text)),
            Edit::Truncate { file, bytes } => write!(f, "truncate {file} {bytes}"),
            Edit::DeleteLine { file, line } => write!(f, "delete-line {file} {line}"),
            Edit::InsertLine { file, line, text } => {
                write!(f, "insert-line {file} {line} {}", quoted(text))
            }
            Edit::ReplaceLine { file, line, text } => {
                write!(f, "replace-line {file} {line} {}", quoted(text))
            }
            Edit::Create { file, text } => write!(f, "create {file} {}", quoted(text)),
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(from) = &self.from {
            writeln!(f, "from {from}")?;
        }
        if let Some(packages) = &self.packages {
            writeln!(f, "packages {}", packages.join(" "))?;
        }
        for edit in &self.edits {
            writeln!(f, "{edit}")?;
        }
        Ok(())
    }
}

impl Case {
    /// Parses the mutation lines of a fixture; `#` starts a comment line.
    pub fn parse(text: &str) -> Result<Case, MutationError> {
        let mut case = Case::default();
        for (index, line) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let syntax = |message: &str| MutationError::Syntax {
                line: line_no,
                message: message.to_owned(),
            };
            let (verb, rest) = line.split_once(' ').ok_or_else(|| syntax("no arguments"))?;
            if verb == "from" {
                case.from = Some(rest.trim().to_owned());
                continue;
            }
            if verb == "packages" {
                case.packages = Some(rest.split_whitespace().map(str::to_owned).collect());
                continue;
            }
            let (file, rest) = rest.split_once(' ').unwrap_or((rest, ""));
            let file = file.to_owned();
            let mut words = rest.splitn(2, ' ');
            let first = words.next().unwrap_or_default().to_owned();
            let tail = words.next().unwrap_or_default().to_owned();
            let number = |text: &str| {
                text.parse::<usize>()
                    .map_err(|_| syntax(&format!("`{text}` is not a number")))
            };
            let string = |text: &str| {
                serde_json::from_str::<String>(text)
                    .map_err(|_| syntax(&format!("`{text}` is not a JSON string")))
            };
            let edit = match verb {
                "set" => Edit::Set {
                    file,
                    pointer: first,
                    raw: tail,
                },
                "remove" => Edit::Remove {
                    file,
                    pointer: first,
                },
                "rename" => Edit::Rename {
                    file,
                    pointer: first,
                    key: string(&tail)?,
                },
                "duplicate" => Edit::Duplicate {
                    file,
                    pointer: first,
                },
                "duplicate-key" => Edit::DuplicateKey {
                    file,
                    pointer: first,
                    raw: tail,
                },
                "append" => Edit::Append {
                    file,
                    text: string(rest)?,
                },
                "create" => Edit::Create {
                    file,
                    text: string(rest)?,
                },
                "truncate" => Edit::Truncate {
                    file,
                    bytes: number(&first)?,
                },
                "delete-line" => Edit::DeleteLine {
                    file,
                    line: number(&first)?,
                },
                "insert-line" => Edit::InsertLine {
                    file,
                    line: number(&first)?,
                    text: string(&tail)?,
                },
                "replace-line" => Edit::ReplaceLine {
                    file,
                    line: number(&first)?,
                    text: string(&tail)?,
                },
                other => return Err(syntax(&format!("unknown edit `{other}`"))),
            };
            case.edits.push(edit);
        }
        Ok(case)
    }

    /// The inputs with the case's packages kept and its edits applied.
    pub fn apply(&self, inputs: &Inputs) -> Result<Inputs, MutationError> {
        let mut out = inputs.clone();
        if let Some(keep) = &self.packages {
            for name in keep {
                if !inputs.packages.iter().any(|p| folder_name(&p.dir) == name) {
                    return Err(MutationError::NoPackage(name.clone()));
                }
            }
            out.packages
                .retain(|p| keep.iter().any(|k| k == folder_name(&p.dir)));
        }
        for edit in &self.edits {
            if let Edit::Create { file, text } = edit {
                create(&mut out, file, text)?;
            }
        }
        let mut by_file: BTreeMap<&str, Vec<&Edit>> = BTreeMap::new();
        for edit in self
            .edits
            .iter()
            .filter(|e| !matches!(e, Edit::Create { .. }))
        {
            by_file.entry(edit.file()).or_default().push(edit);
        }
        for (file, edits) in by_file {
            let text =
                file_text(&mut out, file).ok_or_else(|| MutationError::NoFile(file.to_owned()))?;
            *text = apply_to_text(file, text, &edits)?;
        }
        Ok(out)
    }
}

/// Adds `file` to `inputs` (see [`Edit::Create`]).
fn create(inputs: &mut Inputs, file: &str, text: &str) -> Result<(), MutationError> {
    if file_text(inputs, file).is_some() {
        return Err(MutationError::Exists(file.to_owned()));
    }
    let hints_of = file.strip_suffix("/hints.json");
    match inputs
        .packages
        .iter_mut()
        .find(|p| Some(p.dir.as_str()) == hints_of)
    {
        Some(package) => package.hints = Some((file.to_owned(), text.to_owned())),
        None => {
            inputs.templates.insert(file.to_owned(), text.to_owned());
        }
    }
    Ok(())
}

fn folder_name(dir: &str) -> &str {
    dir.rsplit('/').next().unwrap_or(dir)
}

/// The text of the input file shown as `file`: a manifest, a hints file or a template.
pub fn file_text<'a>(inputs: &'a mut Inputs, file: &str) -> Option<&'a mut String> {
    if inputs.templates.contains_key(file) {
        return inputs.templates.get_mut(file);
    }
    for package in &mut inputs.packages {
        if package.manifest_path() == file {
            return Some(&mut package.manifest);
        }
        if let Some((path, text)) = &mut package.hints
            && path == file
        {
            return Some(text);
        }
    }
    None
}

fn apply_to_text(file: &str, text: &str, edits: &[&Edit]) -> Result<String, MutationError> {
    let fail = |message: String| MutationError::Apply {
        file: file.to_owned(),
        message,
    };
    let mut text = text.to_owned();
    if edits.iter().any(|e| e.is_structural()) {
        let mut value: Value = serde_json::from_str(&text)
            .map_err(|e| fail(format!("not JSON, so no JSON edit applies: {e}")))?;
        let mut raw: Vec<(String, String)> = Vec::new();
        for edit in edits.iter().filter(|e| e.is_structural()) {
            apply_structural(&mut value, edit, &mut raw).map_err(&fail)?;
        }
        text = serde_json::to_string_pretty(&value).map_err(|e| fail(e.to_string()))?;
        text.push('\n');
        for (placeholder, replacement) in raw {
            text = text.replacen(&quoted(&placeholder), &replacement, 1);
        }
    }
    for edit in edits.iter().filter(|e| !e.is_structural()) {
        text = apply_text_edit(&text, edit).map_err(&fail)?;
    }
    Ok(text)
}

/// Splits a pointer into its parent and last token (unescaped).
fn split_pointer(pointer: &str) -> Result<(&str, String), String> {
    let (parent, last) = pointer
        .rsplit_once('/')
        .ok_or_else(|| format!("`{pointer}` is not a JSON pointer"))?;
    Ok((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn apply_structural(
    value: &mut Value,
    edit: &Edit,
    raw: &mut Vec<(String, String)>,
) -> Result<(), String> {
    // Raw JSON goes in as a unique string and is swapped for its text after serialising.
    fn placeholder(raw: &mut Vec<(String, String)>, text: &str) -> String {
        let key = format!("\u{1}fuzz:{}", raw.len());
        raw.push((key.clone(), text.to_owned()));
        key
    }
    let Some(target) = edit.pointer() else {
        return Ok(());
    };
    let (pointer, last) = split_pointer(target)?;
    let parent = value
        .pointer_mut(pointer)
        .ok_or_else(|| format!("nothing at `{pointer}`"))?;
    match (edit, parent) {
        (Edit::Set { raw: text, .. }, Value::Object(map)) => {
            map.insert(last, Value::String(placeholder(raw, text)));
        }
        (Edit::Set { raw: text, .. }, Value::Array(items)) => {
            let slot = index(&last, items.len() + 1)?;
            let new = Value::String(placeholder(raw, text));
            if slot == items.len() {
                items.push(new);
            } else {
                items[slot] = new;
            }
        }
        (Edit::Remove { .. }, Value::Object(map)) => {
            let rebuilt = std::mem::take(map).into_iter().filter(|(k, _)| *k != last);
            *map = rebuilt.collect();
        }
        (Edit::Remove { .. }, Value::Array(items)) => {
            let slot = index(&last, items.len())?;
            items.remove(slot);
        }
        (Edit::Rename { key, .. }, Value::Object(map)) => {
            if !map.contains_key(&last) {
                return Err(format!("no key `{last}` under `{pointer}`"));
            }
            let rebuilt = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| if k == last { (key.clone(), v) } else { (k, v) });
            *map = rebuilt.collect();
        }
        (Edit::Duplicate { .. }, Value::Array(items)) => {
            let slot = index(&last, items.len())?;
            let copy = items[slot].clone();
            items.insert(slot + 1, copy);
        }
        (Edit::DuplicateKey { raw: text, .. }, Value::Object(map)) => {
            if !map.contains_key(&last) {
                return Err(format!("no key `{last}` under `{pointer}`"));
            }
            let twin = format!("{last}\u{1}dup{}", raw.len());
            raw.push((twin.clone(), quoted(&last)));
            map.insert(twin, Value::String(placeholder(raw, text)));
        }
        (_, other) => {
            return Err(format!(
                "`{pointer}` holds {}, which this edit does not apply to",
                kind(other)
            ));
        }
    }
    Ok(())
}

fn index(token: &str, len: usize) -> Result<usize, String> {
    match token.parse::<usize>() {
        Ok(i) if i < len => Ok(i),
        _ => Err(format!("`{token}` is not an index below {len}")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn apply_text_edit(text: &str, edit: &Edit) -> Result<String, String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    let line_of = |line: usize, len: usize| {
        if line >= 1 && line <= len {
            Ok(line - 1)
        } else {
            Err(format!("no line {line} (the file has {len})"))
        }
    };
    match edit {
        Edit::Append { text: extra, .. } => return Ok(format!("{text}{extra}")),
        Edit::Truncate { bytes, .. } => {
            let mut end = (*bytes).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            return Ok(text[..end].to_owned());
        }
        Edit::DeleteLine { line, .. } => {
            let at = line_of(*line, lines.len())?;
            lines.remove(at);
        }
        Edit::InsertLine {
            line, text: new, ..
        } => {
            let at = line_of(*line, lines.len() + 1)?;
            if at == lines.len()
                && let Some(last) = lines.last_mut()
                && !last.ends_with('\n')
            {
                last.push('\n');
            }
            lines.insert(at, format!("{new}\n"));
        }
        Edit::ReplaceLine {
            line, text: new, ..
        } => {
            let at = line_of(*line, lines.len())?;
            let ending = if lines[at].ends_with('\n') { "\n" } else { "" };
            lines[at] = format!("{new}{ending}");
        }
        _ => {}
    }
    Ok(lines.concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_package(manifest: &str) -> Inputs {
        Inputs {
            packages: vec![kernel_codegen::Package {
                dir: "p/op".to_owned(),
                manifest: manifest.to_owned(),
                hints: None,
                manifest_file: None,
            }],
            ..Inputs::default()
        }
    }

    #[test]
    fn cases_print_as_they_parse() {
        let text = "packages op\nset p/op/manifest.json /a 1e39\nrename p/op/manifest.json /b \"c d\"\n\
                    duplicate-key p/op/manifest.json /t/W 128\ninsert-line t.jinja 3 \"{% x %}\"\n";
        let case = Case::parse(text).expect("parses");
        assert_eq!(case.to_string(), text);
    }

    #[test]
    fn raw_values_and_duplicate_keys_reach_the_text() {
        let inputs = one_package(r#"{"a": 1, "t": {"W": 256, "X": 1}, "l": [1, 2]}"#);
        let case = Case::parse(
            "set p/op/manifest.json /a 18446744073709551617\n\
             duplicate-key p/op/manifest.json /t/W 128\n\
             duplicate p/op/manifest.json /l/0\nrename p/op/manifest.json /t/X \"Y\"",
        )
        .expect("parses");
        let out = case.apply(&inputs).expect("applies");
        let text: String = out.packages[0].manifest.split_whitespace().collect();
        assert_eq!(
            text,
            r#"{"a":18446744073709551617,"t":{"W":256,"Y":1,"W":128},"l":[1,1,2]}"#
        );
    }

    #[test]
    fn a_pointer_to_nothing_is_an_error() {
        let inputs = one_package(r#"{"a": 1}"#);
        let case = Case::parse("remove p/op/manifest.json /b/c").expect("parses");
        assert!(matches!(
            case.apply(&inputs),
            Err(MutationError::Apply { .. })
        ));
        let case = Case::parse("append p/other.json \"x\"").expect("parses");
        assert_eq!(
            case.apply(&inputs).err(),
            Some(MutationError::NoFile("p/other.json".to_owned()))
        );
    }

    #[test]
    fn created_files_become_hints_or_templates_and_take_later_edits() {
        let inputs = one_package(r#"{"a": 1}"#);
        let case = Case::parse(
            "create p/op/hints.json \"{}\\n\"\ncreate p/op/x.wgsl.jinja \"a\\nb\\n\"\n\
             replace-line p/op/x.wgsl.jinja 2 \"c\"\n",
        )
        .expect("parses");
        assert_eq!(
            case.to_string(),
            "create p/op/hints.json \"{}\\n\"\ncreate p/op/x.wgsl.jinja \"a\\nb\\n\"\n\
             replace-line p/op/x.wgsl.jinja 2 \"c\"\n"
        );
        let out = case.apply(&inputs).expect("applies");
        assert_eq!(
            out.packages[0].hints,
            Some(("p/op/hints.json".to_owned(), "{}\n".to_owned()))
        );
        assert_eq!(out.templates["p/op/x.wgsl.jinja"], "a\nc\n");
        let again = Case::parse("create p/op/manifest.json \"{}\"").expect("parses");
        assert_eq!(
            again.apply(&inputs).err(),
            Some(MutationError::Exists("p/op/manifest.json".to_owned()))
        );
    }
}
