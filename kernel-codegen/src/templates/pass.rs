//! Renders one pass of a variant under one combination into WGSL text: the prelude, the
//! template, the `enable`s it wrote and the values it printed as literals resolved. Both the
//! front end's settling and the WGSL emitter render through here.

use crate::diag::Diagnostic;
use crate::model::{Combination, Op};

pub use super::render::TextFor;

/// A pass's shader text under one combination, resolved but not validated.
pub struct Rendered {
    pub text: String,
    pub f16: bool,
    /// Whether the template wrote `enable subgroups;` (moved to the web text).
    pub wrote_subgroups: bool,
}

pub fn render_pass(
    op: &Op,
    env: &minijinja::Environment<'static>,
    v: usize,
    p: usize,
    combination: &Combination,
    bindings: &[super::prelude::ResolvedBinding<'_>],
    text_for: TextFor,
) -> Result<Rendered, Diagnostic> {
    let variant = &op.variants[v];
    let pass = &variant.passes[p];
    // f16 bindings need the capability, and so does a shader whose combination may use
    // `shader-f16` (a branch taken only when the device has it, staging in f16, say).
    let f16 = super::prelude::uses_f16(bindings, combination)
        || combination
            .features
            .contains(crate::expr::builtins::SHADER_F16);
    let prelude_text = super::prelude::prelude(op, variant, pass, bindings, f16);
    let text = match super::render::render(
        env,
        op,
        variant,
        pass,
        combination,
        &prelude_text,
        text_for,
    ) {
        Ok(text) => text,
        // The pass's own template exists (checked before); a missing one is an include.
        Err(err) => {
            let mut diagnostic = super::render::template_diagnostic(&pass.template, "", &err);
            if super::render::is_broken_template(&err) {
                return Err(diagnostic.as_follow_on());
            }
            if err.kind() == minijinja::ErrorKind::TemplateNotFound {
                diagnostic.message.push_str(
                    " (`./` and `../` names are relative to the including file and may not leave its package folder or the include root; other names are relative to the include root, or to the including file where there is none)",
                );
            }
            return Err(diagnostic);
        }
    };
    let context =
        || super::render::context(op, variant, pass, combination, &prelude_text, text_for);
    super::nesting::check(env, &pass.template, context, &text, &pass_path(op, v, p))?;
    // Templates may write the `enable subgroups;` browsers need; naga refuses it, so the
    // native text goes without and the web text gets it back (`web_enables`).
    if text.len() > super::render::MAX_SHADER_BYTES {
        return Err(Diagnostic::new(
            &pass.template,
            pass_path(op, v, p),
            format!(
                "the rendered shader is {} bytes; at most {} are accepted (does a loop run over a large value?)",
                text.len(),
                super::render::MAX_SHADER_BYTES
            ),
        ));
    }
    let (mut text, enabled) = leading_enables(&text);
    let wrote_subgroups = enabled.iter().any(|name| name == "subgroups");
    // Templates that write their own `enable`s: one that binds f16 storage without enabling
    // f16 gets the directive its declarations need, as from the loader.
    if op.templates.loader_context && f16 && !enabled.iter().any(|name| name == "f16") {
        text.insert_str(0, "enable f16;\n");
    }
    if op.templates.values_print_as_literals {
        text = super::runtime_values::resolve(&text);
    }
    Ok(Rendered {
        text,
        f16,
        wrote_subgroups,
    })
}

pub fn pass_path(op: &Op, v: usize, p: usize) -> String {
    format!(
        "variant `{}`, pass `{}`",
        op.variants[v].id, op.variants[v].passes[p].id
    )
}

/// `text` without `subgroups` in its leading `enable` directives, and every extension they
/// named.
fn leading_enables(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut enabled = Vec::new();
    let mut in_directives = true;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if in_directives && trimmed.starts_with("enable ") && trimmed.ends_with(';') {
            let names = trimmed["enable ".len()..trimmed.len() - 1]
                .split(',')
                .map(str::trim);
            let kept: Vec<&str> = names
                .filter(|name| {
                    if !name.is_empty() {
                        enabled.push((*name).to_owned());
                    }
                    *name != "subgroups" && !name.is_empty()
                })
                .collect();
            if !kept.is_empty() {
                out.push_str(&format!("enable {};\n", kept.join(", ")));
            }
            continue;
        }
        // Directives come first; blank lines and comments may sit between them.
        if !(trimmed.is_empty()
            || trimmed.starts_with("//")
            || trimmed.starts_with("diagnostic")
            || trimmed.starts_with("requires"))
        {
            in_directives = false;
        }
        out.push_str(line);
    }
    (out, enabled)
}

#[cfg(test)]
mod enable_tests {
    use super::leading_enables;

    #[test]
    fn subgroups_leave_the_leading_enables_only() {
        let (text, enabled) =
            leading_enables("enable f16, subgroups;\n\nenable subgroups;\nfn f() {}\n");
        assert_eq!(enabled, ["f16", "subgroups", "subgroups"]);
        assert_eq!(text, "enable f16;\n\nfn f() {}\n");
        let (text, enabled) = leading_enables("fn f() {}\n// enable subgroups;\n");
        assert!(enabled.is_empty());
        assert_eq!(text, "fn f() {}\n// enable subgroups;\n");
    }
}
