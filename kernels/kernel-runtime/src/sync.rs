//! Locking as the runtime does it: a poisoned mutex is still used, since every critical
//! section here leaves its data consistent (caches only grow or are cleared), so a panic on
//! one thread must not disable a context for the others.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, ignoring poisoning.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
