//! Builds an `Op` from a parsed manifest: tensors, attributes, tunables and `derive`s.
//!
//! Variants are built in `variants.rs`; this file owns the scope that resolves names and the
//! dependency order of `derive` entries.

mod attrs;
mod bindings;
mod names;
mod scope;
mod variants;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::expr::{self, Symbol, Type};
use crate::manifest::{BindingsRef, Manifest};
use crate::model::is_static;
use crate::model::{
    DType, DTypeRef, Derived, Op, Storage, TemplateConvention, Tensor, TypeVar, snake_case,
};
use attrs::{Sources, build_attributes, scalar_args};
use scope::{OpScope, check_expr, expect_type, expr_diagnostic, literal_source};
use variants::build_variants;

/// The ONNX names of every dtype, for messages.
fn known_dtypes() -> String {
    DType::ALL.map(DType::onnx_name).join(", ")
}

/// A type variable and the dtypes it allows, each a known dtype, at least one.
fn type_var(file: &str, name: &str, allowed: &[String], out: &mut Diagnostics) -> TypeVar {
    let path = format!("typeConstraints.{name}");
    if allowed.is_empty() {
        // No dtype can bind it, so no shader exists and the typed API has a generic
        // parameter nothing instantiates.
        out.push(Diagnostic::new(
            file,
            &path,
            "lists no dtype: a type variable needs at least one",
        ));
    }
    let mut dtypes = Vec::with_capacity(allowed.len());
    for dtype in allowed {
        match DType::parse(dtype) {
            Some(parsed) => dtypes.push(parsed),
            None => out.push(Diagnostic::new(
                file,
                &path,
                format!("unknown dtype `{dtype}` (known: {})", known_dtypes()),
            )),
        }
    }
    TypeVar {
        name: name.to_owned(),
        allowed: dtypes,
    }
}

/// Builds and validates one op. `templates` lists the template names that exist.
pub fn build_op(file: &str, manifest: &Manifest) -> Result<Op, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let sources = gather_sources(manifest);

    let type_vars = manifest
        .type_constraints
        .iter()
        .map(|(name, allowed)| type_var(file, name, allowed, &mut diagnostics))
        .collect();

    let mut op = Op {
        file: file.to_owned(),
        domain: manifest.domain.clone(),
        name: manifest.name.clone(),
        module: snake_case(&manifest.name),
        since_version: manifest.since_version,
        description: manifest.description.clone(),
        type_vars,
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes: if manifest.dialect.is_jinja() {
            let mut attributes = scalar_args(manifest);
            if !manifest.attributes.is_empty() {
                attributes.extend(build_attributes(file, manifest, &sources, &mut diagnostics));
            }
            attributes
        } else {
            build_attributes(file, manifest, &sources, &mut diagnostics)
        },
        tunables: Vec::new(),
        derives: Vec::new(),
        variants: Vec::new(),
        poisoned: BTreeSet::new(),
        aliases: Vec::new(),
        hint_sources: Vec::new(),
        templates: match manifest.dialect {
            crate::manifest::Dialect::Seed => TemplateConvention::SEED,
            crate::manifest::Dialect::V1 => TemplateConvention::LOADER,
            crate::manifest::Dialect::Hub => TemplateConvention::HUB,
        },
    };
    for (name, value) in &manifest.tunables {
        // Bare numbers: an integer is an Int, any other number a Float.
        let number = value
            .as_i64()
            .map(expr::Value::Int)
            .or_else(|| value.as_f64().map(expr::Value::Float));
        match number {
            Some(v) => op.tunables.push((name.clone(), v)),
            None => diagnostics.push(Diagnostic::new(
                file,
                format!("tunables.{name}"),
                "tunables must be numbers",
            )),
        }
    }
    op.inputs = build_tensors(file, manifest, &op, true, &mut diagnostics);
    op.outputs = build_tensors(file, manifest, &op, false, &mut diagnostics);
    // An output that repeats an input's role is that input, written in place.
    let mut outputs = std::mem::take(&mut op.outputs);
    outputs.retain(
        |output| match op.inputs.iter_mut().find(|i| i.role == output.role) {
            Some(input) => {
                input.in_place = true;
                false
            }
            None => true,
        },
    );
    op.outputs = outputs;
    // So is an input whose tensor arg says `inout`.
    for input in &mut op.inputs {
        let inout =
            |arg: &crate::manifest::ArgDecl| arg.role == "inout" && arg.semantic == input.role;
        if manifest.args.values().any(inout) {
            input.in_place = true;
        }
    }
    let mut aliases: Vec<(String, usize)> = Vec::new();
    for (name, arg) in &manifest.args {
        if let Some(index) = op.tensors().position(|t| t.role == arg.semantic) {
            for alias in [name, &arg.semantic] {
                if op.tensors().all(|t| &t.role != alias) && aliases.iter().all(|(a, _)| a != alias)
                {
                    aliases.push((alias.clone(), index));
                }
            }
        }
    }
    op.aliases = aliases;

    let derived_types = build_derives(file, manifest, &mut op, &mut diagnostics);
    check_output_exprs(file, manifest, &mut op, &derived_types, &mut diagnostics);
    op.variants = build_variants(file, manifest, &op, &derived_types, &mut diagnostics);
    names::check(file, manifest, &op, &mut diagnostics);
    diagnostics.into_result(op)
}

fn gather_sources(manifest: &Manifest) -> Sources<'_> {
    let mut all: Vec<(String, &str)> = Vec::new();
    let mut f32_fields = Vec::new();
    for (name, source) in &manifest.derive {
        all.push((format!("derive.{name}"), source));
    }
    let mut bindings: Vec<&crate::manifest::BindingDecl> =
        manifest.binding_sets.values().flatten().collect();
    for (v, variant) in manifest.variants.iter().enumerate() {
        for (i, when) in variant.when.iter().enumerate() {
            all.push((format!("variants[{v}].when[{i}]"), when));
        }
        for (name, value) in &variant.constants {
            if let Value::String(s) = value {
                all.push((format!("variants[{v}].constants.{name}"), s));
            }
        }
        for pass in &variant.passes {
            if let BindingsRef::Inline(list) = &pass.bindings {
                bindings.extend(list);
            }
            for value in pass.source.inputs.values().chain(pass.dispatch.values()) {
                if let Value::String(s) = value {
                    all.push((format!("variants[{v}].passes"), s));
                }
            }
        }
    }
    for field in bindings
        .iter()
        .filter_map(|b| b.struct_.as_ref())
        .flat_map(|s| &s.fields)
    {
        all.push(("bindings".to_owned(), &field.value));
        if field.ty == "f32" {
            f32_fields.push(field.value.as_str());
        }
    }
    Sources { all, f32_fields }
}

fn build_tensors(
    file: &str,
    manifest: &Manifest,
    op: &Op,
    inputs: bool,
    diagnostics: &mut Diagnostics,
) -> Vec<Tensor> {
    let (decls, kind) = if inputs {
        (&manifest.inputs, "inputs")
    } else {
        (&manifest.outputs, "outputs")
    };
    let mut tensors = Vec::new();
    for (i, decl) in decls.iter().enumerate() {
        let path = format!("{kind}[{i}]");
        let dtype = if op.type_var(&decl.dtype).is_some() {
            DTypeRef::Var(decl.dtype.clone())
        } else if let Some(fixed) = DType::parse(&decl.dtype) {
            DTypeRef::Fixed(fixed)
        } else {
            diagnostics.push(Diagnostic::new(
                file,
                format!("{path}.dtype"),
                format!(
                    "`{}` is neither a type variable of typeConstraints nor a dtype",
                    decl.dtype
                ),
            ));
            continue;
        };
        let logical: Vec<DType> = match &dtype {
            DTypeRef::Var(var) => op
                .type_var(var)
                .map(|t| t.allowed.clone())
                .unwrap_or_default(),
            DTypeRef::Fixed(d) => vec![*d],
        };
        let arg = manifest.args.values().find(|a| a.semantic == decl.role);
        let storage = match arg {
            Some(arg) if arg.dtype.as_deref() == Some("uint32") && logical == [DType::I64] => {
                if arg.narrowing.as_deref() != Some("checked") {
                    diagnostics.push(Diagnostic::new(
                        file,
                        format!("args (semantic `{}`)", decl.role),
                        "int64 tensors bound as uint32 need `\"narrowing\": \"checked\"`",
                    ));
                }
                Storage::U32Checked
            }
            _ if logical.contains(&DType::I64) => {
                let role = &decl.role;
                let hub = manifest.dialect == crate::manifest::Dialect::Hub;
                let message = match (hub, logical.as_slice()) {
                    (true, [DType::I64]) => format!(
                        "int64 port `{role}` needs `\"storage\": \"uint32\", \"narrowing\": \"checked\"`: WGSL has no 64-bit integers, and the runtime's other form, two `u32` words an element (`vec2<u32>`), is not supported"
                    ),
                    (true, _) => format!(
                        "port `{role}` may be int64 or another dtype: an int64 port is stored as uint32 here (`storage`), which takes int64 alone, so give the int64 form a port of its own"
                    ),
                    (false, _) => format!(
                        "int64 tensor `{role}` needs an arg with `\"dtype\": \"uint32\"` and checked narrowing (WGSL has no 64-bit integers)"
                    ),
                };
                diagnostics.push(Diagnostic::new(file, &path, message));
                Storage::U32Checked
            }
            _ => Storage::Native,
        };
        let rank = if inputs {
            match &decl.rank {
                None => None,
                Some(Value::Number(n)) if n.as_u64().is_some() => {
                    match n.as_u64().map(u32::try_from) {
                        Some(Ok(rank)) => Some(rank),
                        _ => {
                            diagnostics.push(Diagnostic::new(
                                file,
                                format!("{path}.rank"),
                                format!("an input rank must be at most {}; {n} is not", u32::MAX),
                            ));
                            None
                        }
                    }
                }
                Some(_) => {
                    diagnostics.push(Diagnostic::new(
                        file,
                        format!("{path}.rank"),
                        "an input rank must be a non-negative integer",
                    ));
                    None
                }
            }
        } else {
            None
        };
        // An output that repeats an input's role is written in place and has its shape; any
        // other output without a shape expression is one the caller provides, shape and all.
        let in_place = !inputs && manifest.inputs.iter().any(|i| i.role == decl.role);
        let provided = !inputs && decl.shape.is_none() && !in_place;
        if provided && manifest.dialect == crate::manifest::Dialect::Seed {
            diagnostics.push(Diagnostic::new(
                file,
                &path,
                "outputs need a `shape` expression",
            ));
        }
        tensors.push(Tensor {
            role: decl.role.clone(),
            dtype,
            storage,
            rank,
            shape: None,
            rank_expr: None,
            description: decl.description.clone(),
            optional: decl.optional,
            in_place: false,
            provided,
            onnx: decl.onnx.clone(),
        });
    }
    tensors
}

/// Checks `derive` entries in dependency order; reports cycles with their path.
fn build_derives(
    file: &str,
    manifest: &Manifest,
    op: &mut Op,
    diagnostics: &mut Diagnostics,
) -> HashMap<String, Type> {
    let mut parsed = BTreeMap::new();
    for (name, source) in &manifest.derive {
        match expr::parse_in(source, manifest.dialect) {
            Ok(ast) => {
                parsed.insert(name.clone(), (source.as_str(), ast));
            }
            Err(err) => {
                op.poisoned.insert(name.clone());
                diagnostics.push(expr_diagnostic(
                    file,
                    &format!("derive.{name}"),
                    source,
                    &err,
                ));
            }
        }
    }
    let deps: BTreeMap<&str, BTreeSet<String>> = parsed
        .iter()
        .map(|(name, (_, ast))| {
            (
                name.as_str(),
                ast.derived_refs(expr::builtins::namespaces(manifest.dialect))
                    .into_iter()
                    .filter(|r| parsed.contains_key(r))
                    .collect(),
            )
        })
        .collect();
    let order = match topo_sort(&deps) {
        Ok(order) => order,
        Err(cycle) => {
            diagnostics.push(Diagnostic::new(
                file,
                format!("derive.{}", cycle[0]),
                format!("cycle in `derive`: {}", cycle.join(" → ")),
            ));
            op.poisoned.extend(manifest.derive.keys().cloned());
            return HashMap::new();
        }
    };
    let mut types = HashMap::new();
    let mut derives = Vec::new();
    for name in order {
        let (source, _) = &parsed[name.as_str()];
        let scope = OpScope {
            op,
            derived: &types,
            dialect: manifest.dialect,
            locals: HashMap::new(),
            tunables: HashMap::new(),
            substituted: Default::default(),
            failed: Default::default(),
        };
        match check_expr(file, &format!("derive.{name}"), source, &scope, diagnostics) {
            Some(expr) => {
                types.insert(name.clone(), expr.ir.ty);
                derives.push(Derived { name, expr });
            }
            None => {
                op.poisoned.insert(name);
            }
        }
    }
    op.derives = derives;
    types
}

/// Orders names so that each comes after what it references; `Err` holds one cycle.
fn topo_sort(deps: &BTreeMap<&str, BTreeSet<String>>) -> Result<Vec<String>, Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    fn visit<'a>(
        name: &'a str,
        deps: &'a BTreeMap<&str, BTreeSet<String>>,
        marks: &mut HashMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
        order: &mut Vec<String>,
    ) -> Result<(), Vec<String>> {
        match marks.get(name) {
            Some(Mark::Done) => return Ok(()),
            Some(Mark::Visiting) => {
                let start = stack.iter().position(|n| *n == name).unwrap_or(0);
                let mut cycle: Vec<String> =
                    stack[start..].iter().map(|s| (*s).to_owned()).collect();
                cycle.push(name.to_owned());
                return Err(cycle);
            }
            None => {}
        }
        marks.insert(name, Mark::Visiting);
        stack.push(name);
        for dep in deps.get(name).into_iter().flatten() {
            visit(dep, deps, marks, stack, order)?;
        }
        stack.pop();
        marks.insert(name, Mark::Done);
        order.push(name.to_owned());
        Ok(())
    }
    let mut marks = HashMap::new();
    let mut order = Vec::new();
    for name in deps.keys() {
        visit(name, deps, &mut marks, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

fn check_output_exprs(
    file: &str,
    manifest: &Manifest,
    op: &mut Op,
    derived: &HashMap<String, Type>,
    diagnostics: &mut Diagnostics,
) {
    let mut checked = Vec::new();
    for (i, decl) in manifest.outputs.iter().enumerate() {
        let scope = OpScope {
            op,
            derived,
            dialect: manifest.dialect,
            locals: HashMap::new(),
            tunables: HashMap::new(),
            substituted: Default::default(),
            failed: Default::default(),
        };
        let shape = decl.shape.as_deref().and_then(|source| {
            let path = format!("outputs[{i}].shape");
            let expr = check_expr(file, &path, source, &scope, diagnostics)?;
            expect_type(file, &expr, Type::List, diagnostics)
        });
        let rank = decl
            .rank
            .as_ref()
            .and_then(literal_source)
            .and_then(|source| {
                let path = format!("outputs[{i}].rank");
                let expr = check_expr(file, &path, &source, &scope, diagnostics)?;
                expect_type(file, &expr, Type::Int, diagnostics)
            });
        checked.push((decl.role.clone(), shape, rank));
    }
    for (role, shape, rank) in checked {
        // A shape read from the output's own shape (`"shape": "shapes.dstT"`) is the caller's:
        // the output is provided, shape and all.
        let own = shape.as_ref().is_some_and(|shape| {
            shape.ir.symbols().iter().any(|symbol| {
                matches!(symbol, Symbol::Shape(name) | Symbol::Rank(name)
                    if op.tensor_role(name) == Some(role.as_str()))
            })
        });
        if let Some(output) = op.outputs.iter_mut().find(|o| o.role == role) {
            if own {
                output.provided = true;
                output.shape = None;
                output.rank_expr = None;
            } else {
                output.shape = shape;
                output.rank_expr = rank;
            }
        }
    }
}

/// The template value a `schemaVersion: 1` template reads as a namespace member
/// (`args.hidden`, `present.maskT`, `device.limits.maxComputeWorkgroupSizeX`): the expression
/// of that name, classed as a variant constant of it would be. `None` when the name does not
/// check (the template then sees it undefined, as the loader would show an unknown one) or is
/// a run-time value no override can carry (a string).
pub fn namespace_value(op: &Op, name: &str) -> Option<crate::model::TemplateValue> {
    let types: HashMap<String, Type> = op
        .derives
        .iter()
        .map(|d| (d.name.clone(), d.expr.ir.ty))
        .collect();
    let scope = OpScope {
        op,
        derived: &types,
        // The op's own dialect, as far as the convention says: both read these names alike.
        dialect: if op.templates.derives_visible {
            expr::check::Dialect::Hub
        } else {
            expr::check::Dialect::V1
        },
        locals: HashMap::new(),
        tunables: HashMap::new(),
        substituted: Default::default(),
        failed: Default::default(),
    };
    let mut ignored = Diagnostics::default();
    let expr = check_expr(&op.file, name, name, &scope, &mut ignored)?;
    let class = if expr.ir.ty == Type::Bool || is_static(op, &expr.ir.symbols()) {
        crate::model::Class::Static
    } else if matches!(expr.ir.ty, Type::Int | Type::Float) {
        crate::model::Class::Dynamic
    } else {
        return None;
    };
    Some(crate::model::TemplateValue {
        name: name.to_owned(),
        override_type: crate::model::OverrideType::of(expr.ir.ty),
        expr,
        class,
        domain: None,
        axis_of: None,
    })
}
