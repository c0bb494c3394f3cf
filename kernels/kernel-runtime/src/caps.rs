//! Device capabilities as the manifests see them: `device.limits.*` and `device.features.has(..)`.

pub use kernel_abi::device::{
    FEATURE_SHADER_F16, FEATURE_SUBGROUPS, FEATURE_TIMESTAMP_QUERY, FEATURES as KNOWN_FEATURES,
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
    /// Smallest subgroup size the adapter reports; 0 when unknown.
    pub subgroup_min_size: u32,
    /// Largest subgroup size the adapter reports; 0 when unknown.
    pub subgroup_max_size: u32,
}

impl DeviceCaps {
    /// Whether the device has the feature with this WebGPU name.
    ///
    /// Unknown names are `false` rather than an error: a manifest may ask about a feature this
    /// runtime never requests, and such a device simply does not have it.
    pub fn has_feature(&self, webgpu_name: &str) -> bool {
        match webgpu_name {
            FEATURE_SHADER_F16 => self.shader_f16,
            FEATURE_SUBGROUPS => self.subgroups,
            FEATURE_TIMESTAMP_QUERY => self.timestamp_query,
            _ => false,
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

    /// The WebGPU names of the optional features this device has, in [`KNOWN_FEATURES`] order.
    pub fn feature_names(&self) -> Vec<&'static str> {
        KNOWN_FEATURES
            .into_iter()
            .filter(|f| self.has_feature(f))
            .collect()
    }

    /// Builds the capabilities from what a device was actually created with.
    pub(crate) fn from_device(device: &wgpu::Device, info: &wgpu::AdapterInfo) -> Self {
        let features = device.features();
        Self {
            limits: device.limits(),
            shader_f16: features.contains(wgpu::Features::SHADER_F16),
            subgroups: features.contains(wgpu::Features::SUBGROUP),
            timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
        }
    }
}

/// The wgpu feature flag for a WebGPU feature name this runtime requests.
pub(crate) fn wgpu_feature(webgpu_name: &str) -> Option<wgpu::Features> {
    match webgpu_name {
        FEATURE_SHADER_F16 => Some(wgpu::Features::SHADER_F16),
        FEATURE_SUBGROUPS => Some(wgpu::Features::SUBGROUP),
        FEATURE_TIMESTAMP_QUERY => Some(wgpu::Features::TIMESTAMP_QUERY),
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
    }
}
