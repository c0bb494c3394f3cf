//! The generator's fuzz target: mutations of a seed's manifests, hints and templates through
//! `kernel_codegen::generate`, and what must hold for every one of them.
//!
//! Must hold: no panic, no hang; an error names only files that were given (and so never an
//! output path); a success writes only file names an OS accepts, and Rust without a carriage
//! return (rustc refuses one in a doc comment).

use std::time::Duration;

use kernel_codegen::Inputs;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

use crate::drive;
use crate::mutation::{Case, Edit};
use crate::seeds::Seed;

/// What one generation gave.
#[derive(Debug, Clone)]
pub enum Outcome {
    Generated(kernel_codegen::Output),
    Rejected(kernel_codegen::Diagnostics),
}

impl Outcome {
    /// The text fixtures expect: the diagnostics, or `ok:` with counts, notes and warnings.
    pub fn render(&self) -> String {
        match self {
            Outcome::Generated(output) => {
                let mut text = format!(
                    "ok: {} files, {} shaders\n",
                    output.files.len(),
                    output.shader_count
                );
                for note in &output.notes {
                    text.push_str(&format!("note: {note}\n"));
                }
                for warning in &output.warnings {
                    text.push_str(&format!("warning: {warning}\n"));
                }
                text
            }
            Outcome::Rejected(diagnostics) => format!("{diagnostics}\n"),
        }
    }
}

/// Every input file of `inputs` by display path.
pub fn input_files(inputs: &Inputs) -> Vec<String> {
    let mut files: Vec<String> = inputs.templates.keys().cloned().collect();
    for package in &inputs.packages {
        files.push(package.manifest_path());
        if let Some((path, _)) = &package.hints {
            files.push(path.clone());
        }
    }
    files
}

/// Generates from `inputs` on a guarded thread: a panic or hang is `Err`.
pub fn generate(inputs: Inputs, hang: Duration) -> Result<Outcome, String> {
    drive::guarded(hang, move || match kernel_codegen::generate(&inputs) {
        Ok(output) => Outcome::Generated(output),
        Err(diagnostics) => Outcome::Rejected(diagnostics),
    })
}

/// Applies `case` to `seed` and generates; `Err` when something that must hold does not.
pub fn check(seed: &Inputs, case: &Case, hang: Duration) -> Result<Outcome, String> {
    let inputs = case
        .apply(seed)
        .map_err(|e| format!("the mutation does not apply: {e}"))?;
    check_inputs(inputs, hang)
}

/// Generates from mutated `inputs`; `Err` when something that must hold does not.
pub fn check_inputs(inputs: Inputs, hang: Duration) -> Result<Outcome, String> {
    let files = input_files(&inputs);
    let outcome = generate(inputs, hang)?;
    match &outcome {
        Outcome::Rejected(diagnostics) => {
            if diagnostics.is_empty() {
                return Err("rejected without a diagnostic".to_owned());
            }
            for d in &diagnostics.0 {
                if !files.contains(&d.file) {
                    return Err(format!(
                        "a diagnostic names `{}`, which is not an input: {d}",
                        d.file
                    ));
                }
            }
        }
        Outcome::Generated(output) => {
            for file in &output.files {
                let bad = file.path.split('/').find(|part| {
                    part.is_empty() || part.len() > 255 || *part == "." || *part == ".."
                });
                if let Some(part) = bad {
                    return Err(format!(
                        "generated a file name no OS accepts: `{part}` in `{}`",
                        file.path
                    ));
                }
                // rustc refuses a carriage return in a comment or a literal: manifest text
                // with one must reach Rust escaped or as line breaks.
                if file.path.ends_with(".rs") && file.contents.contains('\r') {
                    return Err(format!(
                        "generated Rust with a carriage return, which rustc refuses: `{}`",
                        file.path
                    ));
                }
            }
        }
    }
    Ok(outcome)
}

/// Where a seed can be mutated: every JSON location of its manifests and hints, and every
/// template line.
#[derive(Debug, Clone)]
pub struct Surface {
    /// (file, pointer, value there).
    json: Vec<(String, String, Value)>,
    /// (file, its lines).
    templates: Vec<(String, Vec<String>)>,
    /// Every JSON file with its length in bytes.
    json_files: Vec<(String, usize)>,
}

impl Surface {
    pub fn of(seed: &Seed) -> Surface {
        let mut json = Vec::new();
        let mut json_files = Vec::new();
        for package in &seed.inputs.packages {
            let mut files = vec![(package.manifest_path(), package.manifest.clone())];
            files.extend(package.hints.clone());
            for (file, text) in files {
                json_files.push((file.clone(), text.len()));
                if let Ok(value) = serde_json::from_str::<Value>(&text) {
                    walk(&file, "", &value, &mut json);
                }
            }
        }
        let templates = seed
            .inputs
            .templates
            .iter()
            .map(|(file, text)| (file.clone(), text.lines().map(str::to_owned).collect()))
            .collect();
        Surface {
            json,
            templates,
            json_files,
        }
    }
}

fn walk(file: &str, pointer: &str, value: &Value, out: &mut Vec<(String, String, Value)>) {
    if !pointer.is_empty() {
        out.push((file.to_owned(), pointer.to_owned(), value.clone()));
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let token = key.replace('~', "~0").replace('/', "~1");
                walk(file, &format!("{pointer}/{token}"), child, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                walk(file, &format!("{pointer}/{i}"), child, out);
            }
        }
        _ => {}
    }
}

/// How many of [`VALUES`] are names (the ones a renamed key takes).
const NAME_COUNT: usize = 21;

/// Values that have broken generators: names that are not identifiers, numbers at the edges
/// of every integer and float type, wrong types (empty lists among them), and broken
/// expressions.
const VALUES: &[&str] = &[
    r#""a-b""#,
    r#""a b""#,
    r#""self""#,
    r#""Self""#,
    r#""crate""#,
    r#""super""#,
    r#""_""#,
    r#""1x""#,
    r#""""#,
    r#""é""#,
    r#""type""#,
    r#""fn""#,
    r#""r#x""#,
    // White space around or instead of a name, and names a parser would skip over.
    r#""a ""#,
    r#"" ""#,
    r#""\t""#,
    r#""a\u00a0""#,
    r#""\u3000""#,
    r#""a/*c*/""#,
    // A name rustc warns of as a module, and a carriage return a doc comment may not hold.
    r#""ÄÖ""#,
    r#""a\rb""#,
    "0",
    "1",
    "-1",
    "0.5",
    "1e39",
    "-1e39",
    "1e308",
    "1e-50",
    "65536",
    "2147483648",
    "4294967295",
    "4294967296",
    "4294967297",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551617",
    "-9223372036854775809",
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "[[]]",
    "[0, 1]",
    r#"["a", "a"]"#,
    r#""not-a-type""#,
    r#""f16""#,
    r#""u32""#,
    r#""((( not an expression""#,
    r#""noSuchConstant""#,
    r#""1 / 0""#,
    r#""2 ** 64""#,
    r#""dim(shapes.x, 1) +""#,
    r#""true and""#,
    r#""[1, 2""#,
    r#""a.b.c""#,
    r#""-""#,
];

/// Lines inserted into templates: statements Jinja or WGSL may reject, undefined names.
const LINES: &[&str] = &[
    "{% filter upper %}",
    "{% endif %}",
    "{% if %}",
    "{% for x in %}",
    "{{ undefined_thing }}",
    "{{ 'x' * 1000 }}",
    "}",
    "{",
    "let q: f32 = 1.0;",
    "fn f() {}",
    "@compute",
    "{% include \"nope.wgsl.jinja\" %}",
    "{% macro m() %}",
    "{{",
    "var<private> p: array<f32>;",
    "const bad: f64 = 1.0;",
    "{% set x = 1 / 0 %}",
    "",
];

/// Text appended to a JSON file.
const TAILS: &[&str] = &["this is not JSON {{{", "}", "\n[1]", " ", ","];

fn pick<'a>(list: &'a [&'a str], i: &Index) -> String {
    list[i.index(list.len())].to_owned()
}

/// How many ways [`twist`] has.
const TWISTS: usize = 9;

/// A string at a location, slightly broken: cut, extended or wrapped, a carriage return in
/// it, or a chain of 20,000 terms after it (deep, its errors past column 65,535).
fn twist(value: &Value, how: usize) -> Option<String> {
    let Value::String(text) = value else {
        return None;
    };
    let changed = match how % TWISTS {
        0 => text.chars().take(text.chars().count() / 2).collect(),
        1 => format!("{text} +"),
        2 => format!("({text}"),
        3 => format!("{text}{text}"),
        4 => format!("{text} "),
        5 => format!("\t{text}"),
        6 => format!("{text}\r{text}"),
        7 => format!("{text}{}", " + 1".repeat(20_000)),
        _ => format!("not {text}"),
    };
    serde_json::to_string(&changed).ok()
}

/// `object` with a chain of entries each reading the one before twice (`c0 = 1`,
/// `c1 = c0 + c0`, …): written out in place of their names, they double at each step.
fn with_chain(object: &Value, length: usize) -> Option<String> {
    let Value::Object(entries) = object else {
        return None;
    };
    let mut entries = entries.clone();
    for i in 0..length {
        let value = if i == 0 {
            "1".to_owned()
        } else {
            format!("fuzzChain{0} + fuzzChain{0}", i - 1)
        };
        entries.insert(format!("fuzzChain{i}"), Value::String(value));
    }
    serde_json::to_string(&Value::Object(entries)).ok()
}

/// Template lines that make much from little: a macro doubling a string, a loop writing a
/// sum of 20,000 terms, a tag of 20,000 `~`.
fn amplifying_line(which: usize) -> String {
    match which % 3 {
        0 => "{% macro g(s, n) %}{% if n == 0 %}{{ s }}{% else %}{{ g(s ~ s, n - 1) }}{% endif %}{% endmacro %}// {{ g('abcdefgh', 40) }}".to_owned(),
        1 => "let fuzz_deep = 1.0{% for i in range(20000) %} + 1.0{% endfor %};".to_owned(),
        _ => format!("let fuzz_deep = 1.0{{{{ ' + 1.0'{} }}}};", " ~ ' + 1.0'".repeat(20_000)),
    }
}

/// One edit of the surface.
fn edit(surface: Surface) -> impl Strategy<Value = Edit> {
    let s = surface;
    (0usize..14, any::<Index>(), any::<Index>(), any::<Index>()).prop_filter_map(
        "the seed has no place for this edit",
        move |(kind, place, what, extra)| {
            let json = |i: &Index| s.json.get(i.index(s.json.len().max(1))).cloned();
            let template = |i: &Index| s.templates.get(i.index(s.templates.len().max(1))).cloned();
            let key_of = |pointer: &str| pointer.rsplit('/').next().map(str::to_owned);
            Some(match kind {
                0..=2 => {
                    let (file, pointer, _) = json(&place)?;
                    Edit::Set {
                        file,
                        pointer,
                        raw: pick(VALUES, &what),
                    }
                }
                3 => {
                    let (file, pointer, value) = json(&place)?;
                    Edit::Set {
                        file,
                        pointer,
                        raw: twist(&value, what.index(TWISTS))?,
                    }
                }
                4 => {
                    let (file, pointer, _) = json(&place)?;
                    Edit::Remove { file, pointer }
                }
                5 => {
                    let (file, pointer, _) = json(&place)?;
                    key_of(&pointer)?.parse::<usize>().is_err().then_some(())?;
                    let key: String =
                        serde_json::from_str(&pick(&VALUES[..NAME_COUNT], &what)).ok()?;
                    Edit::Rename { file, pointer, key }
                }
                6 => {
                    let (file, pointer, _) = json(&place)?;
                    key_of(&pointer)?.parse::<usize>().ok()?;
                    Edit::Duplicate { file, pointer }
                }
                7 => {
                    let (file, pointer, value) = json(&place)?;
                    key_of(&pointer)?.parse::<usize>().is_err().then_some(())?;
                    let raw = if what.index(2) == 0 {
                        value.to_string()
                    } else {
                        pick(VALUES, &extra)
                    };
                    Edit::DuplicateKey { file, pointer, raw }
                }
                8 => {
                    let (file, len) = s
                        .json_files
                        .get(place.index(s.json_files.len().max(1)))?
                        .clone();
                    if what.index(2) == 0 {
                        Edit::Append {
                            file,
                            text: pick(TAILS, &extra),
                        }
                    } else {
                        Edit::Truncate {
                            file,
                            bytes: extra.index(len.max(1)),
                        }
                    }
                }
                9 => {
                    let (file, lines) = template(&place)?;
                    Edit::DeleteLine {
                        file,
                        line: what.index(lines.len().max(1)) + 1,
                    }
                }
                10 => {
                    let (file, lines) = template(&place)?;
                    Edit::InsertLine {
                        file,
                        line: what.index(lines.len() + 1) + 1,
                        text: pick(LINES, &extra),
                    }
                }
                12 => {
                    let (file, pointer, value) = json(&place)?;
                    Edit::Set {
                        file,
                        pointer,
                        raw: with_chain(&value, 16 + what.index(16))?,
                    }
                }
                13 => {
                    let (file, lines) = template(&place)?;
                    Edit::InsertLine {
                        file,
                        line: what.index(lines.len() + 1) + 1,
                        text: amplifying_line(extra.index(3)),
                    }
                }
                _ => {
                    let (file, lines) = template(&place)?;
                    let line = what.index(lines.len().max(1));
                    // Either a line from the list, or another line of the same template.
                    let text = if extra.index(2) == 0 {
                        pick(LINES, &extra)
                    } else {
                        lines.get(extra.index(lines.len().max(1)))?.clone()
                    };
                    Edit::ReplaceLine {
                        file,
                        line: line + 1,
                        text,
                    }
                }
            })
        },
    )
}

/// Cases over all seeds: a seed, then one to three edits of it. The seed packages are
/// mutated one at a time (the others left out), so each input generates one op.
pub fn cases(seeds: &[Seed]) -> impl Strategy<Value = Case> + use<> {
    let mut options = Vec::new();
    for seed in seeds {
        if seed.name != crate::seeds::SEED_PACKAGES {
            let from = Some(seed.name.clone());
            options.push(
                proptest::collection::vec(edit(Surface::of(seed)), 1..=3)
                    .prop_map(move |edits| Case {
                        from: from.clone(),
                        packages: None,
                        edits,
                    })
                    .sboxed(),
            );
            continue;
        }
        for package in &seed.inputs.packages {
            let folder = package
                .dir
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            let mut alone = seed.inputs.clone();
            alone.packages.retain(|p| p.dir == package.dir);
            let shared = alone.include_root.clone().unwrap_or_default();
            alone.templates.retain(|path, _| {
                path.starts_with(&format!("{}/", package.dir))
                    || (!shared.is_empty() && path.starts_with(&format!("{shared}/")))
            });
            let one = Seed {
                name: folder.clone(),
                inputs: alone,
            };
            options.push(
                proptest::collection::vec(edit(Surface::of(&one)), 1..=3)
                    .prop_map(move |edits| Case {
                        from: None,
                        packages: Some(vec![folder.clone()]),
                        edits,
                    })
                    .sboxed(),
            );
        }
    }
    proptest::strategy::Union::new(options)
}
