//! Checking an op's expressions: the scope that resolves their names against the op being
//! built, the helpers that parse, check and type them with diagnostics at their column, and
//! the context the variants and their bindings are built in.

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;
use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::expr::{self, Symbol, Type, Unresolved};
use crate::manifest::Manifest;
use crate::model::{Expr, Op};
use kernel_abi::device as webgpu;

/// Name resolution for one op's expressions.
pub struct OpScope<'a> {
    pub op: &'a Op,
    /// Types of the `derive` entries checked so far (all of them once building is done).
    pub derived: &'a HashMap<String, Type>,
    /// The dialect the op's manifest is written in: how its expressions read.
    pub dialect: expr::check::Dialect,
    /// The variant's constants checked so far, which later expressions of the variant read by
    /// name (`ROWS`, or `constants.ROWS` in `schemaVersion: 1`): each reference is replaced by
    /// the constant's expression, so the compiled code and the interpreter need no names of
    /// their own for them.
    pub locals: HashMap<String, expr::Ir>,
    /// The variant's own values of tunables (the Hub dialect's variant `tunables`), which its
    /// expressions after `when` read instead of the op's.
    pub tunables: HashMap<String, i64>,
    /// The terms writing out constants has copied into the op's expressions so far (bounded
    /// by [`MAX_SUBSTITUTED_TERMS`]).
    pub substituted: Cell<usize>,
    /// Template values whose expressions failed (already reported): what names one is not
    /// reported again.
    pub failed: BTreeSet<String>,
}

impl expr::Scope for OpScope<'_> {
    fn dialect(&self) -> expr::check::Dialect {
        self.dialect
    }

    fn string_values(&self, symbol: &Symbol) -> Option<Vec<String>> {
        match symbol {
            Symbol::Arg(name) => self.op.attribute(name)?.one_of.clone(),
            _ => None,
        }
    }

    fn resolve(&self, symbol: &Symbol) -> Result<Type, Unresolved> {
        let known = |names: Vec<&str>| names.join(", ");
        match symbol {
            Symbol::Shape(role) | Symbol::Rank(role) => {
                if self.op.tensor_index(role).is_some() {
                    Ok(if matches!(symbol, Symbol::Shape(_)) {
                        Type::List
                    } else {
                        Type::Int
                    })
                } else {
                    Err(format!(
                        "unknown tensor role `{role}` (known: {})",
                        known(self.op.tensors().map(|t| t.role.as_str()).collect())
                    ).into())
                }
            }
            Symbol::Dtype(var) => match self.op.type_var(var) {
                Some(_) => Ok(Type::Dtype),
                None => Err(format!(
                    "unknown type variable `{var}` (known: {})",
                    known(self.op.type_vars.iter().map(|t| t.name.as_str()).collect())
                ).into()),
            },
            Symbol::Attr(name) => match self.op.attribute(name) {
                Some(attribute) => Ok(attribute.ty),
                None => Err(format!(
                    "unknown attribute `{name}` (known: {})",
                    known(self.op.attributes.iter().map(|a| a.name.as_str()).collect())
                ).into()),
            },
            Symbol::Tunable(name) => match self.op.tunable(name) {
                Some(expr::Value::Float(_)) => Ok(Type::Float),
                Some(_) => Ok(Type::Int),
                None => Err(format!(
                    "unknown tunable `{name}` (known: {})",
                    known(self.op.tunables.iter().map(|(n, _)| n.as_str()).collect())
                ).into()),
            },
            Symbol::Limit(name) => {
                if webgpu::is_limit(name) {
                    Ok(Type::Int)
                } else {
                    Err(format!("unknown WebGPU limit `device.limits.{name}`").into())
                }
            }
            Symbol::Arg(name) => match self.op.attribute(name) {
                Some(attribute) => Ok(attribute.ty),
                None => Err(format!(
                    "unknown scalar arg `{name}` (known: {})",
                    known(self.op.attributes.iter().map(|a| a.name.as_str()).collect())
                ).into()),
            },
            Symbol::Present(name) => {
                if self.op.tensor_index(name).is_some() || self.op.attribute(name).is_some() {
                    Ok(Type::Bool)
                } else {
                    Err(format!("unknown arg `{name}` in `present.{name}`").into())
                }
            }
            Symbol::TensorDtype(name) => match self.op.tensor_index(name) {
                Some(_) => Ok(Type::Str),
                None => Err(format!(
                    "unknown tensor `{name}` (known: {})",
                    known(self.op.tensors().map(|t| t.role.as_str()).collect())
                ).into()),
            },
            Symbol::AdapterInfo(name) => match name.as_str() {
                "subgroupMinSize" | "subgroupMaxSize" => Ok(Type::Int),
                _ => Err(format!(
                    "unknown member `device.adapterInfo.{name}` (known: subgroupMinSize, subgroupMaxSize)"
                ).into()),
            },
            Symbol::Derived(name) => match self.locals.get(name).map(|ir| ir.ty) {
                Some(ty) => Ok(ty),
                None => self.derived_type(name),
            },
        }
    }
}

impl OpScope<'_> {
    fn derived_type(&self, name: &str) -> Result<Type, Unresolved> {
        match self.derived.get(name) {
            Some(ty) => Ok(*ty),
            None if self.op.poisoned.contains(name) || self.failed.contains(name) => {
                Err(Unresolved::Failed)
            }
            None if self.dialect == expr::check::Dialect::Hub => Err(Unresolved::Unknown(format!(
                "undefined name `{name}` (no `derive` entry in scope here has this name)"
            ))),
            None => Err(Unresolved::Unknown(format!(
                "undefined name `{name}` (no `derive` entry or variant constant has this name)"
            ))),
        }
    }
}

/// `ir` with each reference to a variant constant replaced by the constant's expression, and
/// each to a tunable by its value (the variant's own where it sets one), pointing at the
/// reference.
fn inline_locals(ir: expr::Ir, scope: &OpScope<'_>) -> expr::Ir {
    ir.replace_symbols(&|symbol, span| match symbol {
        Symbol::Derived(name) => {
            (scope.locals.get(name)).map(|value| value.clone().respanned(span))
        }
        // A tunable is a number fixed at build time: its literal, so that folds such as
        // `min(256, max(64, x))` into a clamp see it.
        Symbol::Tunable(name) => {
            let (kind, ty) = match scope.tunables.get(name) {
                Some(&value) => (expr::IrKind::Int(value), Type::Int),
                None => match scope.op.tunable(name)? {
                    expr::Value::Int(value) => (expr::IrKind::Int(value), Type::Int),
                    expr::Value::Float(value) => (expr::IrKind::Float(value), Type::Float),
                    _ => return None,
                },
            };
            Some(expr::Ir { kind, ty, span })
        }
        _ => None,
    })
}

/// The most terms (IR nodes) writing out variant constants may copy into one op's
/// expressions. Each reference is replaced by the constant's whole expression, so a chain of
/// constants each reading the one before twice doubles at each step; the bound keeps the
/// checker, the interpreter and the generated code linear in the manifest's size. The
/// packages known copy at most a few hundred.
const MAX_SUBSTITUTED_TERMS: usize = 50_000;

/// The terms writing out the constants of `locals` that `ir` reads copies into it, counted
/// up to one past `limit` (each constant is held written out already).
fn substituted_terms(ir: &expr::Ir, locals: &HashMap<String, expr::Ir>, limit: usize) -> usize {
    let mut pending = Vec::new();
    ir.walk(&mut |node| {
        if let expr::IrKind::Sym(Symbol::Derived(name)) = &node.kind
            && let Some(value) = locals.get(name)
        {
            pending.push(value);
        }
    });
    let mut count = 0;
    while let Some(node) = pending.pop() {
        if count > limit {
            break;
        }
        count += 1;
        pending.extend(node.children());
    }
    count
}

/// Parses and checks one expression, reporting errors with their column.
pub fn check_expr(
    file: &str,
    path: &str,
    source: &str,
    scope: &OpScope<'_>,
    diagnostics: &mut Diagnostics,
) -> Option<Expr> {
    let parsed = match expr::parse_in(source, expr::Scope::dialect(scope)) {
        Ok(parsed) => parsed,
        Err(err) => {
            diagnostics.push(expr_diagnostic(file, path, source, &err));
            return None;
        }
    };
    match expr::check(&parsed, scope) {
        Ok(ir) => {
            let copied = scope.substituted.get();
            let limit = MAX_SUBSTITUTED_TERMS.saturating_sub(copied);
            let copying = substituted_terms(&ir, &scope.locals, limit);
            scope.substituted.set(copied + copying);
            if copying > limit {
                let diagnostic = Diagnostic::new(
                    file,
                    path,
                    format!(
                        "writing out the variant's and pass's values this expression reads (each copied whole in place of its name) takes the op past {MAX_SUBSTITUTED_TERMS} copied terms: does a chain of values each read the one before more than once?"
                    ),
                )
                .at(source, 1);
                // Past the bound every expression reading a constant fails; the first is the error.
                diagnostics.push(if copied > MAX_SUBSTITUTED_TERMS {
                    diagnostic.as_follow_on()
                } else {
                    diagnostic
                });
                return None;
            }
            Some(Expr {
                ir: inline_locals(ir, scope),
                source: source.to_owned(),
                path: path.to_owned(),
            })
        }
        Err(errors) => {
            for err in &errors {
                diagnostics.push(expr_diagnostic(file, path, source, err));
            }
            None
        }
    }
}

pub(super) fn expr_diagnostic(
    file: &str,
    path: &str,
    source: &str,
    err: &expr::ExprError,
) -> Diagnostic {
    Diagnostic::new(file, path, err.message.clone()).at(source, err.column(source))
}

/// A JSON scalar (number or boolean) as expression source; strings are expressions already.
pub fn literal_source(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Keeps `expr` when its type is `expected`, reporting a mismatch otherwise.
pub fn expect_type(
    file: &str,
    expr: &Expr,
    expected: Type,
    diagnostics: &mut Diagnostics,
) -> Option<Expr> {
    if expr.ir.ty == expected || (expected == Type::Float && expr.ir.ty == Type::Int) {
        Some(expr.clone())
    } else {
        diagnostics.push(
            Diagnostic::new(
                file,
                &expr.path,
                format!("expected a {expected:?} expression, found {:?}", expr.ir.ty),
            )
            .at(&expr.source, 1),
        );
        None
    }
}

/// What building an op's variants reads and reports to.
pub(super) struct Cx<'a> {
    pub(super) file: &'a str,
    pub(super) manifest: &'a Manifest,
    pub(super) scope: OpScope<'a>,
    pub(super) diagnostics: &'a mut Diagnostics,
}

impl Cx<'_> {
    pub(super) fn expr(&mut self, path: &str, source: &str, expected: Type) -> Option<Expr> {
        let mut expr = check_expr(self.file, path, source, &self.scope, self.diagnostics)?;
        // `/` is true division in the `schemaVersion: 1` dialect, so counts and integer
        // fields are often Floats there: they must be whole (checked when evaluated).
        if expected == Type::Int && self.scope.dialect.is_jinja() {
            expr.ir = expr::to_int(expr.ir);
        }
        expect_type(self.file, &expr, expected, self.diagnostics)
    }

    pub(super) fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::new(self.file, path, message));
    }
}

/// The keys of `map`, comma-separated, as an error lists what is known.
pub(super) fn join_keys<V>(map: &IndexMap<String, V>) -> String {
    map.keys()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}
