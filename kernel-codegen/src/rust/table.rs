//! An op's shader table: the `<op>.shaders` file (the WGSL of every distinct shader, one after
//! the other) and the module's `static SHADERS`, Rust data that names each shader's pass, byte
//! range of that file, digest, features and the keys that select it
//! (`kernel_runtime::shaders`). The key of a pass is decided here once, for both the table and
//! the code that computes it per call (`plan.rs`).

use std::collections::BTreeSet;

use proc_macro2::{Literal, TokenStream};
use quote::{format_ident, quote};

use super::eval::{EnvScope, lower};
use super::{EmitError, OpInput, ident};
use crate::expr::{Ir, IrKind, Symbol, Value};
use crate::model::{self, Combination, Op, Pass, TemplateValue, Variant};
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

/// Whether `ir` is a literal once `derive` entries are read through.
fn constant(op: &Op, ir: &Ir, depth: usize) -> bool {
    match &ir.kind {
        IrKind::Sym(Symbol::Derived(name)) if depth < 16 => op
            .derived(name)
            .is_some_and(|d| constant(op, &super::fold::fold(&d.expr.ir, op), depth + 1)),
        _ => is_literal(ir),
    }
}

/// Whether `ir` reads the device (its features, limits or subgroup sizes), which no key
/// column holds.
fn reads_device(ir: &Ir) -> bool {
    let mut device = false;
    ir.walk(&mut |node| {
        device |= matches!(
            node.kind,
            IrKind::Feature(_) | IrKind::Sym(Symbol::Limit(_) | Symbol::AdapterInfo(_))
        );
    });
    device
}

/// A static combination of a pass as its key sees it: the digest of the text it renders, or
/// empty where it is left out (every left-out combination of a pass alike, none like a built
/// one, so that a key never selects a shader for a combination that has none).
pub(super) struct Keyed<'a> {
    combination: &'a Combination,
    text: &'a str,
    /// The index of its shader in the op's shaders, or of its entry in the left-out ones.
    index: Result<usize, usize>,
}

/// Whether the combinations of a pass that agree on the `keyed` values and their dtypes
/// render one text.
fn selects_by(keyed: &[bool], combinations: &[Keyed<'_>]) -> bool {
    let mut texts = std::collections::BTreeMap::new();
    combinations.iter().all(|c| {
        let kept: Vec<_> = c
            .combination
            .values
            .iter()
            .zip(keyed)
            .filter(|(_, keyed)| **keyed)
            .map(|((_, value), _)| value.key())
            .collect();
        let key = (kept, &c.combination.dtypes);
        *texts.entry(key).or_insert(c.text) == c.text
    })
}

/// Every static combination of pass `p` of variant `v`: the shaders' (those sharing a text
/// too), then those left out.
pub(super) fn pass_combinations<'a>(input: &OpInput<'a>, v: usize, p: usize) -> Vec<Keyed<'a>> {
    let shaders = input.shaders.iter().enumerate();
    let built = shaders
        .filter(|(_, s)| s.variant == v && s.pass == p)
        .map(|(i, s)| Keyed {
            combination: &s.combination,
            text: &s.digest,
            index: Ok(i),
        });
    let left_out = input.left_out.iter().enumerate();
    let left_out = left_out
        .filter(|(_, l)| l.variant == v && l.pass == p)
        .map(|(i, l)| Keyed {
            combination: &l.combination,
            text: "",
            index: Err(i),
        });
    built.chain(left_out).collect()
}

pub(super) fn pass_key<'a>(
    op: &Op,
    variant: &'a Variant,
    pass: &'a Pass,
    combinations: &[Keyed<'_>],
) -> PassKey<'a> {
    // A value the typed API folds to a literal, directly or through `derive` entries, is the
    // same for every call; one computed from another column's symbol alone (`dtypes.T ==
    // "f16"` beside `dtypes.T`) adds nothing to it. Neither is a key column.
    let statics: Vec<&TemplateValue> = model::static_values(variant, pass).collect();
    let folded: Vec<Ir> = statics
        .iter()
        .map(|s| super::fold::fold(&s.expr.ir, op))
        .collect();
    let mut keyed: Vec<bool> = folded.iter().map(|ir| !constant(op, ir, 0)).collect();
    let reads: Vec<Option<&Symbol>> = folded
        .iter()
        .zip(&keyed)
        .map(|(ir, keyed)| match &ir.kind {
            IrKind::Sym(symbol) if *keyed => Some(symbol),
            _ => None,
        })
        .collect();
    let derivable: Vec<bool> = folded
        .iter()
        .zip(&reads)
        .map(|(ir, read)| {
            let symbols = ir.symbols();
            read.is_none()
                && !reads_device(ir)
                && symbols.len() == 1
                && symbols
                    .iter()
                    .all(|s| reads.iter().flatten().any(|r| *r == s))
        })
        .collect();
    let trimmed: Vec<bool> = keyed
        .iter()
        .zip(&derivable)
        .map(|(keyed, derivable)| *keyed && !derivable)
        .collect();
    // Only where the shaders stay told apart: the combinations that agree on what is left
    // must render the same text.
    if selects_by(&trimmed, combinations) {
        keyed = trimmed;
    }
    let values = statics
        .iter()
        .zip(&keyed)
        .filter(|(_, keyed)| **keyed)
        .map(|(s, _)| *s)
        .collect();
    let generic_vars = super::api::generic_type_vars(op);
    let mut dtypes_by_values = std::collections::BTreeMap::new();
    let ambiguous = combinations.iter().any(|c| {
        let values = Combination::values_key(&c.combination.values);
        *dtypes_by_values
            .entry(values)
            .or_insert(&c.combination.dtypes)
            != &c.combination.dtypes
    });
    let dtype_vars = combinations
        .iter()
        .filter(|_| ambiguous)
        .flat_map(|c| c.combination.dtypes.keys())
        .filter(|var| generic_vars.contains(&var.as_str()))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    PassKey {
        keyed,
        values,
        dtype_vars,
    }
}

impl PassKey<'_> {
    /// The expressions a call evaluates, lowered: the plan's values that make up the key.
    pub(super) fn lowered(&self, scope: &EnvScope<'_>) -> Vec<TokenStream> {
        let mut keys: Vec<TokenStream> = self
            .values
            .iter()
            .map(|s| lower(&s.expr.ir, scope))
            .collect();
        for var in &self.dtype_vars {
            let field = ident(&model::snake_ident(var).to_ascii_lowercase());
            // Not the WGSL name, which `int8` shares with `int32`.
            keys.push(quote!(env.dtypes.#field.unique_name()));
        }
        keys
    }

    /// The values of one combination's key, column by column.
    fn values(&self, combination: &Combination) -> Result<Vec<KeyValue>, EmitError> {
        let mut values = Vec::new();
        for ((name, value), keyed) in combination.values.iter().zip(&self.keyed) {
            if *keyed {
                values.push(
                    KeyValue::of(value).ok_or_else(|| EmitError::UnkeyableValue {
                        name: name.clone(),
                        value: value.to_string(),
                    })?,
                );
            }
        }
        for var in &self.dtype_vars {
            let name = combination.dtypes.get(var).map_or("", |d| d.unique_name());
            values.push(KeyValue::Str(name.to_owned()));
        }
        Ok(values)
    }
}

/// A value of a key column, as `kernel_runtime::shaders::Key` holds it.
#[derive(Debug, Clone, PartialEq)]
enum KeyValue {
    Bool(bool),
    Int(i64),
    Str(String),
    Float(u64),
}

impl KeyValue {
    fn of(value: &Value) -> Option<Self> {
        Some(match value {
            Value::Bool(b) => KeyValue::Bool(*b),
            Value::Int(i) => KeyValue::Int(*i),
            Value::Str(s) | Value::Dtype(s) => KeyValue::Str(s.clone()),
            Value::Float(f) => KeyValue::Float(f.to_bits()),
            Value::List(_) => return None,
        })
    }

    /// The `Key` constructor, which the table imports by name.
    fn constructor(&self) -> &'static str {
        match self {
            KeyValue::Bool(_) => "Bool",
            KeyValue::Int(_) => "Int",
            KeyValue::Str(_) => "Str",
            KeyValue::Float(_) => "Float",
        }
    }

    fn tokens(&self) -> TokenStream {
        match self {
            KeyValue::Bool(b) => quote!(Bool(#b)),
            KeyValue::Int(i) => {
                let literal = Literal::i64_unsuffixed(*i);
                quote!(Int(#literal))
            }
            KeyValue::Str(s) => quote!(Str(#s)),
            KeyValue::Float(bits) => {
                let literal = Literal::u64_unsuffixed(*bits);
                quote!(Float(#literal))
            }
        }
    }
}

/// A pass's key columns (the values each takes, in first-seen order) and every combination's
/// key number over them (the first column most significant), by shader index (`Ok`) or
/// left-out index (`Err`).
struct PassKeys {
    columns: Vec<Vec<KeyValue>>,
    numbers: Vec<(Result<usize, usize>, u64)>,
}

fn pass_keys(input: &OpInput<'_>, v: usize, p: usize) -> Result<PassKeys, EmitError> {
    let op = input.op;
    let variant = &op.variants[v];
    let combinations = pass_combinations(input, v, p);
    let key = pass_key(op, variant, &variant.passes[p], &combinations);
    let mut keys = Vec::new();
    for c in &combinations {
        keys.push((c.index, key.values(c.combination)?));
    }
    let mut columns: Vec<Vec<KeyValue>> = Vec::new();
    for (_, values) in &keys {
        columns.resize_with(values.len(), Vec::new);
        for (column, value) in columns.iter_mut().zip(values) {
            if !column.contains(value) {
                column.push(value.clone());
            }
        }
    }
    let mut numbers = Vec::new();
    for (i, values) in keys {
        let mut number: u64 = 0;
        for (column, value) in columns.iter().zip(&values) {
            let position = column.iter().position(|c| c == value).unwrap_or_default();
            number = number
                .checked_mul(column.len() as u64)
                .and_then(|n| n.checked_add(position as u64))
                .ok_or_else(|| EmitError::KeyTooWide {
                    variant: variant.id.clone(),
                    pass: variant.passes[p].id.clone(),
                })?;
        }
        numbers.push((i, number));
    }
    Ok(PassKeys { columns, numbers })
}

/// Pass `p` of variant `v` as the table numbers passes: variant by variant, in order.
pub(super) fn pass_index(op: &Op, v: usize, p: usize) -> usize {
    op.variants[..v]
        .iter()
        .map(|v| v.passes.len())
        .sum::<usize>()
        + p
}

/// Where one distinct shader's WGSL lies in the `<op>.shaders` file.
struct Section<'s> {
    shader: usize,
    name: &'s str,
    start: usize,
    end: usize,
}

fn file_header(op: &Op) -> String {
    format!(
        "// {mark} from {}.\n// The WGSL of every shader of {}, one after the other, each after a comment line with its name; the op's module names each one's byte range.\n",
        op.file,
        op.qualified_name(),
        mark = crate::GENERATED_MARK,
    )
}

/// The distinct shaders of the op (passes in table order) and where each one's text lies.
fn sections<'s>(op: &Op, shaders: &'s [Shader]) -> Vec<Section<'s>> {
    let mut offset = file_header(op).len();
    let mut out = Vec::new();
    for (v, variant) in op.variants.iter().enumerate() {
        for p in 0..variant.passes.len() {
            for (i, shader) in shaders.iter().enumerate() {
                if shader.variant != v || shader.pass != p || shader.same_as.is_some() {
                    continue;
                }
                let name = shader.file_name.trim_end_matches(".wgsl");
                offset += section_comment(name).len();
                let start = offset;
                offset += shader.text.len();
                out.push(Section {
                    shader: i,
                    name,
                    start,
                    end: offset,
                });
                if !shader.text.ends_with('\n') {
                    offset += 1;
                }
            }
        }
    }
    out
}

fn section_comment(name: &str) -> String {
    format!("// {}\n", name.replace(['\n', '\r'], " "))
}

/// The `<op>.shaders` file: the WGSL of each distinct shader, after a comment line naming it.
pub fn shader_table(op: &Op, shaders: &[Shader]) -> String {
    let mut out = file_header(op);
    for section in sections(op, shaders) {
        let text = &shaders[section.shader].text;
        out.push_str(&section_comment(section.name));
        debug_assert_eq!(out.len(), section.start);
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// The module `shader_table` with `static SHADERS`: the op's passes with their key columns,
/// and per distinct shader one row (pass, byte range of the `.shaders` file, digest, features,
/// the numbers of the keys that select it).
pub(super) fn table_static(input: &OpInput<'_>) -> Result<TokenStream, EmitError> {
    let op = input.op;
    let shaders = input.shaders;
    let file = format!("{}.shaders", op.module);
    let mut named: BTreeSet<&'static str> = BTreeSet::new();
    let mut passes = Vec::new();
    // Per distinct shader (the first of those sharing its text), the numbers of its keys.
    let mut numbers: std::collections::BTreeMap<usize, Vec<Literal>> = Default::default();
    let mut left_out = Vec::new();
    for (v, variant) in op.variants.iter().enumerate() {
        for (p, pass) in variant.passes.iter().enumerate() {
            let overrides: Vec<String> = model::dynamic_values(variant, pass)
                .map(|d| op.override_name(&d.name))
                .collect();
            let keys = pass_keys(input, v, p)?;
            let columns = keys.columns.iter().map(|column| {
                named.extend(column.iter().map(KeyValue::constructor));
                let values = column.iter().map(KeyValue::tokens);
                quote!(&[#(#values),*])
            });
            let columns: Vec<TokenStream> = columns.collect();
            let index = Literal::usize_unsuffixed(pass_index(op, v, p));
            for (i, number) in keys.numbers {
                let number = Literal::u64_unsuffixed(number);
                match i {
                    Ok(i) => {
                        let first = shaders[i].same_as.unwrap_or(i);
                        numbers.entry(first).or_default().push(number);
                    }
                    Err(i) => {
                        let entry = &input.left_out[i];
                        let combination = entry.combination.describe();
                        let reason = &entry.reason;
                        left_out.push(quote!((#index, #number, #combination, #reason)));
                    }
                }
            }
            let (id, pass_id, label) = (&variant.id, &pass.id, &pass.label);
            passes.push(quote! {
                Pass { variant: #id, pass: #pass_id, label: #label, entry_point: "main", overrides: &[#(#overrides),*], key: &[#(#columns),*] }
            });
        }
    }
    let mut rows = Vec::new();
    let mut sizes: Vec<Vec<u32>> = Vec::new();
    for section in sections(op, shaders) {
        let shader = &shaders[section.shader];
        let keys = numbers.remove(&section.shader).unwrap_or_default();
        let index = Literal::usize_unsuffixed(pass_index(op, shader.variant, shader.pass));
        let start = Literal::usize_unsuffixed(section.start);
        let end = Literal::usize_unsuffixed(section.end);
        let digest = &shader.digest;
        let mut bits = 0u8;
        for (feature, bit) in kernel_abi::device::ROW_FEATURE_BITS {
            if shader.features.iter().any(|f| f == feature) {
                bits |= bit;
            }
        }
        let features = Literal::u8_unsuffixed(bits);
        // By binding index: the least bytes each binding must hold (0 where none is bound).
        let slots = (shader.bindings.iter()).map(|b| b.index as usize + 1).max();
        let mut least = vec![0u32; slots.unwrap_or_default()];
        for binding in &shader.bindings {
            least[binding.index as usize] = binding.least_size;
        }
        let at = match sizes.iter().position(|s| *s == least) {
            Some(at) => at,
            None => {
                sizes.push(least);
                sizes.len() - 1
            }
        };
        let at = Literal::usize_unsuffixed(at);
        rows.push(quote!((#index, #start, #end, #digest, #features, &[#(#keys),*], #at)));
    }
    let sizes = sizes.iter().map(|list| {
        let list = list.iter().copied().map(Literal::u32_unsuffixed);
        quote!(&[#(#list),*])
    });
    let constructors: Vec<_> = ["Bool", "Float", "Int", "Str"]
        .into_iter()
        .filter(|k| named.contains(k))
        .map(|k| format_ident!("{k}"))
        .collect();
    let key_use = (!constructors.is_empty())
        .then(|| quote!(use super::rt::shaders::Key::{#(#constructors),*};));
    let doc = format!(" The op's pre-rendered shaders; their WGSL is `{file}`.");
    // Only where there are any, so that the tables of ops built whole stay as they were.
    let table = quote!(ShaderTable::new(
        super::OP_NAME,
        PASSES,
        include_str!(#file),
        ROWS,
        SIZES
    ));
    let (left_out_use, left_out_const, table) = if left_out.is_empty() {
        (None, None, table)
    } else {
        (
            Some(quote!(
                use super::rt::shaders::LeftOut;
            )),
            Some(quote! {
                /// The static combinations not built (they did not render or validate): their
                /// pass, key number, values and why.
                const LEFT_OUT: &[LeftOut] = &[#(#left_out),*];
            }),
            quote!(ShaderTable::with_left_out(
                super::OP_NAME,
                PASSES,
                include_str!(#file),
                ROWS,
                SIZES,
                LEFT_OUT
            )),
        )
    };
    Ok(quote! {
        #[doc = #doc]
        mod shader_table {
            #key_use
            use super::rt::shaders::{Pass, Row, ShaderTable};
            #left_out_use

            /// The op's passes, variant by variant, as the rows number them, with the values
            /// each column of their keys can take.
            const PASSES: &[Pass] = &[#(#passes),*];

            /// Per distinct shader: its pass, the byte range of its WGSL, its digest, its
            /// features (1: `shader-f16`, 2: `subgroups`, 4: subgroup matrices), the numbers of the keys that
            /// select it, and which list of `SIZES` is its.
            const ROWS: &[Row] = &[#(#rows),*];

            /// Per binding index, the least bytes a buffer bound there must hold: one list per
            /// set of shaders that agree.
            const SIZES: &[&[u32]] = &[#(#sizes),*];
            #left_out_const

            /// Every distinct shader of the op.
            pub(super) static SHADERS: ShaderTable = #table;
        }
        use shader_table::SHADERS;
    })
}
