//! The raw JSON of a package manifest, in either dialect of the format family, read strictly:
//! an unknown key is an error at its JSON path.
//!
//! - [`seed`]: the seed dialect (no `schemaVersion`; `attributes`, tensor `args`, pass
//!   `source`, dispatch forms).
//! - [`v1`]: the `schemaVersion: 1` dialect (scalar `args`, `inout`/`weights`/optional tensors,
//!   output shape lists, pass-level `shader`, `x/y/z` dispatch, `requiredFeatures`).
//!
//! These types are the JSON shape only; `model` turns them into one validated op model, and
//! nothing after `model` ever sees them.

mod desugar;
mod json;
pub mod seed;
pub mod v1;

pub use seed::*;

use serde_json::Value;

/// The dialect a manifest was written in, which decides how its expressions read: the
/// expression checker's own type, so that one type names the dialect.
pub use crate::expr::Dialect;

/// A scalar argument (`schemaVersion: 1`): `args.<name>` in expressions.
#[derive(Debug, Clone)]
pub struct ScalarDecl {
    /// `u32`, `i32`, `f32`, `bool` or `string`.
    pub kind: String,
    pub required: bool,
    /// The allowed values of a `string` scalar.
    pub one_of: Option<Vec<String>>,
    pub description: String,
}

/// A manifest of either dialect.
#[derive(Debug)]
pub enum AnyManifest {
    Seed(Box<Manifest>),
    V1(Box<v1::Manifest>),
}

/// Reads a manifest, choosing the dialect by its `schemaVersion` (absent: the seed dialect);
/// a structural error comes back as (JSON path, message).
pub fn parse_any(text: &str) -> Result<AnyManifest, (String, String)> {
    // Repeated keys are found by the dialect's strict parse (`json::parse_strict`).
    let value: Value = serde_json::from_str(text).map_err(|e| (String::new(), e.to_string()))?;
    match value.get("schemaVersion") {
        None => parse(text).map(|m| AnyManifest::Seed(Box::new(m))),
        Some(Value::Number(n)) if n.as_u64() == Some(1) => {
            v1::parse(text).map(|m| AnyManifest::V1(Box::new(m)))
        }
        Some(other) => Err((
            "schemaVersion".to_owned(),
            format!("unsupported schemaVersion {other} (known: 1; absent for the seed dialect)"),
        )),
    }
}

pub(crate) use json::parse_strict;
