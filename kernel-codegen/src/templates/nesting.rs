//! How deeply a rendered shader nests its expressions and blocks, refused past a bound before
//! naga or a driver sees it: their WGSL front ends, validators and back ends recurse once per
//! level of a chain such as `a + b + c + …`, so a template line writing thousands of terms
//! overflowed the stack (naga's SPIR-V, MSL, HLSL and GLSL writers take about 32 KB a level
//! in a debug build), where a diagnostic at the template line is due.

use minijinja::{Environment, OutputSpanKind};

use crate::diag::Diagnostic;

/// The deepest nesting accepted. A bound of the shader's own depth, not of the stack a
/// caller has: the shaders of the seed packages, the corpus and the Hub nest at most 40 deep
/// (counted as [`deepest`] counts), and every naga pass over a shader this deep fits in a
/// thread's default 2 MiB in a release build (validation and translation run on a larger
/// stack of their own, `wgsl::validate::on_large_stack`).
pub const MAX_NESTING: usize = 250;

/// The deepest nesting of `text` and the byte offset where it is reached, over-counted as a
/// recursive parser could meet it: each bracket opens a level, and each operator character
/// of an expression adds one, as a left-leaning chain `a + b + c` nests one level per
/// operator; a `,` or `;` ends the chain, and each `{` adds a level of blocks.
pub fn deepest(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut blocks = 0usize;
    // The chain's depth where each open bracket started, and the chain's base inside it.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let (mut base, mut chain) = (0usize, 0usize);
    let mut deepest = (0, 0);
    let mut i = 0;
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        match bytes[i] {
            b'/' if next == Some(b'/') => {
                i += bytes[i..]
                    .iter()
                    .position(|&b| b == b'\n')
                    .unwrap_or(bytes.len() - i);
                continue;
            }
            b'/' if next == Some(b'*') => {
                i = end_of_block_comment(bytes, i);
                continue;
            }
            b'(' | b'[' => {
                groups.push((base, chain));
                base = chain + 1;
                chain = base;
            }
            // The bracketed operand (a call, an index) wraps what came before it.
            b')' | b']' => {
                if let Some((outer, before)) = groups.pop() {
                    base = outer;
                    chain = before + 1;
                }
            }
            b',' => chain = base,
            b';' | b'{' | b'}' => {
                match bytes[i] {
                    b'{' => blocks += 1,
                    b'}' => blocks = blocks.saturating_sub(1),
                    _ => {}
                }
                groups.clear();
                (base, chain) = (0, 0);
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>' | b'!' | b'~'
            | b'=' => chain += 1,
            // A member or swizzle, not the point of a number.
            b'.' if next.is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') => chain += 1,
            _ => {}
        }
        if blocks + chain > deepest.0 {
            deepest = (blocks + chain, i);
        }
        i += 1;
    }
    deepest
}

/// The deepest Jinja tag (`{{ … }}`, `{% … %}`) of template `source`, counted as
/// [`deepest`] counts WGSL with each string literal a single operand, and the byte offset
/// where it is reached. minijinja compiles and folds an expression recursively, a level per
/// operator of a chain, so 20,000 `~` in a row overflowed a debug build's stack.
pub fn deepest_tag(source: &str) -> (usize, usize) {
    let mut deepest_tag = (0, 0);
    let mut rest = 0;
    while let Some(open) = source[rest..].find(['{']).map(|i| rest + i) {
        let close = match source.as_bytes().get(open + 1) {
            Some(b'{') => "}}",
            Some(b'%') => "%}",
            Some(b'#') => "#}",
            _ => {
                rest = open + 1;
                continue;
            }
        };
        let start = open + 2;
        let end = source[start..]
            .find(close)
            .map_or(source.len(), |i| start + i);
        if close != "#}" {
            let (depth, at) = deepest(&operators_marked(&source[start..end]));
            if depth > deepest_tag.0 {
                deepest_tag = (depth, start + at);
            }
        }
        rest = (end + 2).min(source.len());
    }
    deepest_tag
}

/// The expression of a tag as [`deepest`] reads it: each quoted string's contents blanked
/// and each word operator (`and`, `or`, `not`, `in`, `is`, `if`, `else`) an operator
/// character, lengths kept so that offsets hold.
fn operators_marked(text: &str) -> String {
    const WORDS: &[&str] = &["and", "or", "not", "in", "is", "if", "else"];
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if WORDS.contains(&word.as_str()) {
            out.push('+');
            out.extend(std::iter::repeat_n(' ', word.len() - 1));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        match quote {
            Some(q) if c == q => {
                quote = None;
                out.push(c);
            }
            Some(_) => out.extend(std::iter::repeat_n(' ', c.len_utf8())),
            None if c.is_alphanumeric() || c == '_' => word.push(c),
            None => {
                flush(&mut word, &mut out);
                if matches!(c, '\'' | '"') {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    flush(&mut word, &mut out);
    out
}

/// Whether minijinja may parse template `source` and the walks over its syntax tree recurse
/// through it: no tag nests deeper than [`MAX_NESTING`] (one that does is reported by
/// [`check_tags`] where the environment is made, and skipped by the walks).
pub fn tags_are_shallow(source: &str) -> bool {
    deepest_tag(source).0 <= MAX_NESTING
}

/// A diagnostic at the tag of template `name` that nests deeper than [`MAX_NESTING`].
pub fn check_tags(name: &str, source: &str) -> Option<Diagnostic> {
    let (depth, at) = deepest_tag(source);
    (depth > MAX_NESTING).then(|| {
        let message = format!(
            "this tag nests its expression {depth} deep; at most {MAX_NESTING} are accepted (the template engine compiles an expression recursively, a level per operator of a chain)"
        );
        at_offset(Diagnostic::new(name, "", message), source, at)
    })
}

/// `diagnostic` pointed at byte `offset` of template `source`: its line and column.
fn at_offset(mut diagnostic: Diagnostic, source: &str, offset: usize) -> Diagnostic {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = source[..offset].rfind('\n').map_or(0, |p| p + 1);
    let line_text = source[line_start..].lines().next().unwrap_or("");
    let column = source[line_start..offset].chars().count() + 1;
    diagnostic.path = format!("line {}", source[..offset].matches('\n').count() + 1);
    diagnostic.at(line_text, column)
}

/// The offset just past the block comment opening at `start` (WGSL's nest).
fn end_of_block_comment(bytes: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    bytes.len()
}

/// `Err` when `text`, the pass's shader as rendered, nests deeper than [`MAX_NESTING`]: at
/// the template line that wrote the deepest point (found by rendering again with minijinja's
/// output spans), else at the pass.
pub fn check(
    env: &Environment<'static>,
    template: &str,
    context: impl FnOnce() -> minijinja::Value,
    text: &str,
    where_: &str,
) -> Result<(), Diagnostic> {
    let (depth, at) = deepest(text);
    if depth <= MAX_NESTING {
        return Ok(());
    }
    let rendered_line = text[..at].matches('\n').count() + 1;
    let message = format!(
        "{where_}: line {rendered_line} of the rendered shader nests expressions {depth} deep; at most {MAX_NESTING} are accepted (WGSL compilers recurse once per level: does a loop write a long chain of `+`, `~` or brackets?)"
    );
    // The same render again, with the template source of each piece of its output.
    let rendered = (env.get_template(template)).and_then(|t| t.render_with_spans(context()));
    let span = match &rendered {
        Ok((again, spans)) if again == text => (spans.iter())
            .filter(|s| s.output_range().contains(&at))
            .min_by_key(|s| s.output_range().len()),
        _ => None,
    };
    let located =
        span.and_then(|s| Some((s, env.get_template(s.name()).ok()?.source().to_owned())));
    let Some((span, source)) = located else {
        return Err(Diagnostic::new(template, where_, message));
    };
    // Verbatim text maps byte for byte; an expression's output points at the expression.
    let offset = match span.kind() {
        OutputSpanKind::Raw => span.source_range().start + (at - span.output_range().start),
        _ => span.source_range().start,
    };
    Err(at_offset(
        Diagnostic::new(span.name(), "", message),
        &source,
        offset,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_brackets_and_blocks_count_their_levels() {
        assert_eq!(deepest("let x = a;").0, 1);
        assert_eq!(deepest("let x = a + b * c;").0, 3);
        assert_eq!(deepest("fn f() { let x = (a + (b)); }").0, 5);
        assert_eq!(deepest("let x = a[0][1][2];").0, 4);
        assert_eq!(deepest("let v = v.x;").0, 2);
        // A list is as deep as its deepest item; numbers are no members.
        assert_eq!(deepest("const t = array(-1.0, -2.0, -3.0, 4.5);").0, 3);
        // Comments count nothing, block comments nest.
        assert_eq!(
            deepest("// a + b + c + d\n/* + /* + */ + */ let x = a;").0,
            1
        );
    }

    #[test]
    fn a_template_is_as_deep_as_its_deepest_tag() {
        // Text outside tags, strings and comments count nothing; word operators count.
        let source = "a + b + c {{ x ~ 'a + b + c' }}\n{% if a and (b or c) %}{# + + + + #}";
        let (depth, at) = deepest_tag(source);
        assert_eq!((depth, &source[at..at + 2]), (4, "or"));
        let long = format!("let x = 1.0;\n{{{{ 'a'{} }}}}\n", " ~ 'a'".repeat(20_000));
        let diagnostic = check_tags("t.jinja", &long).expect("too deep");
        assert_eq!(diagnostic.path, "line 2");
        assert!(diagnostic.message.contains("20000 deep"), "{diagnostic}");
    }

    /// FUZZ F-11: a sum of 15,000 terms overflowed naga's stack; it counts 15,000 levels.
    #[test]
    fn a_long_sum_is_deep_where_it_is() {
        let text = format!("fn f() {{\n  let x = 1.0{};\n}}\n", " + 1.0".repeat(15_000));
        let (depth, at) = deepest(&text);
        assert_eq!(depth, 15_002);
        assert_eq!(text[..at].matches('\n').count(), 1);
    }
}
