//! Name resolution inside the checker: namespace paths (`shapes.x`, `device.limits.y`, and in
//! V1 `args.x`, `present.x`, `tensorDtypes.x`, `device.adapterInfo.y`), `derive` references,
//! `device.features.has("…")` and `is defined` tests.

use super::Dialect;
use super::builtins::{Builtin, features, namespaces};
use super::{Checker, Unresolved, ir};
use crate::expr::ast::{Expr, ExprKind};
use crate::expr::{ExprError, Ir, IrKind, Span, Symbol, Type};

/// The Hub runtime's `DISPATCH_FOLD_WIDTH` and its value: the workgroup count a folded
/// dispatch axis holds at most, which expressions and templates may name.
pub const DISPATCH_FOLD_WIDTH: (&str, i64) = ("DISPATCH_FOLD_WIDTH", 65535);

/// How each namespace root continues, for "must be followed by" messages.
fn namespace_hint(root: &str, dialect: Dialect) -> &'static str {
    match root {
        "shapes" => "shapes.<role>",
        "ranks" => "ranks.<role>",
        "dtypes" => "dtypes.<typevar>",
        "attrs" => "attrs.<name>",
        "tunables" => "tunables.<NAME>",
        "args" => "args.<name>",
        "constants" => "constants.<name>",
        "derive" => "derive.<name>",
        "present" => "present.<arg>",
        "tensorDtypes" => "tensorDtypes.<arg>",
        _ if dialect.is_jinja() => {
            "device.limits.<limitName>, device.adapterInfo.<name> or \
             device.features.has(\"<feature>\")"
        }
        _ => "device.limits.<limitName> or device.features.has(\"<feature>\")",
    }
}

/// The members of `device`, for "unknown member" messages.
fn device_members(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Seed => "device.features, device.limits",
        Dialect::V1 | Dialect::Hub => "device.adapterInfo, device.features, device.limits",
    }
}

impl Checker<'_> {
    /// A bare identifier: a `derive` reference (namespace roots alone are errors).
    pub(super) fn name(&mut self, span: Span, name: &str) -> Option<Ir> {
        // The Hub runtime's one named constant, the workgroup count a folded axis holds.
        if self.dialect == Dialect::Hub && name == DISPATCH_FOLD_WIDTH.0 {
            let derived = Symbol::Derived(name.to_owned());
            if self.scope.resolve(&derived).is_err() {
                return Some(ir(IrKind::Int(DISPATCH_FOLD_WIDTH.1), Type::Int, span));
            }
        }
        if namespaces(self.dialect).contains(&name) {
            self.error(
                span,
                format!(
                    "`{name}` must be followed by a member: {}",
                    namespace_hint(name, self.dialect)
                ),
            );
            return None;
        }
        let sym = Symbol::Derived(name.to_owned());
        if Builtin::lookup_in(name, self.dialect).is_some() && self.scope.resolve(&sym).is_err() {
            self.error(
                span,
                format!("`{name}` is a function: call it as `{name}(…)`"),
            );
            return None;
        }
        self.symbol(sym, span)
    }

    pub(super) fn member(&mut self, e: &Expr) -> Option<Ir> {
        match self.path(e) {
            Ok(sym) => self.symbol(sym, e.span),
            Err(err) => {
                self.errors.push(err);
                None
            }
        }
    }

    /// Asks the scope for the type of `sym`.
    pub(super) fn symbol(&mut self, sym: Symbol, span: Span) -> Option<Ir> {
        match self.scope.resolve(&sym) {
            Ok(ty) => Some(ir(IrKind::Sym(sym), ty, span)),
            Err(Unresolved::Unknown(message)) => {
                self.error(span, message);
                None
            }
            Err(Unresolved::Failed) => {
                self.read_failed = true;
                None
            }
        }
    }

    /// Resolves a member chain such as `shapes.input` or `device.limits.maxBufferSize`.
    pub(super) fn path(&self, e: &Expr) -> Result<Symbol, ExprError> {
        let ExprKind::Member {
            base,
            name,
            name_span,
        } = &e.kind
        else {
            return Err(ExprError::new(e.span, "expected a name"));
        };
        let name = name.clone();
        let v1 = self.dialect.is_jinja();
        let roots = namespaces(self.dialect);
        match &base.kind {
            ExprKind::Name(root) => match root.as_str() {
                "shapes" => Ok(Symbol::Shape(name)),
                "ranks" => Ok(Symbol::Rank(name)),
                "dtypes" => Ok(Symbol::Dtype(name)),
                "attrs" => Ok(Symbol::Attr(name)),
                "tunables" => Ok(Symbol::Tunable(name)),
                "args" if v1 => Ok(Symbol::Arg(name)),
                // The loader's `constants` object: the same values the bare names read.
                "constants" if self.dialect == Dialect::V1 => Ok(Symbol::Derived(name)),
                // The Hub runtime's `derive` object: the same values the bare names read.
                "derive" if self.dialect == Dialect::Hub => Ok(Symbol::Derived(name)),
                "present" if v1 => Ok(Symbol::Present(name)),
                "tensorDtypes" if v1 => Ok(Symbol::TensorDtype(name)),
                "device" => Err(ExprError::new(
                    e.span,
                    match name.as_str() {
                        "limits" => "`device.limits` must be followed by a limit name, e.g. \
                                     `device.limits.maxComputeWorkgroupsPerDimension`"
                            .to_owned(),
                        "features" => FEATURES_USAGE.to_owned(),
                        "adapterInfo" if v1 => ADAPTER_INFO_USAGE.to_owned(),
                        _ => format!(
                            "unknown member `device.{name}` (known: {})",
                            device_members(self.dialect)
                        ),
                    },
                )),
                _ => Err(ExprError::new(
                    base.span,
                    format!("unknown namespace `{root}` (known: {})", roots.join(", ")),
                )),
            },
            ExprKind::Member {
                base: inner,
                name: middle,
                ..
            } if matches!(&inner.kind, ExprKind::Name(d) if d == "device") => match middle.as_str()
            {
                "limits" => Ok(Symbol::Limit(name)),
                "adapterInfo" if v1 => Ok(Symbol::AdapterInfo(name)),
                "features" => Err(ExprError::new(e.span, FEATURES_USAGE)),
                _ => Err(ExprError::new(
                    base.span,
                    format!(
                        "unknown member `device.{middle}` (known: {})",
                        device_members(self.dialect)
                    ),
                )),
            },
            _ => Err(ExprError::new(
                *name_span,
                format!(
                    "member `.{name}` cannot be used here: only the namespaces {} have members",
                    roots.join(", ")
                ),
            )),
        }
    }

    /// `device.features.<method>(args)`: only `has("<known feature>")`.
    pub(super) fn feature(&mut self, span: Span, method: &str, args: &[Expr]) -> Option<Ir> {
        if method != "has" {
            self.error(
                span,
                format!("unknown method `device.features.{method}` (known: has)"),
            );
            return None;
        }
        let [arg] = args else {
            self.error(span, FEATURES_USAGE);
            return None;
        };
        let ExprKind::Str(feature) = &arg.kind else {
            self.error(arg.span, FEATURES_USAGE);
            return None;
        };
        let known = features(self.dialect);
        // A subgroup-matrix configuration a variant requires is written as a feature
        // (`subgroup-matrix-f16-f32-16x16x16`), as the Hub's `requires` is desugared.
        let config = kernel_abi::device::SubgroupMatrixConfig::from_feature_name(feature);
        if !known.contains(&feature.as_str()) && config.is_none() {
            self.error(
                arg.span,
                format!(
                    "unknown device feature `{feature}` (known: {})",
                    known.join(", ")
                ),
            );
            return None;
        }
        Some(ir(IrKind::Feature(feature.clone()), Type::Bool, span))
    }

    pub(super) fn test(
        &mut self,
        span: Span,
        value: &Expr,
        name: &str,
        name_span: Span,
        negated: bool,
        args: &[Expr],
    ) -> Option<Ir> {
        let negated = match name {
            "defined" => negated,
            "undefined" => !negated,
            _ => {
                self.error(
                    name_span,
                    format!("unknown test `{name}` (known: defined, undefined)"),
                );
                return None;
            }
        };
        if !args.is_empty() {
            self.error(name_span, format!("test `{name}` takes no arguments"));
            return None;
        }
        let sym = match &value.kind {
            ExprKind::Name(n) if !namespaces(self.dialect).contains(&n.as_str()) => {
                Symbol::Derived(n.clone())
            }
            ExprKind::Member { .. } => match self.path(value) {
                Ok(sym) => sym,
                Err(err) => {
                    self.errors.push(err);
                    return None;
                }
            },
            _ => {
                self.error(
                    value.span,
                    format!("`is {name}` applies to a name such as `attrs.<name>`"),
                );
                return None;
            }
        };
        // Resolve anyway: testing a misspelled attribute should fail, not silently be false.
        self.symbol(sym.clone(), value.span)?;
        Some(ir(IrKind::IsDefined(sym, negated), Type::Bool, span))
    }
}

/// How `device.features` must be used.
const FEATURES_USAGE: &str = "`device.features` can only be used as `device.features.has(\"<feature>\")` with a string literal";

/// How `device.adapterInfo` must be used (V1).
const ADAPTER_INFO_USAGE: &str = "`device.adapterInfo` must be followed by a name, e.g. \
                                  `device.adapterInfo.subgroupMinSize`, or tested with \
                                  `has(device.adapterInfo, \"<name>\")`";
