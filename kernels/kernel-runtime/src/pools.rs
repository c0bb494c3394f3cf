//! Buffers a context keeps between plans: intermediates pooled by size and uniform buffers
//! kept by content. Each pool owns its lock, held for a map operation only; buffers are
//! created with no lock held.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::error::RuntimeError;
use crate::gpu::{Gpu, allocation_size};
use crate::plan::{IntermediateSpec, Plan, PlannedPass};
use crate::staging::Staging;
use crate::sync::lock;

/// Pooled intermediate bytes kept at most; beyond it, returned buffers are dropped.
const POOL_MAX_BYTES: u64 = 1 << 30;

/// Distinct parameter blocks kept at most; the cache is emptied when it grows past this.
const PARAMS_CACHE_MAX: usize = 4096;

/// Intermediate buffers kept per exact byte size.
///
/// Reusing a buffer as soon as its plan is recorded is safe because a plan always writes its
/// intermediates before reading them, the buffer is cleared first, and one queue executes
/// everything in submission order (wgpu inserts the barriers between submissions).
#[derive(Default)]
pub(crate) struct IntermediatePool {
    free: Mutex<FreeBuffers>,
}

#[derive(Default)]
struct FreeBuffers {
    by_size: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

/// An intermediate buffer for one recording, and whether it came from the pool (and so
/// holds stale data that must be cleared).
pub(crate) struct Intermediate {
    pub(crate) buffer: wgpu::Buffer,
    pub(crate) reused: bool,
}

impl IntermediatePool {
    /// One buffer per intermediate of `plan`: a pooled one of the same size, or a new one.
    pub(crate) fn take(&self, gpu: &Gpu, plan: &Plan) -> Result<Vec<Intermediate>, RuntimeError> {
        let mut out = Vec::with_capacity(plan.intermediates.len());
        for spec in &plan.intermediates {
            let size = intermediate_size(gpu, plan, spec)?;
            let pooled = lock(&self.free).take(size);
            let intermediate = match pooled {
                Some(buffer) => Intermediate {
                    buffer,
                    reused: true,
                },
                None => Intermediate {
                    buffer: new_intermediate(gpu, plan, spec, size)?,
                    reused: false,
                },
            };
            out.push(intermediate);
        }
        Ok(out)
    }

    /// A new intermediate buffer for `spec` of `plan`, of the caller's own (a bound call's),
    /// never pooled.
    pub(crate) fn create(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        spec: &IntermediateSpec,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        let size = intermediate_size(gpu, plan, spec)?;
        new_intermediate(gpu, plan, spec, size)
    }

    /// Returns buffers to the pool, as far as it has room.
    pub(crate) fn give_back(&self, buffers: Vec<Intermediate>) {
        let mut free = lock(&self.free);
        for b in buffers {
            free.give(b.buffer);
        }
    }

    /// Buffers kept, and their bytes.
    pub(crate) fn held(&self) -> (usize, u64) {
        let free = lock(&self.free);
        (free.by_size.values().map(Vec::len).sum(), free.bytes)
    }

    pub(crate) fn clear(&self) {
        *lock(&self.free) = FreeBuffers::default();
    }
}

/// The size of the uniform buffer of `pass`'s parameter bytes (padded as WGSL lays out a
/// uniform struct), within the device's uniform binding limit.
pub(crate) fn params_size(gpu: &Gpu, pass: &PlannedPass) -> Result<u64, RuntimeError> {
    if pass.params.is_empty() {
        return Err(RuntimeError::InvalidPlan {
            label: pass.id.to_owned(),
            reason: "a Params binding but no parameter bytes".to_owned(),
        });
    }
    let limit = gpu.caps.limits.max_uniform_buffer_binding_size;
    let size = crate::uniform::padded_len(pass.params.len()) as u64;
    if size > limit {
        return Err(RuntimeError::TooLarge {
            what: format!("{} params", pass.id),
            bytes: size,
            limit,
        });
    }
    Ok(size)
}

/// How intermediate `spec` of `plan` is named in labels and errors.
fn intermediate_label(plan: &Plan, spec: &IntermediateSpec) -> String {
    format!("intermediate `{}` of {}", spec.id, plan.label())
}

/// The bytes of the buffer intermediate `spec` of `plan` needs, bound whole: padded so that
/// a small one holds an element of any declared type; refused past the storage limit.
fn intermediate_size(gpu: &Gpu, plan: &Plan, spec: &IntermediateSpec) -> Result<u64, RuntimeError> {
    let bytes = spec.byte_len().ok_or_else(|| RuntimeError::TooLarge {
        what: intermediate_label(plan, spec),
        bytes: u64::MAX,
        limit: gpu.storage_limit(),
    })?;
    let size = allocation_size(bytes);
    if size > gpu.storage_limit() {
        gpu.check_storage_size(&intermediate_label(plan, spec), size)?;
    }
    Ok(size)
}

fn new_intermediate(
    gpu: &Gpu,
    plan: &Plan,
    spec: &IntermediateSpec,
    size: u64,
) -> Result<wgpu::Buffer, RuntimeError> {
    let usage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    gpu.create_buffer(&intermediate_label(plan, spec), size, usage)
}

impl FreeBuffers {
    fn take(&mut self, size: u64) -> Option<wgpu::Buffer> {
        let b = self.by_size.get_mut(&size)?.pop()?;
        self.bytes -= size;
        Some(b)
    }

    fn give(&mut self, buffer: wgpu::Buffer) {
        let size = buffer.size();
        if self.bytes + size > POOL_MAX_BYTES {
            return;
        }
        self.bytes += size;
        self.by_size.entry(size).or_default().push(buffer);
    }
}

/// Uniform buffers by content. They are written once at creation and never again, so one
/// buffer can serve every plan (and every submission) with the same parameter bytes.
#[derive(Default)]
pub(crate) struct ParamsCache {
    buffers: Mutex<HashMap<Vec<u8>, wgpu::Buffer>>,
}

impl ParamsCache {
    /// The uniform buffer holding `pass.params`, padded to a multiple of 16 bytes (the WGSL
    /// uniform struct alignment), shared with every other pass with the same bytes.
    pub(crate) fn buffer(
        &self,
        gpu: &Gpu,
        staging: &Staging,
        pass: &PlannedPass,
    ) -> Result<wgpu::Buffer, RuntimeError> {
        let size = params_size(gpu, pass)?;
        if let Some(b) = lock(&self.buffers).get(&pass.params) {
            return Ok(b.clone());
        }
        // Two threads that miss together both create one; the second insert replaces the
        // first, which stays valid for whoever holds it.
        let buffer = staging.create_initialized(
            gpu,
            pass.id,
            &pass.params,
            size,
            wgpu::BufferUsages::UNIFORM,
        )?;
        let mut buffers = lock(&self.buffers);
        if buffers.len() >= PARAMS_CACHE_MAX {
            buffers.clear();
        }
        buffers.insert(pass.params.clone(), buffer.clone());
        Ok(buffer)
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.buffers).len()
    }

    pub(crate) fn clear(&self) {
        lock(&self.buffers).clear();
    }
}
