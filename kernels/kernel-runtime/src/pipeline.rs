//! The pipeline cache: one shader module per kernel digest, one compute pipeline per
//! (digest, entry point, override values).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::context::{Context, lock};
use crate::error::RuntimeError;
use crate::plan::Kernel;

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
    // One lock for both maps, held while creating: a key is compiled once even when several
    // threads ask for it at the same time, at the price of serialising compilations.
    inner: Mutex<CacheMaps>,
}

#[derive(Default)]
struct CacheMaps {
    modules: HashMap<&'static str, wgpu::ShaderModule>,
    pipelines: HashMap<PipelineKey, wgpu::ComputePipeline>,
}

impl PipelineCache {
    fn len(&self) -> usize {
        lock(&self.inner).pipelines.len()
    }
}

impl Context {
    /// The pipeline for `kernel` with these override values, created on first use.
    ///
    /// Shader compilation and pipeline creation errors (invalid WGSL, a missing override, an
    /// unknown entry point) come back as [`RuntimeError::Validation`] labelled with the
    /// kernel's label; failures are not cached, so a later call tries again.
    pub(crate) fn pipeline(
        &self,
        kernel: &'static Kernel,
        overrides: &[(&'static str, f64)],
    ) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let key = PipelineKey::new(kernel, overrides);
        let mut maps = lock(&self.pipelines.inner);
        if let Some(p) = maps.pipelines.get(&key) {
            return Ok(p.clone());
        }
        let module = self.module(&mut maps, kernel)?;
        let pipeline = self.scoped(kernel.label, || {
            self.device
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
                    cache: None,
                })
        })?;
        maps.pipelines.insert(key, pipeline.clone());
        Ok(pipeline)
    }

    /// The shader module of `kernel`, compiled on first use.
    fn module(
        &self,
        maps: &mut CacheMaps,
        kernel: &'static Kernel,
    ) -> Result<wgpu::ShaderModule, RuntimeError> {
        if let Some(m) = maps.modules.get(kernel.digest) {
            return Ok(m.clone());
        }
        // On the web wgpu hands WGSL to the browser unchanged, and browsers require the
        // `enable` directives that naga refuses; everywhere else naga compiles the text as is.
        let source = if self.info.backend == wgpu::Backend::BrowserWebGpu {
            format!("{}{}", kernel.web_enables, kernel.source).into()
        } else {
            kernel.source.into()
        };
        let m = self.scoped(kernel.label, || {
            self.device
                .create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(kernel.label),
                    source: wgpu::ShaderSource::Wgsl(source),
                })
        })?;
        maps.modules.insert(kernel.digest, m.clone());
        Ok(m)
    }

    /// Compiles the shader module of `kernel` ahead of time, for kernels whose pipelines
    /// depend on override values known only with the shapes.
    pub fn precompile_module(&self, kernel: &'static Kernel) -> Result<(), RuntimeError> {
        let mut maps = lock(&self.pipelines.inner);
        self.module(&mut maps, kernel).map(drop)
    }

    /// Creates (and caches) the pipeline for `kernel` with these override values ahead of
    /// time, so the first run does not pay for shader compilation.
    pub fn precompile(
        &self,
        kernel: &'static Kernel,
        overrides: &[(&'static str, f64)],
    ) -> Result<(), RuntimeError> {
        self.pipeline(kernel, overrides).map(drop)
    }

    /// Number of distinct pipelines created so far (for tests of cache behaviour).
    pub fn pipeline_cache_len(&self) -> usize {
        self.pipelines.len()
    }

    /// Drops every cached pipeline and shader module; they are recreated on demand.
    pub fn clear_pipeline_cache(&self) {
        let mut maps = lock(&self.pipelines.inner);
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
}
