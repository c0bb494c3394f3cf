//! The lowerings of the Jinja dialects compile and compute what the interpreter computes: each
//! case is the text of a `lower =>` line of `v1_lower.test` or `hub.test`, written here as
//! Rust against an environment with the values of `fixture.rs`. The tests check that the
//! golden line is exactly this code (so the goldens cannot drift from code that compiles) and
//! that running it gives the interpreter's value.

#![allow(non_snake_case)] // the test paths spell fields as the manifests spell names

use std::collections::BTreeMap;

use kernel_codegen::expr::{self, EvalError, Value, check::Dialect};

use super::fixture::{Fixture, pretty};

/// The lowered code's runtime path, `rt::expr::…`.
mod rt {
    pub use kernel_codegen::expr::runtime as expr;
}

const WORKGROUP_SIZE: i64 = 256;

struct Args {
    count: i64,
    rows: i64,
    dim: i64,
    bits: i64,
    period: Option<i64>,
    eps: f64,
    scale: Option<f64>,
    flag: bool,
    optFlag: Option<bool>,
    mode: &'static str,
}

struct Shapes {
    xT: &'static [i64],
    maskT: Option<&'static [i64]>,
}

struct Ranks {
    xT: i64,
}

struct Present {
    wT: bool,
}

struct TensorDtypes {
    xT: &'static str,
    yT: &'static str,
    maskT: Option<&'static str>,
}

struct Dtypes {
    Y: &'static str,
}

struct AdapterInfo {
    subgroupMinSize: Option<i64>,
    subgroupSizeHint: Option<i64>,
}

/// The values of `fixture.rs`, in the shapes the test lowering scope names.
struct Env {
    args: Args,
    shapes: Shapes,
    ranks: Ranks,
    present: Present,
    tensor_dtypes: TensorDtypes,
    dtypes: Dtypes,
    adapter_info: AdapterInfo,
}

impl Env {
    fn is_defined(&self, name: &str) -> bool {
        match name {
            "args.period" => self.args.period.is_some(),
            "args.scale" => self.args.scale.is_some(),
            "args.optFlag" => self.args.optFlag.is_some(),
            "tensorDtypes.maskT" => self.tensor_dtypes.maskT.is_some(),
            "device.adapterInfo.subgroupMinSize" => self.adapter_info.subgroupMinSize.is_some(),
            "device.adapterInfo.subgroupSizeHint" => self.adapter_info.subgroupSizeHint.is_some(),
            "shapes.maskT" => self.shapes.maskT.is_some(),
            _ => panic!("the fixture does not test `{name}`"),
        }
    }

    fn has_feature(&self, name: &str) -> bool {
        name == "subgroups"
    }
}

/// A lowered result as an interpreter value.
trait IntoValue {
    fn into_value(self) -> Value;
}

impl IntoValue for i64 {
    fn into_value(self) -> Value {
        Value::Int(self)
    }
}

impl IntoValue for f64 {
    fn into_value(self) -> Value {
        Value::Float(self)
    }
}

impl IntoValue for bool {
    fn into_value(self) -> Value {
        Value::Bool(self)
    }
}

impl IntoValue for String {
    fn into_value(self) -> Value {
        Value::Str(self)
    }
}

impl IntoValue for Vec<i64> {
    fn into_value(self) -> Value {
        Value::List(self)
    }
}

/// Each case: the lowered code's text and its value in `ENV`.
macro_rules! cases {
    ($env:ident; $([$($body:tt)+])+) => {
        vec![$(
            (
                pretty(quote::quote!($($body)+)),
                (|$env: &Env| -> Result<Value, EvalError> {
                    let _ = $env; // not every case reads the environment
                    Ok(($($body)+).into_value())
                })(&ENV),
            )
        ),+]
    };
}

static ENV: Env = Env {
    args: Args {
        count: 8,
        rows: 6,
        dim: 64,
        bits: 4,
        period: None,
        eps: 1e-6,
        scale: None,
        flag: true,
        optFlag: None,
        mode: "split-half",
    },
    shapes: Shapes {
        xT: &[2, 3, 8],
        maskT: None,
    },
    ranks: Ranks { xT: 3 },
    present: Present { wT: true },
    tensor_dtypes: TensorDtypes {
        xT: "float32",
        yT: "float16",
        maskT: None,
    },
    dtypes: Dtypes { Y: "f16" },
    adapter_info: AdapterInfo {
        subgroupMinSize: Some(32),
        subgroupSizeHint: None,
    },
};

#[test]
fn v1_lowerings_compile_and_agree_with_the_interpreter() {
    let lowered: Vec<(String, Result<Value, EvalError>)> = cases![env;
        [rt::expr::quotient(7i64, 2i64)?]
        [rt::expr::floor_div(env.args.dim, 4i64)?]
        [rt::expr::floor_div_float(7.5f64, 2f64)?]
        [rt::expr::ceil_quotient(env.args.count, WORKGROUP_SIZE)?]
        [rt::expr::floor_quotient(env.args.count, 3i64)?]
        [rt::expr::ceil_quotient(env.args.count, 0i64)?]
        [rt::expr::pow2ceil_float(rt::expr::quotient(env.args.dim, 4i64)?)?]
        [rt::expr::pow(2i64, env.args.bits)?]
        [rt::expr::pow_float(env.args.eps, 2f64)]
        [rt::expr::dim_wrapped(env.shapes.xT, -1i64)?]
        [rt::expr::rows(env.shapes.xT, -1i64)?]
        [rt::expr::broadcastable(&[1i64, 8i64], env.shapes.xT)]
        [rt::expr::has_axis(&[0i64, -1i64], 2i64, env.ranks.xT)?]
        [rt::expr::dtype_bytes(env.tensor_dtypes.xT)?]
        [rt::expr::f16_allowed(env.dtypes.Y, env.has_feature("shader-f16"))]
        [rt::expr::f16_ok(env.tensor_dtypes.yT, env.has_feature("shader-f16"))]
        [rt::expr::truthy_int(env.args.count) && env.args.flag]
        [!rt::expr::truthy_float(env.args.eps)]
        [rt::expr::truthy_str(env.args.mode) || rt::expr::truthy_list(env.shapes.xT)]
        [if env.is_defined("args.period") && rt::expr::truthy_int(rt::expr::given(env.args.period, "args.period")?) { rt::expr::given(env.args.period, "args.period")? } else { env.args.count }]
        [!(env.is_defined("args.period") && rt::expr::truthy_int(rt::expr::given(env.args.period, "args.period")?))]
        [env.is_defined("args.optFlag") && rt::expr::given(env.args.optFlag, "args.optFlag")? || env.present.wT]
        [if env.is_defined("args.scale") && rt::expr::truthy_float(rt::expr::given(env.args.scale, "args.scale")?) { rt::expr::div_float(1f64, rt::expr::given(env.args.scale, "args.scale")?)? } else { 0f64 }]
        [!(env.is_defined("tensorDtypes.maskT") && rt::expr::truthy_str(rt::expr::given(env.tensor_dtypes.maskT, "tensorDtypes.maskT")?))]
        [env.is_defined("device.adapterInfo.subgroupMinSize") && rt::expr::given(env.adapter_info.subgroupMinSize, "device.adapterInfo.subgroupMinSize")? >= 32i64]
        [rt::expr::add(rt::expr::given(env.args.period, "args.period")?, 1i64)?]
        [env.is_defined("device.adapterInfo.subgroupSizeHint") && rt::expr::given(env.adapter_info.subgroupSizeHint, "device.adapterInfo.subgroupSizeHint")? == 32i64]
        [!env.is_defined("args.period") || rt::expr::given(env.args.period, "args.period")? != env.args.count]
        [if env.is_defined("args.period") && env.is_defined("args.scale") { rt::expr::to_float(rt::expr::given(env.args.period, "args.period")?) == rt::expr::given(env.args.scale, "args.scale")? } else { !env.is_defined("args.period") && !env.is_defined("args.scale") }]
        [!env.is_defined("shapes.maskT") || !rt::expr::same_shape(rt::expr::given(env.shapes.maskT, "shapes.maskT")?, &[1i64])]
        [!env.is_defined("args.period") || rt::expr::given(env.args.period, "args.period")? != 4i64]
        [rt::expr::concat(&rt::expr::concat("vec4<", env.dtypes.Y), ">")]
        [rt::expr::concat("rows=", &rt::expr::int_to_str(env.args.rows))]
        [if env.args.flag { rt::expr::concat("a", env.args.mode) } else { ::std::string::String::from("b") }]
        [rt::expr::concat("a", env.args.mode) == "asplit-half"]
        [env.dtypes.Y == "f16" || env.dtypes.Y == "f32"]
        [env.args.bits != 2i64 && env.args.bits != 4i64]
        [rt::expr::contains(env.shapes.xT, 3i64)]
        [!rt::expr::contains_str(env.args.mode, "half")]
        [rt::expr::pow(env.args.bits, 2i64)?]
        [rt::expr::pow_float(rt::expr::to_float(env.args.dim), 0.5f64)]
        [rt::expr::pow(2i64, -1i64)?]
        [0i64 < env.args.bits && env.args.bits <= 8i64]
        [rt::expr::contains(env.shapes.xT, 3i64) && !rt::expr::same_shape(env.shapes.xT, &[1i64])]
        [1f64 < rt::expr::quotient(env.args.dim, 4i64)? && rt::expr::quotient(env.args.dim, 4i64)? < 32f64]
        [env.is_defined("args.period") && 0i64 < rt::expr::given(env.args.period, "args.period")? && env.is_defined("args.period") && rt::expr::given(env.args.period, "args.period")? < 10i64]
        [<[i64]>::to_vec(&[rt::expr::to_int_exact(rt::expr::quotient(env.args.dim, 4i64)?)?, 2i64])]
        [if env.args.count >= 64i64 { 8i64 } else if env.args.count >= 8i64 { 4i64 } else { 1i64 }]
        [rt::expr::index(&rt::expr::list_concat(&rt::expr::slice(env.shapes.xT, 0i64, -1i64), &[1i64]), -1i64)?]
        [rt::expr::index(&rt::expr::slice(env.shapes.xT, 1i64, 9223372036854775807i64), 0i64)?]
        [rt::expr::add(rt::expr::index(env.shapes.xT, -1i64)?, rt::expr::length(&rt::expr::slice(env.shapes.xT, -2i64, 9223372036854775807i64))?)?]
        [rt::expr::list_sum(env.shapes.xT)?]
        [rt::expr::sub(rt::expr::list_max(env.shapes.xT)?, rt::expr::list_min(&rt::expr::slice(env.shapes.xT, 1i64, 9223372036854775807i64))?)?]
    ];
    agree_with_the_interpreter(Dialect::V1, "v1_lower.test", lowered);
}

#[test]
fn hub_lowerings_compile_and_agree_with_the_interpreter() {
    let lowered: Vec<(String, Result<Value, EvalError>)> = cases![env;
        [if rt::expr::truthy_int(env.args.dim) { env.args.dim } else { 4i64 }]
        [if rt::expr::truthy_int(env.args.dim) { 0i64 } else { env.args.dim }]
        [rt::expr::floor(0f64 - rt::expr::quotient(env.args.dim, 3i64)?)?]
        [rt::expr::to_float(env.args.dim)]
        [if env.args.dim > 2i64 { 1i64 } else { 0i64 }]
        [if env.is_defined("device.adapterInfo.subgroupSizeHint") { rt::expr::given(env.adapter_info.subgroupSizeHint, "device.adapterInfo.subgroupSizeHint")? } else { 32i64 }]
        [rt::expr::remainder(-7i64, 3i64)?]
        [rt::expr::remainder_float(-7.5f64, 2f64)?]
        [rt::expr::concat("w", &rt::expr::js_number_to_str(rt::expr::quotient(env.args.dim, 4i64)?))]
        [rt::expr::concat("b", if env.args.dim > 2i64 { "true" } else { "false" })]
        [rt::expr::abs(rt::expr::sub(env.args.dim, 100i64)?)?]
        [rt::expr::abs_float(0f64 - rt::expr::quotient(env.args.dim, 5i64)?)]
    ];
    agree_with_the_interpreter(Dialect::Hub, "hub.test", lowered);
}

/// Checks that each lowered case is a `lower =>` line of `file` and computes the value the
/// interpreter gives its source expression in `dialect`.
fn agree_with_the_interpreter(
    dialect: Dialect,
    file: &str,
    lowered: Vec<(String, Result<Value, EvalError>)>,
) {
    let golden = golden_lowerings(file);
    let fixture = Fixture::new(dialect);
    let mut unknown = Vec::new();
    for (text, value) in lowered {
        let Some(src) = golden.get(&normalize(&text)) else {
            unknown.push(text);
            continue;
        };
        let ast = expr::parse_in(src, dialect).unwrap_or_else(|e| panic!("{src}: {e}"));
        let ir = expr::check(&ast, &fixture).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        let want = expr::eval(&ir, &fixture);
        assert_eq!(
            value, want,
            "{src}: the lowered code and the interpreter disagree"
        );
    }
    assert!(
        unknown.is_empty(),
        "no `lower =>` line of {file} is:\n{}",
        unknown.join("\n")
    );
}

/// Lowered text with the spacing prettyplease leaves in wrapped lists removed.
fn normalize(text: &str) -> String {
    text.replace("[ ", "[").replace(", ]", "]")
}

/// The `lower =>` lines of `file` (in `tests/expr`), by text, with their source expressions.
fn golden_lowerings(file: &str) -> BTreeMap<String, String> {
    let path = format!("{}/tests/expr/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = BTreeMap::new();
    let mut source = None;
    for line in text.lines() {
        if let Some(lowered) = line.strip_prefix("lower => ") {
            if let Some(src) = source.take() {
                out.insert(normalize(lowered), src);
            }
        } else if !line.is_empty() && !line.starts_with('#') && !line.starts_with("=> ") {
            source = Some(line.to_owned());
        }
    }
    out
}
