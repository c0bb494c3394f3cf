//! Bind groups kept between calls that bind the same buffers: creating one is the largest
//! host cost of recording an op, and an inference loop binds the same ranges every step.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use crate::error::RuntimeError;
use crate::sync::lock;

/// A bind group's identity: the pipeline whose layout it follows and each entry's buffer
/// range, in binding order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BindKey {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) entries: Vec<(wgpu::Buffer, u64, Option<u64>)>,
}

/// The ranges of a bind group's entries, by binding index, as the recorder computes them.
pub(crate) type Ranges<'r, 'b> = &'r dyn Fn(usize) -> Result<wgpu::BufferBinding<'b>, RuntimeError>;

impl BindKey {
    /// The key of `len` entries bound to `range(i)`, for `pipeline`.
    pub(crate) fn new(
        pipeline: &wgpu::ComputePipeline,
        len: usize,
        range: Ranges<'_, '_>,
    ) -> Result<Self, RuntimeError> {
        let entries = (0..len)
            .map(|i| {
                let r = range(i)?;
                Ok((r.buffer.clone(), r.offset, r.size.map(|s| s.get())))
            })
            .collect::<Result<_, RuntimeError>>()?;
        Ok(Self {
            pipeline: pipeline.clone(),
            entries,
        })
    }

    /// Whether this is the key of `len` entries bound to `range(i)`, for `pipeline`.
    fn matches(
        &self,
        pipeline: &wgpu::ComputePipeline,
        len: usize,
        range: Ranges<'_, '_>,
    ) -> Result<bool, RuntimeError> {
        if self.pipeline != *pipeline || self.entries.len() != len {
            return Ok(false);
        }
        for (i, (buffer, offset, size)) in self.entries.iter().enumerate() {
            let r = range(i)?;
            if r.buffer != buffer || r.offset != *offset || r.size.map(|s| s.get()) != *size {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The hash a key of `len` entries bound to `range(i)` for `pipeline` is kept under,
/// computed from the ranges without building the key.
fn hash(
    pipeline: &wgpu::ComputePipeline,
    len: usize,
    range: Ranges<'_, '_>,
) -> Result<u64, RuntimeError> {
    let mut hasher = DefaultHasher::new();
    pipeline.hash(&mut hasher);
    len.hash(&mut hasher);
    for i in 0..len {
        let r = range(i)?;
        r.buffer.hash(&mut hasher);
        r.offset.hash(&mut hasher);
        r.size.map(|s| s.get()).hash(&mut hasher);
    }
    Ok(hasher.finish())
}

/// Kept bind groups; each holds its buffers alive, so the cache is bounded and is emptied
/// when full (and by [`crate::Context::trim_pools`]). Its lock is held for a map operation
/// only. Keys are found by a hash of the ranges a call binds and compared with them, so a
/// call that finds its group builds no key.
#[derive(Default)]
pub(crate) struct BindGroupCache {
    groups: Mutex<Groups>,
}

#[derive(Default)]
struct Groups {
    by_hash: HashMap<u64, Vec<(BindKey, wgpu::BindGroup)>>,
    len: usize,
}

/// Bind groups kept at most.
const BIND_GROUPS_MAX: usize = 256;

impl BindGroupCache {
    /// The kept group of `len` entries bound to `range(i)` for `pipeline`, if any.
    pub(crate) fn get(
        &self,
        pipeline: &wgpu::ComputePipeline,
        len: usize,
        range: Ranges<'_, '_>,
    ) -> Result<Option<wgpu::BindGroup>, RuntimeError> {
        let hash = hash(pipeline, len, range)?;
        let groups = lock(&self.groups);
        for (key, group) in groups.by_hash.get(&hash).into_iter().flatten() {
            if key.matches(pipeline, len, range)? {
                return Ok(Some(group.clone()));
            }
        }
        Ok(None)
    }

    pub(crate) fn insert(&self, key: BindKey, group: wgpu::BindGroup) {
        let len = key.entries.len();
        let hash = hash(&key.pipeline, len, &|i| {
            let (buffer, offset, size) = &key.entries[i];
            Ok(wgpu::BufferBinding {
                buffer,
                offset: *offset,
                size: size.and_then(std::num::NonZeroU64::new),
            })
        });
        let Ok(hash) = hash else { return };
        let mut groups = lock(&self.groups);
        if groups.len >= BIND_GROUPS_MAX {
            *groups = Groups::default();
        }
        let kept = groups.by_hash.entry(hash).or_default();
        if kept.iter().any(|(k, _)| *k == key) {
            return;
        }
        kept.push((key, group));
        groups.len += 1;
    }

    pub(crate) fn clear(&self) {
        *lock(&self.groups) = Groups::default();
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.groups).len
    }
}
