//! An op's pre-rendered shaders as one table: the `<op>.shaders` file codegen writes beside the
//! op's module, read once on first use, and the lookup from the values a pass's shader text
//! depends on (its key) to the shader.
//!
//! The file is plain text so that it diffs and reads like the WGSL it holds. It lists the
//! op's passes, then its shaders; other lines before the first shader are comments:
//!
//! ```text
//! #pass <variant> <pass> [overrides=<name>,<name>] label=<label, to the end of the line>
//! #shader <pass> <digest> <name> [features=<f>,<f>] [web-enables=subgroups]
//! #key <value> <value> …        (one line per key that selects this shader)
//! <WGSL text, up to the next `#shader` line>
//! ```
//!
//! `<pass>` counts the `#pass` lines from 0; key values are `true`/`false`, integers,
//! quoted strings (`\"` and `\\` escaped) and floats as `f64:` and their bits in hex. WGSL has
//! no `#` token, so only a comment could start a line with `#shader` or `#key`, and codegen
//! rejects such a shader.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

use crate::expr::EvalError;
use crate::plan::Kernel;

/// `enable subgroups;`, which browsers require and naga refuses.
const WEB_SUBGROUPS_ENABLE: &str = "enable subgroups;\n";

/// One component of a shader key: a value the shader text depends on, as a call computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key<'a> {
    Bool(bool),
    Int(i64),
    Str(&'a str),
    /// A float, by its bits: every key value is one the same expression computed at build time.
    Float(u64),
}

impl From<bool> for Key<'_> {
    fn from(value: bool) -> Self {
        Key::Bool(value)
    }
}

impl From<i64> for Key<'_> {
    fn from(value: i64) -> Self {
        Key::Int(value)
    }
}

impl From<f64> for Key<'_> {
    fn from(value: f64) -> Self {
        Key::Float(value.to_bits())
    }
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(value: &'a str) -> Self {
        Key::Str(value)
    }
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Bool(b) => write!(f, "{b}"),
            Key::Int(i) => write!(f, "{i}"),
            Key::Str(s) => write!(f, "{s:?}"),
            Key::Float(bits) => write!(f, "{}", f64::from_bits(*bits)),
        }
    }
}

/// A key component as the table file spells it (strings unescaped, so owned).
#[derive(Debug, Clone, PartialEq)]
enum StoredKey {
    Bool(bool),
    Int(i64),
    Str(String),
    Float(u64),
}

impl StoredKey {
    fn as_key(&self) -> Key<'_> {
        match self {
            StoredKey::Bool(b) => Key::Bool(*b),
            StoredKey::Int(i) => Key::Int(*i),
            StoredKey::Str(s) => Key::Str(s),
            StoredKey::Float(bits) => Key::Float(*bits),
        }
    }
}

/// A pass of one of the op's variants, as the table's `#shader` lines number them.
#[derive(Debug, Clone)]
pub struct Pass {
    pub variant: &'static str,
    pub pass: &'static str,
    /// The label of its pipelines (the manifest's pass label).
    pub label: &'static str,
    pub entry_point: &'static str,
    /// Names of the overrides its pipelines take; empty when one pipeline serves all shapes.
    pub overrides: Vec<&'static str>,
}

/// One pre-rendered shader.
#[derive(Debug)]
pub struct Shader {
    pub kernel: Kernel,
    /// The index of its pass in [`ShaderTable::passes`].
    pub pass: usize,
    /// WebGPU features the shader uses (`shader-f16`, `subgroups`).
    pub features: Vec<&'static str>,
    /// Names of the overrides its pipelines take (its pass's).
    pub overrides: Vec<&'static str>,
}

/// One pass's keys: key hash → (key, shader index), for keys that collide on the hash.
type PassKeys = HashMap<u64, Vec<(Vec<StoredKey>, usize)>>;

struct Parsed {
    passes: Vec<Pass>,
    shaders: Vec<Shader>,
    keys: Vec<PassKeys>,
}

/// An op's shaders, looked up by pass and key. A `static` in the generated module; the text is
/// the `include_str!` of the op's `.shaders` file.
pub struct ShaderTable {
    op: &'static str,
    text: &'static str,
    parsed: OnceLock<Result<Parsed, String>>,
}

impl std::fmt::Debug for ShaderTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShaderTable")
            .field("op", &self.op)
            .finish_non_exhaustive()
    }
}

fn key_hash(key: impl Iterator<Item = impl Hash>) -> u64 {
    let mut hasher = DefaultHasher::new();
    for component in key {
        component.hash(&mut hasher);
    }
    hasher.finish()
}

impl ShaderTable {
    pub const fn new(op: &'static str, text: &'static str) -> Self {
        Self {
            op,
            text,
            parsed: OnceLock::new(),
        }
    }

    /// The op's qualified name.
    pub fn op(&self) -> &'static str {
        self.op
    }

    /// The passes the table's shaders belong to.
    pub fn passes(&'static self) -> Result<&'static [Pass], EvalError> {
        Ok(&self.parsed()?.passes)
    }

    fn parsed(&'static self) -> Result<&'static Parsed, EvalError> {
        self.parsed
            .get_or_init(|| parse(self.text))
            .as_ref()
            .map_err(|e| EvalError::new(format!("{}: shader table: {e}", self.op)))
    }

    /// Every shader, in table order (tools time or inspect them one by one).
    pub fn shaders(&'static self) -> Result<&'static [Shader], EvalError> {
        Ok(&self.parsed()?.shaders)
    }

    /// The shader of pass `pass` for `key`, the values its text depends on in the order
    /// codegen wrote them.
    pub fn kernel(
        &'static self,
        pass: usize,
        key: &[Key<'_>],
    ) -> Result<&'static Kernel, EvalError> {
        let parsed = self.parsed()?;
        let found = parsed.keys.get(pass).and_then(|keys| {
            keys.get(&key_hash(key.iter()))?
                .iter()
                .find(|(stored, _)| stored.iter().map(StoredKey::as_key).eq(key.iter().copied()))
        });
        match found {
            Some(&(_, index)) => Ok(&parsed.shaders[index].kernel),
            None => {
                let values: Vec<String> = key.iter().map(ToString::to_string).collect();
                let (variant, pass) = parsed
                    .passes
                    .get(pass)
                    .map_or(("?", "?"), |p| (p.variant, p.pass));
                Err(EvalError::new(format!(
                    "{}: variant `{variant}`, pass `{pass}`: no pre-rendered shader for ({})",
                    self.op,
                    values.join(", ")
                )))
            }
        }
    }
}

fn parse_pass(line: &'static str) -> Result<Pass, String> {
    let (fields, label) = line
        .split_once(" label=")
        .ok_or_else(|| format!("`{line}`: no label"))?;
    let mut fields = fields.split(' ').skip(1);
    let mut next = |what: &str| fields.next().ok_or_else(|| format!("`{line}`: no {what}"));
    let (variant, pass) = (next("variant")?, next("pass")?);
    let overrides = match fields.next() {
        None => Vec::new(),
        Some(list) => list
            .strip_prefix("overrides=")
            .ok_or_else(|| format!("`{line}`: unknown field `{list}`"))?
            .split(',')
            .collect(),
    };
    Ok(Pass {
        variant,
        pass,
        label,
        entry_point: "main",
        overrides,
    })
}

fn parse(text: &'static str) -> Result<Parsed, String> {
    let mut passes = Vec::new();
    let mut shaders = Vec::new();
    // Byte offsets of the `#shader` lines; each section runs to the next.
    let mut starts: Vec<usize> = Vec::new();
    // The 1-based line of each `#shader` line, for errors (counted once, not per section).
    let mut lines_at: Vec<usize> = Vec::new();
    let mut offset = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        if line.starts_with("#shader ") {
            starts.push(offset);
            lines_at.push(number + 1);
        } else if line.starts_with("#pass ") && starts.is_empty() {
            passes.push(
                parse_pass(line.trim_end()).map_err(|e| format!("line {}: {e}", number + 1))?,
            );
        }
        offset += line.len();
    }
    let mut keys: Vec<PassKeys> = passes.iter().map(|_| HashMap::new()).collect();
    starts.push(text.len());
    for (section, bounds) in starts.windows(2).enumerate() {
        let body = &text[bounds[0]..bounds[1]];
        let line_no = lines_at[section];
        let at = |e: String| format!("line {line_no}: {e}");
        let mut lines = body.split_inclusive('\n');
        let header = lines.next().unwrap_or_default();
        let mut fields = header.trim_end().split(' ').skip(1);
        let pass: usize = fields
            .next()
            .and_then(|p| p.parse().ok())
            .filter(|&p| p < passes.len())
            .ok_or_else(|| at(format!("`{}`: no pass index", header.trim_end())))?;
        let digest = fields.next().ok_or_else(|| at("no digest".into()))?;
        let _name = fields.next().ok_or_else(|| at("no name".into()))?;
        let mut features = Vec::new();
        let mut web_enables = "";
        for field in fields {
            if let Some(list) = field.strip_prefix("features=") {
                features.extend(list.split(',').filter(|f| !f.is_empty()));
            } else if field == "web-enables=subgroups" {
                web_enables = WEB_SUBGROUPS_ENABLE;
            } else {
                return Err(at(format!("unknown field `{field}`")));
            }
        }
        let mut source_start = bounds[0] + header.len();
        for line in lines {
            let Some(values) = line.strip_prefix("#key") else {
                break;
            };
            let key = parse_key(values.trim_end()).map_err(at)?;
            keys[pass]
                .entry(key_hash(key.iter().map(StoredKey::as_key)))
                .or_default()
                .push((key, section));
            source_start += line.len();
        }
        let info: &Pass = &passes[pass];
        shaders.push(Shader {
            kernel: Kernel {
                label: info.label,
                source: &text[source_start..bounds[1]],
                entry_point: info.entry_point,
                digest,
                web_enables,
            },
            pass,
            features,
            overrides: info.overrides.clone(),
        });
    }
    Ok(Parsed {
        passes,
        shaders,
        keys,
    })
}

/// The values of a `#key` line (after `#key`): space-separated, strings quoted.
fn parse_key(mut rest: &str) -> Result<Vec<StoredKey>, String> {
    let mut key = Vec::new();
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            return Ok(key);
        }
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let end = loop {
                match chars.next() {
                    Some((i, '"')) => break i,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, c @ ('"' | '\\'))) => value.push(c),
                        Some((_, 'n')) => value.push('\n'),
                        _ => return Err(format!("bad escape in key `{rest}`")),
                    },
                    Some((_, c)) => value.push(c),
                    None => return Err(format!("unterminated string in key `{rest}`")),
                }
            };
            key.push(StoredKey::Str(value));
            rest = &quoted[end + 1..];
            continue;
        }
        let (word, tail) = rest.split_once(' ').unwrap_or((rest, ""));
        key.push(match word {
            "true" => StoredKey::Bool(true),
            "false" => StoredKey::Bool(false),
            _ => match word.strip_prefix("f64:") {
                Some(bits) => StoredKey::Float(
                    u64::from_str_radix(bits, 16).map_err(|e| format!("float `{word}`: {e}"))?,
                ),
                None => StoredKey::Int(word.parse().map_err(|e| format!("value `{word}`: {e}"))?),
            },
        });
        rest = tail;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: ShaderTable = ShaderTable::new(
        "Op",
        "# a comment\n\
         #pass v a label=Op.A\n\
         #pass v b overrides=n label=Op B\n\
         #shader 0 d0 a.f32\n\
         #key \"f32\" true 3\n\
         #key \"f32\" false 3\n\
         fn a() {}\n\
         #shader 0 d1 a.f16 features=shader-f16\n\
         #key \"f16\" true 3\n\
         enable f16;\nfn a() {}\n\
         #shader 1 d2 b web-enables=subgroups features=subgroups\n\
         #key \"a \\\"q\\\" b\" f64:3ff8000000000000 -2\n\
         fn b() {}\n",
    );

    #[test]
    fn finds_each_shader_by_its_keys() {
        let k = TABLE
            .kernel(0, &["f32".into(), false.into(), 3i64.into()])
            .unwrap();
        assert_eq!((k.digest, k.source, k.label), ("d0", "fn a() {}\n", "Op.A"));
        let k = TABLE
            .kernel(0, &["f16".into(), true.into(), 3i64.into()])
            .unwrap();
        assert_eq!((k.digest, k.source), ("d1", "enable f16;\nfn a() {}\n"));
        let k = TABLE
            .kernel(1, &["a \"q\" b".into(), 1.5f64.into(), (-2i64).into()])
            .unwrap();
        assert_eq!((k.digest, k.web_enables), ("d2", WEB_SUBGROUPS_ENABLE));
        let shaders = TABLE.shaders().unwrap();
        assert_eq!(shaders.len(), 3);
        assert_eq!(shaders[1].features, ["shader-f16"]);
        assert_eq!(shaders[2].overrides, ["n"]);
        assert_eq!(shaders[2].kernel.label, "Op B");
    }

    #[test]
    fn a_missing_key_names_the_pass_and_the_values() {
        let err = TABLE
            .kernel(0, &["f16".into(), false.into(), 3i64.into()])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Op: variant `v`, pass `a`: no pre-rendered shader for (\"f16\", false, 3)"
        );
    }

    #[test]
    fn key_values_parse() {
        let parsed = parse_key(r#""x \\ \"y\"\nz" f64:3ff4000000000000 -7 true"#).unwrap();
        let expected = [
            Key::Str("x \\ \"y\"\nz"),
            Key::Float(1.25f64.to_bits()),
            Key::Int(-7),
            Key::Bool(true),
        ];
        assert!(
            parsed
                .iter()
                .map(StoredKey::as_key)
                .eq(expected.iter().copied())
        );
    }

    #[test]
    fn a_malformed_table_is_an_error() {
        static BAD: ShaderTable =
            ShaderTable::new("Op", "#pass v a label=A\n#shader 7 d0 a\nfn a() {}\n");
        let err = BAD.kernel(0, &[]).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
