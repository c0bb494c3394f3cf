//! Runs a target on generated inputs under a time and case budget, and shrinks a failing input
//! with proptest's value trees before reporting it.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The longest a failing input is shrunk for; the input as shrunk by then is reported.
const SHRINK_TIME: Duration = Duration::from_secs(120);

/// How long and how many inputs a run may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub time: Duration,
    /// At most this many inputs (none when `None`).
    pub cases: Option<u64>,
    /// The generator's seed: the same seed and budget give the same inputs.
    pub seed: u64,
    /// A single input running longer than this is reported as a hang.
    pub hang: Duration,
}

/// A failing input after shrinking, and what failed.
#[derive(Debug, Clone)]
pub struct Failure<T> {
    pub input: T,
    pub message: String,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Run<T> {
    pub cases: u64,
    pub elapsed: Duration,
    pub failure: Option<Failure<T>>,
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wraps the panic hook: on [`guarded`]'s threads the message and place are kept for it
/// instead of printed; elsewhere the previous hook runs.
fn quiet_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !GUARDED.get() {
                previous(info);
                return;
            }
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_owned());
            let place = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("panicked{place}: {message}")));
        }));
    });
}

/// Runs `work` on a thread of its own with the main thread's stack size: `Err` with the panic
/// message if it panicked, or a hang report if it ran past `limit` (the thread is left behind).
pub fn guarded<R: Send + 'static>(
    limit: Duration,
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R, String> {
    quiet_panics();
    let (send, receive) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || {
            GUARDED.set(true);
            let result = panic::catch_unwind(AssertUnwindSafe(work)).map_err(|_| {
                LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_default()
            });
            let _ = send.send(result);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start a thread: {e}"));
    }
    match receive.recv_timeout(limit) {
        Ok(result) => result,
        Err(_) => Err(format!("hang: still running after {:.0?}", limit)),
    }
}

/// Generates inputs from `strategy` and checks each until the budget is spent or one fails;
/// a failing input is shrunk (while it keeps failing) before it is returned. `progress` is
/// called about every ten seconds with the number of inputs so far.
pub fn run<S: Strategy>(
    strategy: &S,
    budget: Budget,
    mut check: impl FnMut(&S::Value) -> Result<(), String>,
    mut progress: impl FnMut(u64, Duration),
) -> Run<S::Value> {
    let mut seed = [0u8; 32];
    seed[..8].copy_from_slice(&budget.seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &seed);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let started = Instant::now();
    let mut last_report = started;
    let mut cases = 0;
    while started.elapsed() < budget.time && budget.cases.is_none_or(|max| cases < max) {
        let Ok(mut tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        cases += 1;
        let first = tree.current();
        if let Err(message) = check(&first) {
            // Shown before shrinking, which can take minutes, so that it is never lost.
            eprintln!("fuzz: an input failed ({message}); shrinking it:\n{first:?}");
            let failure = shrink(
                &mut tree,
                Failure {
                    input: first,
                    message,
                },
                &mut check,
            );
            return Run {
                cases,
                elapsed: started.elapsed(),
                failure: Some(failure),
            };
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            progress(cases, started.elapsed());
            last_report = Instant::now();
        }
    }
    Run {
        cases,
        elapsed: started.elapsed(),
        failure: None,
    }
}

/// Simplifies `tree` while its value still fails; returns the simplest failure seen.
fn shrink<T: ValueTree>(
    tree: &mut T,
    mut failure: Failure<T::Value>,
    check: &mut impl FnMut(&T::Value) -> Result<(), String>,
) -> Failure<T::Value> {
    // Proptest's order: simplify after a failure, complicate after a pass; bounded in steps
    // and in time (each step of a hang takes the whole hang limit).
    if !tree.simplify() {
        return failure;
    }
    let started = Instant::now();
    for _ in 0..1024 {
        if started.elapsed() > SHRINK_TIME {
            break;
        }
        let input = tree.current();
        let more = match check(&input) {
            Err(message) => {
                failure = Failure { input, message };
                tree.simplify()
            }
            Ok(()) => tree.complicate(),
        };
        if !more {
            break;
        }
    }
    failure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_found_and_shrunk() {
        let budget = Budget {
            time: Duration::from_secs(30),
            cases: Some(10_000),
            seed: 7,
            hang: Duration::from_secs(5),
        };
        let run = run(
            &(0u32..1_000_000),
            budget,
            |v| {
                if *v >= 1000 {
                    Err(format!("{v} is too big"))
                } else {
                    Ok(())
                }
            },
            |_, _| {},
        );
        let failure = run.failure.expect("a value of 1000 or more is drawn");
        assert_eq!(failure.input, 1000, "shrunk to the smallest failing value");
    }

    #[test]
    fn panics_and_hangs_are_reported() {
        let panicked = guarded(Duration::from_secs(5), || -> u32 { panic!("boom") });
        let message = panicked.expect_err("panics");
        assert!(
            message.contains("boom") && message.contains("drive.rs"),
            "{message}"
        );
        let hung = guarded(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2))
        });
        assert!(hung.expect_err("hangs").starts_with("hang"));
    }
}
