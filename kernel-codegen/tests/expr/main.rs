//! Data-driven tests of the expression language (`kernel_codegen::expr`).
//!
//! Every `tests/expr/*.test` file starts with the dialect its expressions are written in
//! (`dialect: seed`, `dialect: schemaVersion 1` or `dialect: hub`), then a list of cases
//! separated by blank lines. A case is:
//!
//! ```text
//! # optional comment lines
//! <the expression, on one line>
//! => <result>
//! parse => <fully parenthesized parse tree>     (optional)
//! lower => <lowered Rust, pretty-printed>       (optional)
//! ```
//!
//! `<result>` is the value with its type (`Int 7`, `Float 0.5`, `Bool true`, `Str "x"`,
//! `Dtype f16`, `List [2, 3]`), or `parse error: column N: …`, or one `error: column N: …` line
//! per check error (each with its own `=>`), or `eval error: …`. The optional lines are checked
//! only where a case has them. Expressions are parsed and checked in the file's dialect, and
//! checked, evaluated and lowered in the one fixed scope and environment of `fixture.rs`,
//! which holds the names of both dialects.
//!
//! Run with `UPDATE_EXPECT=1` to rewrite the expectations from the actual results (comments,
//! order and the choice of optional lines are kept); review the diff.
//!
//! The file also holds unit tests that check every expression of the seed manifests
//! (`seeds.rs`), parse and check every expression of the V1 corpus (`corpus.rs`, skipped with
//! a note when the corpus is absent), and compile and run the Jinja dialects' lowerings
//! (`lowered.rs`).

mod corpus;
mod fixture;
mod lowered;
mod seeds;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use fixture::{Fixture, TestLowerScope, lowered_text_in};
use kernel_codegen::expr::{self, Ir, check::Dialect};

/// The header line of a `.test` file that names each dialect.
const DIALECTS: &[(&str, Dialect)] = &[
    ("dialect: seed", Dialect::Seed),
    ("dialect: schemaVersion 1", Dialect::V1),
    ("dialect: hub", Dialect::Hub),
];

/// A `.test` file: its dialect and its cases.
struct File {
    dialect: Dialect,
    cases: Vec<Case>,
}

/// One case of a `.test` file.
#[derive(Debug, Clone, PartialEq)]
struct Case {
    comments: Vec<String>,
    source: String,
    /// Line number of the source line (1-based), for failure messages.
    line: usize,
    results: Vec<String>,
    parse: Option<String>,
    lower: Option<String>,
}

fn parse_file(text: &str, path: &Path) -> File {
    let header = text.lines().next().unwrap_or_default();
    let Some(&(_, dialect)) = DIALECTS.iter().find(|(h, _)| *h == header) else {
        panic!(
            "{}:1: expected a dialect line ({}), found {header:?}",
            path.display(),
            DIALECTS
                .iter()
                .map(|(h, _)| *h)
                .collect::<Vec<_>>()
                .join(" or ")
        );
    };
    let mut cases = Vec::new();
    let mut current: Option<Case> = None;
    let mut pending_comments = Vec::new();
    for (i, raw) in text.lines().enumerate().skip(1) {
        let line = raw.trim_end();
        if line.is_empty() {
            cases.extend(current.take());
            continue;
        }
        if let Some(case) = current.as_mut() {
            if let Some(rest) = line.strip_prefix("=> ") {
                case.results.push(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("parse => ") {
                case.parse = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("lower => ") {
                case.lower = Some(rest.to_owned());
            } else {
                panic!(
                    "{}:{}: expected `=>`, `parse =>` or `lower =>`, found {line:?}",
                    path.display(),
                    i + 1
                );
            }
        } else if line.starts_with('#') {
            pending_comments.push(line.to_owned());
        } else {
            current = Some(Case {
                comments: std::mem::take(&mut pending_comments),
                source: line.to_owned(),
                line: i + 1,
                results: Vec::new(),
                parse: None,
                lower: None,
            });
        }
    }
    cases.extend(current);
    assert!(
        pending_comments.is_empty(),
        "{}: trailing comment without a case",
        path.display()
    );
    File { dialect, cases }
}

fn render_file(dialect: Dialect, cases: &[Case]) -> String {
    let header = DIALECTS
        .iter()
        .find(|(_, d)| *d == dialect)
        .map_or("", |(h, _)| *h);
    let mut out = format!("{header}\n");
    for case in cases {
        out.push('\n');
        for comment in &case.comments {
            let _ = writeln!(out, "{comment}");
        }
        let _ = writeln!(out, "{}", case.source);
        for result in &case.results {
            let _ = writeln!(out, "=> {result}");
        }
        if let Some(parse) = &case.parse {
            let _ = writeln!(out, "parse => {parse}");
        }
        if let Some(lower) = &case.lower {
            let _ = writeln!(out, "lower => {lower}");
        }
    }
    out
}

/// Runs one case in the fixture read in the file's dialect and returns it with the actual
/// results filled in.
fn run_case(fixture: &Fixture, dialect: Dialect, case: &Case) -> Case {
    let src = &case.source;
    let mut actual = Case {
        results: Vec::new(),
        ..case.clone()
    };
    let ast = match expr::parse_in(src, dialect) {
        Ok(ast) => ast,
        Err(err) => {
            actual.results.push(format!(
                "parse error: column {}: {}",
                err.column(src),
                err.message
            ));
            actual.parse = case.parse.as_ref().map(|_| "-".to_owned());
            actual.lower = case.lower.as_ref().map(|_| "-".to_owned());
            return actual;
        }
    };
    actual.parse = case.parse.as_ref().map(|_| ast.to_string());
    let ir: Ir = match expr::check(&ast, fixture) {
        Ok(ir) => ir,
        Err(errors) => {
            for err in errors {
                actual.results.push(format!(
                    "error: column {}: {}",
                    err.column(src),
                    err.message
                ));
            }
            actual.lower = case.lower.as_ref().map(|_| "-".to_owned());
            return actual;
        }
    };
    actual.lower = (case.lower.as_ref()).map(|_| lowered_text_in(&ir, &TestLowerScope(fixture)));
    actual.results.push(match expr::eval(&ir, fixture) {
        Ok(value) => {
            assert_eq!(
                value.ty(),
                ir.ty,
                "{src}: value type differs from the checked type"
            );
            format!("{:?} {value}", value.ty())
        }
        Err(err) => format!("eval error: {}", err.message),
    });
    actual
}

fn test_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expr");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "test"))
        .collect();
    files.sort();
    files
}

#[test]
fn data_driven_cases() {
    let mut total = 0;
    for path in test_files() {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let File { dialect, cases } = parse_file(&text, &path);
        let fixture = Fixture::new(dialect);
        let actual: Vec<Case> = cases
            .iter()
            .map(|c| run_case(&fixture, dialect, c))
            .collect();
        total += cases.len();
        // The file rendered from the actual results: equal to the file exactly when every
        // case holds (comments, order and optional lines are kept).
        expect_test::expect_file![&path].assert_eq(&render_file(dialect, &actual));
    }
    assert!(total > 0, "no cases found under tests/expr");
}

#[test]
fn lower_result_returns_a_single_fallible_call_directly() {
    // `lower_result` gives a `Result` expression; a lone fallible runtime call is returned as
    // is instead of `Ok(call?)` (clippy: needless_question_mark).
    let fixture = Fixture::new(Dialect::Seed);
    let text = |src: &str| {
        let ir = expr::check(
            &expr::parse(src).unwrap_or_else(|e| panic!("{src}: {e}")),
            &fixture,
        )
        .unwrap_or_else(|e| panic!("{src}: {e:?}"));
        expr::lower_result(&ir, &TestLowerScope(&fixture)).to_string()
    };
    assert_eq!(
        text("dim(shapes.x, 1)"),
        "rt :: expr :: dim (env . shapes . x , 1i64)"
    );
    assert_eq!(
        text("dim(shapes.x, 1) + 1"),
        "rt :: expr :: add (rt :: expr :: dim (env . shapes . x , 1i64) ? , 1i64)"
    );
    assert_eq!(text("attrs.flag"), "Ok (env . attrs . flag)");
    assert_eq!(
        text("[half]"),
        "Ok (< [i64] > :: to_vec (& [half (env) ?]))"
    );
}

#[test]
fn runner_round_trips_files() {
    // Rendering the parsed cases reproduces each file, so UPDATE_EXPECT only changes results.
    for path in test_files() {
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = parse_file(&text, &path);
        assert_eq!(
            render_file(file.dialect, &file.cases),
            text,
            "{} is not in canonical form",
            path.display()
        );
    }
}
