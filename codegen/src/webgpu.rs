//! The WebGPU names expressions may use: limits (`device.limits.*`) and features.
//!
//! Codegen does not depend on wgpu, so the mapping from WebGPU limit names to `wgpu::Limits`
//! fields lives here; the generated code reads those fields.

/// WebGPU limit name → `wgpu::Limits` field.
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

/// WebGPU feature names `device.features.has(..)` may ask about.
pub const FEATURES: &[&str] = &["shader-f16", "subgroups", "timestamp-query"];

/// The `wgpu::Limits` field of a WebGPU limit name.
pub fn limit_field(name: &str) -> Option<&'static str> {
    LIMITS
        .iter()
        .find(|(webgpu, _)| *webgpu == name)
        .map(|(_, field)| *field)
}
