//! The spec 2.0 draft's spellings, which the Hub's runtime refuses, and what it says instead:
//! "spec 2.0 removed: write …". The draft's keys are unknown keys of the strict mirror; the
//! error serde reports for one at a draft key's place is reworded here, keeping its path
//! and position. Bare attribute and tunable values and `args` of kind `tensor` are refused
//! where they are read (`de.rs`).

/// A bare attribute or tunable value.
pub(super) const BARE_VALUE: &str = "spec 2.0 removed: write {default}";
/// An `args` entry of kind `tensor`.
pub(super) const TENSOR_ARG: &str =
    "spec 2.0 removed: write the tensor under inputs or outputs, keyed by its bind key";

const ATTRIBUTE_DESCRIPTIONS: &str = "spec 2.0 removed: write each description beside its default, attributes.<name> = {default, description}";
const CONSTANTS: &str = "spec 2.0 removed: write derive";
const BINDING_SETS: &str = "spec 2.0 removed: write bindings (handle → binding) and name the handles in each pass's bindings list";
const SEMANTIC: &str =
    "spec 2.0 removed: write arg (a port's bind key) or scratch (an intermediate's id)";
const SOURCE: &str = "spec 2.0 removed: write shader (the template) and derive (its values)";
const GRID_STRIDE: &str =
    "spec 2.0 removed: write x = min(<count>, device.limits.maxComputeWorkgroupsPerDimension)";

/// One step of a JSON path as `serde_path_to_error` prints it (`variants[0].passes[1].id`).
#[derive(Debug, PartialEq, Eq)]
enum Step<'a> {
    Key(&'a str),
    Index,
}

use Step::{Index, Key};

/// The steps of `path`; a key holding `.` or `[` reads as several steps, which matches no
/// draft place.
fn steps(path: &str) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    for part in path.split('.') {
        let (key, indices) = part.split_once('[').unwrap_or((part, ""));
        if !key.is_empty() {
            steps.push(Key(key));
        }
        steps.extend(indices.split('[').filter(|i| !i.is_empty()).map(|_| Index));
    }
    steps
}

/// What the runtime says of the draft key at the end of `steps`, if it is one.
fn removed(steps: &[Step<'_>]) -> Option<&'static str> {
    Some(match steps {
        [Key("attributeDescriptions")] => ATTRIBUTE_DESCRIPTIONS,
        [Key("constants")] | [Key("variants"), Index, Key("constants")] => CONSTANTS,
        [Key("bindingSets")] => BINDING_SETS,
        [Key("bindings"), Key(_), Key("semantic")]
        | [
            Key("variants"),
            Index,
            Key("passes"),
            Index,
            Key("bindings"),
            Index,
            Key("semantic"),
        ] => SEMANTIC,
        [Key("variants"), Index, Key("passes"), Index, Key("source")] => SOURCE,
        [
            Key("variants"),
            Index,
            Key("passes"),
            Index,
            Key("constants"),
        ] => CONSTANTS,
        [
            Key("variants"),
            Index,
            Key("passes"),
            Index,
            Key("gridStride"),
        ]
        | [
            Key("variants"),
            Index,
            Key("passes"),
            Index,
            Key("dispatch"),
            Key("gridStride"),
        ] => GRID_STRIDE,
        _ => return None,
    })
}

/// Rewords serde's error for an unknown key that is a draft spelling at its place; any
/// other error is returned as it is.
pub(super) fn explain((path, message): (String, String)) -> (String, String) {
    let key = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split_once('`'))
        .map(|(key, _)| key);
    let steps = steps(&path);
    let draft = match (key, steps.last()) {
        (Some(key), Some(Key(last))) if key == *last => removed(&steps),
        _ => None,
    };
    match draft {
        Some(draft) => {
            // serde_json ends a message with the position: ` at line 3 column 17`.
            let position = message.rfind(" at line ").map_or("", |at| &message[at..]);
            (path, format!("{draft}{position}"))
        }
        None => (path, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_as_steps() {
        assert_eq!(
            steps("variants[2].passes[0].dispatch.gridStride"),
            vec![
                Key("variants"),
                Index,
                Key("passes"),
                Index,
                Key("dispatch"),
                Key("gridStride")
            ]
        );
        assert_eq!(steps("bindings.a.semantic").len(), 3);
    }

    #[test]
    fn only_an_unknown_key_at_a_draft_place_is_reworded() {
        let unknown = |key: &str| format!("unknown field `{key}`, expected `x` at line 4 column 9");
        let (_, message) = explain(("variants[0].constants".into(), unknown("constants")));
        assert_eq!(message, "spec 2.0 removed: write derive at line 4 column 9");
        let (_, message) = explain(("inputs.x.constants".into(), unknown("constants")));
        assert!(message.starts_with("unknown field"), "{message}");
        let other = "invalid type: integer `1`, expected a string".to_owned();
        assert_eq!(explain(("constants".into(), other.clone())).1, other);
    }
}
