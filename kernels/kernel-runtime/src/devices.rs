//! The process's wgpu instance and the devices contexts open on it: natively one instance
//! for the whole process, and one device per adapter and feature set, shared by every
//! [`crate::Context`] that asks for it and kept until it is lost.
//!
//! Why shared: NVIDIA's Vulkan driver (580 on the H200) deadlocks when one thread destroys a
//! device or an instance while other threads create instances, devices or pipelines: the
//! corpus tests, a context per test on 16 threads, stopped within seconds with every thread in
//! a driver mutex (`vkDestroyDevice`, `vkCreateInstance`, `vkCreateComputePipelines`,
//! `eglTerminate`). With the instance and devices kept for the process, no device is destroyed
//! while the runtime runs (ARCHITECTURE.md, "Threads and devices", has the runs). It is also what an
//! application wants: opening a device costs milliseconds and memory, and a second context
//! on the same adapter then shares buffers with the first.
//!
//! A context that needs a device of its own (one it may destroy, say) asks for it with
//! [`ContextOptions::dedicated_device`]; one that may use wgpu's experimental features (today
//! cooperative matrices) opts in with [`ContextOptions::experimental_features`].

use std::sync::{Arc, Mutex};

use crate::adapter;
use crate::caps::{KNOWN_FEATURES, wgpu_feature};
use crate::error::RuntimeError;
use crate::gpu::{ErrorLog, convert};
use crate::sync::lock;

/// Environment variable that opts a context in to wgpu's experimental features (`1` or
/// `true`), read when [`ContextOptions::experimental_features`] is `None`.
pub const EXPERIMENTAL_FEATURES_ENV: &str = "KERNELS_EXPERIMENTAL_FEATURES";

/// The wgpu features that wgpu calls experimental among those the runtime requests: asked for
/// only with [`ContextOptions::experimental_features`] on.
const EXPERIMENTAL: wgpu::Features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;

/// How to create a [`crate::Context`].
#[derive(Debug, Clone, Default)]
pub struct ContextOptions {
    /// A case-insensitive substring of the adapter name. When `None`, the environment variable
    /// `KERNELS_ADAPTER` is used if set; otherwise the most capable adapter is chosen.
    pub adapter: Option<String>,
    /// WebGPU feature names not to request even if the adapter has them (`"subgroups"`,
    /// `"shader-f16"`, `"timestamp-query"`, `"chromium-experimental-subgroup-matrix"`), e.g.
    /// to exercise fallback variants.
    pub disable_features: Vec<&'static str>,
    /// Whether to request wgpu's experimental features where the adapter has them: today
    /// `chromium-experimental-subgroup-matrix`, wgpu's cooperative matrices (tensor cores),
    /// with the configurations the adapter reports ([`crate::DeviceCaps::subgroup_matrix`],
    /// [`crate::DeviceCaps::subgroup_matrix_configs`]). When `None`, the environment
    /// variable `KERNELS_EXPERIMENTAL_FEATURES` decides (`1` or `true` turn it on); off by
    /// default.
    ///
    /// wgpu says its experimental features may have soundness holes: undefined behaviour
    /// reachable from safe code through bugs in wgpu or the driver. Turning this on accepts
    /// that for this context's device. A context that does not opt in never shares a device
    /// opened with an experimental feature.
    pub experimental_features: Option<bool>,
    /// A device of this context's own instead of the one the process shares for this adapter
    /// and feature set (see [`crate::Context::new`]): for a context that may destroy its
    /// device. Dropping a device while other threads use the driver can deadlock some drivers
    /// (NVIDIA's Vulkan driver 580), so keep dedicated contexts for as long as the process.
    pub dedicated_device: bool,
}

/// A device with what was used to open it.
#[derive(Clone)]
pub(crate) struct OpenDevice {
    pub(crate) instance: wgpu::Instance,
    pub(crate) adapter: wgpu::Adapter,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    /// Shared by every context on this device: the handlers wgpu calls are per device.
    pub(crate) errors: Arc<Mutex<ErrorLog>>,
}

#[cfg(not(target_arch = "wasm32"))]
impl OpenDevice {
    fn lost(&self) -> bool {
        lock(&self.errors).lost.is_some()
    }

    /// Whether this device is open on `adapter` (the process's adapter objects are kept, so
    /// identity says it) with exactly `features`, and not lost. Exactly: a context that did
    /// not opt in to experimental features asks for none, so it never gets a device opened
    /// with one (and wgpu's experimental features enabled).
    fn serves(&self, adapter: &wgpu::Adapter, features: wgpu::Features) -> bool {
        self.adapter == *adapter && self.device.features() == features && !self.lost()
    }
}

/// What the process keeps for contexts to share.
#[cfg(not(target_arch = "wasm32"))]
struct Shared {
    /// The adapters enumerated so far: the same `wgpu::Adapter` for every device on it,
    /// since wgpu's GL backend guards an adapter's one EGL context with a lock of that
    /// adapter object (a second enumeration's adapter would make it current on two threads).
    adapters: Vec<wgpu::Adapter>,
    /// Whether GL and the other secondary backends were enumerated too.
    all_backends: bool,
    /// The devices contexts share, in the order they were opened.
    devices: Vec<OpenDevice>,
}

#[cfg(not(target_arch = "wasm32"))]
static SHARED: Mutex<Shared> = Mutex::new(Shared {
    adapters: Vec::new(),
    all_backends: false,
    devices: Vec::new(),
});

/// The process's instance, made on first use with the backends `WGPU_BACKEND` names (all by
/// default) and never dropped.
#[cfg(not(target_arch = "wasm32"))]
fn instance() -> wgpu::Instance {
    static INSTANCE: std::sync::OnceLock<wgpu::Instance> = std::sync::OnceLock::new();
    INSTANCE
        .get_or_init(|| {
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
        })
        .clone()
}

/// In a browser each context has an instance of its own (wgpu's objects there belong to the
/// thread that made them).
#[cfg(target_arch = "wasm32")]
fn instance() -> wgpu::Instance {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env())
}

/// Opens a device for `opts`: natively the shared one for the chosen adapter and features
/// when it is open and not lost (unless a dedicated device is asked for), else a new one.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn open(opts: &ContextOptions) -> Result<OpenDevice, RuntimeError> {
    // Held while choosing and opening (wgpu answers both at once natively), so threads that
    // ask together share one device and no two devices are created at the same time.
    let mut shared = lock(&SHARED);
    let instance = instance();
    let requested = adapter::requested_name(opts.adapter.as_deref());
    // The modern backends first: initialising GL on a headless machine is slow and noisy,
    // and only needed when nothing better exists or it was named.
    if shared.adapters.is_empty() {
        shared.adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY));
    }
    if !shared.all_backends && !adapter::satisfies(&shared.adapters, requested.as_deref()) {
        let more = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::SECONDARY));
        shared.adapters.extend(more);
        shared.all_backends = true;
    }
    let (chosen, info) = choose(shared.adapters.clone(), requested)?;
    let features = chosen.features() & wanted_features(opts);
    if !opts.dedicated_device
        && let Some(open) = shared.devices.iter().find(|d| d.serves(&chosen, features))
    {
        return Ok(open.clone());
    }
    let open = pollster::block_on(request(instance, chosen, info, features))?;
    if !opts.dedicated_device {
        // A lost device of the same adapter and features is replaced; it is dropped here,
        // where no context of this runtime uses it any more.
        shared
            .devices
            .retain(|d| !(d.adapter == open.adapter && d.lost()));
        shared.devices.push(open.clone());
    }
    Ok(open)
}

/// Opens a device for `opts` on the browser's adapter.
#[cfg(target_arch = "wasm32")]
pub(crate) async fn open(opts: &ContextOptions) -> Result<OpenDevice, RuntimeError> {
    let instance = instance();
    let requested = adapter::requested_name(opts.adapter.as_deref());
    let adapters = adapter::enumerate(&instance, requested.as_deref()).await;
    let (chosen, info) = choose(adapters, requested)?;
    let features = chosen.features() & wanted_features(opts);
    request(instance, chosen, info, features).await
}

/// The adapter of `adapters` that `requested` names, or the most capable one.
fn choose(
    adapters: Vec<wgpu::Adapter>,
    requested: Option<String>,
) -> Result<(wgpu::Adapter, wgpu::AdapterInfo), RuntimeError> {
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
    let index = adapter::choose(&infos, requested.as_deref())?;
    let chosen = adapters
        .into_iter()
        .nth(index)
        .ok_or_else(|| RuntimeError::NoAdapter {
            requested: requested.clone(),
            available: infos.iter().map(adapter::summarize).collect(),
        })?;
    Ok((chosen, infos[index].clone()))
}

/// A new device on `adapter` with the adapter's own limits and `features`, its uncaptured
/// errors and loss logged.
async fn request(
    instance: wgpu::Instance,
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    features: wgpu::Features,
) -> Result<OpenDevice, RuntimeError> {
    let experimental_features = if features.intersects(EXPERIMENTAL) {
        // SAFETY: wgpu's experimental features may have soundness holes (undefined behaviour
        // reachable from safe code), which is why enabling them is `unsafe`. `features` holds
        // one only when the context's creator consented through
        // `ContextOptions::experimental_features` (or `KERNELS_EXPERIMENTAL_FEATURES`), whose
        // documentation says so, and such a device serves only contexts that consented too.
        #[allow(unsafe_code)]
        unsafe {
            wgpu::ExperimentalFeatures::enabled()
        }
    } else {
        wgpu::ExperimentalFeatures::disabled()
    };
    let descriptor = wgpu::DeviceDescriptor {
        label: Some("kernel-runtime"),
        required_features: features,
        required_limits: adapter.limits(),
        experimental_features,
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    };
    let (device, queue) =
        adapter
            .request_device(&descriptor)
            .await
            .map_err(|e| RuntimeError::RequestDevice {
                adapter: adapter::summarize(&info),
                message: e.to_string(),
            })?;
    // The device is the runtime's: errors outside any scope (from direct use of `device()`)
    // and its loss are logged and reported by the next wait of any context on it.
    let errors = Arc::new(Mutex::new(ErrorLog::default()));
    let log = Arc::clone(&errors);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        lock(&log).uncaptured.push(convert("uncaptured", e));
    }));
    let log = Arc::clone(&errors);
    device.set_device_lost_callback(move |reason, message| {
        lock(&log).lost = Some(format!("{reason:?}: {message}"));
    });
    Ok(OpenDevice {
        instance,
        adapter,
        info,
        device,
        queue,
        errors,
    })
}

/// The optional features a context asks for: whichever the runtime knows, the experimental
/// ones only when the options opt in, minus those the options disable; natively also the
/// pipeline cache.
fn wanted_features(opts: &ContextOptions) -> wgpu::Features {
    let experimental = experimental_features(opts.experimental_features);
    let mut wanted = wgpu::Features::empty();
    for name in KNOWN_FEATURES {
        if let Some(f) = wgpu_feature(name)
            && !opts.disable_features.contains(&name)
            && (experimental || !f.intersects(EXPERIMENTAL))
        {
            wanted |= f;
        }
    }
    // Native only: lets `use_pipeline_cache` keep compiled pipelines across processes.
    if cfg!(not(target_arch = "wasm32")) {
        wanted |= wgpu::Features::PIPELINE_CACHE;
    }
    wanted
}

/// Whether the context opts in to experimental features: the option if given, else
/// `KERNELS_EXPERIMENTAL_FEATURES` is `1` or `true` (any case, surrounding spaces ignored).
fn experimental_features(option: Option<bool>) -> bool {
    option
        .unwrap_or_else(|| std::env::var(EXPERIMENTAL_FEATURES_ENV).is_ok_and(|v| env_says_on(&v)))
}

/// Whether an environment variable's value turns an opt-in on.
fn env_says_on(value: &str) -> bool {
    let value = value.trim();
    value == "1" || value.eq_ignore_ascii_case("true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn experimental_features_are_asked_for_only_when_opted_in() {
        let coop = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        let on = ContextOptions {
            experimental_features: Some(true),
            ..ContextOptions::default()
        };
        assert!(wanted_features(&on).contains(coop));
        assert!(wanted_features(&on).contains(wgpu::Features::SUBGROUP));
        let off = ContextOptions {
            experimental_features: Some(false),
            ..ContextOptions::default()
        };
        assert!(!wanted_features(&off).intersects(EXPERIMENTAL));
        let disabled = ContextOptions {
            disable_features: vec![crate::caps::FEATURE_SUBGROUP_MATRIX],
            ..on
        };
        assert!(!wanted_features(&disabled).contains(coop));
        assert!(wanted_features(&disabled).contains(wgpu::Features::SUBGROUP));
    }

    #[test]
    fn the_environment_opts_in_with_one_or_true() {
        for on in ["1", "true", "TRUE", " True\n"] {
            assert!(env_says_on(on), "{on:?}");
        }
        for off in ["", "0", "false", "yes", "on", "11", "truex"] {
            assert!(!env_says_on(off), "{off:?}");
        }
        // The option wins over the environment, whatever it says.
        assert!(experimental_features(Some(true)));
        assert!(!experimental_features(Some(false)));
    }
}
