//! The `device.*` names manifest expressions may read: WebGPU limits, the adapter's subgroup
//! sizes and optional features. The generator checks names against these tables and lowers a
//! limit to the runtime's `DeviceCaps` field it names; the runtime answers by the same names.
//! Also the subgroup-matrix configurations a variant may require ([`SubgroupMatrixConfig`]),
//! written as feature names the runtime answers from the adapter's report.

use std::fmt;

/// The WebGPU name of Chromium's experimental subgroup matrices, which wgpu offers as its
/// experimental cooperative matrices (tensor cores).
pub const FEATURE_SUBGROUP_MATRIX: &str = "chromium-experimental-subgroup-matrix";

/// The WebGPU name of the `shader-f16` feature.
pub const FEATURE_SHADER_F16: &str = "shader-f16";
/// The WebGPU name of the `subgroups` feature.
pub const FEATURE_SUBGROUPS: &str = "subgroups";
/// The WebGPU name of the `timestamp-query` feature.
pub const FEATURE_TIMESTAMP_QUERY: &str = "timestamp-query";

/// The bits a shader table row sets for the features its shader needs: the generator writes
/// them, the runtime reads them back as names.
pub const ROW_FEATURE_BITS: [(&str, u8); 3] = [
    (FEATURE_SHADER_F16, 1),
    (FEATURE_SUBGROUPS, 2),
    (FEATURE_SUBGROUP_MATRIX, 4),
];

/// The optional features expressions may ask about (`device.features.has(..)`) and the
/// runtime requests where the adapter has them ([`FEATURE_SUBGROUP_MATRIX`] only for a
/// context whose creator opts in to experimental features). Sorted.
pub const FEATURES: [&str; 4] = [
    FEATURE_SUBGROUP_MATRIX,
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

/// The scalar type of a subgroup matrix's components or of its result, by its WGSL name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MatrixScalar {
    F16,
    F32,
    I8,
    U8,
    I32,
    U32,
}

impl MatrixScalar {
    /// Every scalar type, in declaration order.
    pub const ALL: [MatrixScalar; 6] = [
        MatrixScalar::F16,
        MatrixScalar::F32,
        MatrixScalar::I8,
        MatrixScalar::U8,
        MatrixScalar::I32,
        MatrixScalar::U32,
    ];

    /// The WGSL name: `f16`, `f32`, `i8`, `u8`, `i32` or `u32`.
    pub const fn wgsl(self) -> &'static str {
        match self {
            MatrixScalar::F16 => "f16",
            MatrixScalar::F32 => "f32",
            MatrixScalar::I8 => "i8",
            MatrixScalar::U8 => "u8",
            MatrixScalar::I32 => "i32",
            MatrixScalar::U32 => "u32",
        }
    }

    /// The scalar type with this WGSL name; `None` for any other text.
    pub fn from_wgsl(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.wgsl() == name)
    }
}

impl fmt::Display for MatrixScalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wgsl())
    }
}

/// The start of every subgroup-matrix configuration's feature name
/// ([`SubgroupMatrixConfig::feature_name`]).
pub const SUBGROUP_MATRIX_CONFIG_PREFIX: &str = "subgroup-matrix-";

/// One subgroup-matrix configuration an adapter supports: `result = left × right (+ result)`
/// with `left` an M×K and `right` a K×N matrix of `component`s, and `result` M×N of
/// `result`s. A variant that needs one requires it by its feature name; the runtime answers
/// from the configurations the adapter reports (only on a device with
/// [`FEATURE_SUBGROUP_MATRIX`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubgroupMatrixConfig {
    /// The scalar type of the left and right matrices.
    pub component: MatrixScalar,
    /// The scalar type of the result (accumulator) matrix.
    pub result: MatrixScalar,
    /// Rows of the left and result matrices.
    pub m: u32,
    /// Columns of the right and result matrices.
    pub n: u32,
    /// Columns of the left matrix, rows of the right one.
    pub k: u32,
}

impl SubgroupMatrixConfig {
    /// The feature name a variant's requirement is written as:
    /// `subgroup-matrix-f16-f32-16x16x16` (component, result, M×N×K).
    pub fn feature_name(&self) -> String {
        format!(
            "{SUBGROUP_MATRIX_CONFIG_PREFIX}{}-{}-{}x{}x{}",
            self.component, self.result, self.m, self.n, self.k
        )
    }

    /// The configuration [`SubgroupMatrixConfig::feature_name`] wrote `name` for; `None` for
    /// any other text (another spelling of a number, a zero size, an unknown scalar type).
    /// Allocates nothing, so the runtime may ask per call.
    pub fn from_feature_name(name: &str) -> Option<Self> {
        let rest = name.strip_prefix(SUBGROUP_MATRIX_CONFIG_PREFIX)?;
        let mut parts = rest.split('-');
        let component = MatrixScalar::from_wgsl(parts.next()?)?;
        let result = MatrixScalar::from_wgsl(parts.next()?)?;
        let sizes = parts.next()?;
        if parts.next().is_some() {
            return None;
        }
        let mut sizes = sizes.split('x');
        let mut size = || sizes.next().and_then(canonical_size);
        let (m, n, k) = (size()?, size()?, size()?);
        if sizes.next().is_some() {
            return None;
        }
        Some(Self {
            component,
            result,
            m,
            n,
            k,
        })
    }
}

/// A matrix size as `feature_name` writes it: decimal digits without a leading zero, not 0.
fn canonical_size(text: &str) -> Option<u32> {
    let digits = text.bytes().all(|b| b.is_ascii_digit());
    if !digits || text.starts_with('0') {
        return None;
    }
    text.parse().ok()
}

impl fmt::Display for SubgroupMatrixConfig {
    /// `f16 → f32, 16×16×16`: component → result, M×N×K.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} → {}, {}×{}×{}",
            self.component, self.result, self.m, self.n, self.k
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_sorted() {
        assert!(FEATURES.windows(2).all(|w| w[0] < w[1]), "{FEATURES:?}");
    }

    #[test]
    fn scalar_names_round_trip() {
        for s in MatrixScalar::ALL {
            assert_eq!(MatrixScalar::from_wgsl(s.wgsl()), Some(s));
        }
        assert_eq!(MatrixScalar::from_wgsl("f64"), None);
        assert_eq!(MatrixScalar::from_wgsl("F16"), None);
    }

    #[test]
    fn config_feature_names_round_trip() {
        let config = SubgroupMatrixConfig {
            component: MatrixScalar::F16,
            result: MatrixScalar::F32,
            m: 16,
            n: 8,
            k: 32,
        };
        assert_eq!(config.feature_name(), "subgroup-matrix-f16-f32-16x8x32");
        assert_eq!(config.to_string(), "f16 → f32, 16×8×32");
        for component in MatrixScalar::ALL {
            for result in MatrixScalar::ALL {
                for (m, n, k) in [(1, 1, 1), (8, 8, 8), (16, 16, 16), (u32::MAX, 64, 100)] {
                    let c = SubgroupMatrixConfig {
                        component,
                        result,
                        m,
                        n,
                        k,
                    };
                    let name = c.feature_name();
                    assert!(name.starts_with(SUBGROUP_MATRIX_CONFIG_PREFIX), "{name}");
                    assert_eq!(SubgroupMatrixConfig::from_feature_name(&name), Some(c));
                }
            }
        }
    }

    #[test]
    fn other_names_are_no_configs() {
        for junk in [
            "",
            "subgroups",
            FEATURE_SUBGROUP_MATRIX,
            "subgroup-matrix-",
            "subgroup-matrix-f16-f32-16x16",
            "subgroup-matrix-f16-f32-16x16x16x16",
            "subgroup-matrix-f16-f32-16x16x",
            "subgroup-matrix-f64-f32-16x16x16",
            "subgroup-matrix-f16-f64-16x16x16",
            "subgroup-matrix-f16-16x16x16",
            "subgroup-matrix-f16-f32-16x16x16-",
            "subgroup-matrix-f16-f32-i8-16x16x16",
            "subgroup-matrix-f16-f32-0x16x16",
            "subgroup-matrix-f16-f32-16x0x16",
            "subgroup-matrix-f16-f32-16x16x0",
            "subgroup-matrix-f16-f32-016x16x16",
            "subgroup-matrix-f16-f32-+16x16x16",
            "subgroup-matrix-f16-f32-16X16X16",
            "subgroup-matrix-f16-f32-16×16×16",
            "subgroup-matrix-f16-f32- 16x16x16",
            "subgroup-matrix-f16-f32-4294967296x16x16",
            "Subgroup-matrix-f16-f32-16x16x16",
            "subgroup-matrix-F16-f32-16x16x16",
            "xsubgroup-matrix-f16-f32-16x16x16",
        ] {
            assert_eq!(
                SubgroupMatrixConfig::from_feature_name(junk),
                None,
                "{junk}"
            );
        }
    }

    #[test]
    fn configs_are_not_features_and_features_are_not_configs() {
        for f in FEATURES {
            assert!(!f.starts_with(SUBGROUP_MATRIX_CONFIG_PREFIX), "{f}");
            assert!(!is_limit(f), "{f}");
        }
    }
}
