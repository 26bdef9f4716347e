//! The one way dueq takes a std mutex.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a mutex whose critical sections cannot be left half-done by a panic (every
/// one in dueq is a read, an insert, a swap or a counter step), so a poisoned mutex
/// is used as it is rather than turned into a panic on a request path.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
