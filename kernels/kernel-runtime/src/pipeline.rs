//! The pipeline cache: one shader module per kernel digest, one compute pipeline per
//! (digest, entry point, override values).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use crate::error::RuntimeError;
use crate::gpu::Gpu;
use crate::plan::{Kernel, Plan};
use crate::sync::lock;
use crate::threads::on_threads;

/// Everything baked into a compute pipeline.
///
/// Override values are kept as bit patterns so the key is `Eq + Hash` and `-0.0`/`0.0` or two
/// NaNs never alias; they are sorted by name so the order a plan lists them in does not matter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PipelineKey {
    digest: &'static str,
    entry_point: &'static str,
    overrides: Vec<(&'static str, u64)>,
}

impl PipelineKey {
    /// Whether this is the key of `kernel` with `overrides` (in any order), compared without
    /// building that key.
    fn matches(&self, kernel: &Kernel, overrides: &[(&'static str, f64)]) -> bool {
        self.digest == kernel.digest
            && self.entry_point == kernel.entry_point
            && self.overrides.len() == overrides.len()
            && (overrides.iter())
                .all(|&(n, v)| self.overrides.binary_search(&(n, v.to_bits())).is_ok())
    }

    pub(crate) fn new(kernel: &Kernel, overrides: &[(&'static str, f64)]) -> Self {
        let mut overrides: Vec<_> = overrides.iter().map(|&(n, v)| (n, v.to_bits())).collect();
        overrides.sort_unstable();
        Self {
            digest: kernel.digest,
            entry_point: kernel.entry_point,
            overrides,
        }
    }
}

/// Shader modules and pipelines created so far on one device.
#[derive(Default)]
pub(crate) struct PipelineCache {
    // The maps are locked only to find or add a slot; each slot has its own lock, held while
    // its module or pipeline is created, so a key is compiled once even when several threads
    // ask for it at the same time, while different keys compile in parallel.
    inner: Mutex<CacheMaps>,
}

/// A module or pipeline, `None` until created (or after a failed creation, so a later call
/// tries again).
type Slot<T> = Arc<Mutex<Option<T>>>;

#[derive(Default)]
struct CacheMaps {
    modules: HashMap<&'static str, Slot<wgpu::ShaderModule>>,
    /// By [`key_hash`], so that a lookup builds no key.
    pipelines: HashMap<u64, Vec<(PipelineKey, Slot<wgpu::ComputePipeline>)>>,
}

/// The hash of a pipeline's key, whatever the order of its overrides.
fn key_hash(kernel: &Kernel, overrides: &[(&'static str, f64)]) -> u64 {
    let mut hasher = DefaultHasher::new();
    kernel.digest.hash(&mut hasher);
    kernel.entry_point.hash(&mut hasher);
    let mut sum = 0u64;
    for &(name, value) in overrides {
        let mut one = DefaultHasher::new();
        (name, value.to_bits()).hash(&mut one);
        sum = sum.wrapping_add(one.finish());
    }
    (overrides.len(), sum).hash(&mut hasher);
    hasher.finish()
}

impl PipelineCache {
    /// The pipeline for `kernel` with these override values, created on first use (through
    /// wgpu's pipeline cache `disk()`, the one [`crate::Context::use_pipeline_cache`] loaded,
    /// asked for only then). A pipeline already created is found without building its key.
    ///
    /// Shader compilation and pipeline creation errors (invalid WGSL, a missing override, an
    /// unknown entry point) come back as [`RuntimeError::Validation`] labelled with the
    /// kernel's label; failures are not cached, so a later call tries again.
    pub(crate) fn pipeline(
        &self,
        gpu: &Gpu,
        disk: &dyn Fn() -> Option<wgpu::PipelineCache>,
        kernel: &'static Kernel,
        overrides: &[(&'static str, f64)],
    ) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let hash = key_hash(kernel, overrides);
        let slot = {
            let mut maps = lock(&self.inner);
            let slots = maps.pipelines.entry(hash).or_default();
            match slots.iter().find(|(key, _)| key.matches(kernel, overrides)) {
                Some((_, slot)) => Arc::clone(slot),
                None => {
                    let slot = Slot::default();
                    slots.push((PipelineKey::new(kernel, overrides), Arc::clone(&slot)));
                    slot
                }
            }
        };
        let mut pipeline = lock(&slot);
        if let Some(p) = &*pipeline {
            return Ok(p.clone());
        }
        let disk = disk();
        let disk = disk.as_ref();
        let module = self.module(gpu, kernel)?;
        crate::gpu::Tally::add(&gpu.tally.pipelines, 1);
        let created = gpu.scoped(kernel.label, || {
            gpu.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(kernel.label),
                    // Auto layout: the shader's own declarations define the bind group, so a
                    // plan that disagrees with them fails bind-group validation.
                    layout: None,
                    module: &module,
                    entry_point: Some(kernel.entry_point),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: overrides,
                        // Zeroing costs every workgroup a pass over its shared memory; templates
                        // write workgroup memory before reading it (ARCHITECTURE.md), so skip it.
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: disk,
                })
        })?;
        *pipeline = Some(created.clone());
        Ok(created)
    }

    /// The shader module of `kernel`, compiled on first use.
    pub(crate) fn module(
        &self,
        gpu: &Gpu,
        kernel: &'static Kernel,
    ) -> Result<wgpu::ShaderModule, RuntimeError> {
        let slot = Arc::clone(lock(&self.inner).modules.entry(kernel.digest).or_default());
        let mut module = lock(&slot);
        if let Some(m) = &*module {
            return Ok(m.clone());
        }
        // On the web wgpu hands WGSL to the browser unchanged, and browsers require the
        // `enable` directives that naga refuses; everywhere else naga compiles the text as is.
        let source = if gpu.info.backend == wgpu::Backend::BrowserWebGpu {
            format!("{}{}", kernel.web_enables, kernel.source).into()
        } else {
            kernel.source.into()
        };
        let created = gpu.scoped(kernel.label, || {
            gpu.device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(kernel.label),
                    source: wgpu::ShaderSource::Wgsl(source),
                })
        })?;
        *module = Some(created.clone());
        Ok(created)
    }

    /// Creates every pipeline these plans use, on several threads natively; returns how many
    /// distinct pipelines they use.
    pub(crate) fn prepare(
        &self,
        gpu: &Gpu,
        disk: Option<&wgpu::PipelineCache>,
        plans: &[&Plan],
    ) -> Result<usize, RuntimeError> {
        let mut wanted: Vec<(&'static Kernel, &[(&'static str, f64)])> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for pass in plans.iter().flat_map(|plan| &plan.passes) {
            if seen.insert(PipelineKey::new(pass.kernel, &pass.overrides)) {
                wanted.push((pass.kernel, &pass.overrides));
            }
        }
        let disk = || disk.cloned();
        on_threads(&wanted, |&(kernel, overrides)| {
            self.pipeline(gpu, &disk, kernel, overrides).map(drop)
        })?;
        Ok(wanted.len())
    }

    /// Pipelines created so far.
    pub(crate) fn len(&self) -> usize {
        // The slots are read after the maps' lock is released: a thread creating a pipeline
        // holds its slot and then takes the maps' lock (for the module), so taking a slot
        // under the maps' lock would invert that order.
        let slots: Vec<Slot<wgpu::ComputePipeline>> = (lock(&self.inner).pipelines.values())
            .flatten()
            .map(|(_, slot)| Arc::clone(slot))
            .collect();
        slots.iter().filter(|slot| lock(slot).is_some()).count()
    }

    /// Drops every pipeline and shader module; they are recreated on demand.
    pub(crate) fn clear(&self) {
        let mut maps = lock(&self.inner);
        maps.pipelines.clear();
        maps.modules.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static K: Kernel = Kernel {
        label: "k",
        source: "",
        entry_point: "main",
        digest: "abc",
        web_enables: "",
        least_sizes: &[],
    };

    #[test]
    fn key_ignores_override_order_but_not_values() {
        let a = PipelineKey::new(&K, &[("a", 1.0), ("b", 2.0)]);
        let b = PipelineKey::new(&K, &[("b", 2.0), ("a", 1.0)]);
        assert_eq!(a, b);
        assert_ne!(a, PipelineKey::new(&K, &[("a", 1.0), ("b", 3.0)]));
        assert_ne!(
            PipelineKey::new(&K, &[("a", 0.0)]),
            PipelineKey::new(&K, &[("a", -0.0)])
        );
        let other_entry = Kernel {
            entry_point: "other",
            ..K
        };
        assert_ne!(
            PipelineKey::new(&K, &[]),
            PipelineKey::new(&other_entry, &[])
        );
    }

    #[test]
    fn a_key_matches_its_overrides_in_any_order_and_hashes_alike() {
        let key = PipelineKey::new(&K, &[("a", 1.0), ("b", 2.0)]);
        assert!(key.matches(&K, &[("b", 2.0), ("a", 1.0)]));
        assert!(!key.matches(&K, &[("a", 1.0), ("b", 3.0)]));
        assert!(!key.matches(&K, &[("a", 1.0)]));
        assert_eq!(
            key_hash(&K, &[("a", 1.0), ("b", 2.0)]),
            key_hash(&K, &[("b", 2.0), ("a", 1.0)])
        );
        assert_ne!(key_hash(&K, &[("a", 0.0)]), key_hash(&K, &[("a", -0.0)]));
    }
}
