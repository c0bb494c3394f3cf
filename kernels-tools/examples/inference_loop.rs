//! An application's decode loop on its own wgpu device: three ops per step, recorded into one
//! encoder, writing into views of buffers the application made once.
//!
//! `cargo run --release -p kernels-tools --example inference_loop [STEPS]`

use anyhow::{Context as _, Result, bail};
use kernel_runtime::{Context, wgpu};

fn main() -> Result<()> {
    let steps: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().context("STEPS must be a number")?,
        None => 100,
    };

    // The application's setup, as it would be without this crate.
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .context("no GPU adapter")?;
    let wanted = wgpu::Features::SUBGROUP | wgpu::Features::SHADER_F16;
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("application device"),
        required_features: adapter.features() & wanted,
        required_limits: adapter.limits(),
        ..Default::default()
    }))?;

    let ctx = Context::from_wgpu(device, queue, adapter.get_info());
    println!("adapter: {}", ctx.adapter_summary());
    let report = kernels_tools::inference_loop::run(&ctx, steps, 2026)?;
    println!(
        "{} steps, median {:.1} µs per step (3 ops recorded, submitted and waited for)",
        report.steps,
        report.step.as_secs_f64() * 1e6
    );
    println!(
        "bind groups kept: {} after the first step, {} after the last",
        report.kept_after_first, report.kept_after_last
    );
    let mut failed = false;
    for (stage, comparison) in &report.checks {
        println!("{stage}: {comparison}");
        failed |= !comparison.passed();
    }
    if failed {
        bail!("a stage does not match its float64 reference");
    }
    Ok(())
}
