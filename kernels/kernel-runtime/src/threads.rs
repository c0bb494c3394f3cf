//! Work spread over the machine's threads: the driver's shader compiles are independent
//! per pipeline and most of a cold start.

#[cfg(not(target_arch = "wasm32"))]
use std::sync::Mutex;

#[cfg(not(target_arch = "wasm32"))]
use crate::sync::lock;

/// Runs `f` on every item on up to the machine's parallelism of threads at once (driver
/// compiles are independent per shader and most of a cold start); the first error stops the
/// remaining items and is returned.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn on_threads<T: Sync, E: Send>(
    items: &[T],
    f: impl Fn(&T) -> Result<(), E> + Sync,
) -> Result<(), E> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len());
    let next = AtomicUsize::new(0);
    let first_error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(e) = f(item) {
                        lock(&first_error).get_or_insert(e);
                        // Later items would only add errors nobody reads.
                        next.store(items.len(), Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
    });
    match lock(&first_error).take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// In a browser the context lives on one thread, so the items run in turn.
#[cfg(target_arch = "wasm32")]
pub(crate) fn on_threads<T, E>(items: &[T], f: impl Fn(&T) -> Result<(), E>) -> Result<(), E> {
    items.iter().try_for_each(f)
}
