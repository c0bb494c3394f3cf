//! Splits expression source into tokens with byte spans.
//!
//! Only the token kinds the language needs are recognised; Jinja operators the language leaves
//! out (`//`, `~`, `=`, braces, …) get a specific error instead of a confusing parse error.
//! The V1 dialect has `//`, `~` and the `:` of a slice ([`V1_OPERATORS`]).

use std::fmt;

use super::Dialect;
use crate::expr::{ExprError, Span};

/// One lexical token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal, escapes resolved.
    Str(String),
    /// An identifier or keyword.
    Ident(String),
    /// Punctuation or an operator, as written (`+`, `==`, `(`, …).
    Punct(&'static str),
}

impl fmt::Display for Tok {
    /// Describes the token for error messages, e.g. `` `)` `` or `` integer `3` ``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Int(v) => write!(f, "integer `{v}`"),
            Tok::Float(v) => write!(f, "float `{v:?}`"),
            Tok::Str(v) => write!(f, "string {v:?}"),
            Tok::Ident(v) => write!(f, "`{v}`"),
            Tok::Punct(p) => write!(f, "`{p}`"),
        }
    }
}

/// A token and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Its source range.
    pub span: Span,
}

/// Operators and punctuation, two-character ones first so that `==` wins over `=`. The second
/// element is `Some(reason)` for Jinja operators the language leaves out, so the user gets a
/// specific message instead of a confusing parse error.
const LEXEMES: &[(&str, Option<&str>)] = &[
    ("==", None),
    ("!=", None),
    ("<=", None),
    (">=", None),
    (
        "//",
        Some("operator `//` is not supported: `/` on integers already rounds down"),
    ),
    ("**", None),
    ("<", None),
    (">", None),
    ("+", None),
    ("-", None),
    ("*", None),
    ("/", None),
    ("%", None),
    ("(", None),
    (")", None),
    ("[", None),
    ("]", None),
    (".", None),
    (",", None),
    ("|", None),
    ("~", Some("string concatenation `~` is not supported")),
    (
        "=",
        Some("`=` is not an operator here; use `==` to compare"),
    ),
    ("!", Some("use `not` for logical negation")),
    ("{", Some("dict literals are not supported")),
    ("}", Some("unexpected `}`")),
    (":", Some("slices are not supported")),
];

/// Operators that the seed dialect rejects and the V1 dialect has.
pub const V1_OPERATORS: &[&str] = &["//", ":", "~"];

/// Tokenizes `src`, stopping at the first invalid token.
pub fn tokenize(src: &str, dialect: Dialect) -> Result<Vec<Token>, ExprError> {
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let c = bytes[pos];
        if c.is_ascii_whitespace() {
            pos += 1;
        } else if c.is_ascii_digit() {
            let (tok, end) = number(src, pos)?;
            tokens.push(Token {
                tok,
                span: Span::new(pos, end),
            });
            pos = end;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = pos
                + bytes[pos..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
            tokens.push(Token {
                tok: Tok::Ident(src[pos..end].to_owned()),
                span: Span::new(pos, end),
            });
            pos = end;
        } else if c == b'"' || c == b'\'' {
            let (text, end) = string(src, pos)?;
            tokens.push(Token {
                tok: Tok::Str(text),
                span: Span::new(pos, end),
            });
            pos = end;
        } else if let Some((p, unsupported)) =
            LEXEMES.iter().find(|(p, _)| src[pos..].starts_with(p))
        {
            let span = Span::new(pos, pos + p.len());
            let enabled = dialect.is_jinja() && V1_OPERATORS.contains(p);
            if let Some(why) = (*unsupported).filter(|_| !enabled) {
                return Err(ExprError::new(span, why));
            }
            tokens.push(Token {
                tok: Tok::Punct(p),
                span,
            });
            pos += p.len();
        } else {
            let ch = src[pos..].chars().next().unwrap_or('\u{fffd}');
            return Err(ExprError::new(
                Span::new(pos, pos + ch.len_utf8()),
                format!("unexpected character `{ch}`"),
            ));
        }
    }
    Ok(tokens)
}

/// Lexes a decimal number starting at `start`: digits with optional `_` separators, then an
/// optional fraction (`.` followed by a digit) and exponent, which make it a float.
fn number(src: &str, start: usize) -> Result<(Tok, usize), ExprError> {
    let bytes = src.as_bytes();
    let digits = |from: usize| {
        from + bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || **b == b'_')
            .count()
    };
    let mut end = digits(start);
    let mut is_float = false;
    // `1.5` is a float, but `x.0`-style member access never starts with a digit, and a `.` not
    // followed by a digit (`1.foo`) is left for the parser to reject.
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        is_float = true;
        end = digits(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let mut exp = end + 1;
        if matches!(bytes.get(exp), Some(b'+' | b'-')) {
            exp += 1;
        }
        if bytes.get(exp).is_some_and(u8::is_ascii_digit) {
            is_float = true;
            end = digits(exp);
        }
    }
    let span = Span::new(start, end);
    let text = &src[start..end];
    if text.ends_with('_') || text.contains("__") || text.contains("_.") {
        return Err(ExprError::new(span, format!("malformed number `{text}`")));
    }
    let clean = text.replace('_', "");
    if is_float {
        match clean.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Tok::Float(v), end)),
            _ => Err(ExprError::new(
                span,
                format!("float literal `{text}` is out of range"),
            )),
        }
    } else {
        match clean.parse::<i64>() {
            Ok(v) => Ok((Tok::Int(v), end)),
            Err(_) => Err(ExprError::new(
                span,
                format!("integer literal `{text}` does not fit in i64"),
            )),
        }
    }
}

/// Lexes a quoted string starting at `start` (either quote), resolving `\\`, `\"`, `\'`, `\n`
/// and `\t`.
fn string(src: &str, start: usize) -> Result<(String, usize), ExprError> {
    let mut chars = src[start..].char_indices();
    let quote = chars.next().map_or('"', |(_, c)| c);
    let mut text = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c == quote => return Ok((text, start + i + 1)),
            '\\' => {
                let escaped = match chars.next() {
                    Some((_, 'n')) => '\n',
                    Some((_, 't')) => '\t',
                    Some((_, c @ ('\\' | '"' | '\''))) => c,
                    Some((j, other)) => {
                        return Err(ExprError::new(
                            Span::new(start + i, start + j + other.len_utf8()),
                            format!("unknown escape `\\{other}`"),
                        ));
                    }
                    None => break,
                };
                text.push(escaped);
            }
            c => text.push(c),
        }
    }
    Err(ExprError::new(
        Span::new(start, src.len()),
        "unterminated string literal",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        tokenize(src, Dialect::Seed)
            .map(|t| t.into_iter().map(|t| t.tok).collect())
            .unwrap_or_default()
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("1_000 2.5 3e2 4."),
            vec![
                Tok::Int(1000),
                Tok::Float(2.5),
                Tok::Float(300.0),
                Tok::Int(4),
                Tok::Punct("."),
            ]
        );
    }

    #[test]
    fn operators_longest_first() {
        assert_eq!(
            toks("a<=b!=c"),
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("<="),
                Tok::Ident("b".into()),
                Tok::Punct("!="),
                Tok::Ident("c".into()),
            ]
        );
        assert!(tokenize("a // b", Dialect::Seed).is_err());
        assert!(tokenize("a = b", Dialect::Seed).is_err());
        let v1 = tokenize("a // b ~ c", Dialect::V1).unwrap_or_default();
        assert_eq!(v1[1].tok, Tok::Punct("//"));
        assert_eq!(v1[3].tok, Tok::Punct("~"));
    }

    #[test]
    fn strings() {
        assert_eq!(
            toks(r#"'a\'b' "c""#),
            vec![Tok::Str("a'b".into()), Tok::Str("c".into())]
        );
        assert!(tokenize("\"abc", Dialect::Seed).is_err());
    }
}
