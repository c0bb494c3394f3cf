//! Chromium's subgroup matrices (`enable chromium_experimental_subgroup_matrix;`) lowered to
//! naga's cooperative matrices (`enable wgpu_cooperative_matrix;`), so that a template written
//! for the browser builds for wgpu's native back ends too.
//!
//! The lowering works on WGSL tokens, not on text patterns: comments and whitespace pass
//! through, calls are split at their top-level commas, and each replaced construct keeps the
//! line breaks it spanned, so naga's line numbers still point at the template's lines. What it
//! maps, per Chromium's extension and naga's `coop*` builtins:
//!
//! | Chromium | naga |
//! |---|---|
//! | `subgroup_matrix_left/right/result<T, C, R>` (C columns, R rows) | `coop_matCxR<T, A/B/C>` |
//! | `subgroupMatrixLoad<M, col_major/row_major>(p, offset, stride)` | `coopLoad<M>` (column-major) or `coopLoadT<M>` (row-major) of `&(*p)[offset]` |
//! | `subgroupMatrixStore<col_major/row_major>(p, offset, m, stride)` | `coopStore` / `coopStoreT(m, &(*p)[offset], stride)` |
//! | the earlier forms with a `col_major` argument: `subgroupMatrixLoad<M>(p, offset, col_major, stride)`, `subgroupMatrixStore(p, offset, m, col_major, stride)` | the same |
//! | `subgroupMatrixMultiplyAccumulate(l, r, acc)` | `coopMultiplyAdd(l, r, acc)` |
//! | `diagnostic(off, chromium.subgroup_matrix_uniformity)` | removed |
//!
//! naga has square matrices only (8×8 and 16×16), and `col_major` must be known when the
//! shader is built; anything else is an error naming the construct, which leaves the
//! combination out with that reason.

use std::collections::BTreeMap;

use kernel_abi::device::{MatrixScalar, SubgroupMatrixConfig};

/// Chromium's extension, as a WGSL `enable` names it.
const CHROMIUM_EXTENSION: &str = "chromium_experimental_subgroup_matrix";
/// naga's extension.
const NAGA_EXTENSION: &str = "wgpu_cooperative_matrix";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ident,
    Number,
    Punct,
    /// Whitespace and comments.
    Trivia,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
}

/// Splits WGSL into tokens; every byte of `text` is in exactly one token.
fn tokenize(text: &str) -> Result<Vec<Token<'_>>, String> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let kind = if c.is_ascii_whitespace() {
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            Kind::Trivia
        } else if text[i..].starts_with("//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            Kind::Trivia
        } else if text[i..].starts_with("/*") {
            // Block comments nest in WGSL.
            let mut depth = 0usize;
            loop {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= bytes.len() {
                    return Err("an unterminated block comment".to_owned());
                } else {
                    i += text[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
            Kind::Trivia
        } else if c.is_ascii_alphabetic() || c == b'_' || !c.is_ascii() {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || !bytes[i].is_ascii())
            {
                i += 1;
            }
            Kind::Ident
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            Kind::Number
        } else {
            i += 1;
            Kind::Punct
        };
        tokens.push(Token {
            kind,
            text: &text[start..i],
        });
    }
    Ok(tokens)
}

/// Identifiers whose `<` opens a template list (the ones a subgroup-matrix call's arguments
/// may hold), so that the commas inside it do not split arguments.
fn opens_template(ident: &str) -> bool {
    matches!(
        ident,
        "array" | "ptr" | "atomic" | "bitcast" | "vec2" | "vec3" | "vec4"
    ) || ident.starts_with("mat")
        || ident.starts_with("subgroup_matrix_")
        || ident.starts_with("subgroupMatrix")
        || ident.starts_with("coop")
}

fn is(token: Option<&Token<'_>>, text: &str) -> bool {
    token.is_some_and(|t| t.text == text)
}

/// The token list with `i` advanced past trivia.
fn skip_trivia(tokens: &[Token<'_>], mut i: usize) -> usize {
    while tokens.get(i).is_some_and(|t| t.kind == Kind::Trivia) {
        i += 1;
    }
    i
}

/// The index just past the bracket that closes the one at `open` (`(`, `[` or a template
/// `<`), and the ranges of its top-level comma-separated items.
fn group(tokens: &[Token<'_>], open: usize) -> Result<(usize, Vec<(usize, usize)>), String> {
    let mut stack: Vec<&str> = Vec::new();
    let mut items = Vec::new();
    let mut item_start = open + 1;
    let mut i = open;
    while i < tokens.len() {
        let t = tokens[i];
        match t.text {
            "(" | "[" => stack.push(t.text),
            "<" if i == open => stack.push("<"),
            "<" if tokens[..i]
                .iter()
                .rev()
                .find(|t| t.kind != Kind::Trivia)
                .is_some_and(|t| t.kind == Kind::Ident && opens_template(t.text)) =>
            {
                stack.push("<");
            }
            ")" | "]" | ">" => {
                let want = match t.text {
                    ")" => "(",
                    "]" => "[",
                    _ => "<",
                };
                if stack.last() == Some(&want) {
                    stack.pop();
                } else if t.text != ">" {
                    return Err(format!("an unbalanced `{}`", t.text));
                }
                if stack.is_empty() {
                    items.push((item_start, i));
                    return Ok((i + 1, items));
                }
            }
            "," if stack.len() == 1 => {
                items.push((item_start, i));
                item_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    Err("an unclosed bracket".to_owned())
}

/// The text of `tokens[range]` without surrounding trivia.
fn text_of(tokens: &[Token<'_>], (start, end): (usize, usize)) -> String {
    let joined: String = tokens[start..end].iter().map(|t| t.text).collect();
    joined.trim().to_owned()
}

/// What lowering found: the text for naga, and the matrix shapes the shader names.
#[derive(Debug, Clone)]
pub struct Lowered {
    pub text: String,
}

/// Lowers a shader that enables Chromium's subgroup matrices; `Ok(None)` for one that does
/// not (it is left as it is).
pub fn lower(text: &str) -> Result<Option<Lowered>, String> {
    let tokens = tokenize(text)?;
    let enabled = tokens
        .iter()
        .any(|t| t.kind == Kind::Ident && t.text == CHROMIUM_EXTENSION);
    if !enabled {
        return Ok(None);
    }
    let consts = module_constants(&tokens);
    let lowerer = Lowerer {
        tokens: &tokens,
        consts,
    };
    let text = lowerer.lower_range(0, tokens.len())?;
    Ok(Some(Lowered { text }))
}

/// Module-scope `const NAME[: T] = <integer or bool literal>;` declarations, which matrix
/// sizes and `col_major` flags may name.
fn module_constants(tokens: &[Token<'_>]) -> BTreeMap<String, String> {
    let mut consts = BTreeMap::new();
    let mut depth = 0i32;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].text {
            "{" => depth += 1,
            "}" => depth -= 1,
            "const" if depth == 0 => {
                let name = skip_trivia(tokens, i + 1);
                let mut j = skip_trivia(tokens, name + 1);
                if is(tokens.get(j), ":") {
                    j = skip_trivia(tokens, j + 1);
                    j = skip_trivia(tokens, j + 1);
                }
                if is(tokens.get(j), "=") {
                    let value = skip_trivia(tokens, j + 1);
                    let end = skip_trivia(tokens, value + 1);
                    if let (Some(n), Some(v)) = (tokens.get(name), tokens.get(value))
                        && is(tokens.get(end), ";")
                        && n.kind == Kind::Ident
                        && (v.kind == Kind::Number || matches!(v.text, "true" | "false"))
                    {
                        consts.insert(n.text.to_owned(), v.text.to_owned());
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    consts
}

struct Lowerer<'a, 't> {
    tokens: &'a [Token<'t>],
    consts: BTreeMap<String, String>,
}

/// Pads `replacement` with the line breaks of the source it replaces, so lines keep their
/// numbers.
fn keep_lines(replacement: String, replaced: &[Token<'_>]) -> String {
    let had: usize = replaced.iter().map(|t| t.text.matches('\n').count()).sum();
    let has = replacement.matches('\n').count();
    let mut out = replacement;
    for _ in has..had {
        out.push('\n');
    }
    out
}

impl Lowerer<'_, '_> {
    fn lower_range(&self, start: usize, end: usize) -> Result<String, String> {
        let tokens = self.tokens;
        let mut out = String::new();
        let mut i = start;
        while i < end {
            let t = tokens[i];
            if t.kind != Kind::Ident {
                out.push_str(t.text);
                i += 1;
                continue;
            }
            let (text, next) = match t.text {
                CHROMIUM_EXTENSION => (NAGA_EXTENSION.to_owned(), i + 1),
                "diagnostic" => self.diagnostic(i, &mut out)?,
                "subgroup_matrix_left" | "subgroup_matrix_right" | "subgroup_matrix_result" => {
                    self.matrix_type(i)?
                }
                "subgroupMatrixLoad" => self.load(i)?,
                "subgroupMatrixStore" => self.store(i)?,
                "subgroupMatrixMultiplyAccumulate" => self.multiply_add(i)?,
                other
                    if other.starts_with("subgroupMatrix")
                        || other.starts_with("subgroup_matrix") =>
                {
                    return Err(format!(
                        "`{other}` has no counterpart in naga's cooperative matrices (lowered: \
                         subgroup_matrix_left/right/result, subgroupMatrixLoad, \
                         subgroupMatrixStore, subgroupMatrixMultiplyAccumulate)"
                    ));
                }
                _ => (t.text.to_owned(), i + 1),
            };
            out.push_str(&keep_lines(text, &tokens[i..next]));
            i = next;
        }
        Ok(out)
    }

    /// A literal integer or boolean, or a module constant holding one.
    fn literal(&self, text: &str) -> String {
        let text = text.trim();
        let text = self.consts.get(text).map_or(text, String::as_str);
        text.trim_end_matches(['u', 'i']).to_owned()
    }

    /// `diagnostic(off, chromium.subgroup_matrix_uniformity)`, as a directive (with its `;`)
    /// or an attribute (with its `@`, already written to `out`), is dropped: naga checks the
    /// uniformity of cooperative operations itself. Any other `diagnostic` passes through.
    fn diagnostic(&self, i: usize, out: &mut String) -> Result<(String, usize), String> {
        let tokens = self.tokens;
        let open = skip_trivia(tokens, i + 1);
        if !is(tokens.get(open), "(") {
            return Ok((tokens[i].text.to_owned(), i + 1));
        }
        let (close, items) = group(tokens, open)?;
        let rule = items
            .get(1)
            .map(|&r| text_of(tokens, r))
            .unwrap_or_default();
        let rule: String = rule.split_whitespace().collect();
        if !rule.starts_with("chromium.") {
            return Ok((tokens[i].text.to_owned(), i + 1));
        }
        let mut next = close;
        let after = skip_trivia(tokens, close);
        if is(tokens.get(after), ";") {
            next = after + 1;
        } else if out.ends_with('@') {
            out.pop();
        }
        Ok((String::new(), next))
    }

    /// `subgroup_matrix_<role><T, C, R>` → `coop_matCxR<T, Role>`.
    fn matrix_type(&self, i: usize) -> Result<(String, usize), String> {
        let tokens = self.tokens;
        let role = match tokens[i].text {
            "subgroup_matrix_left" => "A",
            "subgroup_matrix_right" => "B",
            _ => "C",
        };
        let open = skip_trivia(tokens, i + 1);
        if !is(tokens.get(open), "<") {
            return Err(format!("`{}` without its template list", tokens[i].text));
        }
        let (next, items) = group(tokens, open)?;
        let [scalar, columns, rows] = items[..] else {
            return Err(format!(
                "`{}` takes <T, columns, rows>, not {} arguments",
                tokens[i].text,
                items.len()
            ));
        };
        let scalar = text_of(tokens, scalar);
        let columns = self.literal(&text_of(tokens, columns));
        let rows = self.literal(&text_of(tokens, rows));
        if columns != rows || !matches!(columns.as_str(), "8" | "16") {
            return Err(format!(
                "a {columns}×{rows} subgroup matrix (`{}<{scalar}, {columns}, {rows}>`): naga's \
                 cooperative matrices are 8×8 or 16×16",
                tokens[i].text
            ));
        }
        Ok((format!("coop_mat{columns}x{rows}<{scalar}, {role}>"), next))
    }

    /// The lowered items of the call whose `(` is at `open`.
    fn arguments(&self, open: usize) -> Result<(usize, Vec<String>), String> {
        let (next, items) = group(self.tokens, open)?;
        let mut lowered = Vec::new();
        for (start, end) in items {
            lowered.push(self.lower_range(start, end)?.trim().to_owned());
        }
        Ok((next, lowered))
    }

    /// `&(*p)[offset]` for Chromium's pointer `p` (`&array` is common: `&(array)[offset]`).
    fn element_pointer(pointer: &str, offset: &str) -> String {
        match pointer.strip_prefix('&') {
            Some(place) => format!("&({})[{offset}]", place.trim()),
            None => format!("&(*{pointer})[{offset}]"),
        }
    }

    fn major(&self, name: &str, flag: &str) -> Result<&'static str, String> {
        match self.literal(flag).as_str() {
            "true" => Ok(""),
            "false" => Ok("T"),
            other => Err(format!(
                "`{name}`'s col_major is `{other}`: naga's cooperative loads and stores need a \
                 layout known when the shader is built (a literal or a module constant)"
            )),
        }
    }

    /// `subgroupMatrixLoad<M>(p, offset, col_major, stride)`, or the current form with the
    /// layout in the template list, `subgroupMatrixLoad<M, row_major>(p, offset, stride)`.
    fn load(&self, i: usize) -> Result<(String, usize), String> {
        let tokens = self.tokens;
        let open = skip_trivia(tokens, i + 1);
        if !is(tokens.get(open), "<") {
            return Err("`subgroupMatrixLoad` without its matrix type".to_owned());
        }
        let (after_type, types) = group(tokens, open)?;
        let (matrix, layout) = match types[..] {
            [matrix] => (matrix, None),
            [matrix, layout] => (matrix, Some(text_of(tokens, layout))),
            _ => return Err("`subgroupMatrixLoad` takes a matrix type and a layout".to_owned()),
        };
        let matrix = self.lower_range(matrix.0, matrix.1)?;
        let call = skip_trivia(tokens, after_type);
        if !is(tokens.get(call), "(") {
            return Err("`subgroupMatrixLoad` is not called".to_owned());
        }
        let (next, args) = self.arguments(call)?;
        let (suffix, [pointer, offset, stride]) = self.layout_and_rest(
            ("subgroupMatrixLoad", "`subgroupMatrixLoad<M, layout>`"),
            layout,
            args,
            2,
            ["pointer", "offset", "stride"],
        )?;
        let element = Self::element_pointer(&pointer, &offset);
        Ok((
            format!("coopLoad{suffix}<{}>({element}, {stride})", matrix.trim()),
            next,
        ))
    }

    /// `subgroupMatrixStore(p, offset, value, col_major, stride)`, or the current form
    /// `subgroupMatrixStore<row_major>(p, offset, value, stride)`.
    fn store(&self, i: usize) -> Result<(String, usize), String> {
        let tokens = self.tokens;
        let mut call = skip_trivia(tokens, i + 1);
        let mut layout = None;
        if is(tokens.get(call), "<") {
            let (after, items) = group(tokens, call)?;
            let [item] = items[..] else {
                return Err("`subgroupMatrixStore` takes one layout".to_owned());
            };
            layout = Some(text_of(tokens, item));
            call = skip_trivia(tokens, after);
        }
        if !is(tokens.get(call), "(") {
            return Err("`subgroupMatrixStore` is not called".to_owned());
        }
        let (next, args) = self.arguments(call)?;
        let (suffix, [pointer, offset, value, stride]) = self.layout_and_rest(
            ("subgroupMatrixStore", "`subgroupMatrixStore<layout>`"),
            layout,
            args,
            3,
            ["pointer", "offset", "value", "stride"],
        )?;
        let element = Self::element_pointer(&pointer, &offset);
        Ok((
            format!("coopStore{suffix}({value}, {element}, {stride})"),
            next,
        ))
    }

    /// The layout's suffix (`T` for row-major) and the call's other arguments. The layout is
    /// in the template list (`row_major`), or, in the earlier form, the `col_major` argument
    /// at `flag_at`; `params` names the other arguments, for errors.
    fn layout_and_rest<const N: usize>(
        &self,
        (name, current): (&str, &str),
        layout: Option<String>,
        mut args: Vec<String>,
        flag_at: usize,
        params: [&str; N],
    ) -> Result<(&'static str, [String; N]), String> {
        let suffix = match layout {
            Some(layout) => Self::layout(name, &layout)?,
            None if args.len() == N + 1 => {
                let flag = args.remove(flag_at);
                self.major(name, &flag)?
            }
            None => {
                let mut earlier = params.to_vec();
                earlier.insert(flag_at, "col_major");
                return Err(format!(
                    "`{name}` takes ({}), not {} arguments",
                    earlier.join(", "),
                    args.len()
                ));
            }
        };
        let count = args.len();
        let args: [String; N] = args.try_into().map_err(|_| {
            format!(
                "{current} takes ({}), not {count} arguments",
                params.join(", ")
            )
        })?;
        Ok((suffix, args))
    }

    /// The suffix of `row_major` (`T`) or `col_major` (none).
    fn layout(name: &str, layout: &str) -> Result<&'static str, String> {
        match layout {
            "col_major" => Ok(""),
            "row_major" => Ok("T"),
            other => Err(format!(
                "`{name}`'s layout is `{other}`, not `row_major` or `col_major`"
            )),
        }
    }

    /// `subgroupMatrixMultiplyAccumulate(left, right, acc)`.
    fn multiply_add(&self, i: usize) -> Result<(String, usize), String> {
        let call = skip_trivia(self.tokens, i + 1);
        if !is(self.tokens.get(call), "(") {
            return Err("`subgroupMatrixMultiplyAccumulate` is not called".to_owned());
        }
        let (next, args) = self.arguments(call)?;
        let [left, right, acc] = &args[..] else {
            return Err(format!(
                "`subgroupMatrixMultiplyAccumulate` takes (left, right, acc), not {} arguments",
                args.len()
            ));
        };
        Ok((format!("coopMultiplyAdd({left}, {right}, {acc})"), next))
    }
}

/// The multiply-accumulate shapes a validated module performs (component and result types,
/// M×N×K): what a device must offer to run it.
pub fn configs(module: &naga::Module, info: &naga::valid::ModuleInfo) -> Vec<SubgroupMatrixConfig> {
    let mut found = std::collections::BTreeSet::new();
    let functions = module
        .functions
        .iter()
        .map(|(handle, f)| (f, &info[handle]))
        .chain(
            module
                .entry_points
                .iter()
                .enumerate()
                .map(|(i, e)| (&e.function, info.get_entry_point(i))),
        );
    for (function, function_info) in functions {
        for (_, expression) in function.expressions.iter() {
            let naga::Expression::CooperativeMultiplyAdd { a, c, .. } = *expression else {
                continue;
            };
            let shape = |e: naga::Handle<naga::Expression>| match *function_info[e]
                .ty
                .inner_with(&module.types)
            {
                naga::TypeInner::CooperativeMatrix {
                    columns,
                    rows,
                    scalar,
                    ..
                } => Some((columns as u32, rows as u32, scalar)),
                _ => None,
            };
            let (Some((k, m, component)), Some((n, _, result))) = (shape(a), shape(c)) else {
                continue;
            };
            let (Some(component), Some(result)) = (matrix_scalar(component), matrix_scalar(result))
            else {
                continue;
            };
            found.insert(SubgroupMatrixConfig {
                component,
                result,
                m,
                n,
                k,
            });
        }
    }
    found.into_iter().collect()
}

fn matrix_scalar(scalar: naga::Scalar) -> Option<MatrixScalar> {
    use naga::ScalarKind as K;
    Some(match (scalar.kind, scalar.width) {
        (K::Float, 2) => MatrixScalar::F16,
        (K::Float, 4) => MatrixScalar::F32,
        (K::Sint, 1) => MatrixScalar::I8,
        (K::Uint, 1) => MatrixScalar::U8,
        (K::Sint, 4) => MatrixScalar::I32,
        (K::Uint, 4) => MatrixScalar::U32,
        _ => return None,
    })
}

#[cfg(test)]
#[path = "subgroup_matrix_tests.rs"]
mod tests;
