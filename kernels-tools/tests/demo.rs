//! The main job on wgpu's GL backend (Mesa llvmpipe through EGL, present wherever Mesa is):
//! the demo runs every case the adapter supports, lists the float16 cases as skipped for lack
//! of `shader-f16`, and exits 0. Where the only GL is a driver wgpu cannot open a device on
//! (NVIDIA's EGL: "Parent device is lost", gfx-rs/wgpu issue 7068), the demo must say so and
//! exit with an error, not panic.

use std::process::Command;

#[test]
fn demo_runs_on_the_gl_backend_and_skips_what_the_adapter_lacks() {
    test_support::bound();
    let output = Command::new(env!("CARGO_BIN_EXE_demo"))
        .env("WGPU_BACKEND", "gl")
        .env_remove("KERNELS_ADAPTER")
        .output()
        .expect("the demo binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() && stderr.contains("no device: ") {
        assert!(
            stderr.contains("(GL, ") && !stderr.contains("llvmpipe"),
            "the GL adapter that could not be opened is not named, or is Mesa's:\n{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        eprintln!("no device on this machine's GL adapter, reported as such:\n{stderr}");
        return;
    }
    assert!(
        output.status.success(),
        "demo failed on GL ({}):\n{stdout}\n{stderr}",
        output.status
    );
    let adapter = stdout.lines().next().unwrap_or_default();
    assert!(
        adapter.starts_with("adapter: ") && adapter.contains("(GL, "),
        "not the GL backend: {adapter}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.starts_with("com.microsoft.")
                || l.starts_with("ai.onnx.")
                || l.starts_with("kernels.")
        })
        .collect();
    let ok = rows.iter().filter(|l| l.ends_with("  ok")).count();
    let skipped: Vec<&&str> = rows.iter().filter(|l| l.contains("skipped: ")).collect();
    // wgpu's GL backend has no shader-f16: every float16 case and only those are skipped,
    // each with the reason; every float32 case runs and matches the reference.
    assert!(ok >= 8, "too few cases ran:\n{stdout}");
    assert_eq!(ok + skipped.len(), rows.len(), "a case failed:\n{stdout}");
    for row in &skipped {
        assert!(
            row.contains("float16") && row.ends_with("skipped: adapter has no shader-f16"),
            "{row}"
        );
    }
    assert!(
        rows.iter()
            .filter(|l| l.contains("float32"))
            .all(|l| l.ends_with("  ok")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{ok} passed, 0 failed, {} skipped", skipped.len())),
        "{stdout}"
    );
}
