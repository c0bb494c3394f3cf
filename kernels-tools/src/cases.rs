//! The main job's cases: per op, realistic shapes on seeded random data with their float64
//! reference, held on the host so the native demo and the browser page run the same cases.

use anyhow::Result;
use kernel_runtime::AttrValue;
use kernel_runtime::registry::OpEntry;
use kernel_runtime::{AnyTensor, Context, DType, DeviceCaps, IndexTensor, RuntimeError};

use crate::data::{DataRng, Tolerance, round_to};
use crate::reference;
use crate::reference::gated_relative_position_bias::{Problem, Sizes};

/// An input on the host.
#[derive(Debug, Clone)]
pub enum HostTensor {
    /// A float tensor of `dtype`, its values already rounded to it.
    Float {
        dtype: DType,
        shape: Vec<usize>,
        values: Vec<f64>,
    },
    /// An int64 index tensor.
    Index { shape: Vec<usize>, values: Vec<i64> },
}

impl HostTensor {
    pub(crate) fn float(dtype: DType, shape: &[usize], values: Vec<f64>) -> Self {
        HostTensor::Float {
            dtype,
            shape: shape.to_vec(),
            values,
        }
    }

    /// Uploads the tensor.
    pub fn upload(&self, ctx: &Context) -> Result<AnyTensor, RuntimeError> {
        match self {
            HostTensor::Float {
                dtype,
                shape,
                values,
            } => AnyTensor::from_f64(ctx, *dtype, shape, values),
            HostTensor::Index { shape, values } => {
                Ok(AnyTensor::Index(IndexTensor::from_i64(ctx, shape, values)?))
            }
        }
    }
}

/// One case of one op.
#[derive(Debug, Clone)]
pub struct Case {
    /// The op's qualified name, as in [`crate::ops`].
    pub op: &'static str,
    pub name: &'static str,
    /// The output's shape and dtype.
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Inputs in manifest order.
    pub inputs: Vec<HostTensor>,
    pub attrs: Vec<(String, AttrValue)>,
    /// The float64 reference of the first output.
    pub want: Vec<f64>,
    pub tolerance: Tolerance,
}

impl Case {
    /// Why this adapter cannot run the case, if it cannot: a feature its dtype needs.
    pub fn unsupported(&self, caps: &DeviceCaps) -> Option<String> {
        (self.dtype == DType::F16 && !caps.shader_f16)
            .then(|| "adapter has no shader-f16".to_owned())
    }

    /// The generated op the case runs.
    pub fn entry(&self) -> Option<&'static OpEntry> {
        crate::ops().find(|e| e.qualified_name == self.op)
    }

    /// Uploads every input.
    pub fn upload(&self, ctx: &Context) -> Result<Vec<AnyTensor>, RuntimeError> {
        self.inputs.iter().map(|t| t.upload(ctx)).collect()
    }
}

/// Every case of the seed packages, op by op, float32 then float16 (the Hub's and
/// `kernels.MatMul`'s: [`crate::cases_onnx`]).
pub fn all() -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for dtype in [DType::F32, DType::F16] {
        cases.push(mrope(
            "Qwen2-VL rank 3, sections 16/24/24",
            dtype,
            MropeSetup {
                rank4: false,
                interleaved: false,
                layout: 0,
                sections: [16, 24, 24],
            },
        )?);
        cases.push(mrope(
            "Qwen3-VL rank 4, interleaved layout",
            dtype,
            MropeSetup {
                rank4: true,
                interleaved: false,
                layout: 1,
                sections: [24, 20, 20],
            },
        )?);
    }
    for dtype in [DType::F32, DType::F16] {
        // Attention scores (B, N, S, S) with a padding mask (B, 1, 1, S): inner broadcast.
        cases.push(bias_softmax(
            "scores + padding mask (inner)",
            dtype,
            &[2, 8, 128, 128],
            &[2, 1, 1, 128],
            true,
        )?);
        // Long rows that need the split statistics passes.
        cases.push(bias_softmax(
            "long rows (outer)",
            dtype,
            &[4, 131072],
            &[1, 131072],
            false,
        )?);
        // Many short rows, several per workgroup.
        cases.push(bias_softmax(
            "short rows (outer)",
            dtype,
            &[16384, 8],
            &[64, 8],
            false,
        )?);
    }
    for dtype in [DType::F32, DType::F16] {
        // WavLM: 16 heads of 64, D = 8 (head-parallel projection).
        cases.push(gated_bias(
            "WavLM-like, 16 heads x 64, D 8",
            dtype,
            Sizes {
                batch: 2,
                seq: 200,
                heads: 16,
                head_size: 64,
                proj: 8,
            },
        )?);
        // Rows of a multiple of 4 and at least 256, so adapters without one subgroup size
        // take the head-parallel tree.
        cases.push(gated_bias(
            "long aligned rows, 8 heads x 64, D 8",
            dtype,
            Sizes {
                batch: 1,
                seq: 256,
                heads: 8,
                head_size: 64,
                proj: 8,
            },
        )?);
        // A small head: the serial projection of the `row` variant.
        cases.push(gated_bias(
            "small head, odd sequence",
            dtype,
            Sizes {
                batch: 3,
                seq: 77,
                heads: 4,
                head_size: 8,
                proj: 4,
            },
        )?);
    }
    Ok(cases)
}

fn gated_bias(name: &'static str, dtype: DType, sizes: Sizes) -> Result<Case> {
    let Sizes {
        batch,
        seq,
        heads,
        head_size,
        proj,
    } = sizes;
    let mut rng = DataRng::new(5);
    let mut draw = |n: usize, scale: f64| round_dtype(dtype, &rng.uniform(n, -scale, scale));
    let query = draw(batch * seq * heads * head_size, 1.0);
    let query_bias = draw(heads * head_size, 0.5);
    let rel_pos = draw(heads * seq * seq, 4.0);
    let weight = draw(head_size * proj, 0.5);
    let bias = draw(proj, 0.5);
    // WavLM's `gru_rel_pos_const` starts at 1: a positive coefficient keeps the gate away from
    // the cancellation near 0 that a relative tolerance cannot judge.
    let eco_a = round_dtype(dtype, &rng.uniform(heads, 0.5, 1.5));
    let want = Problem {
        sizes,
        query: &query,
        query_bias: &query_bias,
        rel_pos: &rel_pos,
        weight: &weight,
        bias: &bias,
        eco_a: &eco_a,
    }
    .output()?;
    let inputs = vec![
        HostTensor::float(dtype, &[batch, seq, heads * head_size], query),
        HostTensor::float(dtype, &[heads * head_size], query_bias),
        HostTensor::float(dtype, &[1, heads, seq, seq], rel_pos),
        HostTensor::float(dtype, &[head_size, proj], weight),
        HostTensor::float(dtype, &[proj], bias),
        HostTensor::float(dtype, &[1, heads, 1, 1], eco_a),
    ];
    Ok(Case {
        op: "com.microsoft.GatedRelativePositionBias",
        name,
        shape: vec![batch, heads, seq, seq],
        dtype,
        inputs,
        attrs: vec![("num_heads".to_owned(), AttrValue::Int(heads as i64))],
        want,
        tolerance: Tolerance::gated_bias(dtype),
    })
}

fn bias_softmax(
    name: &'static str,
    dtype: DType,
    shape: &[usize],
    bias_shape: &[usize],
    inner: bool,
) -> Result<Case> {
    let mut rng = DataRng::new(3);
    let data = round_dtype(dtype, &rng.uniform(shape.iter().product(), -4.0, 4.0));
    let bias = round_dtype(dtype, &rng.uniform(bias_shape.iter().product(), -2.0, 2.0));
    let want = reference::bias_softmax::bias_softmax(&data, shape, &bias, -1, inner)?;
    let attrs = vec![
        ("axis".to_owned(), AttrValue::Int(-1)),
        (
            "is_inner_broadcast".to_owned(),
            AttrValue::Int(i64::from(inner)),
        ),
    ];
    Ok(Case {
        op: "com.microsoft.BiasSoftmax",
        name,
        shape: shape.to_vec(),
        dtype,
        inputs: vec![
            HostTensor::float(dtype, shape, data),
            HostTensor::float(dtype, bias_shape, bias),
        ],
        attrs,
        want,
        tolerance: Tolerance::bias_softmax(dtype),
    })
}

struct MropeSetup {
    rank4: bool,
    interleaved: bool,
    layout: i64,
    sections: [i64; 3],
}

fn mrope(name: &'static str, dtype: DType, setup: MropeSetup) -> Result<Case> {
    let (batch, seq, heads, head, max_positions) = (2usize, 256usize, 8usize, 128usize, 4096usize);
    let half = head / 2;
    let shape = if setup.rank4 {
        vec![batch, heads, seq, head]
    } else {
        vec![batch, seq, heads * head]
    };
    let mut rng = DataRng::new(7);
    let x = round_dtype(dtype, &rng.uniform(batch * seq * heads * head, -2.0, 2.0));
    let positions = rng.indices(3 * batch * seq, max_positions as i64);
    let (cos, sin) = reference::mrotary_embedding::rope_caches(max_positions, half, 10000.0);
    let (cos, sin) = (round_dtype(dtype, &cos), round_dtype(dtype, &sin));
    let attrs = vec![
        ("num_heads".to_owned(), AttrValue::Int(heads as i64)),
        (
            "mrope_section".to_owned(),
            AttrValue::Ints(setup.sections.to_vec()),
        ),
        ("mrope_layout".to_owned(), AttrValue::Int(setup.layout)),
        (
            "interleaved".to_owned(),
            AttrValue::Int(i64::from(setup.interleaved)),
        ),
    ];
    let typed = kernels::mrotary_embedding::Attrs::from_raw(&attrs)?;
    let want = reference::mrotary_embedding::mrotary_embedding(
        &x,
        &shape,
        &positions,
        &cos,
        &sin,
        max_positions,
        &typed,
    )?;
    let cache_shape = [max_positions, half];
    let inputs = vec![
        HostTensor::float(dtype, &shape, x),
        HostTensor::Index {
            shape: vec![3, batch, seq],
            values: positions,
        },
        HostTensor::float(dtype, &cache_shape, cos),
        HostTensor::float(dtype, &cache_shape, sin),
    ];
    Ok(Case {
        op: "com.microsoft.MRotaryEmbedding",
        name,
        shape,
        dtype,
        inputs,
        attrs,
        want,
        tolerance: Tolerance::mrope(dtype),
    })
}

pub(crate) fn round_dtype(dtype: DType, data: &[f64]) -> Vec<f64> {
    match dtype {
        DType::F16 => round_to::<half::f16>(data),
        _ => round_to::<f32>(data),
    }
}
