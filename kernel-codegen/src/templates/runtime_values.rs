//! Run-time values printed into `schemaVersion: 1` shader text. Those templates print values
//! the engine knows per call wherever a literal would go (`const DIM: u32 = {{ dim }}u;`,
//! `{{ eps }}`, `@workgroup_size({{ WG }})`). Here such a value is a pipeline `override`, so
//! the rendered text holds a marked name ([`marked`]) that [`resolve`] turns into WGSL:
//!
//! - the name alone, or converted when a literal suffix followed it (`u`, `i`, `f`, `h`, or a
//!   fraction such as `.0`): `u32(dim_pipeline)`;
//! - a `const` declaration whose initializer holds one becomes an `override` at module scope
//!   and a `let` inside a function, since a `const` needs a value known when the shader is
//!   compiled.
//!
//! Uses the override cannot serve (a function-scope array length, say) are left to naga, which
//! reports them at the shader line.

/// Brackets a marked name in rendered text; WGSL text never contains it.
const MARK: char = '\u{1}';

/// The text a run-time value renders as: its override's name, marked for [`resolve`].
pub fn marked(override_name: &str) -> String {
    format!("{MARK}{override_name}{MARK}")
}

/// Resolves every marked name in rendered text (see the module docs).
pub fn resolve(text: &str) -> String {
    if !text.contains(MARK) {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Where the current statement starts in `out`, whether it holds a marked name, and the
    // brace depth (0: module scope).
    let mut statement = 0;
    let mut marked_statement = false;
    let mut depth = 0usize;
    // Declarations turned run-time so far: a `const` that reads one is run-time too.
    let mut run_time: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    out.push(chars[i]);
                    i += 1;
                }
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    out.push(chars[i]);
                    i += 1;
                }
                continue;
            }
            MARK => {
                let end = (i + 1..chars.len())
                    .find(|&j| chars[j] == MARK)
                    .unwrap_or(chars.len());
                let name: String = chars[i + 1..end].iter().collect();
                i = end + 1;
                let (conversion, skip) = literal_suffix(&chars[i.min(chars.len())..]);
                match conversion {
                    Some(ty) => out.push_str(&format!("{ty}({name})")),
                    None => out.push_str(&name),
                }
                i += skip;
                marked_statement = true;
                continue;
            }
            ';' | '{' | '}' => {
                if c == ';'
                    && (marked_statement || reads_any(&out[statement..], &run_time))
                    && let Some(name) = declare_at_run_time(&mut out, statement, depth)
                {
                    run_time.push(name);
                }
                match c {
                    '{' => depth += 1,
                    '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                out.push(c);
                statement = out.len();
                marked_statement = false;
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// The conversion a literal suffix after a marked name asks for, and how many characters the
/// suffix takes: `u` → `u32`, `i` → `i32`, `f` → `f32`, `h` → `f16`, a fraction (`.0`,
/// `.5f`) → `f32`.
fn literal_suffix(rest: &[char]) -> (Option<&'static str>, usize) {
    let ident = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric() || *c == '_');
    match rest.first() {
        Some('u') if !ident(rest.get(1)) => (Some("u32"), 1),
        Some('i') if !ident(rest.get(1)) => (Some("i32"), 1),
        Some('f') if !ident(rest.get(1)) => (Some("f32"), 1),
        Some('h') if !ident(rest.get(1)) => (Some("f16"), 1),
        Some('.') if rest.get(1).is_some_and(char::is_ascii_digit) => {
            let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let suffix = usize::from(matches!(rest.get(1 + digits), Some('f')));
            (Some("f32"), 1 + digits + suffix)
        }
        _ => (None, 0),
    }
}

/// Whether `statement` names one of `names` as a whole identifier.
fn reads_any(statement: &str, names: &[String]) -> bool {
    if names.is_empty() {
        return false;
    }
    statement
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|word| names.iter().any(|n| n == word))
}

/// Turns the `const` that starts the statement at `start` of `out` into `override` (module
/// scope) or `let` (inside a function); the declared name, when it did.
fn declare_at_run_time(out: &mut String, start: usize, depth: usize) -> Option<String> {
    // Skip the blank lines and comments between the previous statement and this one.
    let mut keyword_at = start;
    loop {
        let rest = &out[keyword_at..];
        let trimmed = rest.trim_start();
        keyword_at += rest.len() - trimmed.len();
        if trimmed.starts_with("//") {
            keyword_at += trimmed.find('\n').unwrap_or(trimmed.len());
        } else if trimmed.starts_with("/*") {
            keyword_at += trimmed.find("*/").map_or(trimmed.len(), |end| end + 2);
        } else {
            break;
        }
    }
    let rest = &out[keyword_at..];
    if !(rest.starts_with("const") && rest[5..].starts_with(|c: char| c.is_whitespace())) {
        return None;
    }
    let name: String = rest[5..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let replacement = if depth == 0 { "override" } else { "let" };
    out.replace_range(keyword_at..keyword_at + 5, replacement);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_become_conversions_and_constants_overrides() {
        let text = format!(
            "const DIM: u32 = {}u;\nconst VEC: u32 = DIM / 4u;\nconst FIXED: u32 = 4u;\n// the epsilon\nconst EPS: f32 = {};\nconst HALF = {}.0 / 2.0;\nfn f() {{\n    const J = {} / 4u;\n    let k = {}i;\n}}\n",
            marked("dim_pipeline"),
            marked("eps_pipeline"),
            marked("dim_pipeline"),
            marked("wg_pipeline"),
            marked("n_pipeline"),
        );
        assert_eq!(
            resolve(&text),
            "override DIM: u32 = u32(dim_pipeline);\noverride VEC: u32 = DIM / 4u;\nconst FIXED: u32 = 4u;\n// the epsilon\noverride EPS: f32 = eps_pipeline;\noverride HALF = f32(dim_pipeline) / 2.0;\nfn f() {\n    let J = wg_pipeline / 4u;\n    let k = i32(n_pipeline);\n}\n"
        );
    }

    #[test]
    fn names_stay_names_and_comments_are_left_alone() {
        let text = format!(
            "@compute @workgroup_size({}) // const x = 1; {{\nfn main() {{ let used = {}u_value; }}\n",
            marked("wg_pipeline"),
            marked("n_pipeline"),
        );
        assert_eq!(
            resolve(&text),
            "@compute @workgroup_size(wg_pipeline) // const x = 1; {\nfn main() { let used = n_pipelineu_value; }\n"
        );
        assert_eq!(resolve("const A = 1u;"), "const A = 1u;");
    }
}
