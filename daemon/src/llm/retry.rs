//! LLM retries (execution/failures.mdx, "LLM retries"): transient errors are
//! retried with exponential backoff and jitter; a provider's `Retry-After` is
//! honoured unless it exceeds a cap, in which case the call fails at once
//! rather than blocking the run.
//!
//! Sleeping goes through a [`Sleeper`] so tests can record the waits instead
//! of taking them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::error::LlmError;

/// How often and how patiently one provider is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (the reference's default is 3).
    pub max_retries: u32,
    /// The wait before the first retry, before jitter.
    pub initial_delay: Duration,
    /// Each further retry waits this many times longer.
    pub factor: f64,
    /// No backoff wait exceeds this.
    pub max_delay: Duration,
    /// A `Retry-After` longer than this fails the call instead of waiting.
    pub max_retry_after: Duration,
    /// Multiply each backoff wait by a random factor in 0.5..1.5.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    /// The reference's defaults: 3 retries, 1 s doubling, capped at 60 s,
    /// jittered; `Retry-After` honoured up to 60 s.
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_secs(1),
            factor: 2.0,
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    #[must_use]
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The backoff before retry number `retry` (1 for the first), with
    /// `jitter` (a factor, clamped to 0.5..1.5) applied, capped at
    /// `max_delay`.
    #[must_use]
    pub fn backoff(&self, retry: u32, jitter: f64) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial_delay.as_secs_f64() * self.factor.powi(exponent);
        let secs = secs * jitter.clamp(0.5, 1.5);
        if !secs.is_finite() || secs >= self.max_delay.as_secs_f64() {
            self.max_delay
        } else {
            Duration::from_secs_f64(secs.max(0.0))
        }
    }

    /// How long to wait before retry number `retry` after `error`, or `None`
    /// when the call must not be retried: the error is permanent, the
    /// retries are used up, or the provider asked for a longer wait than
    /// `max_retry_after`.
    #[must_use]
    pub(crate) fn wait_before(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if !error.is_retryable() || retry > self.max_retries {
            return None;
        }
        match error.retry_after() {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) => Some(wait),
            None => {
                let jitter = if self.jitter {
                    0.5 + rand::random::<f64>()
                } else {
                    1.0
                };
                Some(self.backoff(retry, jitter))
            }
        }
    }
}

/// Where retry waits happen.
#[derive(Debug, Clone, Default)]
pub enum Sleeper {
    /// Real time (tokio's timer).
    #[default]
    Tokio,
    /// Returns at once; records each requested wait (for tests).
    Recording(Arc<Mutex<Vec<Duration>>>),
}

impl Sleeper {
    /// A recording sleeper with nothing recorded.
    #[must_use]
    pub fn recording() -> Sleeper {
        Sleeper::Recording(Arc::default())
    }

    /// Waits `duration` (a recording sleeper only records it).
    pub async fn sleep(&self, duration: Duration) {
        match self {
            Sleeper::Tokio => tokio::time::sleep(duration).await,
            Sleeper::Recording(waits) => {
                if let Ok(mut waits) = waits.lock() {
                    waits.push(duration);
                }
                tokio::task::yield_now().await;
            }
        }
    }

    /// The waits a recording sleeper was asked for, in order.
    #[must_use]
    pub fn waits(&self) -> Vec<Duration> {
        match self {
            Sleeper::Tokio => Vec::new(),
            Sleeper::Recording(waits) => waits.lock().map(|w| w.clone()).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error() -> LlmError {
        LlmError::Server {
            provider: "openai".into(),
            status: 500,
            message: String::new(),
        }
    }

    #[test]
    fn backoff_doubles_from_one_second_and_caps_at_a_minute() {
        let p = RetryPolicy::default();
        let waits: Vec<u64> = (1..=4).map(|r| p.backoff(r, 1.0).as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8]);
        assert_eq!(p.backoff(1, 0.5), Duration::from_millis(500));
        assert_eq!(
            p.backoff(1, 9.0),
            Duration::from_millis(1500),
            "jitter is clamped"
        );
        assert_eq!(p.backoff(30, 1.0), Duration::from_secs(60));
        assert_eq!(p.backoff(u32::MAX, 1.0), Duration::from_secs(60));
    }

    #[test]
    fn jittered_waits_stay_within_half_and_one_and_a_half() {
        let p = RetryPolicy::default();
        for _ in 0..100 {
            let w = p.wait_before(2, &server_error()).expect("retried");
            assert!(
                w >= Duration::from_secs(1) && w <= Duration::from_secs(3),
                "{w:?}"
            );
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let p = RetryPolicy::default();
        let limited = |secs| LlmError::RateLimited {
            provider: "anthropic".into(),
            retry_after: Some(Duration::from_secs(secs)),
            message: String::new(),
        };
        assert_eq!(p.wait_before(1, &limited(7)), Some(Duration::from_secs(7)));
        assert_eq!(
            p.wait_before(1, &limited(61)),
            None,
            "longer than the cap fails"
        );
    }

    #[test]
    fn permanent_errors_and_spent_retries_stop() {
        let p = RetryPolicy::default();
        let auth = LlmError::Auth {
            provider: "openai".into(),
            status: 401,
            message: String::new(),
        };
        assert_eq!(p.wait_before(1, &auth), None);
        assert!(p.wait_before(3, &server_error()).is_some());
        assert_eq!(p.wait_before(4, &server_error()), None);
        assert_eq!(RetryPolicy::none().wait_before(1, &server_error()), None);
    }
}
