//! Which template line produced a line of a rendered shader, for validation errors.
//!
//! On the error path only: every template is rendered again with a marker comment
//! (`/*@@<template>:<line>*/`) at the end of each line of literal text it holds, found in
//! minijinja's syntax tree (the text of `EmitRaw` nodes as the lexer kept it, so
//! `trim_blocks`/`lstrip_blocks` behave as before). WGSL comments nest, so a marker changes
//! no token; the rendered line then names its template line. Lines a template prints only
//! from expressions (the prelude among them) have no marker and are not mapped.

use minijinja::Environment;
use minijinja::machinery::ast::Stmt;
use minijinja::machinery::parse;

const OPEN: &str = "/*@@";

/// A template line: the template's name and its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateLine {
    pub template: String,
    pub line: usize,
    /// The line's text, trimmed at the end.
    pub text: String,
}

/// `env` with every template's literal lines marked; also the template names, by marker index.
pub fn marked_environment(env: &Environment<'static>) -> (Environment<'static>, Vec<String>) {
    let mut marked = env.clone();
    let names: Vec<String> = env.templates().map(|(name, _)| name.to_owned()).collect();
    for (index, name) in names.iter().enumerate() {
        let Ok(template) = env.get_template(name) else {
            continue;
        };
        let source = template.source();
        let text = mark(source, name, index);
        // A marked template that no longer parses keeps its plain text (and no markers).
        let _ = marked.add_template_owned(name.clone(), text);
    }
    (marked, names)
}

/// `source` with a marker before the newline of each line that has literal text.
fn mark(source: &str, name: &str, index: usize) -> String {
    let Ok(tree) = parse(source, name, crate::templates::render::syntax_config()) else {
        return source.to_owned();
    };
    let mut offsets = Vec::new();
    raw_line_ends(&tree, source, &mut offsets);
    offsets.sort_unstable();
    offsets.dedup();
    let mut out = String::with_capacity(source.len() + offsets.len() * 12);
    let mut from = 0;
    for offset in offsets {
        let line = source[..offset].matches('\n').count() + 1;
        out.push_str(&source[from..offset]);
        out.push_str(&format!("{OPEN}{index}:{line}*/"));
        from = offset;
    }
    out.push_str(&source[from..]);
    out
}

/// Byte offsets (in `source`) of the newlines that end a line of literal, non-blank text.
fn raw_line_ends(stmt: &Stmt<'_>, source: &str, out: &mut Vec<usize>) {
    let mut on_stmt = |s: &Stmt<'_>| {
        let Stmt::EmitRaw(raw) = s else { return };
        let text = raw.raw;
        // The lexer's text is a slice of the source; anything else is left unmarked.
        let start = (text.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        if start > source.len() || source.get(start..start + text.len()) != Some(text) {
            return;
        }
        let mut line_start = 0;
        for (i, c) in text.char_indices() {
            if c == '\n' {
                if !text[line_start..i].trim().is_empty() {
                    out.push(start + i);
                }
                line_start = i + 1;
            }
        }
    };
    crate::templates::syntax::walk(stmt, &mut on_stmt, &mut |_| {});
}

/// The template line that produced line `line` (1-based) of `marked`, a rendering with the
/// environment of [`marked_environment`].
pub fn locate(
    marked: &str,
    line: usize,
    names: &[String],
    env: &Environment<'static>,
) -> Option<TemplateLine> {
    let text = marked.lines().nth(line.checked_sub(1)?)?;
    let at = text.rfind(OPEN)?;
    let rest = &text[at + OPEN.len()..];
    let (index, rest) = rest.split_once(':')?;
    let (number, _) = rest.split_once("*/")?;
    let template = names.get(index.parse::<usize>().ok()?)?.clone();
    let line: usize = number.parse().ok()?;
    let source = env.get_template(&template).ok()?.source().to_owned();
    let text = source.lines().nth(line - 1)?.trim_end().to_owned();
    Some(TemplateLine {
        template,
        line,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_lines_are_marked_and_found() {
        let source = "fn f() {\n{% if a %}\n    let x = {{ b }};\n{% endif %}\n{{ c }}\n}\n";
        let marked = mark(source, "t.jinja", 0);
        assert_eq!(
            marked,
            "fn f() {/*@@0:1*/\n{% if a %}\n    let x = {{ b }};/*@@0:3*/\n{% endif %}\n{{ c }}\n}/*@@0:6*/\n"
        );
        let mut env = Environment::new();
        env.set_syntax(crate::templates::render::syntax_config());
        env.add_template_owned("t.jinja".to_owned(), source.to_owned())
            .expect("parses");
        let (marked_env, names) = marked_environment(&env);
        let context = minijinja::context! { a => true, b => 1, c => "// c" };
        let plain = env
            .get_template("t.jinja")
            .and_then(|t| t.render(&context))
            .expect("renders");
        let rendered = marked_env
            .get_template("t.jinja")
            .and_then(|t| t.render(&context))
            .expect("renders");
        assert_eq!(
            plain.lines().count(),
            rendered.lines().count(),
            "{plain}\n{rendered}"
        );
        let found = locate(&rendered, 2, &names, &env).expect("line 2 is marked");
        assert_eq!(
            (found.line, found.text.as_str()),
            (3, "    let x = {{ b }};")
        );
        assert_eq!(
            locate(&rendered, 3, &names, &env),
            None,
            "printed only by an expression"
        );
    }
}
