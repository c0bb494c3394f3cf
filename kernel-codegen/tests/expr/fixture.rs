//! The one fixed scope, environment and lowering scope every `.test` case runs in, whichever
//! dialect its file is written in (the dialect decides only how the expression parses and
//! checks).
//!
//! Seed names follow the seed manifests (BiasSoftmax and MRotaryEmbedding: tensors by role,
//! attributes, `derive` entries) with values chosen so that their contracts hold, plus a few
//! made up for edge cases (`x`, `empty`, `zero`, `big`, `attrs.optional`, `attrs.gain`, `half`,
//! `broken`, `ratio`). `schemaVersion: 1` names follow the corpus packages (scalar `args`,
//! tensors by arg name with `present.*` and `tensorDtypes.*`, `device.adapterInfo.*`), with
//! values chosen to exercise each rule: a required `u32` (`count`), optional `u32`s absent
//! (`period`) and given (`srcStart`), a zero (`zero`), `f32`s (`eps` given, `scale` absent),
//! `bool`s (`flag`, `optFlag` absent), strings (`mode` with `oneOf`, `label` empty), an absent
//! optional tensor (`maskT`) and a rank-0 one (`scalarT`); its variant constants are
//! [`CONSTANTS`].

use std::collections::BTreeMap;

use kernel_codegen::expr::{
    self, Env, EvalError, Ir, LowerScope, Scope, Symbol, Type, Unresolved, Value, check::Dialect,
};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// `derive` entries of the seed manifests (copied so the tests do not move when they change),
/// and a few extra ones, checked in order in the seed dialect.
pub const DERIVED: &[(&str, &str)] = &[
    // BiasSoftmax
    (
        "axisNorm",
        "attrs.axis if attrs.axis >= 0 else attrs.axis + ranks.data",
    ),
    ("batchCount", "outer(shapes.data, axisNorm)"),
    (
        "blockSize",
        "dim(shapes.data, axisNorm) * inner(shapes.data, axisNorm)",
    ),
    ("biasBlockCount", "numel(shapes.bias) / max(1, blockSize)"),
    (
        "biasContract",
        "(numel(shapes.data) == 0 and numel(shapes.bias) == 0) or (blockSize > 0 and biasBlockCount > 0 and numel(shapes.bias) % blockSize == 0 and biasBlockCount <= batchCount and batchCount % biasBlockCount == 0)",
    ),
    // MRotaryEmbedding
    (
        "rank3HeadSize",
        "dim(shapes.input, 2) / attrs.num_heads if attrs.num_heads is defined and attrs.num_heads > 0 else 0",
    ),
    (
        "headSize",
        "rank3HeadSize if ranks.input == 3 else dim(shapes.input, 3)",
    ),
    (
        "effectiveRotaryDim",
        "attrs.rotary_embedding_dim if attrs.rotary_embedding_dim != 0 else headSize",
    ),
    ("tasksPerHead", "ceilDiv(headSize, 2)"),
    (
        "pairCount",
        "(numel(shapes.input) / max(1, headSize)) * tasksPerHead",
    ),
    (
        "pairDispatchOk",
        "ceilDiv(pairCount, tunables.WORKGROUP_SIZE) <= device.limits.maxComputeWorkgroupsPerDimension * device.limits.maxComputeWorkgroupsPerDimension",
    ),
    ("halfRotaryDim", "dim(shapes.cos_cache, 1)"),
    (
        "sectionsDefined",
        "attrs.mrope_section is defined and (attrs.mrope_section | length) == 3",
    ),
    (
        "sectionsValid",
        "sectionsDefined and attrs.mrope_section[0] >= 0 and attrs.mrope_section[1] >= 0 and attrs.mrope_section[2] >= 0 and attrs.mrope_section[0] + attrs.mrope_section[1] + attrs.mrope_section[2] == halfRotaryDim",
    ),
    (
        "commonContract",
        "f16Ok(dtypes.T) and sameShape(shapes.input, shapes.output) and (attrs.interleaved == 0 or attrs.interleaved == 1) and (attrs.mrope_layout == 0 or attrs.mrope_layout == 1) and attrs.num_heads >= 0 and attrs.rotary_embedding_dim >= 0 and (attrs.rotary_embedding_dim == 0 or attrs.num_heads > 0) and sameShape(shapes.cos_cache, shapes.sin_cache) and ranks.cos_cache == 2 and ranks.sin_cache == 2 and sectionsValid and ranks.position_ids == 3 and dim(shapes.position_ids, 0) == 3 and dim(shapes.position_ids, 1) == dim(shapes.input, 0) and dim(shapes.position_ids, 2) == dim(shapes.input, 1 if ranks.input == 3 else 2)",
    ),
    (
        "rank3Contract",
        "commonContract and ranks.input == 3 and ranks.output == 3 and attrs.num_heads is defined and attrs.num_heads >= 1 and dim(shapes.input, 2) % attrs.num_heads == 0 and rank3HeadSize > 0 and effectiveRotaryDim % 2 == 0 and (attrs.rotary_embedding_dim == 0 or attrs.rotary_embedding_dim <= rank3HeadSize) and halfRotaryDim * 2 == effectiveRotaryDim",
    ),
    (
        "rank4Contract",
        "commonContract and ranks.input == 4 and ranks.output == 4 and dim(shapes.input, 3) > 0 and effectiveRotaryDim % 2 == 0 and (attrs.rotary_embedding_dim == 0 or attrs.rotary_embedding_dim <= dim(shapes.input, 3)) and halfRotaryDim * 2 == effectiveRotaryDim",
    ),
    // Extra names for edge cases.
    ("half", "dim(shapes.x, 2) / 2"),
    ("broken", "dim(shapes.x, 7)"),
    ("ratio", "attrs.scale * 2"),
    ("sizes", "[dim(shapes.x, 0), half]"),
];

/// `schemaVersion: 1` variant constants (bare names), checked in order in that dialect (each
/// may use the ones before it).
pub const CONSTANTS: &[(&str, &str)] = &[
    ("usesF16", "dtypes.X == \"f16\" or dtypes.Y == \"f16\""),
    ("CHUNKS", "8 / args.bits"),
    ("halfDim", "args.dim // 2"),
    ("vecType", "\"vec4<\" ~ dtypes.Y ~ \">\""),
    ("wg", "min(256, pow2ceil(args.dim / 4))"),
];

/// A scalar argument: its type, value (`None`: not given) and whether it is optional.
struct Arg {
    ty: Type,
    value: Option<Value>,
    optional: bool,
}

/// A tensor that was given (the map holds `None` for an optional one that was not).
struct Tensor {
    shape: Vec<i64>,
    dtype: &'static str,
}

/// The fixed environment, read in one dialect.
pub struct Fixture {
    dialect: Dialect,
    attrs: BTreeMap<&'static str, (Type, Option<Value>)>,
    args: BTreeMap<&'static str, Arg>,
    tensors: BTreeMap<&'static str, Option<Tensor>>,
    dtypes: BTreeMap<&'static str, &'static str>,
    tunables: BTreeMap<&'static str, i64>,
    limits: BTreeMap<&'static str, i64>,
    adapter_info: BTreeMap<&'static str, Option<i64>>,
    features: Vec<&'static str>,
    /// Checked `derive` entries and constants, filled in table order (each may use the ones
    /// before it).
    named: BTreeMap<&'static str, Result<Ir, String>>,
}

impl Fixture {
    pub fn new(dialect: Dialect) -> Self {
        let tensor = |shape: &[i64], dtype| {
            Some(Tensor {
                shape: shape.to_vec(),
                dtype,
            })
        };
        let tensors = BTreeMap::from([
            ("bias", tensor(&[4, 8], "float32")),
            ("big", tensor(&[4_294_967_296, 4_294_967_296], "float32")),
            ("cos_cache", tensor(&[16, 64], "float16")),
            ("data", tensor(&[2, 4, 8], "float32")),
            ("empty", tensor(&[], "float32")),
            ("input", tensor(&[2, 3, 256], "float16")),
            ("output", tensor(&[2, 3, 256], "float16")),
            ("position_ids", tensor(&[3, 2, 3], "int64")),
            ("sin_cache", tensor(&[16, 64], "float16")),
            ("x", tensor(&[2, 3, 4], "float32")),
            ("zero", tensor(&[2, 0, 3], "float32")),
            ("xT", tensor(&[2, 3, 8], "float32")),
            ("yT", tensor(&[2, 3, 8], "float16")),
            ("wT", tensor(&[8], "float32")),
            ("scalarT", tensor(&[], "float32")),
            ("maskT", None),
        ]);
        let int = |v: i64| (Type::Int, Some(Value::Int(v)));
        let attrs = BTreeMap::from([
            ("axis", int(1)),
            ("flag", (Type::Bool, Some(Value::Bool(true)))),
            ("interleaved", int(0)),
            ("is_inner_broadcast", int(1)),
            ("is_packed_batching", int(0)),
            ("mrope_layout", int(0)),
            (
                "mrope_section",
                (Type::List, Some(Value::List(vec![16, 24, 24]))),
            ),
            ("num_heads", int(2)),
            ("optional", (Type::Int, None)),
            ("rotary_embedding_dim", int(0)),
            ("scale", (Type::Float, Some(Value::Float(0.5)))),
            // A Float attribute given as an Int, as JSON writes `1` for 1.0: the interpreter
            // promotes it.
            ("gain", (Type::Float, Some(Value::Int(1)))),
        ]);
        let arg = |ty, value, optional| Arg {
            ty,
            value,
            optional,
        };
        let int_arg = |v| arg(Type::Int, Some(Value::Int(v)), false);
        let args = BTreeMap::from([
            ("count", int_arg(8)),
            ("rows", int_arg(6)),
            ("dim", int_arg(64)),
            ("bits", int_arg(4)),
            ("zero", int_arg(0)),
            ("period", arg(Type::Int, None, true)),
            ("srcStart", arg(Type::Int, Some(Value::Int(12)), true)),
            ("eps", arg(Type::Float, Some(Value::Float(1e-6)), false)),
            ("scale", arg(Type::Float, None, true)),
            ("flag", arg(Type::Bool, Some(Value::Bool(true)), false)),
            ("optFlag", arg(Type::Bool, None, true)),
            (
                "mode",
                arg(Type::Str, Some(Value::Str("split-half".into())), false),
            ),
            (
                "label",
                arg(Type::Str, Some(Value::Str(String::new())), false),
            ),
        ]);
        let mut fixture = Self {
            dialect: Dialect::Seed,
            attrs,
            args,
            tensors,
            dtypes: BTreeMap::from([("M", "i64"), ("T", "f16"), ("X", "f32"), ("Y", "f16")]),
            tunables: BTreeMap::from([
                ("BLOCK_COLS", 2048),
                ("MAX_WORKGROUPS_X", 1024),
                ("WORKGROUP_SIZE", 256),
            ]),
            limits: BTreeMap::from([
                ("maxComputeInvocationsPerWorkgroup", 256),
                ("maxComputeWorkgroupsPerDimension", 65535),
            ]),
            adapter_info: BTreeMap::from([
                ("subgroupMaxSize", Some(64)),
                ("subgroupMinSize", Some(32)),
                // Known to the scope, not reported by this adapter.
                ("subgroupSizeHint", None),
            ]),
            features: vec!["subgroups"],
            named: BTreeMap::new(),
        };
        // Checked once, in order and in the dialect each table is written in, as the op model
        // does: resolving a name is then a lookup rather than a nested check.
        for (tables, table_dialect) in [(DERIVED, Dialect::Seed), (CONSTANTS, Dialect::V1)] {
            fixture.dialect = table_dialect;
            for (name, src) in tables {
                let ir = expr::parse_in(src, table_dialect)
                    .map_err(|e| format!("{name}: {}", e.message))
                    .and_then(|ast| {
                        expr::check(&ast, &fixture).map_err(|e| format!("{name}: {}", e[0].message))
                    });
                fixture.named.insert(name, ir);
            }
        }
        fixture.dialect = dialect;
        fixture
    }

    fn named(&self, name: &str) -> Result<&Ir, String> {
        match self.named.get(name) {
            Some(result) => result.as_ref().map_err(Clone::clone),
            None => {
                let known: Vec<&str> = DERIVED.iter().chain(CONSTANTS).map(|(n, _)| *n).collect();
                Err(format!(
                    "undefined name `{name}` (known: {})",
                    known.join(", ")
                ))
            }
        }
    }

    /// The tensor `name`, `Ok(None)` when it is optional and not given.
    fn tensor(&self, name: &str) -> Result<Option<&Tensor>, String> {
        self.tensors
            .get(name)
            .map(Option::as_ref)
            .ok_or_else(|| unknown("tensor", name, &self.tensors))
    }

    /// Whether `sym` may be undefined, so that the lowering reads it through `rt::expr::given`.
    fn optional(&self, sym: &Symbol) -> bool {
        match sym {
            Symbol::Arg(a) => self.args.get(a.as_str()).is_some_and(|a| a.optional),
            Symbol::Shape(t) | Symbol::Rank(t) | Symbol::TensorDtype(t) => {
                matches!(self.tensors.get(t.as_str()), Some(None))
            }
            Symbol::AdapterInfo(_) => true,
            _ => false,
        }
    }
}

fn unknown<V>(what: &str, name: &str, map: &BTreeMap<&'static str, V>) -> String {
    let known: Vec<&str> = map.keys().copied().collect();
    format!("unknown {what} `{name}` (known: {})", known.join(", "))
}

fn known<V>(
    what: &str,
    name: &str,
    map: &BTreeMap<&'static str, V>,
    ty: Type,
) -> Result<Type, String> {
    if map.contains_key(name) {
        Ok(ty)
    } else {
        Err(unknown(what, name, map))
    }
}

impl Scope for Fixture {
    fn resolve(&self, sym: &Symbol) -> Result<Type, Unresolved> {
        self.lookup(sym).map_err(Unresolved::Unknown)
    }

    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn string_values(&self, sym: &Symbol) -> Option<Vec<String>> {
        (sym == &Symbol::Arg("mode".into()))
            .then(|| vec!["interleaved".to_owned(), "split-half".to_owned()])
    }
}

impl Fixture {
    fn lookup(&self, sym: &Symbol) -> Result<Type, String> {
        match sym {
            Symbol::Attr(a) => self
                .attrs
                .get(a.as_str())
                .map(|(ty, _)| *ty)
                .ok_or_else(|| unknown("attribute", a, &self.attrs)),
            Symbol::Arg(a) => self
                .args
                .get(a.as_str())
                .map(|arg| arg.ty)
                .ok_or_else(|| unknown("argument", a, &self.args)),
            Symbol::Shape(t) => known("tensor", t, &self.tensors, Type::List),
            Symbol::Rank(t) => known("tensor", t, &self.tensors, Type::Int),
            Symbol::Present(t) => known("tensor", t, &self.tensors, Type::Bool),
            Symbol::TensorDtype(t) => known("tensor", t, &self.tensors, Type::Str),
            Symbol::Dtype(v) => known("type variable", v, &self.dtypes, Type::Dtype),
            Symbol::Tunable(t) => known("tunable", t, &self.tunables, Type::Int),
            Symbol::Limit(l) => known("WebGPU limit", l, &self.limits, Type::Int),
            Symbol::AdapterInfo(i) => known("adapter info", i, &self.adapter_info, Type::Int),
            Symbol::Derived(n) => self.named(n).map(|ir| ir.ty),
        }
    }
}

impl Env for Fixture {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        let missing = || EvalError::new(format!("fixture has no value for `{sym}`"));
        let tensor = |t: &str| self.tensor(t).map_err(EvalError::new);
        Ok(match sym {
            Symbol::Attr(a) => self.attrs.get(a.as_str()).ok_or_else(missing)?.1.clone(),
            Symbol::Arg(a) => self.args.get(a.as_str()).ok_or_else(missing)?.value.clone(),
            Symbol::Shape(t) => tensor(t)?.map(|t| Value::List(t.shape.clone())),
            Symbol::Rank(t) => match tensor(t)? {
                Some(t) => Some(Value::Int(
                    i64::try_from(t.shape.len()).map_err(|_| missing())?,
                )),
                None => None,
            },
            Symbol::Present(t) => Some(Value::Bool(tensor(t)?.is_some())),
            Symbol::TensorDtype(t) => tensor(t)?.map(|t| Value::Str(t.dtype.to_owned())),
            Symbol::Dtype(v) => Some(Value::Dtype(
                (*self.dtypes.get(v.as_str()).ok_or_else(missing)?).to_owned(),
            )),
            Symbol::Tunable(t) => Some(Value::Int(
                *self.tunables.get(t.as_str()).ok_or_else(missing)?,
            )),
            Symbol::Limit(l) => Some(Value::Int(
                *self.limits.get(l.as_str()).ok_or_else(missing)?,
            )),
            Symbol::AdapterInfo(i) => self
                .adapter_info
                .get(i.as_str())
                .ok_or_else(missing)?
                .map(Value::Int),
            Symbol::Derived(n) => {
                let ir = self.named(n).map_err(EvalError::new)?;
                Some(expr::eval(ir, self)?)
            }
        })
    }

    fn has_feature(&self, name: &str) -> bool {
        self.features.contains(&name)
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// Lowering names for the golden `lower =>` lines: short, readable paths. Values that may be
/// undefined read through `rt::expr::given`, as an emitter lowers them; an attribute may be
/// left out of a call, so `is defined` asks the environment.
pub struct TestLowerScope<'a>(pub &'a Fixture);

impl LowerScope for TestLowerScope<'_> {
    fn symbol(&self, sym: &Symbol) -> TokenStream {
        let field = |group: &str, name: &str| {
            let (group, name) = (ident(group), ident(name));
            quote!(env.#group.#name)
        };
        let plain = match sym {
            Symbol::Attr(n) => field("attrs", n),
            Symbol::Arg(n) => field("args", n),
            Symbol::Shape(n) => field("shapes", n),
            Symbol::Rank(n) => field("ranks", n),
            Symbol::Present(n) => field("present", n),
            Symbol::TensorDtype(n) => field("tensor_dtypes", n),
            Symbol::Dtype(n) => field("dtypes", n),
            Symbol::AdapterInfo(n) => field("adapter_info", n),
            Symbol::Limit(n) => field("limits", n),
            Symbol::Tunable(n) => {
                let n = ident(n);
                quote!(#n)
            }
            Symbol::Derived(n) => {
                let n = ident(n);
                return quote!(#n(env)?);
            }
        };
        if self.0.optional(sym) {
            let name = sym.to_string();
            quote!(rt::expr::given(#plain, #name)?)
        } else {
            plain
        }
    }

    fn is_defined(&self, sym: &Symbol) -> TokenStream {
        if self.0.optional(sym) || matches!(sym, Symbol::Attr(_)) {
            let name = sym.to_string();
            quote!(env.is_defined(#name))
        } else {
            quote!(true)
        }
    }

    fn feature(&self, name: &str) -> TokenStream {
        quote!(env.has_feature(#name))
    }

    fn runtime(&self) -> TokenStream {
        quote!(rt)
    }
}

/// Lowers `ir` in `scope` and pretty-prints it on one line. Parsing the tokens with syn also
/// checks that the lowering is syntactically valid Rust.
pub fn lowered_text_in(ir: &Ir, scope: &dyn LowerScope) -> String {
    pretty(expr::lower(ir, scope))
}

/// Pretty-prints an expression on one line, as the `lower =>` lines are written.
pub fn pretty(tokens: TokenStream) -> String {
    let file: syn::File = match syn::parse2(quote!(fn f() { #tokens })) {
        Ok(file) => file,
        Err(err) => return format!("INVALID RUST ({err}): {tokens}"),
    };
    let text = prettyplease::unparse(&file);
    // Drop the `fn f() {` / `}` wrapper and join the lines prettyplease wrapped.
    let body: Vec<&str> = text.lines().map(str::trim).collect();
    let inner = body
        .get(1..body.len().saturating_sub(1))
        .unwrap_or_default();
    inner
        .join(" ")
        .replace(", )", ")")
        .replace("( ", "(")
        .replace(" )", ")")
}
