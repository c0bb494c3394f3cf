//! Attribute typing: idiomatic Rust types inferred from defaults, constraints and usage, read
//! from the syntax trees of the manifest's expressions.
//!
//! Rules, in order:
//! - an integer list default, or an attribute that some expression indexes (`attrs.x[0]`) or
//!   measures (`attrs.x | length`), is an integer list;
//! - an attribute whose value feeds an `f32` uniform field as is (`"value": "attrs.x"`), or whose
//!   default is a float, is an `f32`;
//! - an integer attribute restricted to values within {0, 1}, or one that every expression only
//!   compares with zero (`attrs.x != 0`), is a `bool` flag;
//! - a string default is a string; everything else is an `i64`.

use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::expr::Type;
use crate::expr::ast::{BinOp, Expr, ExprKind};
use crate::manifest::Manifest;
use crate::model::{AttrRepr, AttrValue, Attribute, IntWidth};

/// Every expression source of a manifest with its JSON path, gathered once for usage scans.
pub struct Sources<'a> {
    pub all: Vec<(String, &'a str)>,
    /// Values of uniform fields declared `f32`.
    pub f32_fields: Vec<&'a str>,
}

/// Builds the attribute list: names from defaults, constraints and descriptions, in that order.
pub fn build_attributes(
    file: &str,
    manifest: &Manifest,
    sources: &Sources<'_>,
    diagnostics: &mut Diagnostics,
) -> Vec<Attribute> {
    let mut names: Vec<&String> = Vec::new();
    for name in manifest
        .attributes
        .keys()
        .chain(manifest.attribute_constraints.keys())
        .chain(manifest.attribute_descriptions.keys())
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.sort();

    let mut attributes = Vec::new();
    for name in names {
        let path = format!("attributes.{name}");
        let constraint = manifest.attribute_constraints.get(name.as_str());
        // A default found wrong is reported and left out, so that the attribute is still
        // known to the expressions that use it (no follow-on "unknown attribute" errors).
        let mut bad_default = false;
        let default = match manifest.attributes.get(name.as_str()).map(attr_value) {
            Some(Some(value)) => Some(value),
            Some(None) => {
                diagnostics.push(Diagnostic::new(
                    file,
                    &path,
                    "attribute defaults must be an integer, a float, a string or a list of integers",
                ));
                bad_default = true;
                None
            }
            None => None,
        };
        let required = constraint.is_some_and(|c| c.required);
        if required && default.is_some() {
            diagnostics.push(Diagnostic::new(
                file,
                &path,
                "an attribute cannot be both required and have a default",
            ));
        }
        let allowed = match constraint.and_then(|c| c.values.as_ref()) {
            Some(values) => {
                let ints: Option<Vec<i64>> = values.iter().map(Value::as_i64).collect();
                if ints.is_none() {
                    diagnostics.push(Diagnostic::new(
                        file,
                        format!("attributeConstraints.{name}.values"),
                        "only integer value sets are supported",
                    ));
                }
                ints
            }
            None => None,
        };
        let usage = Usage::scan(name, sources);
        let default = match default.map(|d| check_default(&d, allowed.as_deref()).map(|()| d)) {
            Some(Err(message)) => {
                diagnostics.push(Diagnostic::new(file, &path, message));
                bad_default = true;
                None
            }
            checked => checked.and_then(Result::ok),
        };
        let repr = infer_repr(default.as_ref(), allowed.as_deref(), &usage);
        let ty = match repr {
            AttrRepr::Bool | AttrRepr::I64 => Type::Int,
            AttrRepr::Truth => Type::Bool,
            AttrRepr::F32 => Type::Float,
            AttrRepr::IntList => Type::List,
            AttrRepr::Str => Type::Str,
        };
        if !required && default.is_none() && !bad_default {
            diagnostics.push(Diagnostic::new(
                file,
                &path,
                "an attribute needs a default or `attributeConstraints.<name>.required: true`",
            ));
        }
        attributes.push(Attribute {
            name: name.clone(),
            ty,
            repr,
            default,
            required,
            allowed,
            one_of: None,
            int_width: IntWidth::I64,
            description: manifest
                .attribute_descriptions
                .get(name.as_str())
                .cloned()
                .unwrap_or_default(),
        });
    }
    attributes
}

/// A default must be a value the attribute can hold and one its constraint allows: a float
/// within float32's range (generated code holds it as `f32`), and one of `values` where they
/// are given.
fn check_default(default: &AttrValue, allowed: Option<&[i64]>) -> Result<(), String> {
    if let AttrValue::Float(v) = default
        && (!v.is_finite() || v.abs() > f64::from(f32::MAX))
    {
        return Err(format!(
            "the default {v:e} is beyond float32's range (±{:e}): generated code holds float attributes as f32",
            f32::MAX
        ));
    }
    if let Some(allowed) = allowed {
        let fits = match default {
            AttrValue::Int(v) => allowed.contains(v),
            _ => false,
        };
        if !fits {
            return Err(format!(
                "the default {} is not one of `attributeConstraints` values {allowed:?}",
                default_text(default)
            ));
        }
    }
    Ok(())
}

fn default_text(default: &AttrValue) -> String {
    match default {
        AttrValue::Int(v) => v.to_string(),
        AttrValue::Float(v) => format!("{v:?}"),
        AttrValue::Str(s) => format!("{s:?}"),
        AttrValue::Ints(v) => format!("{v:?}"),
    }
}

fn attr_value(value: &Value) -> Option<AttrValue> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(AttrValue::Int)
            .or_else(|| n.as_f64().map(AttrValue::Float)),
        Value::String(s) => Some(AttrValue::Str(s.clone())),
        Value::Array(items) => items
            .iter()
            .map(Value::as_i64)
            .collect::<Option<Vec<_>>>()
            .map(AttrValue::Ints),
        _ => None,
    }
}

fn infer_repr(default: Option<&AttrValue>, allowed: Option<&[i64]>, usage: &Usage) -> AttrRepr {
    match default {
        Some(AttrValue::Ints(_)) => return AttrRepr::IntList,
        Some(AttrValue::Str(_)) => return AttrRepr::Str,
        Some(AttrValue::Float(_)) => return AttrRepr::F32,
        _ => {}
    }
    if usage.as_list {
        return AttrRepr::IntList;
    }
    if usage.feeds_f32 {
        return AttrRepr::F32;
    }
    let flag_values =
        allowed.is_some_and(|v| !v.is_empty() && v.iter().all(|x| *x == 0 || *x == 1));
    if flag_values || (usage.occurrences > 0 && usage.occurrences == usage.zero_tests) {
        return AttrRepr::Bool;
    }
    AttrRepr::I64
}

/// How the expressions of a manifest use one attribute.
#[derive(Debug, Default)]
struct Usage {
    occurrences: usize,
    /// Occurrences directly compared with zero (`attrs.x != 0`, `attrs.x == 0`).
    zero_tests: usize,
    as_list: bool,
    feeds_f32: bool,
}

impl Usage {
    /// Reads every expression's syntax tree for uses of `attrs.<name>`; an expression that
    /// does not parse is reported by the model when it is built, and tells nothing here.
    fn scan(name: &str, sources: &Sources<'_>) -> Usage {
        let mut usage = Usage::default();
        for (_, source) in &sources.all {
            if let Ok(expr) = crate::expr::parse(source) {
                usage.walk(name, &expr, false);
            }
        }
        usage.feeds_f32 = sources
            .f32_fields
            .iter()
            .any(|value| crate::expr::parse(value).is_ok_and(|expr| is_attr(&expr, name)));
        usage
    }

    /// Counts `attrs.<name>` in `expr`; `compared_with_zero` says `expr` is an operand of
    /// `== 0` or `!= 0`.
    fn walk(&mut self, name: &str, expr: &Expr, compared_with_zero: bool) {
        if is_attr(expr, name) {
            self.occurrences += 1;
            self.zero_tests += usize::from(compared_with_zero);
            return;
        }
        match &expr.kind {
            ExprKind::Index { base, .. } if is_attr(base, name) => self.as_list = true,
            ExprKind::Filter {
                value,
                name: filter,
                ..
            } if filter == "length" && is_attr(value, name) => {
                self.as_list = true;
            }
            ExprKind::Binary {
                op: BinOp::Eq | BinOp::Ne,
                lhs,
                rhs,
                ..
            } => {
                let zero = |e: &Expr| matches!(e.kind, ExprKind::Int(0));
                self.walk(name, lhs, zero(rhs));
                self.walk(name, rhs, zero(lhs));
                return;
            }
            _ => {}
        }
        for child in expr.children() {
            self.walk(name, child, false);
        }
    }
}

/// Whether `expr` is `attrs.<name>`.
fn is_attr(expr: &Expr, name: &str) -> bool {
    matches!(&expr.kind, ExprKind::Member { base, name: member, .. }
        if member == name && matches!(&base.kind, ExprKind::Name(root) if root == "attrs"))
}

/// The scalar args of a `schemaVersion: 1` manifest, as attributes typed by their kind.
pub fn scalar_args(manifest: &Manifest) -> Vec<Attribute> {
    manifest
        .scalars
        .iter()
        .map(|(name, scalar)| {
            let (ty, repr) = match scalar.kind.as_str() {
                "f32" => (Type::Float, AttrRepr::F32),
                "bool" => (Type::Bool, AttrRepr::Truth),
                "string" => (Type::Str, AttrRepr::Str),
                // `u32` and `i32`; the front end admits no other kind.
                _ => (Type::Int, AttrRepr::I64),
            };
            Attribute {
                name: name.clone(),
                ty,
                repr,
                default: None,
                required: scalar.required,
                allowed: None,
                one_of: scalar.one_of.clone(),
                int_width: match scalar.kind.as_str() {
                    "u32" => IntWidth::U32,
                    "i32" => IntWidth::I32,
                    _ => IntWidth::I64,
                },
                description: scalar.description.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(name: &str, sources: &[&str], f32_fields: &[&str]) -> Usage {
        let sources = Sources {
            all: sources.iter().map(|s| (String::new(), *s)).collect(),
            f32_fields: f32_fields.to_vec(),
        };
        Usage::scan(name, &sources)
    }

    #[test]
    fn usage_is_read_from_the_syntax_tree() {
        let u = usage(
            "flag",
            &["attrs.flag != 0 and attrs.flagged > 2", "0 == attrs.flag"],
            &[],
        );
        assert_eq!((u.occurrences, u.zero_tests), (2, 2));
        let u = usage("flag", &["attrs.flag != 0 or attrs.flag + 1 == 0"], &[]);
        assert_eq!((u.occurrences, u.zero_tests), (2, 1));
        assert!(usage("s", &["attrs.s[1] * 2"], &[]).as_list);
        assert!(usage("s", &["(attrs.s | length) > 3"], &[]).as_list);
        assert!(!usage("s", &["attrs.s * 2"], &[]).as_list);
        assert!(usage("scale", &[], &[" attrs.scale "]).feeds_f32);
        assert!(!usage("scale", &[], &["attrs.scale * 2"]).feeds_f32);
        // A string that only mentions the name is not a use.
        assert_eq!(usage("x", &["\"attrs.x\" == \"\""], &[]).occurrences, 0);
    }
}
