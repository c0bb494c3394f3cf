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
    pub column: Option<usize>,
    /// The expression or template line, shown under the message with a caret.
    pub excerpt: Option<String>,
    pub message: String,
    /// A consequence of an error reported by another diagnostic (a pass that includes a
    /// template with a syntax error): dropped when that error is in the same run.
    pub follow_on: bool,
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
        self.column = Some(column);
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
        if let (Some(excerpt), Some(column)) = (&self.excerpt, self.column) {
            write!(f, "\n    {excerpt}\n    {:>width$}", "^", width = column)?;
        }
        Ok(())
    }
}

/// All diagnostics of one codegen run; codegen reports as many as it can find, not just the first.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
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
