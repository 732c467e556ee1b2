//! The threads history reads run on: a fixed pair, alive for the app's life.
//!
//! Reads ran on Tauri's blocking pool, which starts a thread whenever all
//! its threads are busy and ends it after ten idle seconds. Each new thread
//! that allocates gets a malloc arena of its own, and glibc keeps an arena's
//! freed memory for reuse: after a minute of browsing the app process held
//! eight arenas of about 13 MB each, 110 of its 220 MB (docs/performance.md).
//! Two long-lived threads keep two arenas, each as large as the largest read
//! it served, and still read a run's two event pages side by side.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

/// How many reads run at once: a run's event pages are read in pairs.
const THREADS: usize = 2;

type Job = Box<dyn FnOnce() + Send>;

/// The queue the history threads take reads from.
pub struct HistoryPool {
    jobs: Mutex<Sender<Job>>,
}

impl HistoryPool {
    /// Starts `threads` threads taking jobs from one queue. `None` when no
    /// thread could be started.
    fn start(threads: usize) -> Option<HistoryPool> {
        let (jobs, queue) = channel::<Job>();
        let queue = Arc::new(Mutex::new(queue));
        let mut started = 0;
        for n in 0..threads {
            let queue = Arc::clone(&queue);
            let spawned = std::thread::Builder::new()
                .name(format!("history-{n}"))
                .spawn(move || serve(&queue));
            if spawned.is_ok() {
                started += 1;
            }
        }
        (started > 0).then(|| HistoryPool {
            jobs: Mutex::new(jobs),
        })
    }

    /// Runs `read` on a history thread and waits for it without blocking
    /// the async runtime. `None` when `read` panicked or the pool is gone,
    /// and the caller must say so.
    pub async fn run<T, F>(&self, read: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // The caller may have gone (its page closed): nothing to tell.
            let _ = answer.send(read());
        });
        self.jobs.lock().ok()?.send(job).ok()?;
        answered.await.ok()
    }
}

/// One history thread: takes and runs jobs until the queue closes.
fn serve(queue: &Mutex<Receiver<Job>>) {
    loop {
        // The lock is held only while waiting for the next job.
        let next = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        match next {
            // A read that panics fails its caller (its answer is dropped),
            // not the thread.
            Ok(job) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
            Err(_) => return,
        }
    }
}

/// The app's pool, started on first use.
pub fn shared() -> Option<&'static HistoryPool> {
    static POOL: OnceLock<Option<HistoryPool>> = OnceLock::new();
    POOL.get_or_init(|| HistoryPool::start(THREADS)).as_ref()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use super::*;

    #[test]
    fn reads_run_on_the_pools_own_threads_and_answer() {
        let pool = HistoryPool::start(THREADS).expect("pool");
        let names = tauri::async_runtime::block_on(async {
            let a = pool.run(|| std::thread::current().name().map(str::to_owned));
            let b = pool.run(|| std::thread::current().name().map(str::to_owned));
            [a.await, b.await]
        });
        for name in names {
            let name = name.expect("answered").expect("named thread");
            assert!(name.starts_with("history-"), "ran on {name}");
        }
    }

    #[test]
    fn a_read_that_panics_is_an_error_and_the_pool_keeps_serving() {
        let pool = HistoryPool::start(1).expect("pool");
        let (failed, next) = tauri::async_runtime::block_on(async {
            let failed = pool.run(|| -> u32 { panic!("a broken read") }).await;
            (failed, pool.run(|| 7).await)
        });
        assert_eq!(failed, None);
        assert_eq!(next, Some(7));
    }
}
