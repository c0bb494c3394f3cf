//! Codegen diagnostics: every error names the file, the place inside it and what rule failed.

use std::fmt;

/// One error found while compiling the manifests and templates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    /// The file's display path, e.g. `packages/com.example.Op/manifest.json`.
    pub file: String,
    /// Where inside the file: a JSON path such as `derive.rank3Contract` or
    /// `variants[0].when[1]`, or `line 12` for templates. Empty for the whole file.
    pub path: String,
    /// 1-based column inside the expression (or template line) the error points at.
    pub column: Option<u32>,
    /// The expression or template line, shown under the message with a caret.
    pub excerpt: Option<String>,
    pub message: String,
    /// A consequence of an error reported by another diagnostic (a pass that includes a
    /// template with a syntax error): dropped when that error is in the same run.
    pub follow_on: bool,
    /// The hints entry that makes the error go away, where there is one.
    pub suggestion: Option<Box<Specialisation>>,
}

/// The description of a hints file made of suggestions.
const SUGGESTED_DESCRIPTION: &str = "Starting sets of values from the generator's errors: \
    each value's shaders are built for the values listed; list those the package's users need.";

/// A `specialise` entry of a hints file: build variant `variant` of op `op` for each of
/// `values` of `key` (a template value, or a scalar arg as `args.<name>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Specialisation {
    /// The op's `domain.name`.
    pub op: String,
    pub variant: String,
    pub key: String,
    pub values: Vec<i64>,
}

impl Specialisation {
    /// The name of the hints file the entry goes in.
    pub fn file_name(&self) -> String {
        hints_file_name(&self.op)
    }

    /// A whole hints file with this entry, on one line.
    pub fn one_line(&self) -> String {
        format!(
            "{{ \"op\": {}, \"variants\": [{}] }}",
            quoted(&self.op),
            variant_lines(std::slice::from_ref(self)).join(", ")
        )
    }
}

/// The name of op `op`'s hints file.
fn hints_file_name(op: &str) -> String {
    format!("{op}.hints.json")
}

/// A JSON string literal.
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// The `variants` items of a hints file holding `entries`, one line each, in the layout of
/// hand-written hints files: `{ "variant": "v", "specialise": { "args.n": [1, 2] } }`.
fn variant_lines(entries: &[Specialisation]) -> Vec<String> {
    let mut variants: Vec<(&str, Vec<String>)> = Vec::new();
    for entry in entries {
        let values: Vec<String> = entry.values.iter().map(i64::to_string).collect();
        let line = format!("{}: [{}]", quoted(&entry.key), values.join(", "));
        match variants.iter_mut().find(|(v, _)| *v == entry.variant) {
            Some((_, lines)) => lines.push(line),
            None => variants.push((&entry.variant, vec![line])),
        }
    }
    variants
        .into_iter()
        .map(|(variant, keys)| {
            format!(
                "{{ \"variant\": {}, \"specialise\": {{ {} }} }}",
                quoted(variant),
                keys.join(", ")
            )
        })
        .collect()
}

impl Diagnostic {
    /// A diagnostic about a whole file or JSON location, without a column.
    pub fn new(file: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_owned(),
            path: path.into(),
            column: None,
            excerpt: None,
            message: message.into(),
            follow_on: false,
            suggestion: None,
        }
    }

    /// Attaches the hints entry that would make the error go away.
    pub fn suggesting(mut self, suggestion: Specialisation) -> Self {
        self.suggestion = Some(Box::new(suggestion));
        self
    }

    /// Drops the hints entry (none of its values builds), saying instead in words what a
    /// hints entry for the value looks like.
    pub fn without_suggestion(&mut self) {
        if let Some(s) = self.suggestion.take() {
            self.message.push_str(&format!(
                " or declare the values to build in the package's hints (`\"variants\": [{{\"variant\": \"{}\", \"specialise\": {{\"{}\": [...]}}}}]`)",
                s.variant, s.key
            ));
        }
    }

    /// Marks the diagnostic as a consequence of an error another diagnostic reports.
    pub fn as_follow_on(mut self) -> Self {
        self.follow_on = true;
        self
    }

    /// Points the diagnostic at a column of an expression or template line.
    pub fn at(mut self, excerpt: &str, column: usize) -> Self {
        self.excerpt = Some(excerpt.to_owned());
        self.column = Some(u32::try_from(column).unwrap_or(u32::MAX));
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        if let Some(column) = self.column {
            write!(f, ", column {column}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(s) = &self.suggestion {
            write!(
                f,
                ", or build it for a set of values with `{}` in the hints folder (a starting set: list the values your models use): {}",
                s.file_name(),
                s.one_line()
            )?;
        }
        if let (Some(excerpt), Some(column)) = (&self.excerpt, self.column) {
            let (shown, caret) = clipped(excerpt, column as usize);
            // Padding written out: a formatting width past 65,535 panics.
            write!(f, "\n    {shown}\n    {}^", " ".repeat(caret))?;
        }
        Ok(())
    }
}

/// The longest excerpt shown whole; a longer one (a generated chain, a template line of
/// megabytes) is shown clipped to the characters before and after the column it points at.
const EXCERPT_WHOLE: usize = 200;
const EXCERPT_BEFORE: usize = 80;
const EXCERPT_AFTER: usize = 80;

/// `excerpt` clipped around the 1-based character `column` (`…` where text was cut), and
/// how many characters of it come before the caret.
fn clipped(excerpt: &str, column: usize) -> (String, usize) {
    let chars: Vec<char> = excerpt.chars().collect();
    // A column one past the end points after the text; further ones are clamped there.
    let at = column.saturating_sub(1).min(chars.len());
    if chars.len() <= EXCERPT_WHOLE {
        return (excerpt.to_owned(), at);
    }
    let start = at.saturating_sub(EXCERPT_BEFORE);
    let end = (at + EXCERPT_AFTER).min(chars.len());
    let mut shown = String::new();
    if start > 0 {
        shown.push('…');
    }
    shown.extend(&chars[start..end]);
    if end < chars.len() {
        shown.push('…');
    }
    (shown, at - start + usize::from(start > 0))
}

/// All diagnostics of one codegen run; codegen reports as many as it can find, not just the first.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Rewrites the JSON paths of the diagnostics about `file` by `paths` (a path, or a
    /// prefix of it ending before a `.` or `[`, → its replacement; the longest prefix wins),
    /// so that a declaration's paths read as the manifest file writes them.
    pub fn rewrite_paths(&mut self, file: &str, paths: &[(String, String)]) {
        for diagnostic in self.0.iter_mut().filter(|d| d.file == file) {
            let found = (paths.iter())
                .filter(|(from, _)| {
                    (diagnostic.path.strip_prefix(from.as_str()))
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                })
                .max_by_key(|(from, _)| from.len());
            if let Some((from, to)) = found {
                diagnostic.path = format!("{to}{}", &diagnostic.path[from.len()..]);
            }
        }
    }

    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// `Ok(value)` when nothing was reported, otherwise all the diagnostics.
    /// Repeats of one diagnostic (one error found from several shaders or passes) are shown
    /// once, and follow-on diagnostics not at all beside the errors they follow from.
    pub fn into_result<T>(mut self, value: T) -> Result<T, Diagnostics> {
        if self.0.is_empty() {
            return Ok(value);
        }
        let mut seen = std::collections::HashSet::new();
        self.0.retain(|d| seen.insert(d.clone()));
        if self.0.iter().any(|d| !d.follow_on) {
            self.0.retain(|d| !d.follow_on);
        }
        Err(self)
    }

    /// The hints files the errors' suggestions make, one per op: (file name, text). Written
    /// into a hints folder they make those errors go away, with starting sets of values to
    /// edit to the values the package's users need.
    pub fn suggested_hints(&self) -> Vec<(String, String)> {
        let mut by_op: std::collections::BTreeMap<&str, Vec<Specialisation>> = Default::default();
        for suggestion in self.0.iter().filter_map(|d| d.suggestion.as_ref()) {
            let entries = by_op.entry(suggestion.op.as_str()).or_default();
            if !entries.contains(suggestion) {
                entries.push((**suggestion).clone());
            }
        }
        by_op
            .into_iter()
            .map(|(op, entries)| {
                let text = format!(
                    "{{\n  \"op\": {},\n  \"description\": {},\n  \"variants\": [\n    {}\n  ]\n}}\n",
                    quoted(op),
                    quoted(SUGGESTED_DESCRIPTION),
                    variant_lines(&entries).join(",\n    ")
                );
                (hints_file_name(op), text)
            })
            .collect()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, diagnostic) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "error: {diagnostic}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(excerpt: &str, column: usize) -> String {
        Diagnostic::new("f.json", "derive.x", "bad")
            .at(excerpt, column)
            .to_string()
    }

    #[test]
    fn a_short_excerpt_is_shown_whole_with_the_caret_under_its_column() {
        assert_eq!(
            shown("a + é + c", 7),
            "f.json: derive.x, column 7: bad\n    a + é + c\n          ^"
        );
    }

    /// The character of the second line under the caret of the third.
    fn under_caret(text: &str) -> Option<char> {
        let lines: Vec<&str> = text.lines().collect();
        let caret = lines[2].find('^').expect("a caret");
        lines[1].chars().nth(caret)
    }

    /// FUZZ F-3: a column past 65,535 panicked (a formatting width is at most `u16::MAX`).
    #[test]
    fn a_column_past_65535_is_shown_clipped_around_it() {
        let mut excerpt = "1 + ".repeat(20_000);
        excerpt.push('x');
        let column = excerpt.chars().count();
        let text = shown(&excerpt, column);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("f.json: derive.x, column {column}: bad"));
        assert_eq!(
            lines[1],
            format!("    …{}x", &excerpt[column - 81..column - 1])
        );
        assert_eq!(under_caret(&text), Some('x'));
        // In the middle of the line, and past its end.
        let middle = shown(&excerpt, 40_001);
        assert!(middle.lines().nth(1).is_some_and(|l| l.ends_with('…')));
        assert_eq!(under_caret(&middle), Some('1'));
        let past = shown(&excerpt, 1_000_000);
        assert_eq!(under_caret(&past), None);
        assert!(past.ends_with(&format!("{}^", " ".repeat(81 + 4))));
    }
}
