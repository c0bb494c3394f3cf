//! A test that outlives its bound stops the binary with its name, and status 101.

use std::process::Command;
use std::time::Duration;

#[test]
fn a_hanging_test_is_stopped_by_name() {
    if std::env::var_os("TEST_SUPPORT_HANG").is_some() {
        test_support::bound();
        std::thread::sleep(Duration::from_secs(30));
        return;
    }
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "a_hanging_test_is_stopped_by_name",
            "--exact",
            "--nocapture",
        ])
        .env("TEST_SUPPORT_HANG", "1")
        .env("KERNELS_TEST_LIMIT_SECONDS", "1")
        .output()
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    assert!(
        stderr.contains("test a_hanging_test_is_stopped_by_name has run for 1 s"),
        "{stderr}"
    );
}
