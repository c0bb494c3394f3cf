//! GPU tests of the opt-in to wgpu's experimental features: cooperative matrices as the WebGPU
//! feature `chromium-experimental-subgroup-matrix`, with the adapter's configurations, only for
//! a context whose creator asks for them. On an adapter without cooperative matrices (Mesa
//! lavapipe in CI) an opted-in context works as any other and reports neither.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use kernel_runtime::caps::FEATURE_SUBGROUP_MATRIX;
use kernel_runtime::{Context, ContextOptions, DeviceCaps, Tensor, wgpu};

const COOPERATIVE_MATRIX: wgpu::Features = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;

fn context(experimental_features: Option<bool>) -> Context {
    test_support::context_with(&ContextOptions {
        experimental_features,
        ..ContextOptions::default()
    })
}

/// The device has no cooperative matrices, and the capabilities say so.
fn assert_without(caps: &DeviceCaps, device: &wgpu::Device) {
    assert!(!device.features().contains(COOPERATIVE_MATRIX));
    assert!(!caps.subgroup_matrix);
    assert!(caps.subgroup_matrix_configs.is_empty());
    assert!(!caps.has_feature(FEATURE_SUBGROUP_MATRIX));
    assert!(!caps.feature_names().contains(&FEATURE_SUBGROUP_MATRIX));
}

/// `y = 2x + 1` on `ctx`, compared with the host.
fn runs(ctx: &Context) {
    let data = common::data(100);
    let x = Tensor::from_slice(ctx, &[100], &data).unwrap();
    let y = Tensor::<f32>::zeros(ctx, &[100]).unwrap();
    let plan = common::scale_plan("v", 100, 2.0, 1.0);
    ctx.run_plan(&plan, &common::io(&x, &y)).unwrap();
    let expected: Vec<f32> = data.iter().map(|v| v * 2.0 + 1.0).collect();
    assert_eq!(y.to_vec(ctx).unwrap(), expected);
}

#[test]
fn opting_in_requests_cooperative_matrices_only_where_the_adapter_has_them() {
    let on = context(Some(true));
    let off = context(Some(false));
    println!("{on:?}");
    runs(&on);
    let caps = on.caps();
    assert_eq!(
        caps.subgroup_matrix,
        on.device().features().contains(COOPERATIVE_MATRIX)
    );
    assert_eq!(
        caps.has_feature(FEATURE_SUBGROUP_MATRIX),
        caps.subgroup_matrix
    );
    let debug = format!("{on:?}");
    if caps.subgroup_matrix {
        // wgpu offers the feature only on an adapter that reports configurations.
        assert!(!caps.subgroup_matrix_configs.is_empty());
        for config in &caps.subgroup_matrix_configs {
            assert!(caps.has_feature(&config.feature_name()), "{config}");
        }
        assert!(caps.feature_names().contains(&FEATURE_SUBGROUP_MATRIX));
        assert!(debug.contains("subgroup_matrix_configs"), "{debug}");
        // A device with an experimental feature serves only contexts that opted in.
        assert!(on.device() != off.device());
    } else {
        // The adapter has no cooperative matrices (lavapipe): the opt-in changes nothing,
        // and both contexts share the process's device for the adapter.
        assert_without(caps, on.device());
        assert!(!debug.contains("subgroup_matrix_configs"), "{debug}");
        assert!(on.device() == off.device());
    }
    // The feature stays off when disabled, opted in or not.
    let disabled = test_support::context_with(&ContextOptions {
        experimental_features: Some(true),
        disable_features: vec![FEATURE_SUBGROUP_MATRIX],
        ..ContextOptions::default()
    });
    assert_without(disabled.caps(), disabled.device());
}

#[test]
fn opting_out_has_no_cooperative_matrices() {
    let off = context(Some(false));
    assert_without(off.caps(), off.device());
    runs(&off);
}

/// An application's device: `from_wgpu_with_adapter` reads the description from the adapter,
/// and reports configurations only for a device that has cooperative matrices (this one was
/// created without any optional feature).
#[test]
fn an_applications_device_gets_configurations_only_with_the_feature() {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .unwrap();
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let app = Context::from_wgpu_with_adapter(device.clone(), queue.clone(), &adapter);
    assert_eq!(app.adapter_info(), &adapter.get_info());
    assert_without(app.caps(), app.device());
    runs(&app);
    let plain = Context::from_wgpu(device, queue, adapter.get_info());
    assert_eq!(plain.caps(), app.caps());
}
