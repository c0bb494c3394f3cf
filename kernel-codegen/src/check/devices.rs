//! The devices a package is checked against: what `device.limits.*`, `device.adapterInfo.*`
//! and `device.features.has(..)` answer. WebGPU's default limits with no optional feature are
//! what any adapter offers; the others are the kinds of adapter packages write variants for
//! (float16, subgroups of 32, tensor cores of 16 × 16 or 8 × 8).

use kernel_abi::device::{FEATURE_SHADER_F16, FEATURE_SUBGROUP_MATRIX, FEATURE_SUBGROUPS};

/// One device: its name in findings, its limits by WebGPU name, its subgroup sizes (0 when
/// it has none) and its features (subgroup-matrix configurations by their feature names).
#[derive(Debug, Clone)]
pub struct Device {
    pub name: &'static str,
    limits: Vec<(&'static str, i64)>,
    pub subgroup_min_size: i64,
    pub subgroup_max_size: i64,
    pub features: Vec<String>,
}

impl Device {
    /// The limit named `name`, e.g. `maxComputeWorkgroupsPerDimension`.
    pub fn limit(&self, name: &str) -> Option<i64> {
        self.limits
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    pub fn has_feature(&self, name: &str) -> bool {
        self.features.iter().any(|f| f == name)
    }

    /// The largest buffer the device can create, in bytes: an input larger than this cannot
    /// exist on it.
    pub fn max_buffer_bytes(&self) -> i64 {
        self.limit("maxBufferSize").unwrap_or(i64::MAX)
    }
}

/// WebGPU's default limits (the specification's "Limits" table), which every adapter meets.
const DEFAULT_LIMITS: &[(&str, i64)] = &[
    ("maxBindGroups", 4),
    ("maxBindingsPerBindGroup", 1000),
    ("maxBufferSize", 268_435_456),
    ("maxComputeInvocationsPerWorkgroup", 256),
    ("maxComputeWorkgroupSizeX", 256),
    ("maxComputeWorkgroupSizeY", 256),
    ("maxComputeWorkgroupSizeZ", 64),
    ("maxComputeWorkgroupStorageSize", 16_384),
    ("maxComputeWorkgroupsPerDimension", 65_535),
    ("maxDynamicStorageBuffersPerPipelineLayout", 4),
    ("maxDynamicUniformBuffersPerPipelineLayout", 8),
    ("maxStorageBufferBindingSize", 134_217_728),
    ("maxStorageBuffersPerShaderStage", 8),
    ("maxUniformBufferBindingSize", 65_536),
    ("maxUniformBuffersPerShaderStage", 12),
    ("minStorageBufferOffsetAlignment", 256),
    ("minUniformBufferOffsetAlignment", 256),
];

/// A discrete desktop GPU's limits as wgpu reports them on Vulkan (larger workgroups, more
/// workgroup memory, 2 GiB bindings).
const DESKTOP_LIMITS: &[(&str, i64)] = &[
    ("maxBufferSize", 4_294_967_296),
    ("maxComputeInvocationsPerWorkgroup", 1024),
    ("maxComputeWorkgroupSizeX", 1024),
    ("maxComputeWorkgroupSizeY", 1024),
    ("maxComputeWorkgroupStorageSize", 49_152),
    ("maxStorageBufferBindingSize", 2_147_483_647),
    ("maxStorageBuffersPerShaderStage", 16),
];

fn limits(overrides: &[(&'static str, i64)]) -> Vec<(&'static str, i64)> {
    DEFAULT_LIMITS
        .iter()
        .map(|&(name, default)| {
            let value = overrides.iter().find(|(n, _)| *n == name).map(|&(_, v)| v);
            (name, value.unwrap_or(default))
        })
        .collect()
}

/// The devices every op is checked on, from the least capable to the most.
pub fn all() -> Vec<Device> {
    let f16 = FEATURE_SHADER_F16.to_owned();
    let subgroups = FEATURE_SUBGROUPS.to_owned();
    let matrices = FEATURE_SUBGROUP_MATRIX.to_owned();
    vec![
        Device {
            name: "WebGPU defaults, no optional feature",
            limits: limits(&[]),
            subgroup_min_size: 0,
            subgroup_max_size: 0,
            features: Vec::new(),
        },
        Device {
            name: "WebGPU defaults with shader-f16",
            limits: limits(&[]),
            subgroup_min_size: 0,
            subgroup_max_size: 0,
            features: vec![f16.clone()],
        },
        Device {
            name: "desktop GPU with shader-f16 and subgroups of 32",
            limits: limits(DESKTOP_LIMITS),
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            features: vec![f16.clone(), subgroups.clone()],
        },
        Device {
            name: "desktop GPU with subgroups of 32 and 16 × 16 subgroup matrices",
            limits: limits(DESKTOP_LIMITS),
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            features: vec![
                f16.clone(),
                subgroups.clone(),
                matrices.clone(),
                "subgroup-matrix-f16-f32-16x16x16".to_owned(),
                "subgroup-matrix-f16-f16-16x16x16".to_owned(),
            ],
        },
        Device {
            name: "GPU with subgroups of 4 to 64 and 8 × 8 subgroup matrices",
            limits: limits(&[("maxComputeWorkgroupStorageSize", 32_768)]),
            subgroup_min_size: 4,
            subgroup_max_size: 64,
            features: vec![
                f16,
                subgroups,
                matrices,
                "subgroup-matrix-f16-f32-8x8x8".to_owned(),
                "subgroup-matrix-f16-f16-8x8x8".to_owned(),
                "subgroup-matrix-f32-f32-8x8x8".to_owned(),
            ],
        },
    ]
}
