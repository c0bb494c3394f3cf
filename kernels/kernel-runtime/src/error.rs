//! Errors: what the runtime reports ([`RuntimeError`]) and what generated ops report ([`OpError`]).
//!
//! Every failure a caller can provoke with its inputs comes back as one of these values; wgpu's
//! own errors are captured with error scopes and converted, never left to its panicking
//! default handler.

use std::fmt;

use crate::expr::EvalError;

/// A failure of the GPU runtime: no device, a rejected resource, a readback that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// No adapter was found, or none matched the requested name.
    #[error("{}", no_adapter_message(.requested.as_deref(), .available))]
    NoAdapter {
        /// The name that was asked for (option or `KERNELS_ADAPTER`), if any.
        requested: Option<String>,
        /// Summaries of the adapters that do exist.
        available: Vec<String>,
    },
    /// The adapter refused to create a device.
    #[error("requesting a device from {adapter} failed: {message}")]
    RequestDevice {
        /// Summary of the adapter.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// wgpu reported a validation error while creating or submitting `label`.
    #[error("{label}: wgpu validation error: {message}")]
    Validation {
        /// The pass, kernel, tensor or step the error belongs to.
        label: String,
        /// wgpu's message, with its error chain.
        message: String,
    },
    /// The device ran out of memory while creating `label`.
    #[error("{label}: out of GPU memory")]
    OutOfMemory {
        /// The resource that could not be allocated.
        label: String,
    },
    /// wgpu reported an internal error (e.g. a backend shader compiler failure).
    #[error("{label}: wgpu internal error: {message}")]
    Internal {
        /// The step the error belongs to.
        label: String,
        /// wgpu's message.
        message: String,
    },
    /// A buffer would exceed a device limit.
    #[error("{what} needs {bytes} bytes, more than the device limit of {limit} bytes")]
    TooLarge {
        /// What was being allocated (a tensor, an intermediate, a readback).
        what: String,
        /// Bytes needed (`u64::MAX` when the size itself overflows).
        bytes: u64,
        /// The limit it exceeds.
        limit: u64,
    },
    /// Host data does not have as many elements as the shape says.
    #[error("data has {got} elements but the shape holds {expected}")]
    ShapeMismatch {
        /// Elements the shape holds.
        expected: usize,
        /// Elements supplied.
        got: usize,
    },
    /// An `int64` value does not fit the `u32` the GPU stores it as.
    #[error("int64 element {index} = {value} does not fit in u32 (checked narrowing)")]
    Narrowing {
        /// Flat index of the element.
        index: usize,
        /// Its value.
        value: i64,
    },
    /// A host value uploaded as an integer dtype is not integral or lies outside the dtype's
    /// range (e.g. 128 as `int8`, -1 or 0.5 as `uint8`).
    #[error("{dtype} element {index} = {value} is not an integer in {min}..={max}")]
    IntegerRange {
        /// The dtype the value was uploaded as.
        dtype: kernel_abi::DType,
        /// Flat index of the element.
        index: usize,
        /// Its value, as Rust prints an `f64` (the shortest text that reads back as it).
        value: String,
        /// The least value of the dtype.
        min: i64,
        /// The greatest value of the dtype.
        max: i64,
    },
    /// Mapping a buffer for reading failed.
    #[error("reading back from the GPU failed: {0}")]
    Readback(String),
    /// Writing host data into a buffer failed.
    #[error("uploading to the GPU failed: {0}")]
    Upload(String),
    /// An operation needs a device feature (WebGPU name) the device does not have.
    #[error("the device lacks the `{0}` feature")]
    MissingFeature(&'static str),
    /// A dispatch needs more workgroups than the device allows, even split over x and y.
    #[error("{label}: {count} workgroups exceed the device limit of {limit}")]
    TooManyWorkgroups {
        /// The pass id.
        label: String,
        /// Workgroups needed (along the offending dimension for grids).
        count: u64,
        /// The limit exceeded.
        limit: u64,
    },
    /// A plan is inconsistent with its arguments (binding index out of range, missing params).
    #[error("{label}: invalid plan: {reason}")]
    InvalidPlan {
        /// The plan or pass.
        label: String,
        /// What is wrong.
        reason: String,
    },
    /// A tensor cannot be a view of the buffer the application gave.
    #[error("{what}: {reason}")]
    BufferView {
        /// The view that was asked for (dtype, shape, offset).
        what: String,
        /// Which rule it breaks (usage, alignment, bounds).
        reason: String,
    },
    /// A pass writes an argument whose buffer it also binds as another argument.
    #[error(
        "{label}: pass `{pass}` writes `{written}` and also binds its buffer as `{other}`; WebGPU lets a dispatch use a buffer it writes through that one binding only, so give `{written}` a buffer of its own"
    )]
    Alias {
        /// The plan (`op/variant`).
        label: String,
        /// The pass that binds both.
        pass: &'static str,
        /// The role that is written (an output or in-place tensor).
        written: &'static str,
        /// The other role bound to the same buffer.
        other: &'static str,
    },
    /// The pipeline cache file could not be read or written.
    #[error("pipeline cache {path}: {message}")]
    PipelineCache {
        /// The file or folder.
        path: String,
        /// What failed, with the system's message.
        message: String,
    },
    /// The device was lost; nothing more can run on this context.
    #[error("the GPU device was lost: {0}")]
    DeviceLost(String),
    /// Waiting for submitted work failed.
    #[error("waiting for the GPU failed: {0}")]
    Poll(String),
    /// A pass reads an argument as an element larger than the argument's range (a `vec4` of
    /// an empty tensor), and the buffer has no room after the range to widen it.
    #[error(
        "{label}: pass `{pass}` reads `{role}` in elements of {needed} bytes, but its buffer has {available} from the tensor's offset on; give `{role}` a buffer with {needed} bytes from its offset (the runtime's own tensors have them)"
    )]
    BindingTooSmall {
        /// The plan (`op/variant`).
        label: String,
        /// The pass that binds it.
        pass: &'static str,
        /// The argument's role.
        role: &'static str,
        /// Bytes one element of the type the shader declares there takes.
        needed: u64,
        /// Bytes of the buffer from the argument's offset on.
        available: u64,
    },
}

fn no_adapter_message(requested: Option<&str>, available: &[String]) -> String {
    let list = if available.is_empty() {
        "none".to_owned()
    } else {
        available.join("; ")
    };
    match requested {
        Some(name) => format!("no GPU adapter matches `{name}`; available: {list}"),
        None => format!("no GPU adapter found (available: {list})"),
    }
}

/// Why one variant of an op did not accept the inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    /// The variant's name.
    pub variant: &'static str,
    /// The source text of the first `when` condition that failed, with the path of named
    /// predicates that led to it (e.g. `rank3Contract › sectionsValid › attrs.x[0] >= 0`).
    pub condition: String,
    /// `None`: the condition evaluated to false. `Some`: it could not be evaluated.
    pub error: Option<EvalError>,
    /// The values of what the condition compares or passes to its calls, as source text and
    /// value (`dim(shapes.x, 0)`, `8`).
    pub values: Vec<(String, String)>,
}

impl Rejection {
    /// Why, without the variant: "`cond` is false (x = 1)".
    fn reason(&self) -> String {
        let condition = self.condition_shown();
        let mut text = match &self.error {
            None => format!("`{condition}` is false"),
            Some(e) => format!("`{condition}` could not be evaluated: {e}"),
        };
        if !self.values.is_empty() {
            let values: Vec<String> = self
                .values
                .iter()
                .map(|(text, value)| format!("{text} = {value}"))
                .collect();
            text.push_str(&format!(" ({})", values.join(", ")));
        }
        text
    }
}

/// The longest step of a condition's path shown in messages: a named predicate fits, a whole
/// `when` expression above the failing clause is left out (the clause says what failed).
const LONGEST_STEP: usize = 40;

impl Rejection {
    /// The condition's path as messages show it: the failing clause, after the named
    /// predicates that led to it; an enclosing expression longer than [`LONGEST_STEP`] is `…`.
    fn condition_shown(&self) -> String {
        let steps: Vec<&str> = self.condition.split(" › ").collect();
        let Some((clause, path)) = steps.split_last() else {
            return self.condition.clone();
        };
        let mut shown: Vec<&str> = path
            .iter()
            .map(|step| {
                if step.chars().count() > LONGEST_STEP {
                    "…"
                } else {
                    step
                }
            })
            .collect();
        shown.dedup_by(|a, b| *a == "…" && *b == "…");
        shown.push(clause);
        shown.join(" › ")
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "  {}: {}", self.variant, self.reason())
    }
}

/// A call selected a combination the generator left out (`shaders::LeftOut`): the package's own
/// loader would fail the same call when rendering its shader.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{op}: variant `{variant}`, pass `{pass}`: the shader for ({combination}) was not built: {reason}"
)]
pub struct NotBuilt {
    /// The op name.
    pub op: &'static str,
    pub variant: &'static str,
    pub pass: &'static str,
    /// The static values that select the shader, as `name = value, …`.
    pub combination: &'static str,
    /// The generator's error for it (file, template line, message).
    pub reason: &'static str,
}

/// Why a variant's plan could not be made: a value of it, or the shader it selects.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A value of the plan could not be computed, or is out of its range.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The call selects a shader the generator left out.
    #[error(transparent)]
    NotBuilt(NotBuilt),
}

impl PlanError {
    /// The message, as [`EvalError::message`] gives it for a value.
    pub fn message(&self) -> String {
        match self {
            PlanError::Eval(error) => error.message().to_owned(),
            PlanError::NotBuilt(not_built) => not_built.to_string(),
        }
    }
}

/// The error of a generated op: a contract violation, or a runtime failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// No variant's `when` predicates accept the inputs; one rejection per variant.
    #[error("{}", no_variant_message(.op, .rejections))]
    NoVariant {
        /// The op name.
        op: &'static str,
        /// Why each variant declined, in manifest order.
        rejections: Vec<Rejection>,
    },
    /// An attribute violates a rule of the manifest.
    #[error("{op}: attribute `{attribute}`: {rule}")]
    Attribute {
        /// The op name.
        op: &'static str,
        /// The attribute name.
        attribute: String,
        /// The rule it violates, in words or source text.
        rule: String,
    },
    /// An input tensor violates a rule of the manifest.
    #[error("{op}: input `{input}`: {rule}")]
    Input {
        /// The op name.
        op: &'static str,
        /// The input role.
        input: String,
        /// The rule it violates.
        rule: String,
    },
    /// An output tensor the caller provided does not match what the op produces.
    #[error("{op}: output `{output}`: {rule}")]
    Output {
        /// The op name.
        op: &'static str,
        /// The output role.
        output: String,
        /// What does not match.
        rule: String,
    },
    /// A variant accepted the inputs but its dispatch, uniforms or intermediates could not be
    /// computed (a value out of the range of its WGSL type, say).
    #[error("{op}: variant `{variant}` cannot be planned: {error}")]
    Plan {
        /// The op name.
        op: &'static str,
        /// The selected variant.
        variant: &'static str,
        /// What failed.
        error: EvalError,
    },
    /// The inputs select a shader the generator left out, because it did not render or
    /// validate (the package's loader would fail the same call); it says which and why.
    #[error(transparent)]
    NotBuilt(NotBuilt),
    /// The GPU runtime failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Columns a line of the "no variant accepts" message wraps at.
const WRAP_AT: usize = 120;
/// Lines of reasons it shows at most; the variants beyond are counted.
const MOST_LINES: usize = 18;

/// "No variant accepts", grouped: the variants that failed on the same clause with the same
/// values share one entry, the largest group first (then manifest order), each wrapped, and no
/// more than about 20 lines in all however many variants the op has.
fn no_variant_message(op: &str, rejections: &[Rejection]) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for r in rejections {
        let reason = r.reason();
        match groups.iter_mut().find(|(why, _)| *why == reason) {
            Some((_, variants)) => variants.push(r.variant),
            None => groups.push((reason, vec![r.variant])),
        }
    }
    // Stable: groups of one size keep the manifest's order.
    groups.sort_by_key(|(_, variants)| std::cmp::Reverse(variants.len()));
    let mut s = format!("{op}: no variant accepts these inputs");
    let mut lines = 0;
    for (i, (why, variants)) in groups.iter().enumerate() {
        let entry = match variants.len() {
            1 => format!("{}: {why}", variants[0]),
            n => format!("{n} variants ({}): {why}", variants.join(", ")),
        };
        let wrapped = wrap(&entry, WRAP_AT);
        if lines + wrapped.len() > MOST_LINES && i > 0 {
            let rest: usize = groups[i..].iter().map(|(_, v)| v.len()).sum();
            s.push_str(&format!("\n  … and {rest} more variants"));
            break;
        }
        for (j, line) in wrapped.iter().enumerate() {
            s.push_str(if j == 0 { "\n  " } else { "\n      " });
            s.push_str(line);
        }
        lines += wrapped.len();
    }
    s
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word stays whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_variant_lists_each_rejection() {
        let e = OpError::NoVariant {
            op: "MRotaryEmbedding",
            rejections: vec![
                Rejection {
                    variant: "rank3",
                    condition: "rank3Contract › sectionsValid › attrs.mrope_section[0] >= 0".into(),
                    error: None,
                    values: vec![("attrs.mrope_section[0]".into(), "-1".into())],
                },
                Rejection {
                    variant: "rank4",
                    condition: "attrs.mrope_section[3] > 0".into(),
                    error: Some(EvalError::new("index 3 out of range for a list of 3")),
                    values: Vec::new(),
                },
            ],
        };
        assert_eq!(
            e.to_string(),
            "MRotaryEmbedding: no variant accepts these inputs\n  \
             rank3: `rank3Contract › sectionsValid › attrs.mrope_section[0] >= 0` is false \
             (attrs.mrope_section[0] = -1)\n  \
             rank4: `attrs.mrope_section[3] > 0` could not be evaluated: \
             index 3 out of range for a list of 3"
        );
    }

    /// A whole `when` expression above the failing clause is left out; named predicates stay.
    #[test]
    fn a_long_enclosing_expression_is_elided() {
        let r = Rejection {
            variant: "main",
            condition:
                "(not args.normSrq) and ((args.bits == 2 or args.bits == 4) and args.seq > 0) \
                        › contract › (not args.normSrq)"
                    .into(),
            error: None,
            values: vec![("args.normSrq".into(), "1".into())],
        };
        assert_eq!(
            r.to_string(),
            "  main: `… › contract › (not args.normSrq)` is false (args.normSrq = 1)"
        );
    }

    /// Many variants failing on one clause share an entry; the message wraps and stays short.
    #[test]
    fn no_variant_groups_variants_by_clause_and_stays_short() {
        let wide = Rejection {
            variant: "v",
            condition: "K % 4 == 0".into(),
            error: None,
            values: vec![("K".into(), "3".into())],
        };
        let mut rejections: Vec<Rejection> = ["tiled_vec4", "rowvec4", "vec4_split"]
            .into_iter()
            .map(|variant| Rejection {
                variant,
                ..wide.clone()
            })
            .collect();
        rejections.insert(
            1,
            Rejection {
                variant: "naive",
                condition: "rank(shapes.a) >= 1 and rank(shapes.b) >= 1 and dim(shapes.a, -1) == dim(shapes.b, -2) and broadcastable".into(),
                error: None,
                values: vec![("dim(shapes.a, -1)".into(), "3".into()), ("dim(shapes.b, -2)".into(), "4".into())],
            },
        );
        let e = OpError::NoVariant {
            op: "ai.onnx.MatMul",
            rejections: rejections.clone(),
        };
        assert_eq!(
            e.to_string(),
            "ai.onnx.MatMul: no variant accepts these inputs\n  \
             3 variants (tiled_vec4, rowvec4, vec4_split): `K % 4 == 0` is false (K = 3)\n  \
             naive: `rank(shapes.a) >= 1 and rank(shapes.b) >= 1 and dim(shapes.a, -1) == \
             dim(shapes.b, -2) and broadcastable` is\n      \
             false (dim(shapes.a, -1) = 3, dim(shapes.b, -2) = 4)"
        );
        // Sixty variants with as many reasons: about 20 lines, the rest counted.
        let many: Vec<Rejection> = (0..60)
            .map(|i| Rejection {
                variant: "w",
                values: vec![("K".into(), i.to_string())],
                ..wide.clone()
            })
            .collect();
        let e = OpError::NoVariant {
            op: "Op",
            rejections: many,
        };
        let text = e.to_string();
        assert!(text.lines().count() <= 20, "{text}");
        assert!(text.ends_with("… and 42 more variants"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 130), "{text}");
    }

    #[test]
    fn attribute_input_and_runtime_messages() {
        let a = OpError::Attribute {
            op: "BiasSoftmax",
            attribute: "axis".into(),
            rule: "must be -1 or rank-1".into(),
        };
        assert_eq!(
            a.to_string(),
            "BiasSoftmax: attribute `axis`: must be -1 or rank-1"
        );
        let i = OpError::Input {
            op: "BiasSoftmax",
            input: "bias".into(),
            rule: "numel must divide numel(data)".into(),
        };
        assert_eq!(
            i.to_string(),
            "BiasSoftmax: input `bias`: numel must divide numel(data)"
        );
        let r: OpError = RuntimeError::MissingFeature("shader-f16").into();
        assert_eq!(r.to_string(), "the device lacks the `shader-f16` feature");
    }

    #[test]
    fn no_adapter_messages() {
        let e = RuntimeError::NoAdapter {
            requested: Some("h200".into()),
            available: vec!["llvmpipe (Vulkan, cpu)".into()],
        };
        assert_eq!(
            e.to_string(),
            "no GPU adapter matches `h200`; available: llvmpipe (Vulkan, cpu)"
        );
        let e = RuntimeError::NoAdapter {
            requested: None,
            available: vec![],
        };
        assert_eq!(e.to_string(), "no GPU adapter found (available: none)");
    }
}
