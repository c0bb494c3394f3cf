//! The decode-loop example's chain: every stage matches its float64 reference after many
//! steps on the application's own device, and later steps reuse what the first one made.

// In tests a panic is the failure report.
#![allow(clippy::unwrap_used)]

use kernel_runtime::{Context, wgpu};

#[test]
fn the_loop_reuses_its_buffers_and_matches_the_reference() {
    test_support::bound();
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("an adapter (CI installs Mesa lavapipe)");
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default())).unwrap();
    let ctx = Context::from_wgpu(device, queue, adapter.get_info());

    let report = kernels_tools::inference_loop::run(&ctx, 6, 11).unwrap();
    assert_eq!(report.steps, 6);
    for (stage, comparison) in &report.checks {
        assert!(comparison.passed(), "{stage}: {comparison}");
    }
    assert!(
        report.kept_after_first >= 3,
        "one bind group per op at least"
    );
    assert_eq!(report.kept_after_last, report.kept_after_first);
}

/// The long-run harness (`bench --soak`) on a short run: it steps, reports both windows, and
/// the runtime holds the same after the first window as at the end.
#[test]
fn the_soak_harness_reports_flat_counts() {
    let ctx = test_support::context();
    let report = kernels_tools::bench::soak::run(&ctx, 3).expect("the soak runs");
    assert!(
        report.steps > 0 && report.first.steps > 0 && report.last.steps > 0,
        "{report:?}"
    );
    assert!(report.counts_flat, "{report:?}");
    // A 3 s run has windows of 0.3 s: every full one is kept, the first and last among them.
    assert!(report.windows.len() >= 2, "{report:?}");
    assert_eq!(report.windows[0].from_s, report.first.from_s);
    assert_eq!(
        report.windows.last().map(|w| w.from_s),
        Some(report.last.from_s)
    );
    let (lo, hi) = kernels_tools::bench::soak::median_range(&report);
    assert!(lo > 0.0 && lo <= hi, "{lo} {hi}");
    assert!(
        report.checks.iter().all(|(_, _, ok)| *ok),
        "{:?}",
        report.checks
    );
}
