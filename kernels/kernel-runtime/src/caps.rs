//! Device capabilities as the manifests see them: `device.limits.*` and `device.features.has(..)`.

pub use kernel_abi::device::{
    FEATURE_SHADER_F16, FEATURE_SUBGROUP_MATRIX, FEATURE_SUBGROUPS, FEATURE_TIMESTAMP_QUERY,
    FEATURES as KNOWN_FEATURES, MatrixScalar, SUBGROUP_MATRIX_CONFIG_PREFIX, SubgroupMatrixConfig,
};

/// What a device offers, in the terms variant predicates and derived values are written in.
///
/// Plans are pure functions of the inputs and of a `DeviceCaps`, so the same plan can be
/// computed without a GPU (see [`DeviceCaps::portable`]) and compared against what a real
/// device would pick.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceCaps {
    /// The limits the device was created with (the adapter's own limits).
    pub limits: wgpu::Limits,
    /// `shader-f16` is enabled: shaders may use `enable f16;`.
    pub shader_f16: bool,
    /// `subgroups` is enabled: shaders may use subgroup builtins.
    pub subgroups: bool,
    /// `timestamp-query` is enabled: GPU timing is available.
    pub timestamp_query: bool,
    /// `chromium-experimental-subgroup-matrix` is enabled (wgpu's experimental cooperative
    /// matrices, requested only for a context whose creator opts in:
    /// [`crate::ContextOptions::experimental_features`]): shaders may use subgroup matrices.
    pub subgroup_matrix: bool,
    /// The subgroup-matrix configurations the adapter reports, sorted, when
    /// `subgroup_matrix` is on; empty otherwise, and for a context made by
    /// [`crate::Context::from_wgpu`], which has no adapter to ask (variants that require a
    /// configuration are then skipped).
    pub subgroup_matrix_configs: Vec<SubgroupMatrixConfig>,
    /// Smallest subgroup size the adapter reports; 0 when unknown.
    pub subgroup_min_size: u32,
    /// Largest subgroup size the adapter reports; 0 when unknown.
    pub subgroup_max_size: u32,
}

impl DeviceCaps {
    /// Whether the device has the feature with this WebGPU name.
    ///
    /// A subgroup-matrix configuration's name (`subgroup-matrix-f16-f32-16x16x16`,
    /// [`SubgroupMatrixConfig::feature_name`]) is answered too: the device has it when it has
    /// `chromium-experimental-subgroup-matrix` and the adapter reports that configuration.
    ///
    /// Unknown names are `false` rather than an error: a manifest may ask about a feature this
    /// runtime never requests, and such a device simply does not have it.
    pub fn has_feature(&self, webgpu_name: &str) -> bool {
        match webgpu_name {
            FEATURE_SHADER_F16 => self.shader_f16,
            FEATURE_SUBGROUPS => self.subgroups,
            FEATURE_TIMESTAMP_QUERY => self.timestamp_query,
            FEATURE_SUBGROUP_MATRIX => self.subgroup_matrix,
            _ => SubgroupMatrixConfig::from_feature_name(webgpu_name).is_some_and(|config| {
                self.subgroup_matrix && self.subgroup_matrix_configs.contains(&config)
            }),
        }
    }

    /// The WebGPU default limits and no optional feature: a device every implementation can
    /// provide, for GPU-free planning and tests.
    pub fn portable() -> Self {
        Self {
            limits: wgpu::Limits::default(),
            shader_f16: false,
            subgroups: false,
            timestamp_query: false,
            subgroup_matrix: false,
            subgroup_matrix_configs: Vec::new(),
            subgroup_min_size: 0,
            subgroup_max_size: 0,
        }
    }

    /// A limit by its WebGPU (camelCase) name, widened to `u64`; `None` for unknown names.
    ///
    /// Generated code reads the fields directly; this exists for dynamic callers (the
    /// `run-op` path, diagnostics) that only have the name from a manifest.
    /// `subgroupMinSize` and `subgroupMaxSize` are answered from the adapter's report.
    pub fn limit(&self, webgpu_name: &str) -> Option<u64> {
        let l = &self.limits;
        let v = match webgpu_name {
            "maxComputeWorkgroupsPerDimension" => u64::from(l.max_compute_workgroups_per_dimension),
            "maxComputeInvocationsPerWorkgroup" => {
                u64::from(l.max_compute_invocations_per_workgroup)
            }
            "maxComputeWorkgroupSizeX" => u64::from(l.max_compute_workgroup_size_x),
            "maxComputeWorkgroupSizeY" => u64::from(l.max_compute_workgroup_size_y),
            "maxComputeWorkgroupSizeZ" => u64::from(l.max_compute_workgroup_size_z),
            "maxComputeWorkgroupStorageSize" => u64::from(l.max_compute_workgroup_storage_size),
            "maxStorageBufferBindingSize" => l.max_storage_buffer_binding_size,
            "maxUniformBufferBindingSize" => l.max_uniform_buffer_binding_size,
            "maxBufferSize" => l.max_buffer_size,
            "maxStorageBuffersPerShaderStage" => u64::from(l.max_storage_buffers_per_shader_stage),
            "maxUniformBuffersPerShaderStage" => u64::from(l.max_uniform_buffers_per_shader_stage),
            "maxBindingsPerBindGroup" => u64::from(l.max_bindings_per_bind_group),
            "maxBindGroups" => u64::from(l.max_bind_groups),
            "maxDynamicStorageBuffersPerPipelineLayout" => {
                u64::from(l.max_dynamic_storage_buffers_per_pipeline_layout)
            }
            "maxDynamicUniformBuffersPerPipelineLayout" => {
                u64::from(l.max_dynamic_uniform_buffers_per_pipeline_layout)
            }
            "minStorageBufferOffsetAlignment" => u64::from(l.min_storage_buffer_offset_alignment),
            "minUniformBufferOffsetAlignment" => u64::from(l.min_uniform_buffer_offset_alignment),
            "subgroupMinSize" => u64::from(self.subgroup_min_size),
            "subgroupMaxSize" => u64::from(self.subgroup_max_size),
            _ => return None,
        };
        Some(v)
    }

    /// The WebGPU names of the optional features this device has, in [`KNOWN_FEATURES`] order
    /// (subgroup-matrix configurations are not features: see
    /// [`DeviceCaps::subgroup_matrix_configs`]).
    pub fn feature_names(&self) -> Vec<&'static str> {
        KNOWN_FEATURES
            .into_iter()
            .filter(|f| self.has_feature(f))
            .collect()
    }

    /// Builds the capabilities from what a device was actually created with, and the
    /// cooperative-matrix configurations its adapter reports
    /// (`wgpu::Adapter::cooperative_matrix_properties`; empty when the adapter is unknown),
    /// kept only when the device has cooperative matrices.
    pub(crate) fn from_device(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        matrices: &[wgpu::CooperativeMatrixProperties],
    ) -> Self {
        let features = device.features();
        let subgroup_matrix = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        Self {
            limits: device.limits(),
            shader_f16: features.contains(wgpu::Features::SHADER_F16),
            subgroups: features.contains(wgpu::Features::SUBGROUP),
            timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroup_matrix,
            subgroup_matrix_configs: if subgroup_matrix {
                subgroup_matrix_configs(matrices)
            } else {
                Vec::new()
            },
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
        }
    }
}

/// wgpu's cooperative-matrix configurations as subgroup-matrix configurations, sorted and
/// without repeats (wgpu lists a configuration once with and once without saturating
/// accumulation, which WGSL's subgroup matrices do not distinguish).
fn subgroup_matrix_configs(
    matrices: &[wgpu::CooperativeMatrixProperties],
) -> Vec<SubgroupMatrixConfig> {
    let mut configs: Vec<SubgroupMatrixConfig> = matrices
        .iter()
        .filter_map(|p| {
            Some(SubgroupMatrixConfig {
                component: matrix_scalar(p.ab_type)?,
                result: matrix_scalar(p.cr_type)?,
                m: p.m_size,
                n: p.n_size,
                k: p.k_size,
            })
        })
        .collect();
    configs.sort_unstable();
    configs.dedup();
    configs
}

/// The subgroup-matrix scalar type of a wgpu cooperative-matrix scalar type; `None` for one
/// WGSL's subgroup matrices cannot name (wgpu 30 has none, later versions may add some).
fn matrix_scalar(scalar: wgpu::CooperativeScalarType) -> Option<MatrixScalar> {
    match scalar {
        wgpu::CooperativeScalarType::F16 => Some(MatrixScalar::F16),
        wgpu::CooperativeScalarType::F32 => Some(MatrixScalar::F32),
        wgpu::CooperativeScalarType::I32 => Some(MatrixScalar::I32),
        wgpu::CooperativeScalarType::U32 => Some(MatrixScalar::U32),
    }
}

/// The wgpu feature flag for a WebGPU feature name this runtime requests.
pub(crate) fn wgpu_feature(webgpu_name: &str) -> Option<wgpu::Features> {
    match webgpu_name {
        FEATURE_SHADER_F16 => Some(wgpu::Features::SHADER_F16),
        FEATURE_SUBGROUPS => Some(wgpu::Features::SUBGROUP),
        FEATURE_TIMESTAMP_QUERY => Some(wgpu::Features::TIMESTAMP_QUERY),
        FEATURE_SUBGROUP_MATRIX => Some(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_has_no_optional_features() {
        let caps = DeviceCaps::portable();
        for f in KNOWN_FEATURES {
            assert!(!caps.has_feature(f), "{f}");
        }
        assert!(caps.feature_names().is_empty());
        assert_eq!(caps.limit("maxComputeWorkgroupsPerDimension"), Some(65535));
        assert_eq!(caps.limit("subgroupMinSize"), Some(0));
        assert_eq!(caps.limit("noSuchLimit"), None);
        // Every name the generator lets expressions read has a value here.
        for (name, _) in kernel_abi::device::LIMITS
            .iter()
            .chain(kernel_abi::device::SUBGROUP_SIZES)
        {
            assert!(caps.limit(name).is_some(), "{name}");
        }
    }

    #[test]
    fn feature_lookup_by_webgpu_name() {
        let caps = DeviceCaps {
            shader_f16: true,
            timestamp_query: true,
            ..DeviceCaps::portable()
        };
        assert!(caps.has_feature("shader-f16"));
        assert!(!caps.has_feature("subgroups"));
        assert!(caps.has_feature("timestamp-query"));
        assert!(!caps.has_feature("float32-filterable"));
        assert_eq!(caps.feature_names(), ["shader-f16", "timestamp-query"]);
        assert!(wgpu_feature("subgroups").is_some() && wgpu_feature("x").is_none());
        assert_eq!(
            wgpu_feature(FEATURE_SUBGROUP_MATRIX),
            Some(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        );
        // Every feature the generator lets expressions name is one the runtime can request.
        for f in KNOWN_FEATURES {
            assert!(wgpu_feature(f).is_some(), "{f}");
        }
    }

    const F16_F32_16: SubgroupMatrixConfig = SubgroupMatrixConfig {
        component: MatrixScalar::F16,
        result: MatrixScalar::F32,
        m: 16,
        n: 16,
        k: 16,
    };

    #[test]
    fn subgroup_matrix_configs_are_answered_by_name() {
        let other = SubgroupMatrixConfig {
            m: 8,
            n: 8,
            k: 8,
            ..F16_F32_16
        };
        let caps = DeviceCaps {
            subgroup_matrix: true,
            subgroup_matrix_configs: vec![F16_F32_16],
            ..DeviceCaps::portable()
        };
        assert!(caps.has_feature("chromium-experimental-subgroup-matrix"));
        assert!(caps.has_feature("subgroup-matrix-f16-f32-16x16x16"));
        assert!(caps.has_feature(&F16_F32_16.feature_name()));
        assert!(!caps.has_feature(&other.feature_name()));
        assert!(!caps.has_feature("subgroup-matrix-f16-f32-16x16"));
        assert!(!caps.has_feature("subgroup-matrix-f16-f32-016x16x16"));
        assert!(!caps.has_feature("subgroup-matrix"));
        // Configurations are no features of their own.
        assert_eq!(
            caps.feature_names(),
            ["chromium-experimental-subgroup-matrix"]
        );

        // A configuration without the feature (a device that was not opted in) is not offered.
        let off = DeviceCaps {
            subgroup_matrix: false,
            ..caps.clone()
        };
        assert!(!off.has_feature(FEATURE_SUBGROUP_MATRIX));
        assert!(!off.has_feature("subgroup-matrix-f16-f32-16x16x16"));
        assert!(off.feature_names().is_empty());
        // The feature without configurations (a device from `Context::from_wgpu`).
        let unreported = DeviceCaps {
            subgroup_matrix_configs: Vec::new(),
            ..caps
        };
        assert!(unreported.has_feature(FEATURE_SUBGROUP_MATRIX));
        assert!(!unreported.has_feature("subgroup-matrix-f16-f32-16x16x16"));
        let portable = DeviceCaps::portable();
        assert!(!portable.subgroup_matrix && portable.subgroup_matrix_configs.is_empty());
    }

    #[test]
    fn cooperative_matrix_properties_become_sorted_configs() {
        let property =
            |ab_type, cr_type, size, saturating_accumulation| wgpu::CooperativeMatrixProperties {
                m_size: size,
                n_size: size,
                k_size: size,
                ab_type,
                cr_type,
                saturating_accumulation,
            };
        use wgpu::CooperativeScalarType::{F16, F32, I32, U32};
        let configs = subgroup_matrix_configs(&[
            property(F16, F32, 16, false),
            property(F32, F32, 8, false),
            property(F16, F32, 16, true),
            property(U32, I32, 8, false),
        ]);
        let names: Vec<String> = configs
            .iter()
            .map(SubgroupMatrixConfig::feature_name)
            .collect();
        assert_eq!(
            names,
            [
                "subgroup-matrix-f16-f32-16x16x16",
                "subgroup-matrix-f32-f32-8x8x8",
                "subgroup-matrix-u32-i32-8x8x8",
            ]
        );
        let m = wgpu::CooperativeMatrixProperties {
            m_size: 16,
            n_size: 8,
            k_size: 4,
            ..property(F16, F16, 0, false)
        };
        assert_eq!(
            subgroup_matrix_configs(&[m])[0].feature_name(),
            "subgroup-matrix-f16-f16-16x8x4"
        );
    }
}
