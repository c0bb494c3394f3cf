//! An op's shader table: the `<op>.shaders` file (every pre-rendered shader with the keys that
//! select it, in the format `kernel_runtime::shaders` reads) and the `static SHADERS` of the
//! module that `include_str!`s it. The key of a pass is decided here once, for both the file
//! and the code that computes it per call (`plan.rs`).

use proc_macro2::TokenStream;
use quote::quote;

use super::eval::{EnvScope, lower};
use super::{OpInput, ident};
use crate::expr::{Ir, IrKind, Type, Value};
use crate::model::{self, Op, Pass, TemplateValue, Variant};
use crate::shader::Shader;

/// What a pass's shader key is made of, in order: its static values that are not the same for
/// every call, then type variables that only set binding element types, where the values alone
/// do not tell its shaders apart.
pub(super) struct PassKey<'a> {
    /// Per static value of the pass (in `model::static_values` order): whether it is keyed.
    keyed: Vec<bool>,
    values: Vec<&'a TemplateValue>,
    dtype_vars: Vec<String>,
}

fn is_literal(ir: &Ir) -> bool {
    matches!(
        ir.kind,
        IrKind::Int(_) | IrKind::Float(_) | IrKind::Bool(_) | IrKind::Str(_)
    )
}

/// The shaders of pass `p` of variant `v`, every combination (those sharing a text too).
pub(super) fn pass_shaders(shaders: &[Shader], v: usize, p: usize) -> Vec<&Shader> {
    shaders
        .iter()
        .filter(|s| s.variant == v && s.pass == p)
        .collect()
}

pub(super) fn pass_key<'a>(
    op: &Op,
    variant: &'a Variant,
    pass: &'a Pass,
    shaders: &[&Shader],
) -> PassKey<'a> {
    // A value the typed API folds to a literal is the same for every call: not a key.
    let keyed: Vec<bool> = model::static_values(variant, pass)
        .map(|s| !is_literal(&super::fold::fold(&s.expr.ir)))
        .collect();
    let values = model::static_values(variant, pass)
        .zip(&keyed)
        .filter(|(_, keyed)| **keyed)
        .map(|(s, _)| s)
        .collect();
    let float_vars = super::api::float_type_vars(op);
    let mut dtypes_by_values = std::collections::BTreeMap::new();
    let ambiguous = shaders.iter().any(|s| {
        let values = format!("{:?}", s.combination.values);
        let dtypes = format!("{:?}", s.combination.dtypes);
        dtypes_by_values
            .entry(values)
            .or_insert_with(|| dtypes.clone())
            != &dtypes
    });
    let dtype_vars = shaders
        .iter()
        .filter(|_| ambiguous)
        .flat_map(|s| s.combination.dtypes.keys())
        .filter(|var| float_vars.contains(&var.as_str()))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    PassKey {
        keyed,
        values,
        dtype_vars,
    }
}

impl PassKey<'_> {
    /// The expressions a call evaluates, as `rt::shaders::Key`s.
    pub(super) fn lowered(&self, scope: &EnvScope<'_>) -> Vec<TokenStream> {
        let mut keys: Vec<TokenStream> = self
            .values
            .iter()
            .map(|s| {
                let lowered = lower(&s.expr.ir, scope);
                // A string the expression builds (`~`) is owned: the key borrows it for the
                // lookup only.
                if s.expr.ir.ty != Type::Float
                    && crate::expr::is_owned_str(&super::fold::fold(&s.expr.ir))
                {
                    quote!(rt::shaders::Key::Str((#lowered).as_str()))
                } else {
                    quote!((#lowered).into())
                }
            })
            .collect();
        for var in &self.dtype_vars {
            let field = ident(&model::snake_ident(var).to_ascii_lowercase());
            keys.push(quote!(env.dtypes.#field.wgsl_name().into()));
        }
        keys
    }

    /// The key of one shader as its `#key` line spells it.
    fn text(&self, shader: &Shader) -> Result<String, String> {
        let mut parts = Vec::new();
        for ((name, value), keyed) in shader.combination.values.iter().zip(&self.keyed) {
            if *keyed {
                parts.push(value_text(value).ok_or_else(|| {
                    format!("static value `{name}` = {value:?} cannot select a shader (only booleans, numbers, strings and dtypes can)")
                })?);
            }
        }
        for var in &self.dtype_vars {
            let wgsl = shader.combination.dtypes.get(var).map_or("", |d| d.wgsl());
            parts.push(quoted(wgsl));
        }
        Ok(parts.join(" "))
    }
}

fn quoted(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

fn value_text(value: &Value) -> Option<String> {
    Some(match value {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Str(s) | Value::Dtype(s) => quoted(s),
        Value::Float(f) => format!("f64:{:016x}", f.to_bits()),
        Value::List(_) => return None,
    })
}

/// Pass `p` of variant `v` as the table numbers passes: variant by variant, in order.
pub(super) fn pass_index(op: &Op, v: usize, p: usize) -> usize {
    op.variants[..v]
        .iter()
        .map(|v| v.passes.len())
        .sum::<usize>()
        + p
}

/// The `<op>.shaders` file: one section per distinct shader text of each pass, with every key
/// that selects it.
pub fn shader_table(op: &Op, shaders: &[Shader]) -> Result<String, String> {
    let mut out = format!(
        "# {mark} from {}.\n# The shaders of {}: its passes (`#pass`), then per shader a `#shader` line (pass, digest, name, features), the `#key` lines that select it and its WGSL.\n",
        op.file,
        op.qualified_name(),
        mark = crate::GENERATED_MARK,
    );
    for variant in &op.variants {
        for pass in &variant.passes {
            let overrides: Vec<String> = model::dynamic_values(variant, pass)
                .map(|d| op.override_name(&d.name))
                .collect();
            let mut words = vec![&variant.id, &pass.id];
            words.extend(&overrides);
            if let Some(word) = words
                .iter()
                .find(|w| w.is_empty() || w.contains(char::is_whitespace) || w.contains(','))
            {
                return Err(format!(
                    "variant `{}`, pass `{}`: `{word}` cannot name a pass or an override in the shader table (empty, or with white space or a comma)",
                    variant.id, pass.id
                ));
            }
            out.push_str(&format!("#pass {} {}", variant.id, pass.id));
            if !overrides.is_empty() {
                out.push_str(&format!(" overrides={}", overrides.join(",")));
            }
            out.push_str(&format!(" label={}\n", pass.label.replace('\n', " ")));
        }
    }
    for (v, variant) in op.variants.iter().enumerate() {
        for (p, pass) in variant.passes.iter().enumerate() {
            let of_pass = pass_shaders(shaders, v, p);
            let key = pass_key(op, variant, pass, &of_pass);
            let index = pass_index(op, v, p);
            for (first, shader) in shaders
                .iter()
                .enumerate()
                .filter(|(_, s)| s.variant == v && s.pass == p && s.same_as.is_none())
            {
                let reserved = |l: &&str| l.starts_with("#shader") || l.starts_with("#key");
                if let Some(line) = shader.text.lines().find(reserved) {
                    return Err(format!(
                        "shader `{}` has a line starting with `#shader` or `#key`, which the shader table reserves (start the comment's line otherwise): `{line}`",
                        shader.file_name
                    ));
                }
                let name = shader.file_name.trim_end_matches(".wgsl");
                out.push_str(&format!("#shader {index} {} {name}", shader.digest));
                if !shader.features.is_empty() {
                    out.push_str(&format!(" features={}", shader.features.join(",")));
                }
                if !shader.web_enables.is_empty() {
                    out.push_str(" web-enables=subgroups");
                }
                out.push('\n');
                let same = shaders
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| *i == first || s.same_as == Some(first));
                for (_, s) in same {
                    out.push_str(format!("#key {}", key.text(s)?).trim_end());
                    out.push('\n');
                }
                out.push_str(&shader.text);
                if !shader.text.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
    }
    Ok(out)
}

/// `static SHADERS`: the op's table file.
pub(super) fn table_static(input: &OpInput<'_>) -> TokenStream {
    let file = format!("{}.shaders", input.op.module);
    let doc = format!(" Every pre-rendered shader of the op, by pass and key (`{file}`).");
    quote! {
        #[doc = #doc]
        static SHADERS: rt::shaders::ShaderTable = rt::shaders::ShaderTable::new(OP_NAME, include_str!(#file));
    }
}
