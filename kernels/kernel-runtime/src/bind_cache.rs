//! Bind groups kept between calls that bind the same buffers: creating one is the largest
//! host cost of recording an op, and an inference loop binds the same ranges every step.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::sync::lock;

/// A bind group's identity: the pipeline whose layout it follows and each entry's buffer
/// range, in binding order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BindKey {
    pub(crate) pipeline: wgpu::ComputePipeline,
    pub(crate) entries: Vec<(wgpu::Buffer, u64, Option<u64>)>,
}

/// Kept bind groups; each holds its buffers alive, so the cache is bounded and is emptied
/// when full (and by [`crate::Context::trim_pools`]). Its lock is held for a map operation
/// only.
#[derive(Default)]
pub(crate) struct BindGroupCache {
    groups: Mutex<HashMap<BindKey, wgpu::BindGroup>>,
}

/// Bind groups kept at most.
const BIND_GROUPS_MAX: usize = 256;

impl BindGroupCache {
    pub(crate) fn get(&self, key: &BindKey) -> Option<wgpu::BindGroup> {
        lock(&self.groups).get(key).cloned()
    }

    pub(crate) fn insert(&self, key: BindKey, group: wgpu::BindGroup) {
        let mut groups = lock(&self.groups);
        if groups.len() >= BIND_GROUPS_MAX {
            groups.clear();
        }
        groups.insert(key, group);
    }

    pub(crate) fn clear(&self) {
        lock(&self.groups).clear();
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.groups).len()
    }
}
