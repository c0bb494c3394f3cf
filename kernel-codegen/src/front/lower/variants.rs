//! Builds variants: `when` conditions, constants, intermediates, passes and dispatch; the
//! passes' bindings are built in `bindings.rs`.

use std::collections::{BTreeSet, HashMap};

use indexmap::IndexMap;
use serde_json::Value;

use super::bindings::build_bindings;
use super::scope::{Cx, OpScope, check_expr, expect_type, join_keys, literal_source};
use crate::diag::Diagnostics;
use crate::expr::builtins::Builtin;
use crate::expr::{Ir, IrKind};
use crate::expr::{Type, check::Dialect};
use crate::manifest::{BindingDecl, BindingsRef, Manifest, VariantDecl};
use crate::model::domains::{self, Pin};
use crate::model::is_static;
use crate::model::{
    Class, DType, Dispatch, Expr, Intermediate, LIST_AXES, Op, OverrideType, Pass, TemplateValue,
    Variant,
};

/// Builds all variants, sorted into selection order (descending priority, stable).
pub fn build_variants(
    file: &str,
    manifest: &Manifest,
    op: &Op,
    derived: &HashMap<String, Type>,
    diagnostics: &mut Diagnostics,
) -> Vec<Variant> {
    let mut cx = Cx {
        file,
        manifest,
        scope: OpScope {
            op,
            derived,
            dialect: manifest.dialect,
            locals: HashMap::new(),
            tunables: HashMap::new(),
            substituted: Default::default(),
            failed: BTreeSet::new(),
        },
        diagnostics,
    };
    // Repeated ids are reported with the other generated names (`model::names`).
    let mut variants = Vec::new();
    for (v, decl) in manifest.variants.iter().enumerate() {
        variants.push(build_variant(&mut cx, v, decl));
    }
    check_unused_binding_sets(&mut cx);
    variants.sort_by_key(|variant| std::cmp::Reverse(variant.priority));
    check_superseding(&mut cx, &variants);
    variants
}

/// Each variant a `supersededBy` names exists and ranks before the variant it supersedes:
/// the runtime would otherwise never prefer it.
fn check_superseding(cx: &mut Cx<'_>, variants: &[Variant]) {
    for (v, decl) in cx.manifest.variants.iter().enumerate() {
        let rank = |id: &str| variants.iter().position(|variant| variant.id == id);
        let own = rank(&decl.id);
        for (i, id) in decl.superseded_by.iter().enumerate() {
            let path = format!("variants[{v}].supersededBy[{i}]");
            match (rank(id), own) {
                (None, _) => {
                    let known: Vec<&str> = variants.iter().map(|v| v.id.as_str()).collect();
                    cx.error(
                        path,
                        format!("unknown variant `{id}` (known: {})", known.join(", ")),
                    );
                }
                (Some(theirs), Some(own)) if theirs >= own => cx.error(
                    path,
                    format!(
                        "`{id}` ranks after `{}` (priority {} against {}), so it could never be preferred to it",
                        decl.id, variants[theirs].priority, decl.priority
                    ),
                ),
                _ => {}
            }
        }
    }
}

fn build_variant(cx: &mut Cx<'_>, v: usize, decl: &VariantDecl) -> Variant {
    let base = format!("variants[{v}]");
    // Another variant's constants are not this one's; its `when` sees none yet.
    cx.scope.locals.clear();
    let when: Vec<Expr> = decl
        .when
        .iter()
        .enumerate()
        .filter_map(|(i, source)| cx.expr(&format!("{base}.when[{i}]"), source, Type::Bool))
        .collect();
    // The variant's tunables are merged in after its `when`, before its derives.
    cx.scope.tunables.clear();
    for (name, value) in &decl.tunables {
        if cx.scope.op.tunable(name).is_some() {
            cx.scope.tunables.insert(name.clone(), *value);
        } else {
            let known: Vec<&str> = (cx.scope.op.tunables.iter())
                .map(|(n, _)| n.as_str())
                .collect();
            cx.error(
                format!("{base}.tunables.{name}"),
                format!("unknown tunable `{name}` (known: {})", known.join(", ")),
            );
        }
    }
    let required_features = domains::required_features(&when);
    // A declared set for an argument is a `when` clause the hints added, so it bounds the
    // argument as any clause does.
    let bounds = domains::when_bounds(cx.scope.op, &when);
    let mut constants = template_values(
        cx,
        &format!("{base}.constants"),
        &decl.constants,
        &bounds,
        &required_features,
        true,
    );
    constants.extend(derives_as_elements(
        cx,
        &base,
        decl,
        &bounds,
        &required_features,
    ));
    let demote_when: Vec<Expr> = (decl.demote_when.iter().enumerate())
        .filter_map(|(i, source)| cx.expr(&format!("{base}.demoteWhen[{i}]"), source, Type::Bool))
        .collect();
    let intermediates: Vec<Intermediate> = decl
        .intermediates
        .iter()
        .enumerate()
        .filter_map(|(i, inter)| {
            let path = format!("{base}.intermediates[{i}]");
            let Some(dtype) = DType::parse(&inter.dtype) else {
                cx.error(
                    format!("{path}.dtype"),
                    format!("unknown dtype `{}`", inter.dtype),
                );
                return None;
            };
            let shape = cx.expr(&format!("{path}.shape"), &inter.shape, Type::List)?;
            Some(Intermediate {
                id: inter.id.clone(),
                dtype,
                shape,
            })
        })
        .collect();
    let mut passes = Vec::new();
    for (p, pass) in decl.passes.iter().enumerate() {
        let path = format!("{base}.passes[{p}]");
        // The Hub dialect's pass `derive` is seen by the pass's bindings and dispatch too, and
        // by no other pass.
        let variant_locals = cx.scope.locals.clone();
        let inputs = template_values(
            cx,
            &format!("{path}.source.inputs"),
            &pass.source.inputs,
            &bounds,
            &required_features,
            cx.scope.dialect == Dialect::Hub,
        );
        let bindings = match &pass.bindings {
            BindingsRef::Set(name) => match cx.manifest.binding_sets.get(name) {
                Some(list) => build_bindings(
                    cx,
                    &format!("bindingSets.{name}"),
                    list,
                    &intermediates,
                    &constants,
                    &inputs,
                ),
                None => {
                    cx.error(
                        format!("{path}.bindings"),
                        format!(
                            "unknown binding set `{name}` (known: {})",
                            join_keys(&cx.manifest.binding_sets)
                        ),
                    );
                    Vec::new()
                }
            },
            BindingsRef::Inline(list) => build_bindings(
                cx,
                &format!("{path}.bindings"),
                list,
                &intermediates,
                &constants,
                &inputs,
            ),
        };
        check_replaced_dispatch(cx, &path, &pass.replaced_dispatch);
        let Some(dispatch) = build_dispatch(cx, &format!("{path}.dispatch"), &pass.dispatch) else {
            continue;
        };
        cx.scope.locals = variant_locals;
        passes.push(Pass {
            id: pass.id.clone(),
            label: pass.name.clone(),
            template: pass.source.shader.clone(),
            inputs,
            bindings,
            dispatch,
        });
    }
    Variant {
        id: decl.id.clone(),
        description: decl.description.clone(),
        priority: decl.priority,
        when,
        demote_when,
        superseded_by: decl.superseded_by.clone(),
        tunables: (decl.tunables.iter())
            .filter(|(name, _)| cx.scope.tunables.contains_key(*name))
            .map(|(name, value)| (name.clone(), crate::expr::Value::Int(*value)))
            .collect(),
        constants,
        intermediates,
        passes,
        bounds,
        // Sets of args and attributes are also `when` clauses of the variant (front/hints.rs); they
        // stay here for `check`, which reports a value no accepted call takes.
        specialise: decl.specialise.clone().into_iter().collect(),
        required_features,
    }
}

/// The template values `values`; `visible`: each is readable by name from the variant's later
/// expressions (constants are, a pass's `source.inputs` only reach its template).
pub(super) fn template_values(
    cx: &mut Cx<'_>,
    base: &str,
    values: &IndexMap<String, Value>,
    bounds: &crate::model::Bounds,
    features: &[String],
    visible: bool,
) -> Vec<TemplateValue> {
    let mut out = Vec::new();
    for (name, value) in values {
        let path = format!("{base}.{name}");
        let Some(source) = literal_source(value) else {
            cx.error(
                &path,
                "expected an expression string, a number or a boolean",
            );
            cx.scope.failed.insert(name.clone());
            continue;
        };
        let Some(expr) = check_expr(cx.file, &path, &source, &cx.scope, cx.diagnostics) else {
            cx.scope.failed.insert(name.clone());
            continue;
        };
        // A boolean has two values whatever it depends on: both shaders are pre-rendered and
        // the generated code picks one, so booleans may steer template control flow.
        // A value no override can carry (a string) is built per value where `when` (or a set
        // the hints declare) bounds what it reads.
        let symbols = expr.ir.symbols();
        let mut class = if expr.ir.ty == Type::Bool
            || is_static(cx.scope.op, &symbols)
            || (!expr.ir.ty.is_numeric() && crate::model::is_bounded(cx.scope.op, bounds, &symbols))
        {
            Class::Static
        } else {
            Class::Dynamic
        };
        if class == Class::Dynamic && expr.ir.ty == Type::List {
            // One override per axis; templates read the list by its name.
            if visible {
                cx.scope.locals.insert(name.clone(), expr.ir.clone());
            }
            out.extend(list_axes(name, &expr));
            continue;
        }
        // A string known per call with a few values (a conditional between strings): a shader
        // per value, each call picking its own.
        let mut domain = None;
        if class == Class::Dynamic && !expr.ir.ty.is_numeric() {
            let probe = Variant {
                id: String::new(),
                description: String::new(),
                priority: 0,
                when: Vec::new(),
                demote_when: Vec::new(),
                superseded_by: Vec::new(),
                tunables: Vec::new(),
                constants: Vec::new(),
                intermediates: Vec::new(),
                passes: Vec::new(),
                required_features: features.to_vec(),
                specialise: Default::default(),
                bounds: bounds.clone(),
            };
            let probe_value = TemplateValue {
                name: name.clone(),
                override_type: OverrideType::of(expr.ir.ty),
                expr: expr.clone(),
                class,
                domain: None,
                axis_of: None,
            };
            if let Ok(Pin::Values(values)) = domains::pin(cx.scope.op, &probe, &probe_value, None) {
                class = Class::Static;
                domain = Some(values);
            }
        }
        if class == Class::Dynamic && !matches!(expr.ir.ty, Type::Int | Type::Float) {
            let names: Vec<String> = expr.ir.symbols().iter().map(ToString::to_string).collect();
            cx.error(
                &path,
                format!(
                    "this {} value is known only per call (it reads `{}`), and a value known per call reaches the shader as a pipeline override, which holds only numbers; give each arg it reads a finite set of values (`oneOf` for a string, a `when` bound, or the values to build in the package's hints: `\"specialise\": {{\"args.<name>\": [...]}}`)",
                    expr.ir.ty,
                    names.join("`, `")
                ),
            );
            continue;
        }
        if visible {
            cx.scope.locals.insert(name.clone(), expr.ir.clone());
        }
        out.push(TemplateValue {
            name: name.clone(),
            override_type: OverrideType::of(expr.ir.ty),
            expr,
            class,
            domain,
            axis_of: None,
        });
    }
    out
}

/// The manifest's derives a Hub binding names as its element type (`"$vectorScalar"`), which
/// no variant or pass value of the name shadows: values of the variant, so that the element
/// type is known per shader as a constant's is.
fn derives_as_elements(
    cx: &mut Cx<'_>,
    base: &str,
    decl: &VariantDecl,
    bounds: &crate::model::Bounds,
    features: &[String],
) -> Vec<TemplateValue> {
    if cx.scope.dialect != Dialect::Hub {
        return Vec::new();
    }
    let mut named = IndexMap::new();
    for pass in &decl.passes {
        let BindingsRef::Inline(list) = &pass.bindings else {
            continue;
        };
        let names = list
            .iter()
            .filter_map(|b| b.element_type.as_deref()?.strip_prefix('$'));
        for name in names {
            let derived = cx.scope.op.derives.iter().any(|d| d.name == name)
                || cx.scope.derived.contains_key(name);
            if derived
                && cx.scope.op.type_var(name).is_none()
                && !decl.constants.contains_key(name)
                && !pass.source.inputs.contains_key(name)
            {
                named.insert(name.to_owned(), Value::String(name.to_owned()));
            }
        }
    }
    template_values(
        cx,
        &format!("{base}.derive"),
        &named,
        bounds,
        features,
        false,
    )
}

/// The values a list known per call reaches the shader as: axis `i` of [`LIST_AXES`], the
/// list right-aligned (`alignedDim`), each a `u32` override.
fn list_axes(name: &str, list: &Expr) -> Vec<TemplateValue> {
    let span = list.ir.span;
    let int = |v: usize| Ir {
        kind: IrKind::Int(i64::try_from(v).unwrap_or(i64::MAX)),
        ty: Type::Int,
        span,
    };
    (0..LIST_AXES)
        .map(|axis| TemplateValue {
            name: format!("{name}_axis{axis}"),
            expr: Expr {
                ir: Ir {
                    kind: IrKind::Call(
                        Builtin::AlignedDim,
                        vec![list.ir.clone(), int(axis), int(LIST_AXES)],
                    ),
                    ty: Type::Int,
                    span,
                },
                source: list.source.clone(),
                path: list.path.clone(),
            },
            class: Class::Dynamic,
            domain: None,
            override_type: OverrideType::U32,
            axis_of: Some((name.to_owned(), axis)),
        })
        .collect()
}

/// The manifest's own dispatch values that hints replaced must be valid too (the package is
/// used without the project's hints elsewhere). Reported at the pass's `dispatch`, which
/// stays the manifest's, rather than at the key, which now points at the hints file.
fn check_replaced_dispatch(cx: &mut Cx<'_>, path: &str, replaced: &IndexMap<String, Value>) {
    for (key, value) in replaced {
        let at = format!("{path}.dispatch");
        let Some(source) = literal_source(value) else {
            cx.error(
                at,
                format!("`{key}` (replaced by hints): expected an expression string or an integer"),
            );
            continue;
        };
        let mut own = Diagnostics::default();
        if let Some(expr) = check_expr(
            cx.file,
            &format!("{at}.{key}"),
            &source,
            &cx.scope,
            &mut own,
        ) {
            expect_type(cx.file, &expr, Type::Int, &mut own);
        }
        for mut diagnostic in own.0 {
            diagnostic.path.clone_from(&at);
            diagnostic.message = format!(
                "`{key}` (replaced by hints, still checked): {}",
                diagnostic.message
            );
            cx.diagnostics.push(diagnostic);
        }
    }
}

fn build_dispatch(cx: &mut Cx<'_>, path: &str, decl: &IndexMap<String, Value>) -> Option<Dispatch> {
    let mut keys: Vec<&str> = decl.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let get = |cx: &mut Cx<'_>, key: &str| -> Option<Expr> {
        let value = decl.get(key)?;
        let Some(source) = literal_source(value) else {
            cx.error(
                format!("{path}.{key}"),
                "expected an expression string or an integer",
            );
            return None;
        };
        cx.expr(&format!("{path}.{key}"), &source, Type::Int)
    };
    Some(match keys.as_slice() {
        ["threads", "workgroupSize"] => Dispatch::Threads {
            threads: get(cx, "threads")?,
            workgroup_size: get(cx, "workgroupSize")?,
        },
        ["workgroups"] => Dispatch::Workgroups(get(cx, "workgroups")?),
        ["x"] => Dispatch::Grid {
            x: get(cx, "x")?,
            y: None,
            z: None,
        },
        ["x", "y"] => Dispatch::Grid {
            x: get(cx, "x")?,
            y: Some(get(cx, "y")?),
            z: None,
        },
        ["x", "y", "z"] => Dispatch::Grid {
            x: get(cx, "x")?,
            y: Some(get(cx, "y")?),
            z: Some(get(cx, "z")?),
        },
        ["gridStride", "workgroupSize"] => Dispatch::GridStride {
            items: get(cx, "gridStride")?,
            workgroup_size: get(cx, "workgroupSize")?,
        },
        _ => {
            cx.error(path, format!("unsupported dispatch form {{{}}} (known: threads + workgroupSize, workgroups, x [+ y [+ z]], gridStride + workgroupSize)", keys.join(", ")));
            return None;
        }
    })
}

/// Binding sets no pass names are checked as if the first variant used them (without
/// `vec4When`, which names a pass's values), so that no part of the manifest goes unchecked.
fn check_unused_binding_sets(cx: &mut Cx<'_>) {
    let used: BTreeSet<&str> = cx
        .manifest
        .variants
        .iter()
        .flat_map(|v| &v.passes)
        .filter_map(|p| match &p.bindings {
            BindingsRef::Set(name) => Some(name.as_str()),
            BindingsRef::Inline(_) => None,
        })
        .collect();
    let manifest = cx.manifest;
    let Some(first) = manifest.variants.first() else {
        return;
    };
    let unused: Vec<_> = manifest
        .binding_sets
        .iter()
        .filter(|(name, _)| !used.contains(name.as_str()))
        .collect();
    if unused.is_empty() {
        return;
    }
    // The first variant's constants were reported when it was built; repeats are dropped.
    let constants = template_values(
        cx,
        "variants[0].constants",
        &first.constants,
        &Default::default(),
        &[],
        true,
    );
    for (name, list) in unused {
        let plain: Vec<BindingDecl> = list
            .iter()
            .map(|b| BindingDecl {
                vec4_when: None,
                ..b.clone()
            })
            .collect();
        build_bindings(
            cx,
            &format!("bindingSets.{name}"),
            &plain,
            &[],
            &constants,
            &[],
        );
    }
}
