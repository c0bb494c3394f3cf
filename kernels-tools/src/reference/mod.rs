//! Float64 CPU references of the ops, written from SEMANTICS.md and independent of
//! the WGSL templates, so a conformance test compares two implementations of the spec rather
//! than a shader with itself.

pub mod bias_softmax;
pub mod gated_relative_position_bias;
pub mod mrotary_embedding;
pub mod onnx;

use anyhow::{Context as _, Result, bail};
use kernel_runtime::AttrValue;

/// The float64 reference of op `op` on untyped inputs `(role, shape, values)` in manifest
/// order, with attributes by name (for harnesses that pick ops by name).
pub fn by_op(
    op: &str,
    inputs: &[(String, Vec<usize>, Vec<f64>)],
    attrs: &[(String, AttrValue)],
) -> Result<Vec<f64>> {
    let input = |role: &str| {
        inputs
            .iter()
            .find(|(r, _, _)| r == role)
            .with_context(|| format!("no input `{role}`"))
    };
    match op {
        "com.microsoft.MRotaryEmbedding" => {
            let typed = kernels::mrotary_embedding::Attrs::from_raw(attrs)?;
            let (_, shape, x) = input("input")?;
            let (_, _, positions) = input("position_ids")?;
            let (_, cache_shape, cos) = input("cos_cache")?;
            let (_, _, sin) = input("sin_cache")?;
            let positions: Vec<i64> = positions.iter().map(|&p| p as i64).collect();
            mrotary_embedding::mrotary_embedding(
                x,
                shape,
                &positions,
                cos,
                sin,
                cache_shape[0],
                &typed,
            )
        }
        "com.microsoft.BiasSoftmax" => {
            let typed = kernels::bias_softmax::Attrs::from_raw(attrs)?;
            let (_, shape, data) = input("data")?;
            let (_, _, bias) = input("bias")?;
            bias_softmax::bias_softmax(data, shape, bias, typed.axis, typed.is_inner_broadcast)
        }
        "com.microsoft.GatedRelativePositionBias" => {
            let typed = kernels::gated_relative_position_bias::Attrs::from_raw(attrs)?;
            let (_, query_shape, query) = input("query_layer")?;
            let (_, weight_shape, weight) = input("weight")?;
            let heads = usize::try_from(typed.num_heads)?;
            let sizes = gated_relative_position_bias::Sizes {
                batch: query_shape[0],
                seq: query_shape[1],
                heads,
                head_size: query_shape[2] / heads.max(1),
                proj: weight_shape[1],
            };
            gated_relative_position_bias::Problem {
                sizes,
                query,
                query_bias: &input("query_bias")?.2,
                rel_pos: &input("rel_pos")?.2,
                weight,
                bias: &input("bias")?.2,
                eco_a: &input("eco_a")?.2,
            }
            .output()
        }
        "ai.onnx.Add" => {
            let ((_, sa, a), (_, sb, b)) = (input("a")?, input("b")?);
            onnx::add(a, sa, b, sb)
        }
        "ai.onnx.Softmax" => {
            let axis = match attrs.iter().find(|(name, _)| name == "axis") {
                None => -1,
                Some((_, AttrValue::Int(axis))) => *axis,
                Some((_, other)) => bail!("attribute `axis` must be an integer, found {other}"),
            };
            let (_, shape, x) = input("x")?;
            onnx::softmax(x, shape, axis)
        }
        // The seed packages' MatMul computes the same product on the operands it accepts.
        "ai.onnx.MatMul" | "kernels.MatMul" => {
            let ((_, sa, a), (_, sb, b)) = (input("a")?, input("b")?);
            Ok(onnx::matmul(a, sa, b, sb)?.0)
        }
        other => bail!("no float64 reference for `{other}`"),
    }
}
