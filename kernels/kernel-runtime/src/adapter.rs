//! Adapter choice: a named adapter when asked for, otherwise the most capable one present.

use crate::error::RuntimeError;

/// Environment variable naming the adapter to use (a case-insensitive substring of its name),
/// read when [`crate::ContextOptions::adapter`] is `None`.
pub const ADAPTER_ENV: &str = "KERNELS_ADAPTER";

/// A one-line description of an adapter, e.g. `NVIDIA H200 (Vulkan, discrete)`.
pub fn summarize(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{} ({}, {})",
        info.name,
        backend_name(info.backend),
        device_type_name(info.device_type)
    )
}

/// The backend's display name (`Vulkan`, `Metal`, `DX12`, `GL`, ...).
pub fn backend_name(backend: wgpu::Backend) -> &'static str {
    match backend {
        wgpu::Backend::Vulkan => "Vulkan",
        wgpu::Backend::Metal => "Metal",
        wgpu::Backend::Dx12 => "DX12",
        wgpu::Backend::Gl => "GL",
        wgpu::Backend::BrowserWebGpu => "WebGPU",
        wgpu::Backend::Noop => "noop",
    }
}

/// The device type in lower case (`discrete`, `integrated`, `virtual`, `cpu`, `other`).
pub fn device_type_name(ty: wgpu::DeviceType) -> &'static str {
    match ty {
        wgpu::DeviceType::DiscreteGpu => "discrete",
        wgpu::DeviceType::IntegratedGpu => "integrated",
        wgpu::DeviceType::VirtualGpu => "virtual",
        wgpu::DeviceType::Cpu => "cpu",
        wgpu::DeviceType::Other => "other",
    }
}

/// Sort key of an adapter: lower is preferred. Backend class first (native modern APIs before
/// GL, which lacks features we need), then device type.
pub(crate) fn rank(info: &wgpu::AdapterInfo) -> (u8, u8) {
    let backend = match info.backend {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        wgpu::Backend::BrowserWebGpu => 1,
        wgpu::Backend::Gl => 2,
        wgpu::Backend::Noop => 3,
    };
    let device = match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    };
    (backend, device)
}

/// Whether `info` matches a requested name: a case-insensitive substring of the adapter name.
pub(crate) fn matches_name(info: &wgpu::AdapterInfo, requested: &str) -> bool {
    info.name
        .to_lowercase()
        .contains(&requested.trim().to_lowercase())
}

/// Index of the adapter to use among `infos`, or why there is none.
///
/// Ties keep enumeration order, so the choice is stable on a given machine.
pub(crate) fn choose(
    infos: &[wgpu::AdapterInfo],
    requested: Option<&str>,
) -> Result<usize, RuntimeError> {
    let candidates = infos
        .iter()
        .enumerate()
        .filter(|(_, i)| i.backend != wgpu::Backend::Noop)
        .filter(|(_, i)| requested.is_none_or(|name| matches_name(i, name)));
    candidates
        .min_by_key(|(idx, info)| (rank(info), *idx))
        .map(|(idx, _)| idx)
        .ok_or_else(|| RuntimeError::NoAdapter {
            requested: requested.map(str::to_owned),
            available: infos.iter().map(summarize).collect(),
        })
}

/// The adapter name asked for: the option if given, else a non-empty `KERNELS_ADAPTER`.
pub(crate) fn requested_name(option: Option<&str>) -> Option<String> {
    match option {
        Some(name) => Some(name.to_owned()),
        None => std::env::var(ADAPTER_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty()),
    }
}

/// Whether `adapters` holds what is asked for: the named adapter, or any when none is named.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn satisfies(adapters: &[wgpu::Adapter], requested: Option<&str>) -> bool {
    match requested {
        Some(name) => adapters.iter().any(|a| matches_name(&a.get_info(), name)),
        None => !adapters.is_empty(),
    }
}

/// A browser offers one adapter per request and no enumeration: ask for the
/// high-performance one.
#[cfg(target_arch = "wasm32")]
pub(crate) async fn enumerate(
    instance: &wgpu::Instance,
    _requested: Option<&str>,
) -> Vec<wgpu::Adapter> {
    let options = wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..wgpu::RequestAdapterOptions::default()
    };
    instance
        .request_adapter(&options)
        .await
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, backend: wgpu::Backend, ty: wgpu::DeviceType) -> wgpu::AdapterInfo {
        let mut i = wgpu::AdapterInfo::new(ty, backend);
        i.name = name.to_owned();
        i
    }

    fn all() -> Vec<wgpu::AdapterInfo> {
        use wgpu::{Backend as B, DeviceType as D};
        vec![
            info("llvmpipe (LLVM 15.0.6, 256 bits)", B::Vulkan, D::Cpu),
            info("NVIDIA H200 (GL)", B::Gl, D::DiscreteGpu),
            info("Intel Iris", B::Vulkan, D::IntegratedGpu),
            info("NVIDIA H200", B::Vulkan, D::DiscreteGpu),
            info("virtio", B::Vulkan, D::VirtualGpu),
        ]
    }

    #[test]
    fn prefers_discrete_on_native_backends() {
        assert_eq!(choose(&all(), None).unwrap(), 3);
        let no_discrete: Vec<_> = all()
            .into_iter()
            .filter(|i| i.name != "NVIDIA H200")
            .collect();
        assert_eq!(
            no_discrete[choose(&no_discrete, None).unwrap()].name,
            "Intel Iris"
        );
        let software = vec![all()[0].clone(), all()[1].clone()];
        // A software Vulkan device beats a GL one, even a discrete GL one.
        assert_eq!(choose(&software, None).unwrap(), 0);
    }

    #[test]
    fn named_adapter_is_a_case_insensitive_substring() {
        assert_eq!(choose(&all(), Some("LLVMPIPE")).unwrap(), 0);
        assert_eq!(choose(&all(), Some("h200")).unwrap(), 3);
        let err = choose(&all(), Some("radeon")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("`radeon`") && msg.contains("NVIDIA H200 (Vulkan, discrete)"));
        assert!(matches!(
            choose(&[], None),
            Err(RuntimeError::NoAdapter {
                requested: None,
                ..
            })
        ));
    }

    #[test]
    fn summaries() {
        assert_eq!(summarize(&all()[3]), "NVIDIA H200 (Vulkan, discrete)");
        assert_eq!(
            summarize(&all()[0]),
            "llvmpipe (LLVM 15.0.6, 256 bits) (Vulkan, cpu)"
        );
    }

    #[test]
    fn explicit_option_wins_over_env() {
        assert_eq!(requested_name(Some("x")).as_deref(), Some("x"));
    }
}
