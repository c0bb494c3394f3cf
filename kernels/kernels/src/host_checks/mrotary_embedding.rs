//! MRotaryEmbedding: every position id must index a row of the cos/sin caches.
//!
//! The manifest narrows int64 ids to u32 (rejecting negatives and values ≥ 2^32) but has no
//! expression for ids ≥ `max_sequence_length`. Ids uploaded from the host are on the host already,
//! so they are checked here, naming the stream, batch and token of the first bad one. Ids made on
//! the GPU (`IndexTensor::from_buffer`, `from_tensor`) have no host values and are not checked: the
//! shader copies the channels an out-of-range id would rotate unchanged (SEMANTICS.md §1.4, as ONNX
//! Runtime's GPU kernels do), so it never reads past the cache.

use kernel_runtime::OpError;
use kernel_runtime::registry::ArgView;

use crate::mrotary_embedding::{Attrs, OP_NAME};

const STREAMS: [&str; 3] = ["temporal", "height", "width"];

/// Rejects position ids outside `[0, rows of cos_cache)`.
pub fn check(views: &[ArgView<'_>], _attrs: &Attrs) -> Result<(), OpError> {
    let find = |role: &str| views.iter().find(|v| v.role == role);
    let (Some(positions), Some(cache)) = (find("position_ids"), find("cos_cache")) else {
        return Ok(());
    };
    let (Some(values), [_, batch, tokens], [rows, _]) =
        (positions.index_values, positions.shape, cache.shape)
    else {
        return Ok(());
    };
    let per_stream = batch * tokens;
    for (index, &position) in values.iter().enumerate() {
        if position as usize >= *rows {
            let stream = index / per_stream.max(1);
            let b = (index % per_stream.max(1)) / tokens.max(&1);
            let s = index % tokens.max(&1);
            return Err(OpError::Input {
                op: OP_NAME,
                input: "position_ids".into(),
                rule: format!(
                    "position id {position} at stream {stream} ({}), batch {b}, token {s} is outside [0, {rows}), the rows of cos_cache (max_sequence_length)",
                    STREAMS.get(stream).copied().unwrap_or("?")
                ),
            });
        }
    }
    Ok(())
}
