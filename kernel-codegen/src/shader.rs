//! What the WGSL emitter hands on: one rendered, validated shader with the overrides and
//! bindings its pipeline takes and what naga's back ends made of it. The Rust emitter puts
//! these in the op's shader table; xtask hands them to the validators outside Rust.

use std::fmt;

use crate::model::{Access, Combination};

/// The `enable` directive browsers require for subgroup operations. naga refuses it (its
/// subgroup operations need no directive), so the shader files leave it out and the runtime
/// puts [`Shader::web_enables`] in front of the text on the web backend.
pub const WEB_SUBGROUPS_ENABLE: &str = "enable subgroups;\n";

/// One `@group(0)` binding as the runtime binds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingLayout {
    pub index: u32,
    pub access: Access,
    /// The least bytes a buffer bound here must hold: one element of the runtime-sized array
    /// the shader declares, or the size of the type (0 where `main` does not use it).
    pub least_size: u32,
    /// The uniform struct's size, for the uniform binding.
    pub uniform_size: Option<u32>,
}

/// A pipeline override of a shader.
#[derive(Debug, Clone, PartialEq)]
pub struct OverrideSpec {
    pub name: String,
    /// `u32`, `f32` or `bool`.
    pub wgsl_type: &'static str,
    /// The value translation and the second validator resolve it with: one the variant can
    /// run with where its domain says ([`crate::model::domains::sample`]), else
    /// the type's representative (`wgsl::representative_override`).
    pub representative: f64,
}

/// One pre-rendered, validated shader.
#[derive(Debug, Clone)]
pub struct Shader {
    pub variant: usize,
    pub pass: usize,
    pub combination: Combination,
    /// File name beside the generated module, e.g. `rank3.main.scalar-f32.interleaved-1.wgsl`.
    pub file_name: String,
    pub text: String,
    /// Hex SHA-256 of `text` (first 16 bytes): part of the runtime's pipeline cache key.
    pub digest: String,
    /// Byte size of the uniform struct, when the pass has one.
    pub uniform_size: Option<u32>,
    /// WebGPU features the shader needs (`shader-f16`, `subgroups`), sorted.
    pub features: Vec<String>,
    /// The earlier shader of the same pass (an index into the op's shaders) whose text this
    /// combination renders to as well: they share one file and one kernel.
    pub same_as: Option<usize>,
    /// Directives that go before `text` where WGSL reaches a browser unchanged (wasm32):
    /// [`WEB_SUBGROUPS_ENABLE`] for subgroup shaders, empty otherwise.
    pub web_enables: &'static str,
    /// The text as the template rendered it, where that is not `text`: Chromium's subgroup
    /// matrices, which `text` has as naga's cooperative matrices. Browsers compile this one.
    pub chromium_text: Option<String>,
    /// The subgroup-matrix multiply-accumulate shapes the shader performs: a device must
    /// offer each to run it.
    pub subgroup_matrix_configs: Vec<kernel_abi::device::SubgroupMatrixConfig>,
    /// The pipeline overrides the runtime sets.
    pub overrides: Vec<OverrideSpec>,
    /// The bind group the pipeline's automatic layout must accept.
    pub bindings: Vec<BindingLayout>,
    /// naga's translations for wgpu's native backends; empty unless [`crate::Inputs::translate`]
    /// was set.
    pub translations: Translations,
}

impl Shader {
    /// The text a browser compiles: [`Shader::web_enables`], then [`Shader::chromium_text`]
    /// where there is one, else [`Shader::text`].
    pub fn web_text(&self) -> String {
        let text = self.chromium_text.as_deref().unwrap_or(&self.text);
        format!("{}{text}", self.web_enables)
    }
}

/// A static combination of a pass that is not built: it did not render or validate (the
/// package's loader would fail the same call when rendering it), or its bindings cannot hold
/// its dtypes. The op's table lists it, so a call that selects it gets
/// `kernel_runtime::OpError::NotBuilt` with [`LeftOut::reason`] instead of a shader.
#[derive(Debug, Clone)]
pub struct LeftOut {
    pub variant: usize,
    pub pass: usize,
    pub combination: Combination,
    /// Why, as the generator reported it (file, template line, message).
    pub reason: String,
}

/// The shaders of an op, and the combinations left out.
#[derive(Debug, Clone, Default)]
pub struct Built {
    pub shaders: Vec<Shader>,
    pub left_out: Vec<LeftOut>,
}

/// A shading language naga translates WGSL into for one of wgpu's native backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Vulkan.
    SpirV,
    /// Metal.
    Msl,
    /// DX12.
    Hlsl,
    /// OpenGL (ES) through wgpu's GL backend.
    Glsl,
}

impl Target {
    pub const ALL: [Target; 4] = [Target::SpirV, Target::Msl, Target::Hlsl, Target::Glsl];

    pub fn name(self) -> &'static str {
        match self {
            Target::SpirV => "SPIR-V",
            Target::Msl => "MSL",
            Target::Hlsl => "HLSL",
            Target::Glsl => "GLSL",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What became of a shader on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetStatus {
    /// Translated.
    Translated,
    /// Not a target of this shader: no wgpu backend of that language offers a feature it
    /// needs (wgpu's GL backend has neither `shader-f16` nor `subgroups`).
    NotApplicable(&'static str),
}

/// The device limits a shader needs, measured on its module with overrides resolved (for an
/// override-sized workgroup array, with the values translation uses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    /// Storage buffers bound in the compute stage (`maxStorageBuffersPerShaderStage`).
    pub storage_buffers: u32,
    /// Bytes of workgroup memory, each variable rounded up to 16 as WebGPU counts them
    /// (`maxComputeWorkgroupStorageSize`).
    pub workgroup_storage: u32,
}

impl Needs {
    /// WebGPU's default limits, which every adapter offers.
    pub const DEFAULTS: Needs = Needs {
        storage_buffers: 8,
        workgroup_storage: 16384,
    };
}

/// The translations of one shader.
#[derive(Debug, Clone, Default)]
pub struct Translations {
    /// The limits the shader needs.
    pub needs: Needs,
    /// Per target, in [`Target::ALL`] order.
    pub status: Vec<(Target, TargetStatus)>,
    /// The SPIR-V module, for external validation (`spirv-val`).
    pub spirv: Vec<u32>,
    /// The SPIR-V version it was written for, `(1, 0)` or `(1, 3)`.
    pub spirv_version: (u8, u8),
}
