//! Offline translation of validated shaders with naga's back ends (SPIR-V, MSL, HLSL, GLSL), so a
//! shader that wgpu could not turn into a platform shader fails the build, not a user's device.
//!
//! Each back end gets the capabilities the shader needs, as wgpu would ask for them: SPIR-V 1.3
//! for subgroup operations (1.0 otherwise), MSL 2.4, HLSL shader model 6.2 for f16 and 6.0 for
//! wave operations (5.1 otherwise), GLSL ES 3.10 compute. Cooperative matrices (lowered from
//! Chromium's subgroup matrices) exist on Vulkan and Metal only: such a shader is translated to
//! SPIR-V 1.3 with `SPV_KHR_cooperative_matrix` and to MSL, and HLSL and GLSL are reported not
//! applicable, as no wgpu backend of theirs offers the feature. Pipeline overrides are given the
//! representative values of [`representative_override`] first, since the back ends translate
//! a module whose overrides are resolved.

use naga::back::{glsl, hlsl, msl, spv};

use crate::shader::{Needs, OverrideSpec, Target, TargetStatus, Translations};

/// Why a validated shader does not translate: the step that failed and naga's message, with
/// its causes.
#[derive(Debug, thiserror::Error)]
pub enum TranslateError {
    #[error("measuring types: {0}")]
    MeasuringTypes(String),
    #[error("resolving overrides: {0}")]
    ResolvingOverrides(String),
    #[error("naga's {target} back end rejects the shader: {message}")]
    Rejected { target: Target, message: String },
}

/// The limits `module` needs.
fn needs_of(module: &naga::Module) -> Result<Needs, TranslateError> {
    let mut layouter = naga::proc::Layouter::default();
    layouter
        .update(module.to_ctx())
        .map_err(|e| TranslateError::MeasuringTypes(with_causes(&e)))?;
    let mut needs = Needs::default();
    for (_, global) in module.global_variables.iter() {
        match global.space {
            naga::AddressSpace::Storage { .. } => needs.storage_buffers += 1,
            naga::AddressSpace::WorkGroup => {
                needs.workgroup_storage += layouter[global.ty].size.div_ceil(16) * 16;
            }
            _ => {}
        }
    }
    Ok(needs)
}

/// The value every override of its type gets for translation and for the second validator's
/// pipeline: small, non-zero and a multiple of 4, so word-size conditions and divisions by
/// the value stay defined.
pub fn representative_override(wgsl_type: &str) -> f64 {
    match wgsl_type {
        "f32" | "f16" => 1.0,
        "bool" => 1.0,
        _ => 8.0,
    }
}

/// The optional capabilities a shader uses, which decide the back ends' versions and which
/// targets apply.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uses {
    pub f16: bool,
    pub subgroups: bool,
    pub cooperative_matrix: bool,
}

/// Translates `module` (validated with the capabilities of `uses`) to every target; `Err`
/// names the back end and naga's message.
pub fn translate(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    overrides: &[OverrideSpec],
    uses: Uses,
) -> Result<Translations, TranslateError> {
    // naga's writers recurse once per level of an expression, as its front end does.
    super::validate::on_large_stack(|| translate_here(module, info, overrides, uses))
}

fn translate_here(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    overrides: &[OverrideSpec],
    uses: Uses,
) -> Result<Translations, TranslateError> {
    let Uses {
        f16,
        subgroups,
        cooperative_matrix,
    } = uses;
    let mut constants = naga::back::PipelineConstants::default();
    for o in overrides {
        constants.insert(o.name.clone(), o.representative);
    }
    let entry = (naga::ShaderStage::Compute, "main");
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(module, info, Some(entry), &constants)
            .map_err(|e| TranslateError::ResolvingOverrides(with_causes(&e)))?;
    let mut out = Translations {
        needs: needs_of(&module)?,
        ..Translations::default()
    };

    let spirv_version = if subgroups || cooperative_matrix {
        (1, 3)
    } else {
        (1, 0)
    };
    let spv_options = spv::Options {
        lang_version: spirv_version,
        ..spv::Options::default()
    };
    let spv_pipeline = spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".to_owned(),
    };
    out.spirv = spv::write_vec(&module, &info, &spv_options, Some(&spv_pipeline))
        .map_err(|e| failure(Target::SpirV, &e))?;
    out.spirv_version = spirv_version;
    out.status.push((Target::SpirV, TargetStatus::Translated));

    let msl_options = msl::Options {
        lang_version: (2, 4),
        ..msl::Options::default()
    };
    let msl_pipeline = msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".to_owned())),
        ..msl::PipelineOptions::default()
    };
    msl::write_string(&module, &info, &msl_options, &msl_pipeline)
        .map_err(|e| failure(Target::Msl, &e))?;
    out.status.push((Target::Msl, TargetStatus::Translated));

    if cooperative_matrix {
        // naga's HLSL and GLSL writers have no cooperative matrices (they would panic), and
        // neither DX12 nor GL in wgpu offers them.
        const WHY: &str = "wgpu offers cooperative matrices on Vulkan and Metal only";
        out.status
            .push((Target::Hlsl, TargetStatus::NotApplicable(WHY)));
        out.status
            .push((Target::Glsl, TargetStatus::NotApplicable(WHY)));
        return Ok(out);
    }
    let shader_model = if f16 {
        hlsl::ShaderModel::V6_2
    } else if subgroups {
        hlsl::ShaderModel::V6_0
    } else {
        hlsl::ShaderModel::V5_1
    };
    let hlsl_options = hlsl::Options {
        shader_model,
        ..hlsl::Options::default()
    };
    let hlsl_pipeline = hlsl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, "main".to_owned())),
    };
    let mut hlsl_text = String::new();
    hlsl::Writer::new(&mut hlsl_text, &hlsl_options, &hlsl_pipeline)
        .write(&module, &info, None)
        .map_err(|e| failure(Target::Hlsl, &e))?;
    out.status.push((Target::Hlsl, TargetStatus::Translated));

    if f16 {
        out.status.push((
            Target::Glsl,
            TargetStatus::NotApplicable("wgpu's GL backend has no shader-f16"),
        ));
    } else if subgroups {
        out.status.push((
            Target::Glsl,
            TargetStatus::NotApplicable("wgpu's GL backend has no subgroups"),
        ));
    } else {
        let glsl_options = glsl::Options {
            version: glsl::Version::Embedded {
                version: 310,
                is_webgl: false,
            },
            ..glsl::Options::default()
        };
        let glsl_pipeline = glsl::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".to_owned(),
            multiview: None,
        };
        let mut glsl_text = String::new();
        glsl::Writer::new(
            &mut glsl_text,
            &module,
            &info,
            &glsl_options,
            &glsl_pipeline,
            naga::proc::BoundsCheckPolicies::default(),
        )
        .and_then(|mut w| w.write())
        .map_err(|e| failure(Target::Glsl, &e))?;
        out.status.push((Target::Glsl, TargetStatus::Translated));
    }
    Ok(out)
}

fn failure(target: Target, error: &dyn std::error::Error) -> TranslateError {
    TranslateError::Rejected {
        target,
        message: with_causes(error),
    }
}

/// `error` followed by each of its causes: naga's outer errors name only the function or
/// expression, the reason is further down.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        message.push_str(&format!(": {inner}"));
        source = inner.source();
    }
    message
}
