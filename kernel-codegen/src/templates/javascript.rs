//! Templates rendered as the Hub runtime renders them, with @huggingface/jinja, where
//! minijinja (which renders them here) would differ: the `int` filter floors a number and
//! reads a string as JavaScript's `parseInt` does, `raise_exception` fails the render with
//! the template's message, and what that engine renders otherwise or not at all is refused at
//! its template line: a chain of comparisons (`a < b < c` compares the Bool `a < b` with `c`
//! there), and the statements, filters, tests, functions and `**` it does not have.
//!
//! Left as minijinja computes it: `%` of operands of different signs (the engine's result
//! takes the dividend's sign, minijinja's the divisor's), which no filter can change; the
//! Hub's own templates print sizes and indices, which are not negative.

use std::collections::BTreeSet;

use minijinja::machinery::Span;
use minijinja::machinery::ast::{BinOpKind, Expr, Stmt};
use minijinja::machinery::parse;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Value as JValue, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::Op;
use crate::templates::TemplatePaths;
use crate::templates::syntax::walk;
use crate::templates::usage;

/// Gives `env` what the runtime gives templates where minijinja has none or another: the
/// engine's `int` filter, and the runtime's `raise_exception(message)`, which fails the
/// render with the template's message.
pub fn install(env: &mut Environment<'static>) {
    env.add_filter("int", int_filter);
    env.add_function(
        "raise_exception",
        |message: String| -> Result<JValue, Error> {
            Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("the template raises: {message}"),
            ))
        },
    );
}

/// `x | int` and `x | int(default)` as the engine computes them: a number floored
/// (`-2.5 | int` is -3, where minijinja truncates to -2), a Bool 1 or 0, a string its leading
/// integer as `parseInt` reads it, or `default` (0) when it has none (where minijinja fails).
fn int_filter(value: JValue, default: Option<JValue>) -> Result<JValue, Error> {
    match value.kind() {
        ValueKind::Bool => Ok(JValue::from(i64::from(value.is_true()))),
        ValueKind::Number if value.is_integer() => Ok(value),
        ValueKind::Number => {
            let number = f64::try_from(value.clone())?;
            whole(number.floor()).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidOperation,
                    format!("`{value} | int` has no integer value"),
                )
            })
        }
        ValueKind::String => Ok(parse_int(value.as_str().unwrap_or_default())
            .map_or_else(|| default.unwrap_or_else(|| JValue::from(0)), JValue::from)),
        other => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("the `int` filter takes a number, a Bool or a string, not {other}"),
        )),
    }
}

/// A whole f64 as an integer value, where it has one.
fn whole(v: f64) -> Option<JValue> {
    // 2^63 is exactly representable; every whole f64 below it in magnitude fits an i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (v.is_finite() && v.abs() < LIMIT).then(|| JValue::from(v as i64))
}

/// `parseInt(text, 10)`: leading white space skipped, an optional sign, then the decimal
/// digits up to the first other character; `None` (JavaScript's NaN) without a digit.
fn parse_int(text: &str) -> Option<i64> {
    let rest = text.trim_start();
    let (negative, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let run = digits.bytes().take_while(u8::is_ascii_digit);
    // No digit: NaN.
    run.clone().next()?;
    let magnitude = run.fold(0i64, |n, d| {
        n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    Some(if negative { -magnitude } else { magnitude })
}

/// The filters the engine has (for some operand type).
const FILTERS: &[&str] = &[
    "abs",
    "bool",
    "capitalize",
    "default",
    "first",
    "float",
    "indent",
    "int",
    "items",
    "join",
    "last",
    "length",
    "list",
    "lower",
    "map",
    "rejectattr",
    "replace",
    "reverse",
    "selectattr",
    "sort",
    "string",
    "title",
    "tojson",
    "trim",
    "unique",
    "upper",
];

/// The tests the engine has.
const TESTS: &[&str] = &[
    "boolean",
    "callable",
    "defined",
    "eq",
    "equalto",
    "even",
    "false",
    "integer",
    "iterable",
    "lower",
    "mapping",
    "none",
    "number",
    "odd",
    "sequence",
    "string",
    "true",
    "undefined",
    "upper",
];

/// The functions a Hub template may call by name, besides its macros (and `caller` in a
/// call block): the engine's `namespace`, and what the runtime adds.
const FUNCTIONS: &[&str] = &["caller", "namespace", "raise_exception", "range"];

/// Every construct of the templates `op`'s passes reach that the engine renders otherwise or
/// not at all (a chain of comparisons; a statement, filter, test, function or `**` it does
/// not have), each reported once at its line, for an op whose templates the engine renders.
pub fn unsupported_constructs(op: &Op, paths: &TemplatePaths<'_>) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    if !op.templates.javascript_jinja {
        return diagnostics;
    }
    let mut trees = Vec::new();
    let mut checked = BTreeSet::new();
    for pass in op.variants.iter().flat_map(|v| &v.passes) {
        let reached = usage::usage(paths, &pass.template, &BTreeSet::new()).templates;
        for name in reached {
            if !checked.insert(name.clone()) {
                continue;
            }
            let Some((file, source)) = paths.templates.get_key_value(&name) else {
                continue;
            };
            // A template that does not parse is reported when it is loaded, as is one too deep.
            if super::nesting::tags_are_shallow(source)
                && let Ok(tree) = parse(source, file, SyntaxConfig::default())
            {
                trees.push((file, source, tree));
            }
        }
    }
    // A macro defined in any template the op reaches may be called (imports aside, which the
    // engine does not have).
    let mut macros = BTreeSet::new();
    for (_, _, tree) in &trees {
        let mut on_stmt = |stmt: &Stmt<'_>| {
            if let Stmt::Macro(m) = stmt {
                macros.insert(m.name.to_owned());
            }
        };
        walk(tree, &mut on_stmt, &mut |_| {});
    }
    for (name, source, tree) in &trees {
        let mut found: Vec<(Span, String)> = Vec::new();
        let mut in_exprs: Vec<(Span, String)> = Vec::new();
        let mut on_stmt = |stmt: &Stmt<'_>| {
            let (span, tag) = match stmt {
                Stmt::WithBlock(s) => (s.span(), "with"),
                Stmt::Import(s) => (s.span(), "import"),
                Stmt::FromImport(s) => (s.span(), "from … import"),
                Stmt::Extends(s) => (s.span(), "extends"),
                Stmt::Block(s) => (s.span(), "block"),
                Stmt::AutoEscape(s) => (s.span(), "autoescape"),
                Stmt::Do(s) => (s.span(), "do"),
                _ => return,
            };
            found.push((span, format!("`{{% {tag} %}}`: the Hub runtime's Jinja has no such statement (it has `set`, `if`, `for`, `macro`, `call`, `filter`, `break`, `continue`, and `include`, which the runtime expands before rendering)")));
        };
        let mut on_expr = |expr: &Expr<'_>| {
            let finding = match expr {
                // At its first operand: the chain's own span starts at the tag.
                Expr::Compare(chain) => (chain.expr.span(), "a chain of comparisons: the Hub runtime's Jinja compares the first comparison's Bool with the next operand (`a < b < c` is `(a < b) < c`) where Python's Jinja tests each pair; write the pairs joined by `and` (`a < b and b < c`)".to_owned()),
                Expr::BinOp(b) if matches!(b.op, BinOpKind::Pow) => (expr.span(), "`**`: the Hub runtime's Jinja has no power operator".to_owned()),
                Expr::Filter(f) if !FILTERS.contains(&f.name) => (expr.span(), format!("filter `{}`: the Hub runtime's Jinja has no such filter (it has {})", f.name, FILTERS.join(", "))),
                Expr::Test(t) if !TESTS.contains(&t.name) => (expr.span(), format!("test `{}`: the Hub runtime's Jinja has no such test (it has {})", t.name, TESTS.join(", "))),
                Expr::Call(c) => match &c.expr {
                    Expr::Var(v) if !FUNCTIONS.contains(&v.id) && !macros.contains(v.id) => (expr.span(), format!("`{}(…)`: a Hub template calls its own macros, `range`, `namespace` and `raise_exception`", v.id)),
                    _ => return,
                },
                _ => return,
            };
            in_exprs.push(finding);
        };
        walk(tree, &mut on_stmt, &mut on_expr);
        found.extend(in_exprs);
        found.sort_by_key(|(span, _)| (span.start_line, span.start_col));
        for (span, message) in found {
            let line = usize::from(span.start_line);
            let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
            diagnostics.push(
                Diagnostic::new(name, format!("line {line}"), message)
                    .at(text.trim_end(), usize::from(span.start_col) + 1),
            );
        }
    }
    diagnostics
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: JValue) -> String {
        int_filter(v, None).map_or_else(|e| format!("error: {e}"), |v| v.to_string())
    }

    #[test]
    fn int_floors_and_reads_strings_as_parse_int() {
        assert_eq!(int(JValue::from(-2.5)), "-3");
        assert_eq!(int(JValue::from(2.5)), "2");
        assert_eq!(int(JValue::from(-7)), "-7");
        assert_eq!(int(JValue::from(true)), "1");
        assert_eq!(int(JValue::from(false)), "0");
        assert_eq!(int(JValue::from(" -12px")), "-12");
        assert_eq!(int(JValue::from("1e3")), "1");
        assert_eq!(int(JValue::from("px")), "0");
        assert_eq!(
            int_filter(JValue::from("px"), Some(JValue::from(7)))
                .map(|v| v.to_string())
                .ok(),
            Some("7".to_owned())
        );
        assert!(int(JValue::from(f64::NAN)).starts_with("error"));
        assert!(int(JValue::from(vec![1])).starts_with("error"));
    }
}
