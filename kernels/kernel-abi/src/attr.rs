//! Attribute values by name, as ONNX attributes and tools give them (`run-op`'s `--attr`, a
//! manifest's defaults): the generator reads defaults into them and the runtime reads a call's
//! attributes out of them, with one spelling and one parser.

use std::fmt;

/// An attribute value given by name, as ONNX attributes are (for tools such as `run-op`).
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    /// `name=3`.
    Int(i64),
    /// `name=0.5`.
    Float(f64),
    /// `name=16,24,24`.
    Ints(Vec<i64>),
    /// Anything else.
    Str(String),
}

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::Int(v) => write!(f, "{v}"),
            // `{:?}` keeps a float a float (`2.0`) and large ones short (`1e39`).
            AttrValue::Float(v) => write!(f, "{v:?}"),
            AttrValue::Ints(v) => {
                let items: Vec<String> = v.iter().map(i64::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
            AttrValue::Str(v) => write!(f, "{v:?}"),
        }
    }
}

impl AttrValue {
    /// Parses `3`, `0.5`, `16,24,24` or any other text (a string).
    pub fn parse(text: &str) -> AttrValue {
        let text = text.trim();
        if let Ok(v) = text.parse::<i64>() {
            return AttrValue::Int(v);
        }
        // An integer literal beyond i64 is not a float: keep its text for the error.
        if Self::is_integer_literal(text) {
            return AttrValue::Str(text.to_owned());
        }
        if let Ok(v) = text.parse::<f64>() {
            return AttrValue::Float(v);
        }
        // A list is `a,b,…` or `[a,b,…]` (`[]` empty), every item an integer; anything else,
        // `[1,2` or `1,,2` among them, is a string, which a list attribute then refuses.
        let bracketed = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
        let inner = match bracketed {
            Some(inner) if inner.trim().is_empty() => return AttrValue::Ints(Vec::new()),
            Some(inner) => Some(inner),
            None => text.contains(',').then_some(text),
        };
        let items: Option<Vec<i64>> = inner.and_then(|inner| {
            inner
                .split(',')
                .map(|s| s.trim().parse::<i64>().ok())
                .collect()
        });
        match items {
            Some(items) => AttrValue::Ints(items),
            None => AttrValue::Str(text.to_owned()),
        }
    }

    /// Whether `text` is written as an integer (optional sign, then digits), whatever its size.
    pub fn is_integer_literal(text: &str) -> bool {
        let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    }

    /// What kind of value it is, as an error says it (`an integer`).
    pub fn kind(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "an integer",
            AttrValue::Float(_) => "a float",
            AttrValue::Ints(_) => "an integer list",
            AttrValue::Str(_) => "a string",
        }
    }
}
