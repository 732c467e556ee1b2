//! Time for retry backoff and wait stages, injectable so that tests do not
//! sleep: a fake clock returns at once and remembers what was asked.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The clock a run sleeps on.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    /// Real time (tokio's timer).
    #[default]
    System,
    /// Returns immediately; records each requested sleep.
    Fake(Arc<Mutex<Vec<Duration>>>),
}

impl Clock {
    /// A fake clock with no sleeps recorded.
    #[must_use]
    pub fn fake() -> Clock {
        Clock::Fake(Arc::default())
    }

    /// Sleeps for `duration` (the fake clock only records it).
    pub async fn sleep(&self, duration: Duration) {
        match self {
            Clock::System => tokio::time::sleep(duration).await,
            Clock::Fake(slept) => {
                if let Ok(mut slept) = slept.lock() {
                    slept.push(duration);
                }
                tokio::task::yield_now().await;
            }
        }
    }

    /// The sleeps a fake clock was asked for, in order (empty for the system clock).
    #[must_use]
    pub fn slept(&self) -> Vec<Duration> {
        match self {
            Clock::System => Vec::new(),
            Clock::Fake(slept) => slept.lock().map(|s| s.clone()).unwrap_or_default(),
        }
    }
}
