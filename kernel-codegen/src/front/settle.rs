//! Settles, per pass, which run-time values the shader text itself depends on. A dynamic
//! value renders as a pipeline override; that fails where the template needs its value while
//! rendering (found in minijinja's syntax tree, `usage.rs`) and where the rendered WGSL sizes
//! a function-scope or private array with it (found in naga's module of a first rendering:
//! WGSL allows override-sized arrays only in workgroup memory). Each such value is pinned to
//! its finite domain ([`model::domains`]), so one shader is rendered per value, or reported
//! with where it is needed and how to give it a domain.

use std::collections::BTreeSet;

use crate::diag::{Diagnostic, Diagnostics, Specialisation};
use crate::expr::Type;
use crate::model::dynamic_values;
use crate::model::{self, Op, classes, domains};
use crate::templates::TemplatePaths;
use crate::templates::pass::{Rendered, TextFor, render_pass};
use crate::templates::{prelude, usage};

/// Why the shader text needs a value.
enum Need {
    /// The template needs it while rendering.
    Template(usage::Use),
    /// The rendered WGSL sizes a non-workgroup array with it: the declaration's line.
    ArrayLength { line: usize, text: String },
}

/// Pins every value the passes' shader text depends on, or reports it.
pub fn settle(
    op: &mut Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    for v in 0..op.variants.len() {
        for p in 0..op.variants[v].passes.len() {
            diagnostics.extend(settle_pass(op, env, paths, v, p));
        }
    }
    diagnostics
}

/// Pins every value pass `p` of variant `v` depends on, or reports it.
pub fn settle_pass(
    op: &mut Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
    v: usize,
    p: usize,
) -> Diagnostics {
    let mut diagnostics = Diagnostics::default();
    // Pinning one value can expose another (a branch now rendered reads a second
    // one), so look again until nothing more is needed.
    for _ in 0..4 {
        let (needs, printed) = needed(op, env, paths, v, p);
        if needs.is_empty() {
            break;
        }
        // A value the template only tests (for truthiness, or against integer
        // literals) and does not print is built per class of what the tests tell apart.
        let mut classed = BTreeSet::new();
        for (name, _) in &needs {
            // A value with a finite domain keeps it: its shaders see its real values.
            if printed.contains(name) || classed.contains(name) || pinnable(op, v, name) {
                continue;
            }
            let tests: Option<Vec<usage::Misuse>> = needs
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, need)| match need {
                    Need::Template(u)
                        if matches!(
                            u.misuse,
                            usage::Misuse::Truthiness | usage::Misuse::Compared(_)
                        ) =>
                    {
                        Some(u.misuse)
                    }
                    _ => None,
                })
                .collect();
            let Some(tests) = tests else { continue };
            let thresholds: BTreeSet<i64> = tests
                .iter()
                .filter_map(|t| match t {
                    usage::Misuse::Compared(n) => Some(*n),
                    _ => None,
                })
                .collect();
            if thresholds.is_empty() {
                classes::by_truthiness(op, v, name);
                classed.insert(name.clone());
            } else {
                // A conditional with one literal per class: pinned below.
                let truthiness = tests.contains(&usage::Misuse::Truthiness);
                classes::by_classes(op, v, name, &thresholds, truthiness);
            }
        }
        if !classed.is_empty() {
            continue;
        }
        let mut reported = false;
        let mut pinned = BTreeSet::new();
        for (name, need) in needs {
            if pinned.contains(&name) {
                continue;
            }
            let variant = &op.variants[v];
            let values =
                || (variant.constants.iter()).chain(variant.passes.iter().flat_map(|p| &p.inputs));
            let Some(value) = values().find(|value| value.name == name) else {
                if let (Some(axis), Need::Template(misuse)) = (
                    values().find(|value| value.axis_of.as_ref().is_some_and(|(l, _)| *l == name)),
                    &need,
                ) {
                    reported = true;
                    diagnostics.push(Diagnostic::new(
                        &misuse.file,
                        format!("line {}", misuse.line),
                        format!(
                            "template input `{name}` (`{}`) is a list known only per call, which reaches the shader as an override per axis: print it (`{{{{ {name} }}}}` is a WGSL `array<u32, {}>` of its axes, right-aligned, 1 in front) and index it in WGSL; it cannot steer the template's text",
                            axis.expr.source,
                            model::LIST_AXES
                        ),
                    ));
                }
                continue;
            };
            let declared = variant.specialise.get(&name).map(Vec::as_slice);
            match domains::pin(op, variant, value, declared) {
                Ok(pin) => {
                    domains::apply(op, v, &name, pin);
                    pinned.insert(name);
                }
                Err(unbounded) => {
                    reported = true;
                    diagnostics.push(diagnostic(op, paths, v, p, &name, &need, &unbounded));
                }
            }
        }
        if reported {
            break;
        }
    }
    diagnostics
}

/// Whether the template value `name` of variant `v` has a finite domain (its own, or one the
/// hints declare).
fn pinnable(op: &Op, v: usize, name: &str) -> bool {
    let variant = &op.variants[v];
    let declared = variant.specialise.get(name).map(Vec::as_slice);
    variant
        .constants
        .iter()
        .chain(variant.passes.iter().flat_map(|p| &p.inputs))
        .find(|value| value.name == name)
        .is_some_and(|value| domains::pin(op, variant, value, declared).is_ok())
}

/// The diagnostic of a use [`settle`] left: the value and why it has no domain.
pub fn unsettled(
    op: &Op,
    paths: &TemplatePaths<'_>,
    v: usize,
    p: usize,
    misuse: &usage::Use,
) -> Diagnostic {
    let variant = &op.variants[v];
    let value = variant
        .constants
        .iter()
        .chain(variant.passes.iter().flat_map(|p| &p.inputs))
        .find(|value| value.name == misuse.value);
    let unbounded = value
        .and_then(|value| domains::pin(op, variant, value, None).err())
        .unwrap_or(domains::Unbounded {
            names: Vec::new(),
            too_many: None,
        });
    let need = Need::Template(misuse.clone());
    // Found while emitting, after the front end tried its suggestions' values.
    let mut diagnostic = diagnostic(op, paths, v, p, &misuse.value, &need, &unbounded);
    diagnostic.without_suggestion();
    diagnostic
}

/// The dynamic values pass `p` of variant `v` needs the value of, each with its first need.
fn needed(
    op: &Op,
    env: &minijinja::Environment<'static>,
    paths: &TemplatePaths<'_>,
    v: usize,
    p: usize,
) -> (Vec<(String, Need)>, BTreeSet<String>) {
    let variant = &op.variants[v];
    let pass = &variant.passes[p];
    // A list known per call is read by its name; its axes are the values.
    let dynamic: BTreeSet<&str> = dynamic_values(variant, pass)
        .map(|d| {
            d.axis_of
                .as_ref()
                .map_or(d.name.as_str(), |(list, _)| list.as_str())
        })
        .collect();
    if dynamic.is_empty() {
        return (Vec::new(), BTreeSet::new());
    }
    let mut needs: Vec<(String, Need)> = Vec::new();
    let usage = usage::usage(paths, &pass.template, &dynamic);
    // Every use is kept, so a value that cannot be pinned is reported wherever it is needed.
    for misuse in usage.misuses {
        needs.push((misuse.value.clone(), Need::Template(misuse)));
    }
    let printed = usage.printed;
    if !needs.is_empty() || !paths.exists(&pass.template) {
        return (needs, printed);
    }
    (array_needs(op, env, v, p, needs), printed)
}

/// `needs` with the dynamic values the rendered WGSL uses as the length of an array outside
/// workgroup memory.
fn array_needs(
    op: &Op,
    env: &minijinja::Environment<'static>,
    v: usize,
    p: usize,
    mut needs: Vec<(String, Need)>,
) -> Vec<(String, Need)> {
    let variant = &op.variants[v];
    let pass = &variant.passes[p];
    // The template renders with overrides: does the WGSL accept them where they are?
    let Ok(combinations) = model::enumerate_combinations(op, variant, pass) else {
        return needs;
    };
    let Some(combination) = combinations.first() else {
        return needs;
    };
    let Ok(bindings) = prelude::resolve_bindings(pass, combination) else {
        return needs;
    };
    // Failures to render are reported when the shaders are made.
    let Ok(Rendered { text, .. }) =
        render_pass(op, env, v, p, combination, &bindings, TextFor::Browser)
    else {
        return needs;
    };
    let Ok(module) = naga::front::wgsl::parse_str(&text) else {
        return needs;
    };
    for (override_names, span) in override_sized_arrays(&module) {
        let line = span
            .location(&text)
            .line_number
            .try_into()
            .unwrap_or(usize::MAX);
        let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
        for value in dynamic_values(variant, pass) {
            if override_names.contains(&op.override_name(&value.name))
                && !needs.iter().any(|(name, _)| *name == value.name)
            {
                needs.push((
                    value.name.clone(),
                    Need::ArrayLength {
                        line,
                        text: line_text.trim().to_owned(),
                    },
                ));
            }
        }
    }
    needs
}

/// Every array outside workgroup memory whose length is an override expression: the
/// overrides the length reads (directly or through other overrides) and where it is declared.
fn override_sized_arrays(module: &naga::Module) -> Vec<(BTreeSet<String>, naga::Span)> {
    let mut found = Vec::new();
    let mut check = |ty: naga::Handle<naga::Type>, span: naga::Span| {
        if let Some(length) = pending_length(module, ty) {
            let mut names = BTreeSet::new();
            override_names(module, length, &mut names);
            found.push((names, span));
        }
    };
    let functions = module
        .functions
        .iter()
        .map(|(_, f)| f)
        .chain(module.entry_points.iter().map(|e| &e.function));
    for function in functions {
        for (handle, local) in function.local_variables.iter() {
            check(local.ty, function.local_variables.get_span(handle));
        }
    }
    for (handle, global) in module.global_variables.iter() {
        if global.space == naga::AddressSpace::Private {
            check(global.ty, module.global_variables.get_span(handle));
        }
    }
    found
}

/// The override that sizes `ty` or an array inside it.
fn pending_length(
    module: &naga::Module,
    ty: naga::Handle<naga::Type>,
) -> Option<naga::Handle<naga::Override>> {
    match &module.types[ty].inner {
        naga::TypeInner::Array { size, base, .. } => match size {
            naga::ArraySize::Pending(length) => Some(*length),
            _ => pending_length(module, *base),
        },
        naga::TypeInner::Struct { members, .. } => members
            .iter()
            .find_map(|member| pending_length(module, member.ty)),
        _ => None,
    }
}

/// The names of `handle` and of every override its initializer reads.
fn override_names(
    module: &naga::Module,
    handle: naga::Handle<naga::Override>,
    names: &mut BTreeSet<String>,
) {
    let o = &module.overrides[handle];
    if let Some(name) = &o.name
        && !names.insert(name.clone())
    {
        return;
    }
    if let Some(init) = o.init {
        expression_overrides(module, init, names);
    }
}

fn expression_overrides(
    module: &naga::Module,
    handle: naga::Handle<naga::Expression>,
    names: &mut BTreeSet<String>,
) {
    use naga::Expression as E;
    let mut operands = Vec::new();
    match &module.global_expressions[handle] {
        E::Override(o) => override_names(module, *o, names),
        E::Binary { left, right, .. } => operands.extend([*left, *right]),
        E::Unary { expr, .. } | E::As { expr, .. } | E::Splat { value: expr, .. } => {
            operands.push(*expr);
        }
        E::Select {
            condition,
            accept,
            reject,
        } => operands.extend([*condition, *accept, *reject]),
        E::Math {
            arg,
            arg1,
            arg2,
            arg3,
            ..
        } => operands.extend([Some(*arg), *arg1, *arg2, *arg3].into_iter().flatten()),
        E::Compose { components, .. } => operands.extend(components.iter().copied()),
        _ => {}
    }
    for operand in operands {
        expression_overrides(module, operand, names);
    }
}

fn diagnostic(
    op: &Op,
    paths: &TemplatePaths<'_>,
    v: usize,
    p: usize,
    name: &str,
    need: &Need,
    unbounded: &domains::Unbounded,
) -> Diagnostic {
    let variant = &op.variants[v];
    let found = variant
        .constants
        .iter()
        .chain(variant.passes[p].inputs.iter())
        .find(|value| value.name == name);
    let source = found.map_or(String::new(), |value| value.expr.source.clone());
    let why = match (&unbounded.too_many, unbounded.names.as_slice()) {
        (Some(count), _) => format!(
            "it takes {count} values, more than the {} shaders one value may add",
            domains::MAX_DOMAIN
        ),
        (None, []) => "its values cannot be enumerated".to_owned(),
        (None, names) => format!(
            "`{}` has no finite domain here",
            names
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("`, `")
        ),
    };
    let bound = format!(
        "bound it in variant `{}`'s `when` (`x == 2 or x == 4`, `x > 0 and x <= 8`)",
        variant.id
    );
    // An array needs a length of at least 1; a template may test or loop over 0.
    let least = i64::from(matches!(need, Need::ArrayLength { .. }));
    let suggestion = found.and_then(|value| hints_entry(op, variant, value, unbounded, least));
    let fix = match &suggestion {
        // The entry follows the message (`Diagnostic`'s `Display`) once its values are tried.
        Some(_) => bound,
        None => format!(
            "{bound} or declare the values to build in the package's hints (`\"variants\": [{{\"variant\": \"{}\", \"specialise\": {{\"{name}\": [...]}}}}]`)",
            variant.id
        ),
    };
    let value = format!("template input `{name}` (`{source}`)");
    let diagnostic = match need {
        Need::Template(misuse) => {
            let how = match misuse.misuse {
                usage::Misuse::Condition
                | usage::Misuse::Truthiness
                | usage::Misuse::Compared(_) => "steers a condition",
                usage::Misuse::Iteration => "is iterated over",
                usage::Misuse::Computation => "takes part in a computation while rendering",
            };
            let diagnostic = Diagnostic::new(
                &misuse.file,
                format!("line {}", misuse.line),
                format!(
                    "{value} {how}, so the shader text depends on its value, which is known only per call: {why}; {fix}"
                ),
            );
            let line_text = paths
                .templates
                .get(&misuse.file)
                .and_then(|source| source.lines().nth(misuse.line.saturating_sub(1)))
                .unwrap_or("")
                .trim_end();
            if line_text.is_empty() {
                diagnostic
            } else {
                diagnostic.at(line_text, misuse.column)
            }
        }
        Need::ArrayLength { line, text } => Diagnostic::new(
            &variant.passes[p].template,
            format!("variant `{}`, pass `{}`", variant.id, variant.passes[p].id),
            format!(
                "{value} sizes an array outside workgroup memory (rendered line {line}: `{text}`), whose length WGSL needs when the shader is compiled: {why}; {fix}"
            ),
        ),
    };
    match suggestion {
        Some(suggestion) => diagnostic.suggesting(suggestion),
        None => diagnostic,
    }
}

/// The hints entry that builds `value` for a starting set of values: keyed by the integer arg
/// it depends on when there is one such arg (a call with another value then falls to the op's
/// other variants), by the value's name otherwise.
fn hints_entry(
    op: &Op,
    variant: &model::Variant,
    value: &model::TemplateValue,
    unbounded: &domains::Unbounded,
    least: i64,
) -> Option<Specialisation> {
    // The one integer arg or attribute the value reads, with the prefix that names it.
    let arg = match unbounded.names.as_slice() {
        [only] => ["args.", "attrs."].into_iter().find_map(|prefix| {
            only.strip_prefix(prefix)
                .filter(|arg| op.attribute(arg).is_some_and(|a| a.ty == Type::Int))
                .map(|arg| (prefix, arg))
        }),
        _ => None,
    };
    if arg.is_none() && !value.expr.ir.ty.is_numeric() {
        return None;
    }
    let values = domains::suggested_set(op, variant, value, arg.map(|(_, arg)| arg), least);
    if values.is_empty() {
        return None;
    }
    Some(Specialisation {
        op: format!("{}.{}", op.domain, op.name),
        variant: variant.id.clone(),
        key: arg.map_or_else(
            || value.name.clone(),
            |(prefix, arg)| format!("{prefix}{arg}"),
        ),
        values,
    })
}
