//! The fixed scope, environment and lowering scope of the `v1_*.test` cases (the
//! `schemaVersion: 1` dialect).
//!
//! Names follow the corpus packages (scalar `args`, tensors by arg name with `present.*` and
//! `tensorDtypes.*`, type variables, `device.adapterInfo.*`) with values chosen to exercise
//! each rule: a required `u32` (`count`), optional `u32`s absent (`period`) and given
//! (`srcStart`), a zero (`zero`), `f32`s (`eps` given, `scale` absent), `bool`s (`flag`,
//! `optFlag` absent), strings (`mode` with `oneOf`, `label` empty), an absent optional tensor
//! (`maskT`) and a rank-0 one (`scalarT`). Variant constants (bare names) are in [`CONSTANTS`].

use std::collections::BTreeMap;

use codegen::expr::{self, Dialect, Env, EvalError, Ir, LowerScope, Scope, Symbol, Type, Value};
use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// Variant constants, checked in order (each may use the ones before it).
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

/// A tensor argument that was given (the map holds `None` for an optional one that was not).
struct Tensor {
    shape: Vec<i64>,
    dtype: &'static str,
}

/// The fixed V1 environment.
pub struct FixtureV1 {
    args: BTreeMap<&'static str, Arg>,
    tensors: BTreeMap<&'static str, Option<Tensor>>,
    dtypes: BTreeMap<&'static str, &'static str>,
    tunables: BTreeMap<&'static str, i64>,
    limits: BTreeMap<&'static str, i64>,
    adapter_info: BTreeMap<&'static str, Option<i64>>,
    features: Vec<&'static str>,
    constants: BTreeMap<&'static str, Result<Ir, String>>,
}

impl FixtureV1 {
    pub fn new() -> Self {
        let arg = |ty, value, optional| Arg {
            ty,
            value,
            optional,
        };
        let int = |v| arg(Type::Int, Some(Value::Int(v)), false);
        let args = BTreeMap::from([
            ("count", int(8)),
            ("rows", int(6)),
            ("dim", int(64)),
            ("bits", int(4)),
            ("zero", int(0)),
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
        let tensor = |shape: &[i64], dtype| {
            Some(Tensor {
                shape: shape.to_vec(),
                dtype,
            })
        };
        let tensors = BTreeMap::from([
            ("xT", tensor(&[2, 3, 8], "float32")),
            ("yT", tensor(&[2, 3, 8], "float16")),
            ("wT", tensor(&[8], "float32")),
            ("scalarT", tensor(&[], "float32")),
            ("maskT", None),
        ]);
        let mut fixture = Self {
            args,
            tensors,
            dtypes: BTreeMap::from([("X", "f32"), ("Y", "f16")]),
            tunables: BTreeMap::from([("MAX_WORKGROUPS_X", 1024), ("WORKGROUP_SIZE", 64)]),
            limits: BTreeMap::from([("maxComputeWorkgroupsPerDimension", 65535)]),
            adapter_info: BTreeMap::from([
                ("subgroupMaxSize", Some(64)),
                ("subgroupMinSize", Some(32)),
                // Known to the scope, not reported by this adapter.
                ("subgroupSizeHint", None),
            ]),
            features: vec!["subgroups"],
            constants: BTreeMap::new(),
        };
        for (name, src) in CONSTANTS {
            let ir = expr::parse_in(src, Dialect::V1)
                .map_err(|e| format!("constant {name}: {}", e.message))
                .and_then(|ast| {
                    expr::check(&ast, &fixture)
                        .map_err(|e| format!("constant {name}: {}", e[0].message))
                });
            fixture.constants.insert(name, ir);
        }
        fixture
    }

    fn constant(&self, name: &str) -> Result<&Ir, String> {
        match self.constants.get(name) {
            Some(result) => result.as_ref().map_err(Clone::clone),
            None => {
                let known: Vec<&str> = CONSTANTS.iter().map(|(n, _)| *n).collect();
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

    /// Whether `sym` may be undefined (for the lowering's `is_defined`).
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

impl Scope for FixtureV1 {
    fn resolve(&self, sym: &Symbol) -> Result<Type, String> {
        match sym {
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
            Symbol::Attr(a) => Err(format!("unknown attribute `{a}` (this op has none)")),
            Symbol::Derived(n) => self.constant(n).map(|ir| ir.ty),
        }
    }

    fn dialect(&self) -> Dialect {
        Dialect::V1
    }

    fn string_values(&self, sym: &Symbol) -> Option<Vec<String>> {
        (sym == &Symbol::Arg("mode".into()))
            .then(|| vec!["interleaved".to_owned(), "split-half".to_owned()])
    }
}

impl Env for FixtureV1 {
    fn get(&self, sym: &Symbol) -> Result<Option<Value>, EvalError> {
        let missing = || EvalError::new(format!("fixture has no value for `{sym}`"));
        let tensor = |t: &str| self.tensor(t).map_err(EvalError::new);
        Ok(match sym {
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
            Symbol::Attr(_) => return Err(missing()),
            Symbol::Derived(n) => {
                let ir = self.constant(n).map_err(EvalError::new)?;
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

/// Lowering names for the `v1_*.test` golden `lower =>` lines. Optional values read through
/// `rt::expr::given`, as an emitter would lower them.
pub struct TestLowerScopeV1<'a>(pub &'a FixtureV1);

impl LowerScope for TestLowerScopeV1<'_> {
    fn symbol(&self, sym: &Symbol) -> TokenStream {
        let plain = match sym {
            Symbol::Arg(n) => {
                let n = ident(n);
                quote!(env.args.#n)
            }
            Symbol::Shape(n) => {
                let n = ident(n);
                quote!(env.shapes.#n)
            }
            Symbol::Rank(n) => {
                let n = ident(n);
                quote!(env.ranks.#n)
            }
            Symbol::Present(n) => {
                let n = ident(n);
                quote!(env.present.#n)
            }
            Symbol::TensorDtype(n) => {
                let n = ident(n);
                quote!(env.tensor_dtypes.#n)
            }
            Symbol::Dtype(n) => {
                let n = ident(n);
                quote!(env.dtypes.#n)
            }
            Symbol::AdapterInfo(n) => {
                let n = ident(n);
                quote!(env.adapter_info.#n)
            }
            Symbol::Tunable(n) => {
                let n = ident(n);
                quote!(#n)
            }
            Symbol::Limit(n) => {
                let n = ident(n);
                quote!(env.limits.#n)
            }
            Symbol::Attr(n) => {
                let n = ident(n);
                quote!(env.attrs.#n)
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
        if self.0.optional(sym) {
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
