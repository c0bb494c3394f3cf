//! Templates rendered as the Hub runtime renders them, with @huggingface/jinja, where
//! minijinja (which renders them here) would differ: the `int` filter floors a number and
//! reads a string as JavaScript's `parseInt` does, and a chain of comparisons, which that
//! engine does not have (`a < b < c` compares the Bool `a < b` with `c` there), is refused at
//! its template line.
//!
//! Left as minijinja computes it: `%` of operands of different signs (the engine's result
//! takes the dividend's sign, minijinja's the divisor's), which no filter can change; the
//! Hub's own templates print sizes and indices, which are not negative.

use std::collections::BTreeSet;

use minijinja::machinery::ast::{CallArg, Expr, Stmt};
use minijinja::machinery::parse;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Value as JValue, ValueKind};
use minijinja::{Environment, Error, ErrorKind};

use crate::diag::{Diagnostic, Diagnostics};
use crate::model::Op;
use crate::templates::TemplatePaths;
use crate::templates::usage::{self, visit};

/// Gives `env` the engine's filters where they differ from minijinja's.
pub fn add_filters(env: &mut Environment<'static>) {
    env.add_filter("int", int_filter);
}

/// `x | int` as the engine computes it: a number floored (`-2.5 | int` is -3, where
/// minijinja truncates to -2), a Bool 1 or 0, a string its leading integer (0 when there is
/// none, where minijinja fails).
fn int_filter(value: JValue) -> Result<JValue, Error> {
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
        ValueKind::String => Ok(JValue::from(parse_int(value.as_str().unwrap_or_default()))),
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

/// `parseInt(text, 10)`, 0 where that is NaN (as the engine's filter): leading white space
/// skipped, an optional sign, then the decimal digits up to the first other character.
fn parse_int(text: &str) -> i64 {
    let rest = text.trim_start();
    let (negative, digits) = match rest.as_bytes().first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let magnitude = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
    if negative { -magnitude } else { magnitude }
}

/// Every chain of comparisons in the templates `op`'s passes reach, each reported once at its
/// line, for an op whose templates the engine renders.
pub fn chained_comparisons(op: &Op, paths: &TemplatePaths<'_>) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    if !op.templates.javascript_jinja {
        return diagnostics;
    }
    let mut checked = BTreeSet::new();
    for pass in op.variants.iter().flat_map(|v| &v.passes) {
        let reached = usage::usage(paths, &pass.template, &BTreeSet::new()).templates;
        for name in reached {
            if !checked.insert(name.clone()) {
                continue;
            }
            let Some(source) = paths.templates.get(&name) else {
                continue;
            };
            // A template that does not parse is reported when it is loaded.
            let Ok(tree) = parse(source, &name, SyntaxConfig::default()) else {
                continue;
            };
            let mut found = Vec::new();
            stmt_exprs(&tree, &mut |expr| {
                if let Expr::Compare(chain) = expr {
                    // At its first operand: the chain's own span starts at the tag.
                    found.push(chain.expr.span());
                }
            });
            for span in found {
                let line = usize::from(span.start_line);
                let text = source.lines().nth(line.saturating_sub(1)).unwrap_or("");
                diagnostics.push(
                    Diagnostic::new(
                        &name,
                        format!("line {line}"),
                        "a chain of comparisons: the Hub runtime's Jinja compares the first comparison's Bool with the next operand (`a < b < c` is `(a < b) < c`) where Python's Jinja tests each pair; write the pairs joined by `and` (`a < b and b < c`)",
                    )
                    .at(text.trim_end(), usize::from(span.start_col) + 1),
                );
            }
        }
    }
    diagnostics
}

/// Calls `f` on every expression of `stmt`, at any depth.
fn stmt_exprs<'a>(stmt: &Stmt<'a>, f: &mut dyn FnMut(&Expr<'a>)) {
    let body = |stmts: &[Stmt<'a>], f: &mut dyn FnMut(&Expr<'a>)| {
        for s in stmts {
            stmt_exprs(s, f);
        }
    };
    match stmt {
        Stmt::Template(t) => body(&t.children, f),
        Stmt::EmitExpr(e) => visit(&e.expr, f),
        Stmt::EmitRaw(_) | Stmt::Continue(_) | Stmt::Break(_) => {}
        Stmt::Block(b) => body(&b.body, f),
        Stmt::ForLoop(l) => {
            visit(&l.target, f);
            visit(&l.iter, f);
            if let Some(filter) = &l.filter_expr {
                visit(filter, f);
            }
            body(&l.body, f);
            body(&l.else_body, f);
        }
        Stmt::IfCond(i) => {
            visit(&i.expr, f);
            body(&i.true_body, f);
            body(&i.false_body, f);
        }
        Stmt::WithBlock(w) => {
            for (target, value) in &w.assignments {
                visit(target, f);
                visit(value, f);
            }
            body(&w.body, f);
        }
        Stmt::Set(s) => visit(&s.expr, f),
        Stmt::SetBlock(s) => {
            if let Some(filter) = &s.filter {
                visit(filter, f);
            }
            body(&s.body, f);
        }
        Stmt::AutoEscape(a) => body(&a.body, f),
        Stmt::FilterBlock(b) => {
            visit(&b.filter, f);
            body(&b.body, f);
        }
        Stmt::Extends(e) => visit(&e.name, f),
        Stmt::Include(i) => visit(&i.name, f),
        Stmt::Import(i) => visit(&i.expr, f),
        Stmt::FromImport(i) => visit(&i.expr, f),
        Stmt::Macro(m) => {
            for default in &m.defaults {
                visit(default, f);
            }
            body(&m.body, f);
        }
        Stmt::CallBlock(c) => {
            call(&c.call.expr, &c.call.args, f);
            body(&c.macro_decl.body, f);
        }
        Stmt::Do(d) => call(&d.call.expr, &d.call.args, f),
    }
}

fn call<'a>(callee: &Expr<'a>, args: &[CallArg<'a>], f: &mut dyn FnMut(&Expr<'a>)) {
    visit(callee, f);
    for arg in args {
        let (CallArg::Pos(e)
        | CallArg::Kwarg(_, e)
        | CallArg::PosSplat(e)
        | CallArg::KwargSplat(e)) = arg;
        visit(e, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: JValue) -> String {
        int_filter(v).map_or_else(|e| format!("error: {e}"), |v| v.to_string())
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
        assert!(int(JValue::from(f64::NAN)).starts_with("error"));
        assert!(int(JValue::from(vec![1])).starts_with("error"));
    }
}
