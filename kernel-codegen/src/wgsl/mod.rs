//! WGSL emitter: renders every variant × pass × static combination, validates it with naga and
//! cross-checks naga's reflection against the manifest.

mod binding_sizes;
mod source_map;
mod subgroup_matrix;
mod targets;
mod validate;

use std::collections::BTreeSet;

use sha2::{Digest, Sha256};

pub use targets::representative_override;

use crate::diag::{Diagnostic, Diagnostics};
use crate::expr::Value;
use crate::front::settle;
use crate::model::{self, Combination, Dispatch, Op, dynamic_values};
use crate::shader::{
    BindingLayout, Built, LeftOut, OverrideSpec, Shader, Translations, WEB_SUBGROUPS_ENABLE,
};
use crate::templates::pass::{Rendered, TextFor, pass_path, render_pass};
use crate::templates::prelude;
use crate::templates::usage;

/// How [`shaders`] builds an op: whether to translate, and whether a combination that does
/// not render or validate is an error ([`crate::Inputs::strict`]) or left out with a warning.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    pub translate: bool,
    pub strict: bool,
}

/// What [`shaders`] tells beside the shaders: notes, and warnings (combinations left out
/// because they failed).
#[derive(Debug, Default)]
pub struct Told {
    pub notes: Vec<String>,
    pub warnings: Vec<String>,
}

/// Renders and validates all shaders of an op, settled before (`front/settle.rs`), and translates them with
/// naga's back ends when `translate` is set. Template names are display paths
/// ([`crate::templates`]). A combination whose bindings cannot hold its dtypes is left out with
/// a note; one that does not render or validate is left out with one warning per pass, as the
/// package's loader would fail only the calls that select it, unless `mode.strict`.
pub fn shaders(
    op: &Op,
    env: &minijinja::Environment<'static>,
    paths: &crate::templates::TemplatePaths<'_>,
    mode: Mode,
    told: &mut Told,
) -> Result<Built, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let mut shaders = Vec::new();
    let mut left_out = Vec::new();
    // Per pass with combinations that do not render or validate: which, and why.
    let mut failed = Vec::new();
    let notes = &mut told.notes;
    for (v, variant) in op.variants.iter().enumerate() {
        for (p, pass) in variant.passes.iter().enumerate() {
            let dynamic: BTreeSet<&str> = dynamic_values(variant, pass)
                .map(|d| d.name.as_str())
                .collect();
            let misuses = usage::misuses(paths, &pass.template, &dynamic);
            // Left only where `settle` found no domain (and reported it), or where one value
            // pinned exposed more than it looks at.
            for misuse in &misuses {
                diagnostics.push(settle::unsettled(op, paths, v, p, misuse));
            }
            if !misuses.is_empty() {
                continue;
            }
            let combinations = match model::enumerate_combinations(op, variant, pass) {
                Ok(c) => c,
                Err(err) => {
                    diagnostics.push(Diagnostic::new(
                        &op.file,
                        err.path,
                        format!(
                            "template value `{}` (`{}`) cannot be evaluated at build time: {}",
                            err.name, err.source, err.error.message
                        ),
                    ));
                    continue;
                }
            };
            if !paths.exists(&pass.template) {
                diagnostics.push(Diagnostic::new(
                    &op.file,
                    format!("{}: source.shader", pass_path(op, v, p)),
                    format!("template `{}` not found", pass.template),
                ));
                continue;
            }
            if env.get_template(&pass.template).is_err() {
                // The template itself failed to parse; that error is reported already.
                continue;
            }
            let total = combinations.len();
            let mut failures = Vec::new();
            for combination in combinations {
                // A third-party package may declare dtypes its bindings cannot hold (a `T`
                // tensor bound as `vec4<f32>`): that combination is left out, said at build
                // time, and a call with those dtypes finds no shader.
                if op.templates.unholdable_dtypes_left_out
                    && let Ok(bindings) = prelude::resolve_bindings(pass, &combination)
                    && let Some(mismatch) = element_mismatch(op, &bindings, &combination)
                {
                    let note = format!(
                        "{}: {} ({}) is not built: {mismatch}",
                        op.file,
                        pass_path(op, v, p),
                        combination.describe()
                    );
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                    left_out.push(LeftOut {
                        variant: v,
                        pass: p,
                        combination,
                        reason: mismatch,
                    });
                    continue;
                }
                let kept = combination.clone();
                match shader(op, env, v, p, combination, mode.translate) {
                    Ok(mut shader) => {
                        if let Some(first) = shaders.iter().position(|s: &Shader| {
                            s.variant == shader.variant
                                && s.pass == shader.pass
                                && s.same_as.is_none()
                                && s.text == shader.text
                        }) {
                            shader.same_as = Some(first);
                            shader.file_name.clone_from(&shaders[first].file_name);
                        }
                        shaders.push(shader);
                    }
                    Err(diagnostic) => failures.push((kept, diagnostic)),
                }
            }
            if !failures.is_empty() {
                failed.push((v, p, total, failures));
            }
        }
    }
    // An op none of whose shaders could be built would fail every call: that is an error of
    // the package, not a warning or a note. Where combinations failed, their errors say why;
    // otherwise the notes of those left out do.
    let built_none = shaders.is_empty()
        && (!left_out.is_empty() || !failed.is_empty() || op.variants.is_empty());
    if mode.strict || (built_none && !failed.is_empty()) {
        for (_, _, total, failures) in failed {
            // The first failing combination says what is wrong; the others only how often.
            let count = failures.len();
            let Some((_, mut first)) = failures.into_iter().next() else {
                continue;
            };
            if count > 1 {
                first.message.push_str(&format!(
                    "\n({count} of the pass's {total} static combinations fail; the first is shown)"
                ));
            }
            diagnostics.push(first);
        }
    } else {
        for (v, p, total, failures) in failed {
            told.warnings
                .push(left_out_warning(op, v, p, total, &failures));
            left_out.extend(
                failures
                    .into_iter()
                    .map(|(combination, diagnostic)| LeftOut {
                        variant: v,
                        pass: p,
                        combination,
                        reason: diagnostic.to_string(),
                    }),
            );
        }
    }
    let notes = &told.notes;
    if built_none && diagnostics.is_empty() {
        let why: Vec<&str> = (notes.iter())
            .filter_map(|n| n.strip_prefix(op.file.as_str())?.strip_prefix(": "))
            .collect();
        diagnostics.push(Diagnostic::new(
            &op.file,
            "variants",
            format!(
                "no shader of `{}.{}` can be built, so every call would fail:\n  {}",
                op.domain,
                op.name,
                why.join("\n  ")
            ),
        ));
    }
    // One template error shows up once per combination; report each distinct error once.
    let mut seen = BTreeSet::new();
    diagnostics.0.retain(|d| seen.insert(d.to_string()));
    diagnostics.into_result(Built { shaders, left_out })
}

/// The most combinations a warning lists by their values.
const LISTED: usize = 6;

/// One warning for a pass some of whose combinations are left out: how many, which values,
/// and the first error at its template line.
fn left_out_warning(
    op: &Op,
    v: usize,
    p: usize,
    total: usize,
    failures: &[(Combination, Diagnostic)],
) -> String {
    let mut which: Vec<String> = failures
        .iter()
        .take(LISTED)
        .map(|(c, _)| format!("({})", c.describe()))
        .collect();
    if failures.len() > LISTED {
        which.push(format!("and {} more", failures.len() - LISTED));
    }
    let first = failures
        .first()
        .map(|(_, d)| d.to_string())
        .unwrap_or_default();
    format!(
        "{}: {}: {} of the pass's {total} static combinations are not built, as they do not render or validate: {}; a call that selects one fails with its error (strict generation makes this an error). The first:\n{}",
        op.file,
        pass_path(op, v, p),
        failures.len(),
        which.join(", "),
        first.replace('\n', "\n  "),
    )
}

/// A binding whose element type disagrees with its tensor's dtype under `combination`.
fn element_mismatch(
    op: &Op,
    bindings: &[prelude::ResolvedBinding<'_>],
    combination: &Combination,
) -> Option<String> {
    bindings.iter().find_map(|binding| {
        let (model::BindingTarget::Tensor(t), Some(element)) =
            (&binding.binding.target, binding.element)
        else {
            return None;
        };
        let tensor = op.tensors().nth(*t)?;
        let storage = match (&tensor.storage, &tensor.dtype) {
            (model::Storage::U32Checked, _) => Some(model::DType::U32),
            (_, model::DTypeRef::Fixed(d)) => Some(*d),
            (_, model::DTypeRef::Var(var)) => combination.dtypes.get(var).copied(),
        }?;
        // An `int8` tensor is stored in `i32` words, a `uint8` one in `u32` words: a binding
        // agrees with its tensor when both name the same WGSL scalar. A float16 tensor may
        // also be seen as `u32` words of two halves each (the first in the low bits), which
        // lets a kernel move 16 bytes a load through `vec4<u32>`; `unpack2x16float` unpacks
        // them (naga 30 mistypes `bitcast` between `u32` and `vec2<f16>`).
        let agrees = storage.wgsl_name() == element.wgsl_name()
            || (storage == model::DType::F16 && element == model::DType::U32);
        (!agrees).then(|| {
            let words = if storage == model::DType::F16 {
                " (or as u32 words of two halves)"
            } else {
                ""
            };
            format!(
                "binding `{}` has element type {} but tensor `{}` is stored as {}{words}",
                binding.binding.name,
                element.wgsl_name(),
                tensor.role,
                storage.wgsl_name()
            )
        })
    })
}

fn shader(
    op: &Op,
    env: &minijinja::Environment<'static>,
    v: usize,
    p: usize,
    combination: Combination,
    translate: bool,
) -> Result<Shader, Diagnostic> {
    let variant = &op.variants[v];
    let pass = &variant.passes[p];
    let file_name = file_name(&variant.id, &pass.id, &combination);
    let where_ = || format!("{} ({})", pass_path(op, v, p), combination.describe());
    let bindings = prelude::resolve_bindings(pass, &combination)
        .map_err(|m| Diagnostic::new(&op.file, where_(), m))?;
    if let Some(mismatch) = element_mismatch(op, &bindings, &combination) {
        return Err(Diagnostic::new(&op.file, where_(), mismatch));
    }
    let Rendered {
        text,
        f16,
        wrote_subgroups,
    } = render_pass(op, env, v, p, &combination, &bindings, TextFor::Browser)?;
    let lower = |text: &str| {
        subgroup_matrix::lower(text).map_err(|m| {
            Diagnostic::new(
                &pass.template,
                where_(),
                format!("Chromium's subgroup matrices cannot be lowered to naga's: {m}"),
            )
        })
    };
    // A shader with Chromium's subgroup matrices is rendered a second time for naga, whose
    // cooperative matrices take more (`TextFor`), and that text is lowered; browsers get the
    // first.
    let (text, chromium_text, text_for) = match lower(&text)? {
        None => (text, None, TextFor::Browser),
        Some(_) => {
            let native = render_pass(op, env, v, p, &combination, &bindings, TextFor::Naga)?;
            match lower(&native.text)? {
                Some(lowered) => (lowered.text, Some(text), TextFor::Naga),
                None => {
                    return Err(Diagnostic::new(
                        &pass.template,
                        where_(),
                        "the text rendered for naga (`env.wgsl.subgroupMatrixVectorPointers`) has no subgroup matrices, where the browser's has",
                    ));
                }
            }
        }
    };
    let (module, info, mut reflection) = validate::validate(&text, f16, &combination.features)
        .map_err(|invalid| {
            let at = invalid.line.and_then(|line| {
                let (marked, names) = source_map::marked_environment(env);
                let rendered =
                    render_pass(op, &marked, v, p, &combination, &bindings, text_for).ok()?;
                source_map::locate(&rendered.text, line, &names, env)
            });
            let message = format!("rendered shader does not validate:\n{}", invalid.message);
            match at {
                // The template line that wrote the offending text; naga's excerpt of the
                // rendered shader stays in the message.
                Some(at) => {
                    let column = at.text.len() - at.text.trim_start().len() + 1;
                    Diagnostic::new(
                        &at.template,
                        format!("line {}", at.line),
                        format!("{}: {message}", where_()),
                    )
                    .at(&at.text, column)
                }
                None => Diagnostic::new(&pass.template, where_(), message),
            }
        })?;
    let problems = validate::cross_check(&module, &info, &bindings, &mut reflection);
    if !problems.is_empty() {
        return Err(Diagnostic::new(
            &pass.template,
            where_(),
            format!(
                "the shader disagrees with the manifest's bindings:\n  {}",
                problems.join("\n  ")
            ),
        ));
    }
    check_workgroup_size(op, pass, &reflection)
        .map_err(|m| Diagnostic::new(&pass.template, where_(), m))?;
    let overrides: Vec<OverrideSpec> = dynamic_values(variant, pass)
        .map(|value| {
            let wgsl_type = value.override_type.wgsl();
            let representative = model::domains::sample(op, variant, &value.expr.ir)
                .and_then(|sample| match sample {
                    Value::Int(i) => Some(i as f64),
                    Value::Float(f) => Some(f),
                    Value::Bool(b) => Some(f64::from(u8::from(b))),
                    _ => None,
                })
                .unwrap_or_else(|| representative_override(wgsl_type));
            OverrideSpec {
                name: op.override_name(&value.name),
                wgsl_type,
                representative,
            }
        })
        .collect();
    let subgroups = combination.features.contains("subgroups") || wrote_subgroups;
    let subgroup_matrix_configs = subgroup_matrix::configs(&module, &info);
    let uses = targets::Uses {
        f16,
        subgroups,
        cooperative_matrix: chromium_text.is_some(),
    };
    let translations = if translate {
        targets::translate(&module, &info, &overrides, uses).map_err(|m| {
            Diagnostic::new(
                &pass.template,
                where_(),
                format!("rendered shader `{file_name}` does not translate:\n{m}"),
            )
        })?
    } else {
        Translations::default()
    };
    let least_sizes = binding_sizes::least_sizes(&module, &info, reflection.entry_index);
    let binding_layouts = bindings
        .iter()
        .map(|b| BindingLayout {
            index: b.index,
            access: b.binding.access,
            least_size: least_sizes
                .iter()
                .find(|(index, _)| *index == b.index)
                .map_or(0, |(_, size)| *size),
            uniform_size: reflection
                .uniform_sizes
                .iter()
                .find(|(index, _)| *index == b.index)
                .map(|(_, size)| *size),
        })
        .collect();
    let digest = Sha256::digest(text.as_bytes());
    let digest: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let uniform_size = reflection.uniform_sizes.first().map(|(_, size)| *size);
    let mut features: Vec<String> = combination.features.iter().cloned().collect();
    if f16 {
        features.push("shader-f16".to_owned());
    }
    features.sort();
    Ok(Shader {
        variant: v,
        pass: p,
        combination,
        file_name,
        text,
        digest,
        uniform_size,
        features,
        same_as: None,
        web_enables: if subgroups { WEB_SUBGROUPS_ENABLE } else { "" },
        chromium_text,
        subgroup_matrix_configs,
        overrides,
        bindings: binding_layouts,
        translations,
    })
}

/// A literal `@workgroup_size` must equal the dispatch's static `workgroupSize`.
fn check_workgroup_size(
    op: &Op,
    pass: &model::Pass,
    reflection: &validate::Reflection,
) -> Result<(), String> {
    let (Dispatch::Threads { workgroup_size, .. } | Dispatch::GridStride { workgroup_size, .. }) =
        &pass.dispatch
    else {
        return Ok(());
    };
    let Some(size) = reflection.workgroup_size else {
        return Ok(());
    };
    let symbols = workgroup_size.ir.symbols();
    if !symbols
        .iter()
        .all(|s| matches!(s, crate::expr::Symbol::Tunable(_)))
    {
        return Ok(());
    }
    let env = TunableEnv(op);
    let expected = crate::expr::eval(&workgroup_size.ir, &env).map_err(|e| e.message)?;
    let actual = i64::from(size[0]) * i64::from(size[1]) * i64::from(size[2]);
    if expected != Value::Int(actual) {
        return Err(format!(
            "`@workgroup_size` is {size:?} ({actual} invocations) but the dispatch's workgroupSize `{}` is {expected:?}",
            workgroup_size.source
        ));
    }
    Ok(())
}

struct TunableEnv<'a>(&'a Op);

impl crate::expr::Env for TunableEnv<'_> {
    fn get(&self, symbol: &crate::expr::Symbol) -> Result<Option<Value>, crate::expr::EvalError> {
        Ok(match symbol {
            crate::expr::Symbol::Tunable(name) => self.0.tunable(name),
            _ => None,
        })
    }

    fn has_feature(&self, _: &str) -> bool {
        false
    }
}

/// `variant.pass.name-value...wgsl`, readable and unique per combination.
fn file_name(variant: &str, pass: &str, combination: &Combination) -> String {
    let mut name = format!("{variant}.{pass}");
    for (key, value) in &combination.values {
        name.push_str(&format!(".{key}-{}", model::value_text(value)));
    }
    // A value equal to the dtype's WGSL name already spells it, unless another dtype shares
    // that name (`int8`'s `i32` is also `int32`'s): then the dtype's own name tells them apart.
    for (var, dtype) in &combination.dtypes {
        let spelled = dtype.unique_name() == dtype.wgsl_name()
            && combination
                .values
                .iter()
                .any(|(_, v)| *v == Value::Dtype(dtype.wgsl_name().to_owned()));
        if !spelled {
            name.push_str(&format!(".{var}-{}", dtype.unique_name()));
        }
    }
    // A subgroup-matrix configuration goes with Chromium's feature, which is named; writing
    // the configurations too makes names longer than file systems take.
    let named = (combination.features.iter())
        .filter(|f| kernel_abi::device::SubgroupMatrixConfig::from_feature_name(f).is_none());
    for feature in named {
        name.push_str(&format!(".{feature}"));
    }
    name.push_str(".wgsl");
    name
}
