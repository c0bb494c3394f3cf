//! The generated Rust's side: one random environment handed to an op module's typed API as a
//! caller would (attributes from name/value pairs, shapes by role, element types by type
//! variable), and what the module computes from it: output shapes, every variant's
//! acceptance and plan, and the plan of the variant it selects.

use kernel_codegen::expr::Value;
use kernel_codegen::model::{DType, Op};
use kernel_runtime::AttrValue;
use kernel_runtime::{OpError, OpHooks, OpVisitor, Plan};

use super::env::RandomEnv;

/// What the generated module computed for one environment.
pub struct Generated {
    /// `Env::new`: fails when an output shape cannot be computed.
    pub env: Result<(), String>,
    /// `accepts` for every variant: the failing clause's text and error.
    pub accepted: Vec<(&'static str, Result<(), Failed>)>,
    /// `plan_of` for every variant, in the same order.
    pub plans: Vec<Result<Plan, String>>,
    pub plan: Result<Plan, OpError>,
}

/// Why a variant was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    /// The clause that did not hold: its source text.
    pub clause: String,
    /// Its error, when it failed by erroring rather than being false.
    pub error: Option<String>,
}

/// The environment's given attributes as a caller passes them by name.
pub fn raw_attrs(env: &RandomEnv) -> Vec<(String, AttrValue)> {
    env.args
        .iter()
        .map(|(name, value)| {
            let raw = match value {
                Value::Int(v) => AttrValue::Int(*v),
                Value::Float(v) => AttrValue::Float(*v),
                Value::Bool(v) => AttrValue::Int(i64::from(*v)),
                Value::Str(v) | Value::Dtype(v) => AttrValue::Str(v.clone()),
                Value::List(v) => AttrValue::Ints(v.clone()),
            };
            (name.clone(), raw)
        })
        .collect()
}

/// The shapes the caller has (inputs, in-place tensors, provided outputs, optional outputs
/// it asks for), by role, as `usize`; other outputs are left out (the op computes them).
pub fn caller_shapes(op: &Op, env: &RandomEnv) -> Vec<(String, Option<Vec<usize>>)> {
    op.tensors()
        .zip(env.shapes.iter().zip(&env.given))
        .filter(|(t, _)| !t.is_computed_output() || t.optional)
        .map(|(t, (shape, given))| {
            let dims = shape.as_ref().filter(|_| *given).map(|s| {
                s.iter()
                    .map(|d| usize::try_from(*d).unwrap_or(usize::MAX))
                    .collect()
            });
            (t.role.clone(), dims)
        })
        .collect()
}

/// Runs one environment through the op `O` (its `OpHooks`) as a caller would: `None` when the typed API
/// cannot hold it (an argument out of its Rust type's range, say).
pub fn through<O: OpHooks>(op: &Op, env: &RandomEnv) -> Option<Generated> {
    let attrs = O::attrs(&raw_attrs(env)).ok()?;
    let held = caller_shapes(op, env);
    let shapes = O::shapes_from(&|role| {
        held.iter()
            .find(|(r, _)| r == role)
            .and_then(|(_, s)| s.as_deref())
    });
    let dtypes = O::dtypes_from(&|var| env.dtypes.get(var).map_or(DType::F32, |d| *d));
    let plan = O::plan(&env.caps, &shapes, &dtypes, &attrs);
    let (env_result, accepted, plans) = match O::env(&shapes, dtypes, &attrs, &env.caps) {
        Ok(generated_env) => {
            let accepted = O::VARIANT_IDS
                .iter()
                .map(|id| {
                    let result = match O::accepts(id, &generated_env) {
                        Some(Ok(())) => Ok(()),
                        // The variant's own `when` clause; the runtime's path goes on into
                        // the `derive` conjunctions it names.
                        Some(Err(failure)) => Err(Failed {
                            clause: failure.path.first().copied().unwrap_or_default().to_owned(),
                            error: failure.error.map(|e| e.message().to_owned()),
                        }),
                        None => Err(Failed {
                            clause: "no such variant".to_owned(),
                            error: None,
                        }),
                    };
                    (*id, result)
                })
                .collect();
            let plans = O::VARIANT_IDS
                .iter()
                .map(|id| match O::plan_of(id, &generated_env) {
                    Some(result) => result.map_err(|e| e.message()),
                    None => Err("no such variant".to_owned()),
                })
                .collect();
            (Ok(()), accepted, plans)
        }
        Err(e) => (Err(e.to_string()), Vec::new(), Vec::new()),
    };
    Some(Generated {
        env: env_result,
        accepted,
        plans,
        plan,
    })
}

/// A call as a caller writes it: attributes by name, shapes by role (`None`: left out),
/// element types by type variable, and a device.
pub struct Call {
    pub attrs: Vec<(String, AttrValue)>,
    pub shapes: Vec<(String, Option<Vec<usize>>)>,
    pub dtypes: Vec<(String, DType)>,
    pub caps: kernel_runtime::DeviceCaps,
}

/// Plans `call` with the op `O`: the attributes' errors, then `plan`'s.
#[cfg_attr(not(corpus), allow(dead_code))]
pub fn plan_with<O: OpHooks>(call: &Call) -> Result<Plan, OpError> {
    let shapes = O::shapes_from(&|role| {
        call.shapes
            .iter()
            .find(|(r, _)| r == role)
            .and_then(|(_, s)| s.as_deref())
    });
    let dtypes = O::dtypes_from(&|var| {
        call.dtypes
            .iter()
            .find(|(v, _)| v == var)
            .map_or(DType::F32, |(_, d)| *d)
    });
    O::attrs(&call.attrs).and_then(|attrs| O::plan(&call.caps, &shapes, &dtypes, &attrs))
}

/// [`through`] as an [`OpVisitor`], for the modules reached by name.
struct Through<'a> {
    op: &'a Op,
    env: &'a RandomEnv,
}

impl OpVisitor for Through<'_> {
    type Output = Option<Generated>;

    fn visit<O: OpHooks>(self) -> Option<Generated> {
        through::<O>(self.op, self.env)
    }
}

/// `run(module, op, env)`: the environment through the generated module named `module` (none
/// where the device has a feature the typed API cannot be given), and `plan_call(module,
/// call)`, for every module listed: the seed packages' (`kernels`), the corpus's when the
/// corpus was found, and the Hub's when the hub crate was built with its manifests (reached
/// through `hub::visit_op`, which answers `None` without them). `ops!` also lists the names,
/// so a test can see that every op has its entry.
macro_rules! ops {
    (seed: $($seed:ident),* ; corpus: $($corpus:ident),* ; hub: $($hub:ident),* $(,)?) => {
        pub const SEED_MODULES: &[&str] = &[$(stringify!($seed)),*];
        pub const CORPUS_MODULES: &[&str] = &[$(stringify!($corpus)),*];
        pub const HUB_MODULES: &[&str] = &[$(stringify!($hub)),*];

        pub fn run(module: &str, op: &Op, env: &RandomEnv) -> Option<Generated> {
            if !env.unavailable.is_empty() {
                return None;
            }
            // Module names repeat across collections (`mat_mul` is the Hub's MatMul and
            // `kernels.MatMul`): the Hub's are the `ai.onnx` ops.
            let from_hub = op.domain == "ai.onnx";
            match module {
                $(stringify!($seed) if !from_hub => through::<::kernels::$seed::Op>(op, env),)*
                $(#[cfg(corpus)]
                stringify!($corpus) if !from_hub => through::<corpus::kernels::$corpus::Op>(op, env),)*
                $(stringify!($hub))|* if from_hub => hub::visit_op(module, Through { op, env }).flatten(),
                _ => None,
            }
        }

        #[cfg_attr(not(corpus), allow(dead_code))]
        pub fn plan_call(module: &str, call: &Call) -> Option<Result<Plan, OpError>> {
            match module {
                $(stringify!($seed) => Some(plan_with::<::kernels::$seed::Op>(call)),)*
                $(#[cfg(corpus)]
                stringify!($corpus) => Some(plan_with::<corpus::kernels::$corpus::Op>(call)),)*
                _ => None,
            }
        }
    };
}

ops!(
    seed:
    bias_softmax,
    gated_relative_position_bias,
    mat_mul,
    mrotary_embedding;
    corpus:
    add_in_place,
    arg_max,
    attention,
    decode_attention,
    decode_down_norm_add,
    decode_gate_up_norm,
    decode_norm_add,
    decode_norm_add_norm,
    decode_oproj_norm,
    decode_ple_gate,
    decode_ple_proj_norm,
    decode_qk_norm_rope,
    decode_qkv_proj,
    decode_rms_srq,
    dense_gemv,
    mul_broadcast,
    ple_gate,
    qat_embed_gather,
    qat_mat_mul,
    rmsnorm,
    rope1d,
    srq_quantize,
    strided_copy;
    hub:
    add,
    mat_mul,
    softmax,
);
