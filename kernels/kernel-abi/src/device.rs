//! The `device.*` names manifest expressions may read: WebGPU limits, the adapter's subgroup
//! sizes and optional features. The generator checks names against these tables and lowers a
//! limit to the runtime's `DeviceCaps` field it names; the runtime answers by the same names.

/// The WebGPU name of the `shader-f16` feature.
pub const FEATURE_SHADER_F16: &str = "shader-f16";
/// The WebGPU name of the `subgroups` feature.
pub const FEATURE_SUBGROUPS: &str = "subgroups";
/// The WebGPU name of the `timestamp-query` feature.
pub const FEATURE_TIMESTAMP_QUERY: &str = "timestamp-query";

/// The optional features expressions may ask about (`device.features.has(..)`) and the
/// runtime requests where the adapter has them.
pub const FEATURES: [&str; 3] = [
    FEATURE_SHADER_F16,
    FEATURE_SUBGROUPS,
    FEATURE_TIMESTAMP_QUERY,
];

/// WebGPU limit name → the field of `wgpu::Limits` (`DeviceCaps::limits`) holding it.
pub const LIMITS: &[(&str, &str)] = &[
    ("maxBindGroups", "max_bind_groups"),
    ("maxBindingsPerBindGroup", "max_bindings_per_bind_group"),
    ("maxBufferSize", "max_buffer_size"),
    (
        "maxComputeInvocationsPerWorkgroup",
        "max_compute_invocations_per_workgroup",
    ),
    ("maxComputeWorkgroupSizeX", "max_compute_workgroup_size_x"),
    ("maxComputeWorkgroupSizeY", "max_compute_workgroup_size_y"),
    ("maxComputeWorkgroupSizeZ", "max_compute_workgroup_size_z"),
    (
        "maxComputeWorkgroupStorageSize",
        "max_compute_workgroup_storage_size",
    ),
    (
        "maxComputeWorkgroupsPerDimension",
        "max_compute_workgroups_per_dimension",
    ),
    (
        "maxDynamicStorageBuffersPerPipelineLayout",
        "max_dynamic_storage_buffers_per_pipeline_layout",
    ),
    (
        "maxDynamicUniformBuffersPerPipelineLayout",
        "max_dynamic_uniform_buffers_per_pipeline_layout",
    ),
    (
        "maxStorageBufferBindingSize",
        "max_storage_buffer_binding_size",
    ),
    (
        "maxStorageBuffersPerShaderStage",
        "max_storage_buffers_per_shader_stage",
    ),
    (
        "maxUniformBufferBindingSize",
        "max_uniform_buffer_binding_size",
    ),
    (
        "maxUniformBuffersPerShaderStage",
        "max_uniform_buffers_per_shader_stage",
    ),
    (
        "minStorageBufferOffsetAlignment",
        "min_storage_buffer_offset_alignment",
    ),
    (
        "minUniformBufferOffsetAlignment",
        "min_uniform_buffer_offset_alignment",
    ),
];

/// The adapter's subgroup size range, which browsers report beside the limits: WebGPU name →
/// `DeviceCaps` field (0 when the adapter does not say).
pub const SUBGROUP_SIZES: &[(&str, &str)] = &[
    ("subgroupMinSize", "subgroup_min_size"),
    ("subgroupMaxSize", "subgroup_max_size"),
];

/// Whether `name` is a limit expressions may read.
pub fn is_limit(name: &str) -> bool {
    LIMITS
        .iter()
        .chain(SUBGROUP_SIZES)
        .any(|(webgpu, _)| *webgpu == name)
}

/// The `DeviceCaps` path of a WebGPU limit, e.g. `["limits", "max_buffer_size"]`.
pub fn limit_path(name: &str) -> Option<Vec<&'static str>> {
    if let Some((_, field)) = LIMITS.iter().find(|(webgpu, _)| *webgpu == name) {
        return Some(vec!["limits", field]);
    }
    SUBGROUP_SIZES
        .iter()
        .find(|(webgpu, _)| *webgpu == name)
        .map(|(_, field)| vec![*field])
}
