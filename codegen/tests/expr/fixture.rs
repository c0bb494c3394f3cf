//! The fixed scope, environment and lowering scope the `.test` cases run in.
//!
//! Roles, attributes and `derive` entries follow the two seed manifests (BiasSoftmax and
//! MRotaryEmbedding) with values chosen so that their contracts hold, plus a few names made up
//! for edge cases (`x`, `empty`, `zero`, `big`, `attrs.optional`, `attrs.gain`, `half`, `broken`, `ratio`).

use std::collections::BTreeMap;

use codegen::expr::{self, Env, EvalError, Ir, LowerScope, Scope, Symbol, Type, Value};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// `derive` entries of the seed manifests (copied so the tests do not move when they change),
/// and a few extra ones.
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

/// The fixed environment.
pub struct Fixture {
    shapes: BTreeMap<&'static str, Vec<i64>>,
    attrs: BTreeMap<&'static str, (Type, Option<Value>)>,
    dtypes: BTreeMap<&'static str, &'static str>,
    tunables: BTreeMap<&'static str, i64>,
    limits: BTreeMap<&'static str, i64>,
    features: Vec<&'static str>,
    /// Checked `derive` entries, filled in table order (each may use the ones before it).
    derived: BTreeMap<&'static str, Result<Ir, String>>,
}

impl Fixture {
    pub fn new() -> Self {
        let shapes = BTreeMap::from([
            ("bias", vec![4, 8]),
            ("big", vec![4_294_967_296, 4_294_967_296]),
            ("cos_cache", vec![16, 64]),
            ("data", vec![2, 4, 8]),
            ("empty", vec![]),
            ("input", vec![2, 3, 256]),
            ("output", vec![2, 3, 256]),
            ("position_ids", vec![3, 2, 3]),
            ("sin_cache", vec![16, 64]),
            ("x", vec![2, 3, 4]),
            ("zero", vec![2, 0, 3]),
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
        let mut fixture = Self {
            shapes,
            attrs,
            dtypes: BTreeMap::from([("M", "i64"), ("T", "f16")]),
            tunables: BTreeMap::from([("BLOCK_COLS", 2048), ("WORKGROUP_SIZE", 256)]),
            limits: BTreeMap::from([
                ("maxComputeInvocationsPerWorkgroup", 256),
                ("maxComputeWorkgroupsPerDimension", 65535),
            ]),
            features: vec!["subgroups"],
            derived: BTreeMap::new(),
        };
        // Checked once, in order, as the op model does: resolving a derive is then a lookup
        // rather than a nested check.
        for (name, src) in DERIVED {
            let ir = expr::parse(src)
                .map_err(|e| format!("derive {name}: {}", e.message))
                .and_then(|ast| {
                    expr::check(&ast, &fixture)
                        .map_err(|e| format!("derive {name}: {}", e[0].message))
                });
            fixture.derived.insert(name, ir);
        }
        fixture
    }

    fn derived_ir(&self, name: &str) -> Result<&Ir, String> {
        match self.derived.get(name) {
            Some(result) => result.as_ref().map_err(Clone::clone),
            None => {
                let known: Vec<&str> = DERIVED.iter().map(|(n, _)| *n).collect();
                Err(format!(
                    "undefined name `{name}` (known: {})",
                    known.join(", ")
                ))
            }
        }
    }
}

fn unknown<V>(what: &str, name: &str, map: &BTreeMap<&'static str, V>) -> String {
    let known: Vec<&str> = map.keys().copied().collect();
    format!("unknown {what} `{name}` (known: {})", known.join(", "))
}

impl Scope for Fixture {
    fn resolve(&self, sym: &Symbol) -> Result<Type, String> {
        match sym {
            Symbol::Shape(r) | Symbol::Rank(r) => match self.shapes.get(r.as_str()) {
                Some(_) if matches!(sym, Symbol::Shape(_)) => Ok(Type::List),
                Some(_) => Ok(Type::Int),
                None => Err(unknown("tensor role", r, &self.shapes)),
            },
            Symbol::Dtype(v) => self
                .dtypes
                .get(v.as_str())
                .map(|_| Type::Dtype)
                .ok_or_else(|| unknown("type variable", v, &self.dtypes)),
            Symbol::Attr(a) => self
                .attrs
                .get(a.as_str())
                .map(|(ty, _)| *ty)
                .ok_or_else(|| unknown("attribute", a, &self.attrs)),
            Symbol::Tunable(t) => self
                .tunables
                .get(t.as_str())
                .map(|_| Type::Int)
                .ok_or_else(|| unknown("tunable", t, &self.tunables)),
            Symbol::Limit(l) => self
                .limits
                .get(l.as_str())
                .map(|_| Type::Int)
                .ok_or_else(|| unknown("WebGPU limit", l, &self.limits)),
            Symbol::Derived(n) => self.derived_ir(n).map(|ir| ir.ty),
            // The seed checker never produces these.
            Symbol::Arg(_)
            | Symbol::Present(_)
            | Symbol::TensorDtype(_)
            | Symbol::AdapterInfo(_) => Err(format!("`{sym}` is not a seed name")),
        }
    }
}

impl Env for Fixture {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        let missing = || EvalError::new(format!("fixture has no value for `{sym}`"));
        Ok(match sym {
            Symbol::Shape(r) => Some(Value::List(
                self.shapes.get(r.as_str()).ok_or_else(missing)?.clone(),
            )),
            Symbol::Rank(r) => {
                let rank = self.shapes.get(r.as_str()).ok_or_else(missing)?.len();
                Some(Value::Int(i64::try_from(rank).map_err(|_| missing())?))
            }
            Symbol::Dtype(v) => Some(Value::Dtype(
                (*self.dtypes.get(v.as_str()).ok_or_else(missing)?).to_owned(),
            )),
            Symbol::Attr(a) => self.attrs.get(a.as_str()).ok_or_else(missing)?.1.clone(),
            Symbol::Tunable(t) => Some(Value::Int(
                *self.tunables.get(t.as_str()).ok_or_else(missing)?,
            )),
            Symbol::Limit(l) => Some(Value::Int(
                *self.limits.get(l.as_str()).ok_or_else(missing)?,
            )),
            Symbol::Derived(n) => {
                let ir = self.derived_ir(n).map_err(EvalError::new)?;
                Some(expr::eval(ir, self)?)
            }
            Symbol::Arg(_)
            | Symbol::Present(_)
            | Symbol::TensorDtype(_)
            | Symbol::AdapterInfo(_) => {
                return Err(missing());
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

/// Lowering names for the golden `lower =>` lines: short, readable paths.
pub struct TestLowerScope;

impl LowerScope for TestLowerScope {
    fn symbol(&self, sym: &Symbol) -> TokenStream {
        match sym {
            Symbol::Shape(r) => {
                let r = ident(r);
                quote!(env.shapes.#r)
            }
            Symbol::Rank(r) => {
                let r = ident(r);
                quote!(env.ranks.#r)
            }
            Symbol::Dtype(v) => {
                let v = ident(v);
                quote!(env.dtypes.#v)
            }
            Symbol::Attr(a) => {
                let a = ident(a);
                quote!(env.attrs.#a)
            }
            Symbol::Tunable(t) => {
                let t = ident(t);
                quote!(#t)
            }
            Symbol::Limit(l) => {
                let l = ident(l);
                quote!(env.limits.#l)
            }
            Symbol::Derived(n) => {
                let n = ident(n);
                quote!(#n(env)?)
            }
            Symbol::Arg(_)
            | Symbol::Present(_)
            | Symbol::TensorDtype(_)
            | Symbol::AdapterInfo(_) => {
                quote!(::core::compile_error!("not a seed name"))
            }
        }
    }

    fn is_defined(&self, sym: &Symbol) -> TokenStream {
        let name = sym.to_string();
        quote!(env.is_defined(#name))
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
