//! A time bound per test. A test that makes a GPU context calls [`bound`] (the context
//! helpers of `devices.rs` do), and when the test has not finished after [`limit`], the binary
//! stops with the test's name instead of running into CI's limit. A hang in a driver cannot be interrupted from another thread, so stopping
//! the process is the only way out; the message says which test it was.
//!
//! libtest runs each test on a thread named after it (with any number of test threads), so
//! the bound is kept per thread and lifted when the test's thread ends.

use std::cell::RefCell;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Duration;

/// Seconds a GPU test may run unless `KERNELS_TEST_LIMIT_SECONDS` says otherwise: far longer
/// than any test takes on a software adapter, far shorter than CI's limit.
pub const DEFAULT_LIMIT_SECONDS: u64 = 600;

/// The bound of each test.
pub fn limit() -> Duration {
    let seconds = std::env::var("KERNELS_TEST_LIMIT_SECONDS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(DEFAULT_LIMIT_SECONDS);
    Duration::from_secs(seconds)
}

/// Lifts the bound when dropped: when the test's thread ends, or when the thread starts
/// another bound.
struct Armed(Sender<()>);

impl Drop for Armed {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

thread_local! {
    static ARMED: RefCell<Option<Armed>> = const { RefCell::new(None) };
}

/// Bounds the current test (the calling thread) to [`limit`]; calling it again in the same
/// test changes nothing. When the bound passes, the process prints the test's name and exits
/// with status 101, as a failed test binary does.
pub fn bound() {
    ARMED.with(|armed| {
        if armed.borrow().is_some() {
            return;
        }
        let name = std::thread::current()
            .name()
            .unwrap_or("a test")
            .to_owned();
        let limit = limit();
        let (done, finished) = mpsc::channel();
        let watchdog = std::thread::Builder::new()
            .name(format!("bound of {name}"))
            .spawn(move || {
                if let Err(RecvTimeoutError::Timeout) = finished.recv_timeout(limit) {
                    eprintln!(
                        "\ntest {name} has run for {} s, past its bound (KERNELS_TEST_LIMIT_SECONDS): it hangs; stopping the test binary",
                        limit.as_secs()
                    );
                    std::process::exit(101);
                }
            });
        // Without a watchdog thread the test simply runs unbounded.
        if watchdog.is_ok() {
            *armed.borrow_mut() = Some(Armed(done));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finished_test_lifts_its_bound() {
        // A bound armed on a thread that ends is lifted: the process goes on.
        let worker = std::thread::Builder::new()
            .name("short".to_owned())
            .spawn(bound)
            .expect("a thread");
        worker.join().expect("joins");
        bound();
        bound();
    }
}
