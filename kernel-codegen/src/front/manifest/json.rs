//! Strict JSON reading for manifests and hints: the text is exactly one value, no object
//! repeats a key (serde would keep the last one silently), and a structural error carries
//! its JSON path.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Parses `text` as `T`: (JSON path, message) for a repeated key, text after the value or
/// the first structural error.
pub fn parse_strict<T: de::DeserializeOwned>(text: &str) -> Result<T, (String, String)> {
    check_keys(text)?;
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut *deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let path = if path == "." { String::new() } else { path };
        (path, inner.to_string())
    })?;
    deserializer
        .end()
        .map_err(|e| (String::new(), e.to_string()))?;
    Ok(value)
}

/// Reports the first key an object of `text` repeats, at its JSON path, and text after the
/// value.
fn check_keys(text: &str) -> Result<(), (String, String)> {
    let mut path = Vec::new();
    let mut repeated = None;
    let deserializer = &mut serde_json::Deserializer::from_str(text);
    let scanned = Scan {
        path: &mut path,
        repeated: &mut repeated,
    }
    .deserialize(&mut *deserializer)
    .and_then(|()| deserializer.end());
    match (scanned, repeated) {
        (Ok(()), _) => Ok(()),
        (Err(err), Some(at)) => Err((at, err.to_string())),
        (Err(err), None) => Err((String::new(), err.to_string())),
    }
}

enum Step {
    Key(String),
    Index(usize),
}

/// The path as serde_path_to_error writes it: `variants[0].passes[1].id`.
fn show(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Walks any JSON value, failing at the first repeated key and recording where it is.
struct Scan<'a> {
    path: &'a mut Vec<Step>,
    repeated: &'a mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                self.path.push(Step::Key(key.clone()));
                *self.repeated = Some(show(self.path));
                return Err(de::Error::custom(format!(
                    "key `{key}` is given twice in one object (a repeated key would silently replace the first)"
                )));
            }
            self.path.push(Step::Key(key));
            map.next_value_seed(Scan {
                path: self.path,
                repeated: self.repeated,
            })?;
            self.path.pop();
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            self.path.push(Step::Index(index));
            let next = seq.next_element_seed(Scan {
                path: self.path,
                repeated: self.repeated,
            })?;
            self.path.pop();
            if next.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_found_with_its_path() {
        let text = r#"{"a": [{"b": 1}, {"c": 1, "c": 2}]}"#;
        let (path, message) = check_keys(text).expect_err("repeats `c`");
        assert_eq!(path, "a[1].c");
        assert!(message.starts_with("key `c` is given twice"), "{message}");
        assert!(message.contains("line 1 column"), "{message}");
    }

    #[test]
    fn text_after_the_value_is_an_error() {
        let (_, message) = check_keys("{}\n}").expect_err("trailing text");
        assert!(message.contains("trailing characters"), "{message}");
        assert!(check_keys("{\"a\": 1}\n  ").is_ok());
    }
}

/// A device feature or limit name as a manifest writes it (`shader-f16`,
/// `maxComputeWorkgroupStorageSize`): ASCII letters, digits, `-` and `_`. The dialects'
/// requirements become `when` clauses that name it, so any other character could end the name
/// and write expression text of its own (`subgroups") or true or ("`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(try_from = "String")]
pub struct DeviceName(String);

impl DeviceName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DeviceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for DeviceName {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        let valid = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if valid && !name.is_empty() {
            Ok(DeviceName(name))
        } else {
            Err(format!(
                "{name:?} is not a device feature or limit name: such names have ASCII letters, \
                 digits, `-` and `_` only"
            ))
        }
    }
}
