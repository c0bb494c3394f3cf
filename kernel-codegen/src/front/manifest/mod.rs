//! The front end's first step: a package manifest, in any dialect of the format family,
//! read strictly (an unknown key is an error at its JSON path) into one declaration.
//!
//! - [`seed`]: the seed dialect (no `schemaVersion`; `attributes`, tensor `args`, pass
//!   `source`, dispatch forms).
//! - [`v1`]: the `schemaVersion: 1` dialect (scalar `args`, `inout`/`weights`/optional tensors,
//!   output shape lists, pass-level `shader`, `x/y/z` dispatch, `requiredFeatures`), read by
//!   `desugar` into the seed dialect's spelling of each construct it shares.
//! - [`hub`]: the Hugging Face Hub's current dialect (manifestSpec 2.1; no `schemaVersion`,
//!   `inputs` and `outputs` maps keyed by bind key, `{default}` attributes and tunables,
//!   `derive` at three levels, binding handles, `requires`/`demoteWhen`/`supersededBy`),
//!   mirrored strictly, with the spec 2.0 draft's spellings refused in the runtime's words,
//!   and read by `hub/desugar.rs` into the declaration.
//! - `declaration`: what every dialect is read into. `model`
//!   builds the one validated op model from it, and nothing after `model` ever sees it.

mod declaration;
mod desugar;
pub mod hub;
mod json;
pub mod seed;
pub mod v1;

pub use declaration::*;

use serde_json::Value;

/// The dialect a manifest was written in, which decides how its expressions read: the
/// expression checker's own type, so that one type names the dialect.
pub use crate::expr::check::Dialect;

/// What went wrong reading a manifest: (JSON path, message) pairs.
pub type Problems = Vec<(String, String)>;

/// Reads a manifest in the dialect its `schemaVersion` names (absent: the seed dialect, or
/// the Hub's when `inputs` is an object) into the declaration; the structural problems come
/// back with their JSON paths.
pub fn read(text: &str) -> Result<Manifest, Problems> {
    // Repeated keys are found by the dialect's strict parse (`json::parse_strict`).
    let value: Value =
        serde_json::from_str(text).map_err(|e| vec![(String::new(), e.to_string())])?;
    match value.get("schemaVersion") {
        None if value.get("inputs").is_some_and(Value::is_object) => hub::parse(text)
            .map_err(|problem| vec![problem])?
            .into_declaration(),
        None => seed::parse(text).map_err(|problem| vec![problem]),
        Some(Value::Number(n)) if n.as_u64() == Some(1) => v1::parse(text)
            .map_err(|problem| vec![problem])?
            .into_declaration(),
        Some(other) => Err(vec![(
            "schemaVersion".to_owned(),
            format!("unsupported schemaVersion {other} (known: 1; absent for the seed dialect)"),
        )]),
    }
}

pub use json::DeviceName;
pub(crate) use json::parse_strict;
