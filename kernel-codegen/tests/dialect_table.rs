//! `DIALECT.md` and `HUB.md` (at the repository root) list the `schemaVersion: 1` dialect and
//! the Hub's construct by construct in tables whose last column names the fixtures that show
//! what the generator does. These tests keep that column honest: every row names at least one
//! backticked path that exists (relative to the repository root), and every `` › `text` ``
//! after a path is a text that file contains.

use std::fs;
use std::path::Path;

/// Fewer rows than this in DIALECT.md means the table lost part of the dialect.
const MIN_ROWS: usize = 170;

/// Fewer rows than this in HUB.md means the table lost part of the dialect.
const MIN_HUB_ROWS: usize = 79;

/// One fixture reference of a row: a path and the texts it must contain.
#[derive(Debug)]
struct Reference {
    path: String,
    texts: Vec<String>,
}

/// Whether `line` is a table's separator row (`|---|:--|`).
fn is_separator(line: &str) -> bool {
    let cells = line.trim().trim_matches('|');
    !cells.is_empty() && cells.chars().all(|c| matches!(c, '-' | ':' | '|' | ' '))
}

/// The table rows of `text` that hold data (not headers or separators), with their line
/// numbers.
fn rows(text: &str) -> Vec<(usize, &str)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with('|') || is_separator(line) {
            continue;
        }
        // A header is the row right above a separator.
        if lines.get(i + 1).is_some_and(|next| is_separator(next)) {
            continue;
        }
        out.push((i + 1, *line));
    }
    out
}

/// The last cell of a row.
fn last_cell(row: &str) -> &str {
    let inner = row.trim().strip_suffix('|').unwrap_or(row.trim());
    inner.rsplit('|').next().unwrap_or("").trim()
}

/// The references of a fixture cell: backticked spans, where a span after ` › ` is a text of
/// the path before it and any other span is a path.
fn references(cell: &str) -> Result<Vec<Reference>, String> {
    let mut out: Vec<Reference> = Vec::new();
    let mut rest = cell;
    let mut text_next = false;
    loop {
        let Some(open) = rest.find('`') else {
            if !rest.trim().is_empty() && rest.contains('›') {
                return Err(format!(
                    "` › ` is not followed by a backticked text: {rest:?}"
                ));
            }
            break;
        };
        let between = &rest[..open];
        if between.contains('›') {
            text_next = true;
        }
        let after = &rest[open + 1..];
        let close = after
            .find('`')
            .ok_or_else(|| format!("unclosed backtick in {cell:?}"))?;
        let span = &after[..close];
        if text_next {
            let last = out
                .last_mut()
                .ok_or_else(|| format!("` › ` before any path in {cell:?}"))?;
            last.texts.push(span.to_owned());
            text_next = false;
        } else {
            out.push(Reference {
                path: span.to_owned(),
                texts: Vec::new(),
            });
        }
        rest = &after[close + 1..];
    }
    Ok(out)
}

#[test]
fn every_row_of_the_dialect_table_names_fixtures_that_exist() {
    check_table("DIALECT.md", MIN_ROWS);
}

#[test]
fn every_row_of_the_hub_table_names_fixtures_that_exist() {
    check_table("HUB.md", MIN_HUB_ROWS);
}

/// Checks every row of the tables of `file` (at the repository root), and that it has at
/// least `min_rows`.
fn check_table(file: &str, min_rows: usize) {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = manifest_dir.join("..");
    let doc = repo.join(file);
    let text = fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let rows = rows(&text);
    let mut failures = Vec::new();
    for (line, row) in &rows {
        let construct = row
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or("")
            .trim();
        let name = format!("{file} line {line} ({construct})");
        let references = match references(last_cell(row)) {
            Ok(references) => references,
            Err(message) => {
                failures.push(format!("{name}: {message}"));
                continue;
            }
        };
        if references.is_empty() {
            failures.push(format!("{name}: names no fixture"));
            continue;
        }
        for reference in &references {
            let path = repo.join(&reference.path);
            let Ok(contents) = fs::read_to_string(&path) else {
                failures.push(format!(
                    "{name}: `{}` is not a readable file",
                    reference.path
                ));
                continue;
            };
            for wanted in &reference.texts {
                if !contents.contains(wanted.as_str()) {
                    failures.push(format!(
                        "{name}: `{}` does not contain `{wanted}`",
                        reference.path
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        rows.len() >= min_rows,
        "{file} has {} table rows; at least {min_rows} expected",
        rows.len()
    );
}

#[test]
fn cells_split_into_paths_and_texts() {
    let refs = references("`a/b.test` › `x(1)`, `c.test`").expect("parses");
    assert_eq!(refs.len(), 2);
    assert_eq!(refs[0].path, "a/b.test");
    assert_eq!(refs[0].texts, ["x(1)"]);
    assert_eq!(refs[1].path, "c.test");
    assert!(refs[1].texts.is_empty());
    assert!(references("`a.test` › ").is_err());
    assert!(references("› `x`").is_err());
    assert_eq!(
        rows("| a | b |\n|---|---|\n| c | d |\n"),
        [(3, "| c | d |")]
    );
    assert_eq!(last_cell("| a | b | `c` |"), "`c`");
}
