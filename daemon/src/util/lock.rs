//! Locking a `std::sync::Mutex` without giving up on a poisoned one.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking it over when a thread panicked while holding it.
///
/// Weft's mutexes guard state that a panic cannot leave half-changed in a
/// way that matters: SQLite rolls back an unfinished transaction, files are
/// written atomically, and display or bookkeeping state is replaced whole.
/// Refusing the lock for the rest of the process would turn one panic into
/// a stuck run; carrying on with the data is the lesser harm.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_poisoned_mutex_is_still_locked_with_its_data() {
        let shared = Arc::new(Mutex::new(vec![1]));
        let held = Arc::clone(&shared);
        let panicked = std::thread::spawn(move || {
            let mut guard = held.lock().expect("first lock");
            guard.push(2);
            panic!("poison the lock");
        })
        .join();
        assert!(
            panicked.is_err(),
            "the thread panicked while holding the lock"
        );
        assert!(shared.is_poisoned(), "the panic poisoned the mutex");
        assert_eq!(
            *lock(&shared),
            vec![1, 2],
            "the data written before the panic is kept"
        );
    }
}
