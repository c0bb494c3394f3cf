//! The errors of the build-script API ([`crate::Config`]), below both the API and the
//! output folder's rules (`output_dir.rs`), which report them.

use std::path::PathBuf;

use crate::Diagnostics;

/// What [`crate::Config::generate`] and [`crate::Config::check`] can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Layout { path: PathBuf, reason: String },
    #[error("codegen found {count} error(s):\n{diagnostics}", count = .diagnostics.0.len())]
    Codegen { diagnostics: Diagnostics },
    #[error("no output folder: call `out_dir` (or run from a build script, which sets OUT_DIR)")]
    NoOutDir,
    #[error(
        "no packages: {} holds no folder with a manifest.json",
        .searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoPackages { searched: Vec<PathBuf> },
    #[error(
        "the output folder {out_dir} holds the input {input}: generating there would replace or remove inputs; choose a folder of its own"
    )]
    OutputHoldsInput { out_dir: PathBuf, input: PathBuf },
    #[error(
        "{path}: not written by the generator (it does not start with the `@generated` header), so it is left as it is; move it away or choose another output folder"
    )]
    NotGenerated { path: PathBuf },
    #[error(
        "op `{}`: its suggested hints file would be named `{}`, which {reason}; hints files are written only directly inside their folder, named `<domain>.<name>.hints.json`",
        .op.escape_debug(),
        .name.escape_debug()
    )]
    HintsFileName {
        op: String,
        name: String,
        reason: &'static str,
    },
    #[error("{}", stale_message(.stale, .orphaned))]
    Stale {
        stale: Vec<String>,
        orphaned: Vec<String>,
    },
}

impl ConfigError {
    /// The message without the path it starts with, for a report that names the file itself
    /// (a diagnostic at `metadata.json`).
    pub(crate) fn reason(&self) -> String {
        match self {
            ConfigError::Io { error, .. } => error.to_string(),
            ConfigError::Layout { reason, .. } => reason.clone(),
            other => other.to_string(),
        }
    }
}

fn stale_message(stale: &[String], orphaned: &[String]) -> String {
    let mut text = String::from("generated code is out of date; generate again:");
    for path in stale {
        text.push_str(&format!("\n  stale:    {path}"));
    }
    for path in orphaned {
        text.push_str(&format!("\n  orphaned: {path}"));
    }
    text
}
