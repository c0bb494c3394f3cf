//! GPU tests of the persisted pipeline cache: a save and reload round trip, a damaged file
//! ignored, and a device without the feature reported.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;

use common::data;
use kernel_runtime::{Context, PipelineCacheLoad, RuntimeError, Tensor, wgpu};

/// A path in a fresh folder of the system's temporary directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-runtime-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("nested").join("pipelines.bin")
}

/// Runs the scale kernel (creating its pipeline) and checks the result.
fn run_scale(ctx: &Context) {
    let n = 300;
    let x = Tensor::from_slice(ctx, &[n], &data(n)).unwrap();
    let y = Tensor::<f32>::zeros(ctx, &[n]).unwrap();
    let plan = common::scale_plan("cached", n, 3.0, 0.5);
    ctx.run_plan(&plan, &common::io(&x, &y)).unwrap();
    let want: Vec<f32> = data(n).iter().map(|v| v * 3.0 + 0.5).collect();
    assert_eq!(y.to_vec(ctx).unwrap(), want);
}

#[test]
fn the_cache_survives_a_save_and_a_new_context() {
    let ctx = test_support::context();
    if !ctx
        .device()
        .features()
        .contains(wgpu::Features::PIPELINE_CACHE)
    {
        eprintln!("skipping: {} has no pipeline cache", ctx.adapter_summary());
        return;
    }
    let path = scratch("round-trip");
    assert_eq!(
        ctx.use_pipeline_cache(&path).unwrap(),
        PipelineCacheLoad::Missing
    );
    run_scale(&ctx);
    let Some(saved) = ctx.save_pipeline_cache().unwrap() else {
        eprintln!("skipping: the backend gives no cache data");
        return;
    };
    assert!(saved > 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), saved as u64 + 24);

    let again = test_support::context();
    assert_eq!(
        again.use_pipeline_cache(&path).unwrap(),
        PipelineCacheLoad::Loaded { bytes: saved }
    );
    run_scale(&again);

    // A damaged file is ignored, the cache starts empty, and ops still run.
    let mut bytes = std::fs::read(&path).unwrap();
    *bytes.last_mut().unwrap() ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let damaged = test_support::context();
    let load = damaged.use_pipeline_cache(&path).unwrap();
    assert!(
        matches!(&load, PipelineCacheLoad::Rejected { reason } if reason.contains("checksum")),
        "{load:?}"
    );
    run_scale(&damaged);
    assert!(
        damaged.save_pipeline_cache().unwrap().is_some(),
        "the next save replaces it"
    );
    let fixed = test_support::context();
    assert!(matches!(
        fixed.use_pipeline_cache(&path).unwrap(),
        PipelineCacheLoad::Loaded { .. }
    ));
    let _ = std::fs::remove_dir_all(path.parent().unwrap().parent().unwrap());
}

#[test]
fn a_device_without_the_feature_is_reported() {
    let ctx = test_support::context();
    // The application's own device, created without PIPELINE_CACHE.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .unwrap();
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let app = Context::from_wgpu(device, queue, adapter.get_info());
    assert_eq!(
        app.use_pipeline_cache(scratch("missing-feature")),
        Err(RuntimeError::MissingFeature("pipeline-cache"))
    );
    assert_eq!(app.save_pipeline_cache(), Ok(None));
    drop(ctx);
}
