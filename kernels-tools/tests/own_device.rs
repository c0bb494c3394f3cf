//! Ops on a device the application created (`Context::from_wgpu`): they run and match the
//! float64 reference, a feature the device lacks is a typed rejection, and the runtime leaves
//! the application's uncaptured-error handler in place.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use kernel_runtime::{AnyTensor, Context, DType, OpError, wgpu};
use kernels_tools::cases;
use kernels_tools::data::compare;

/// The application's setup: its own instance, adapter and device, created without any
/// optional feature, with its own error handler.
fn app_device() -> (
    wgpu::Device,
    wgpu::Queue,
    wgpu::AdapterInfo,
    Arc<Mutex<Vec<String>>>,
) {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("an adapter (CI installs Mesa lavapipe)");
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("the application's device"),
        required_features: wgpu::Features::empty(),
        required_limits: adapter.limits(),
        ..wgpu::DeviceDescriptor::default()
    }))
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        log.lock().unwrap().push(e.to_string());
    }));
    (device, queue, adapter.get_info(), seen)
}

#[test]
fn ops_run_on_the_applications_device_and_leave_its_handler_alone() {
    let (device, queue, info, seen) = app_device();
    test_support::bound();
    let ctx = Context::from_wgpu(device.clone(), queue, info);
    assert!(!ctx.caps().shader_f16 && !ctx.caps().subgroups);

    let all = cases::all().unwrap();
    for case in all.iter().filter(|c| c.dtype == DType::F32) {
        let entry = case.entry().unwrap();
        let inputs = case.upload(&ctx).unwrap();
        let refs: Vec<&AnyTensor> = inputs.iter().collect();
        let run = entry.run(&ctx, &refs, &case.attrs).unwrap();
        let got = run.outputs[0].to_f64_vec(&ctx).unwrap();
        let comparison = compare(&got, &case.want, case.tolerance);
        assert!(
            comparison.passed(),
            "{} / {}: {comparison}",
            case.op,
            case.name
        );
        // Without subgroups the device takes the subgroup-free variants.
        assert_ne!(run.variant, "row_head_subgroups", "{}", case.name);
    }

    // A float16 case on a device without shader-f16: the op's typed rejection.
    let case = all.iter().find(|c| c.dtype == DType::F16).unwrap();
    assert_eq!(
        case.unsupported(ctx.caps()).as_deref(),
        Some("adapter has no shader-f16")
    );
    let entry = case.entry().unwrap();
    let upload = case.upload(&ctx);
    match upload {
        // Uploading float16 data needs no feature; running the op does.
        Ok(inputs) => {
            let refs: Vec<&AnyTensor> = inputs.iter().collect();
            let err = entry.run(&ctx, &refs, &case.attrs).unwrap_err();
            assert!(
                matches!(err, OpError::NoVariant { .. }) && err.to_string().contains("f16"),
                "{err}"
            );
        }
        Err(err) => panic!("uploading float16 data failed: {err}"),
    }

    // The runtime installed no handler of its own: an error outside its scopes still
    // reaches the application's.
    let _ = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("invalid on purpose"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::MAP_WRITE,
        mapped_at_creation: false,
    });
    let _ = device.poll(wgpu::PollType::wait_indefinitely());
    assert_eq!(seen.lock().unwrap().len(), 1, "{:?}", seen.lock().unwrap());
}
