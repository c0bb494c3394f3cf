//! Template rendering: the one place minijinja is configured for WGSL output.

use std::collections::{BTreeMap, BTreeSet};

use minijinja::value::Value as JValue;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};

use crate::diag::Diagnostic;
use crate::expr::Value;
use crate::model::{Combination, Op, Pass, TemplateConvention, TemplateValue, Variant};

/// The fuel of one render of a pass: minijinja charges one for each instruction and one for
/// each 64 bytes of text it makes (`~`, `*`, filters, output, captured output), so this bounds
/// both the time and the memory of a render (64 MB of text made). The shaders of the seed
/// packages, the corpus and the Hub's packages take at most 14,000.
pub const RENDER_FUEL: u64 = 1_000_000;

/// What one fuel of [`RENDER_FUEL`] pays for in bytes of text made (minijinja's own rate).
const BYTES_PER_FUEL: u64 = 64;

/// The largest rendered shader accepted: far beyond any real kernel, well below what makes
/// validation and translation take minutes.
pub const MAX_SHADER_BYTES: usize = 1 << 20;

/// The template syntax: Jinja's delimiters with `trim_blocks`, `lstrip_blocks` and the
/// trailing newline kept.
pub fn syntax_config() -> minijinja::syntax::SyntaxConfig {
    minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .unwrap_or_default()
}

/// What of a package's [`TemplateConvention`] the environment itself holds: ops of one flavour
/// share an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavour {
    pub undefined_names_are_falsy: bool,
    pub javascript_jinja: bool,
}

impl Flavour {
    /// Every name defined, minijinja's own filters: the seed packages'.
    pub const STRICT: Self = Self {
        undefined_names_are_falsy: false,
        javascript_jinja: false,
    };

    pub fn of(convention: &TemplateConvention) -> Self {
        Self {
            undefined_names_are_falsy: convention.undefined_names_are_falsy,
            javascript_jinja: convention.javascript_jinja,
        }
    }
}

/// A minijinja environment holding every template, configured for WGSL: `trim_blocks`/
/// `lstrip_blocks`, no escaping, WGSL literals, and undefined names an error wherever used or,
/// with `undefined_names_are_falsy` (see [`TemplateConvention`]), falsy in a condition and an
/// error when printed; with `javascript_jinja`, the Hub runtime engine's filters.
pub fn environment(
    templates: &BTreeMap<String, String>,
    include_root: Option<&str>,
    flavour: Flavour,
) -> (Environment<'static>, Vec<Diagnostic>) {
    let mut env = Environment::new();
    if flavour.javascript_jinja {
        super::javascript::install(&mut env);
    }
    let undefined_names_are_falsy = flavour.undefined_names_are_falsy;
    let root = include_root.map(str::to_owned);
    env.set_path_join_callback(move |name, parent| {
        crate::templates::join(root.as_deref(), name, parent).into()
    });
    env.set_undefined_behavior(if undefined_names_are_falsy {
        UndefinedBehavior::SemiStrict
    } else {
        UndefinedBehavior::Strict
    });
    env.set_syntax(syntax_config());
    // A template that loops over a huge value or doubles a string would render for minutes
    // into gigabytes: rendering stops when the fuel runs out, with an error at the line.
    env.set_fuel(Some(RENDER_FUEL));
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_formatter(|out, _state, value| {
        // minijinja prints booleans Python-style (`True`); WGSL needs `true`.
        if value.kind() == minijinja::value::ValueKind::Bool {
            out.write_str(if value.is_true() { "true" } else { "false" })?;
        } else {
            write!(out, "{value}").map_err(|e| {
                minijinja::Error::new(minijinja::ErrorKind::WriteFailure, e.to_string())
            })?;
        }
        Ok(())
    });
    let mut diagnostics = Vec::new();
    let mut broken = BTreeSet::new();
    for (name, source) in templates {
        // Refused before minijinja compiles it, which recurses once per level.
        if let Some(diagnostic) = super::nesting::check_tags(name, source) {
            diagnostics.push(diagnostic);
            broken.insert(name.clone());
            continue;
        }
        if let Err(err) = env.add_template_owned(name.clone(), source.clone()) {
            diagnostics.push(template_diagnostic(name, source, &err));
            broken.insert(name.clone());
        }
    }
    // A template that does not parse is reported once, here; where another includes it, the
    // render fails with `BROKEN_TEMPLATE` rather than "not found", and that is a follow-on.
    env.set_loader(move |name| {
        if broken.contains(name) {
            Err(minijinja::Error::new(
                minijinja::ErrorKind::SyntaxError,
                BROKEN_TEMPLATE,
            ))
        } else {
            Ok(None::<String>)
        }
    });
    (env, diagnostics)
}

/// The detail of the error a pass's render fails with where it includes a template that
/// does not parse.
pub const BROKEN_TEMPLATE: &str = "the template has a syntax error, reported on its own";

/// Whether `err` comes from a template that does not parse, which is reported on its own.
pub fn is_broken_template(err: &minijinja::Error) -> bool {
    let mut cause: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = cause {
        if let Some(e) = e.downcast_ref::<minijinja::Error>()
            && e.kind() == minijinja::ErrorKind::SyntaxError
            && e.detail() == Some(BROKEN_TEMPLATE)
        {
            return true;
        }
        cause = e.source();
    }
    false
}

/// Turns a minijinja error into a diagnostic pointing at the template line.
pub fn template_diagnostic(name: &str, source: &str, err: &minijinja::Error) -> Diagnostic {
    let file = err.name().unwrap_or(name).to_owned();
    let mut message = match err.detail() {
        _ if err.kind() == minijinja::ErrorKind::OutOfFuel => format!(
            "rendering stopped: it took more than {RENDER_FUEL} instructions or made more than {} MB of text (does a loop run over a large value, or a value keep doubling?)",
            RENDER_FUEL * BYTES_PER_FUEL / 1_000_000
        ),
        Some(detail) => format!("{}: {detail}", err.kind()),
        None => err.kind().to_string(),
    };
    let mut cause = std::error::Error::source(err);
    while let Some(inner) = cause {
        message.push_str(&format!(" ({inner})"));
        cause = inner.source();
    }
    match err.line() {
        Some(line) => {
            let text = if err.name().is_none_or(|n| n == name) {
                source
                    .lines()
                    .nth(line.saturating_sub(1))
                    .unwrap_or("")
                    .trim_end()
                    .to_owned()
            } else {
                String::new()
            };
            let mut diagnostic = Diagnostic::new(&file, format!("line {line}"), message);
            if !text.is_empty() {
                // minijinja knows the byte range of the offending token; fall back to the
                // first non-blank character of the line.
                let line_start: usize = source
                    .lines()
                    .take(line.saturating_sub(1))
                    .map(|l| l.len() + 1)
                    .sum();
                let column = err
                    .range()
                    .filter(|r| r.start >= line_start && r.start - line_start <= text.len())
                    .map(|r| source[line_start..r.start].chars().count() + 1)
                    .unwrap_or(text.len() - text.trim_start().len() + 1);
                diagnostic = diagnostic.at(&text, column);
            }
            diagnostic
        }
        None => Diagnostic::new(&file, "", message),
    }
}

/// Which compiler a rendering is for. Templates see it as
/// `env.wgsl.subgroupMatrixVectorPointers` (true for naga), and it matters only there:
/// naga's cooperative matrices load and store through a pointer into an array of vectors
/// (the stride then counted in vectors), where Chromium's subgroup matrices take only a
/// pointer into an array of the matrix's scalar. A loader that does not set the name renders
/// the browser's text, since an undefined name is falsy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFor {
    /// Chromium's WGSL, as a browser compiles it.
    Browser,
    /// naga's WGSL, for wgpu's native backends (subgroup matrices lowered afterwards).
    Naga,
}

/// Renders one pass for one combination.
pub fn render(
    env: &Environment<'static>,
    op: &Op,
    variant: &Variant,
    pass: &Pass,
    combination: &Combination,
    prelude: &str,
    text_for: TextFor,
) -> Result<String, minijinja::Error> {
    let template = env.get_template(&pass.template)?;
    template.render(context(op, variant, pass, combination, prelude, text_for))
}

/// What a pass's template sees under one combination.
pub(super) fn context(
    op: &Op,
    variant: &Variant,
    pass: &Pass,
    combination: &Combination,
    prelude: &str,
    text_for: TextFor,
) -> JValue {
    let mut context: BTreeMap<String, JValue> = BTreeMap::new();
    let literals = op.templates.values_print_as_literals;
    for (name, value) in &combination.values {
        context.insert(name.clone(), to_jinja(value, literals));
    }
    // A list known per call, by name: its axes' overrides.
    let mut lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for value in crate::model::dynamic_values(variant, pass) {
        // A dynamic value renders as the name of its `override`, so the text does not depend
        // on it; `schemaVersion: 1` templates print it where a literal goes, so it is marked
        // for `runtime_values::resolve`.
        let name = op.override_name(&value.name);
        let shown = if literals {
            super::runtime_values::marked(&name)
        } else {
            name
        };
        match &value.axis_of {
            Some((list, _)) => lists.entry(list.clone()).or_default().push(shown),
            None => {
                context.insert(value.name.clone(), JValue::from(shown));
            }
        }
    }
    // Printed, a list is a WGSL array of its axes, right-aligned in `LIST_AXES`.
    for (list, axes) in lists {
        let axes: Vec<String> = axes.iter().map(|a| format!("u32({a})")).collect();
        let array = format!(
            "array<u32, {}>({})",
            crate::model::LIST_AXES,
            axes.join(", ")
        );
        context.insert(list, JValue::from(array));
    }
    // The variant's own values of tunables win.
    let tunables: BTreeMap<String, JValue> = (op.tunables.iter())
        .chain(&variant.tunables)
        .map(|(name, v)| (name.clone(), to_jinja(v, literals)))
        .collect();
    context.insert("tunables".to_owned(), JValue::from_object(tunables));
    context.insert("prelude".to_owned(), JValue::from(prelude));
    if op.templates.fold_width_visible {
        // A derive of the same name is the template's value, as in expressions.
        let (name, width) = crate::expr::DISPATCH_FOLD_WIDTH;
        context
            .entry(name.to_owned())
            .or_insert_with(|| JValue::from(width));
    }
    if op.templates.loader_context {
        v1_context(
            &mut context,
            op,
            variant,
            pass,
            combination,
            prelude,
            text_for,
        );
    }
    let named = [
        ("op", &op.name),
        ("variant", &variant.id),
        ("pass", &pass.id),
    ];
    for (key, value) in named {
        // Where the manifest's own values are spread into the context, one of these names is
        // the manifest's (Hub packages pass `op: "add"` to a template shared by several ops).
        if op.templates.derives_visible {
            context
                .entry(key.to_owned())
                .or_insert_with(|| JValue::from(value.clone()));
        } else {
            context.insert(key.to_owned(), JValue::from(value.clone()));
        }
    }
    JValue::from_object(context)
}

/// A static value for the template. Where templates print values as literals, they come from
/// true division, so a whole Float prints as the integer it is (`4u`, not `4.0u`), as the
/// engine prints numbers.
fn to_jinja(value: &Value, literals: bool) -> JValue {
    match value {
        Value::Int(i) => JValue::from(*i),
        Value::Float(f) if literals && f.fract() == 0.0 && f.abs() < 9.0e15 => {
            JValue::from(*f as i64)
        }
        Value::Float(f) => JValue::from(*f),
        Value::Bool(b) => JValue::from(*b),
        Value::Str(s) | Value::Dtype(s) => JValue::from(s.clone()),
        Value::List(items) => JValue::from(items.clone()),
    }
}

/// What a `schemaVersion: 1` template sees beyond the values: the generated declarations as
/// `env.wgsl.resourceDeclarations` (and, ours, `env.wgsl.subgroupMatrixVectorPointers`: see
/// [`TextFor`]), each type variable by name and under `dtypes` (its WGSL
/// scalar), `tensorDtypes` (by role, arg name and semantic), the variant's constants under
/// `constants` (as the loader passes them besides spreading them), and the pass's inputs under
/// `source`.
fn v1_context(
    context: &mut BTreeMap<String, JValue>,
    op: &Op,
    variant: &Variant,
    pass: &Pass,
    combination: &Combination,
    prelude: &str,
    text_for: TextFor,
) {
    let wgsl: BTreeMap<&str, JValue> = [
        ("resourceDeclarations", JValue::from(prelude)),
        (
            "subgroupMatrixVectorPointers",
            JValue::from(text_for == TextFor::Naga),
        ),
    ]
    .into();
    let env: BTreeMap<&str, JValue> = [("wgsl", JValue::from_object(wgsl))].into();
    context.insert("env".to_owned(), JValue::from_object(env));
    let mut dtypes = BTreeMap::new();
    for (var, dtype) in &combination.dtypes {
        dtypes.insert(var.clone(), JValue::from(dtype.wgsl_name()));
        context
            .entry(var.clone())
            .or_insert_with(|| JValue::from(dtype.wgsl_name()));
    }
    context.insert("dtypes".to_owned(), JValue::from_object(dtypes));
    let mut tensor_dtypes = BTreeMap::new();
    let names = op
        .tensors()
        .enumerate()
        .map(|(i, t)| (t.role.clone(), i))
        .chain(op.aliases.iter().cloned());
    for (name, index) in names {
        let dtype = match op.tensors().nth(index).map(|t| &t.dtype) {
            Some(crate::model::DTypeRef::Fixed(d)) => Some(*d),
            Some(crate::model::DTypeRef::Var(var)) => combination.dtypes.get(var).copied(),
            None => None,
        };
        if let Some(dtype) = dtype {
            tensor_dtypes.insert(name, JValue::from(dtype.onnx_name()));
        }
    }
    context.insert(
        "tensorDtypes".to_owned(),
        JValue::from_object(tensor_dtypes),
    );
    // The loader passes these as objects too, besides spreading them at the top level.
    let source = gathered(context, &pass.inputs);
    context.insert("source".to_owned(), source);
    let constants = gathered(context, &variant.constants);
    context.insert("constants".to_owned(), constants);
    namespaces(context, &combination.features);
}

/// `device.features` as templates read it: `has(name)` says whether the shader is built for a
/// device with the feature (the variant requires it, or the combination assumes it).
#[derive(Debug)]
struct Features(BTreeSet<String>);

impl minijinja::value::Object for Features {
    fn call_method(
        self: &std::sync::Arc<Self>,
        _state: &mut minijinja::State<'_, '_>,
        method: &str,
        args: &[JValue],
    ) -> Result<JValue, minijinja::Error> {
        match (method, args) {
            ("has", [name]) => Ok(JValue::from(
                name.as_str().is_some_and(|name| self.0.contains(name)),
            )),
            _ => Err(minijinja::Error::new(
                minijinja::ErrorKind::UnknownMethod,
                format!(
                    "device.features has only `has(name)`, not `{method}` with {} argument(s)",
                    args.len()
                ),
            )),
        }
    }
}

/// A tree of namespace members, as the objects the loader hands templates.
enum Member {
    Value(JValue),
    Object(BTreeMap<String, Member>),
}

impl Member {
    fn into_value(self) -> JValue {
        match self {
            Member::Value(value) => value,
            Member::Object(members) => JValue::from_object(
                members
                    .into_iter()
                    .map(|(name, member)| (name, member.into_value()))
                    .collect::<BTreeMap<_, _>>(),
            ),
        }
    }
}

/// Puts `value` at `path` under `level`.
fn insert(level: &mut BTreeMap<String, Member>, path: &[&str], value: &JValue) {
    match path {
        [] => {}
        [leaf] => {
            level.insert((*leaf).to_owned(), Member::Value(value.clone()));
        }
        [first, rest @ ..] => {
            let member = level
                .entry((*first).to_owned())
                .or_insert_with(|| Member::Object(BTreeMap::new()));
            if let Member::Object(members) = member {
                insert(members, rest, value);
            }
        }
    }
}

/// Nests the values of namespace members (`args.hidden`, `device.limits.x`, named so by
/// `namespace_values`) into the objects the template reads them from (`args`, `device`).
fn namespaces(context: &mut BTreeMap<String, JValue>, features: &BTreeSet<String>) {
    let mut roots: BTreeMap<String, Member> = BTreeMap::new();
    let features = JValue::from_object(Features(features.clone()));
    let device = BTreeMap::from([("features".to_owned(), Member::Value(features))]);
    roots.insert("device".to_owned(), Member::Object(device));
    for (path, value) in context.iter().filter(|(name, _)| name.contains('.')) {
        let parts: Vec<&str> = path.split('.').collect();
        insert(&mut roots, &parts, value);
    }
    for (root, member) in roots {
        context.insert(root, member.into_value());
    }
}

/// The template values `values` as one object, each as the top level of `context` has it.
fn gathered(context: &BTreeMap<String, JValue>, values: &[TemplateValue]) -> JValue {
    // Namespace members are the template's own reads, not the package's values.
    let object: BTreeMap<String, JValue> = values
        .iter()
        .filter(|value| !value.name.contains('.'))
        .filter_map(|value| Some((value.name.clone(), context.get(&value.name)?.clone())))
        .collect();
    JValue::from_object(object)
}
