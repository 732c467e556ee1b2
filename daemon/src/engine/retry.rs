//! Node retries: how many attempts a node gets and how long to wait between
//! them (execution/failures.mdx, "Node retries").

use std::time::Duration;

use crate::lang::graph::{Graph, Node};

/// No single backoff delay exceeds this.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// The retry count every node gets unless it (or the graph) says otherwise.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// Attempts and backoff for one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Total executions allowed, the first included (at least 1).
    pub max_attempts: u32,
    /// The delay before the first retry, before jitter.
    pub initial: Duration,
    /// Each further retry waits this many times longer.
    pub factor: f64,
}

impl RetryPolicy {
    /// A named preset: `none`, `standard`, `aggressive`, `linear`, `patient`.
    #[must_use]
    pub fn preset(name: &str) -> Option<RetryPolicy> {
        let (max_attempts, initial_ms, factor) = match name.trim() {
            "none" => (1, 0, 1.0),
            "standard" => (5, 200, 2.0),
            "aggressive" => (5, 500, 2.0),
            "linear" => (3, 500, 1.0),
            "patient" => (3, 2000, 3.0),
            _ => return None,
        };
        Some(RetryPolicy {
            max_attempts,
            initial: Duration::from_millis(initial_ms),
            factor,
        })
    }

    /// `retries` retries (so `retries + 1` attempts) with the default
    /// backoff: 5 s, doubling.
    #[must_use]
    pub fn count(retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts: retries.saturating_add(1),
            initial: Duration::from_secs(5),
            factor: 2.0,
        }
    }

    /// The node's policy, resolved in the reference's order: node
    /// `retry_policy`, node `max_retries`, graph `default_max_retries`, 3.
    #[must_use]
    pub fn for_node(node: &Node, graph: &Graph) -> RetryPolicy {
        if let Some(policy) = node
            .attrs
            .text("retry_policy")
            .and_then(|name| RetryPolicy::preset(&name))
        {
            return policy;
        }
        let count = |v: Option<&crate::lang::value::Value>| {
            v.and_then(crate::lang::value::Value::as_int)
                .map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
        };
        if let Some(n) = count(node.attrs.value("max_retries")) {
            return RetryPolicy::count(n);
        }
        let n = count(graph.attrs.value("default_max_retries")).unwrap_or(DEFAULT_MAX_RETRIES);
        RetryPolicy::count(n)
    }

    /// Whether the node asked for retries itself (`retry_policy` or
    /// `max_retries`), rather than inheriting the graph default. A failing
    /// command is retried only then: re-running a failing test suite three
    /// times by default would waste minutes and hide nothing.
    #[must_use]
    pub fn explicit(node: &Node) -> bool {
        node.attrs.contains("retry_policy") || node.attrs.contains("max_retries")
    }

    /// The wait before retry number `retry` (1 for the first retry), with
    /// `jitter` (a factor in 0.5..1.5) applied, capped at [`MAX_DELAY`].
    #[must_use]
    pub fn delay(&self, retry: u32, jitter: f64) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.initial.as_secs_f64() * self.factor.powi(exponent);
        let jittered = base * jitter.clamp(0.5, 1.5);
        if !jittered.is_finite() || jittered >= MAX_DELAY.as_secs_f64() {
            MAX_DELAY
        } else {
            Duration::from_secs_f64(jittered.max(0.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_match_the_reference_table() {
        let standard = RetryPolicy::preset("standard").expect("preset");
        assert_eq!(standard.max_attempts, 5);
        let delays: Vec<u128> = (1..=4)
            .map(|r| standard.delay(r, 1.0).as_millis())
            .collect();
        assert_eq!(delays, vec![200, 400, 800, 1600]);
        let patient = RetryPolicy::preset("patient").expect("preset");
        let delays: Vec<u128> = (1..=2).map(|r| patient.delay(r, 1.0).as_millis()).collect();
        assert_eq!(delays, vec![2000, 6000]);
        let linear = RetryPolicy::preset("linear").expect("preset");
        assert_eq!(linear.delay(2, 1.0), linear.delay(1, 1.0));
        assert_eq!(RetryPolicy::preset("none").map(|p| p.max_attempts), Some(1));
        assert_eq!(RetryPolicy::preset("sometimes"), None);
    }

    #[test]
    fn delays_are_jittered_and_capped_at_a_minute() {
        let p = RetryPolicy::count(10);
        assert_eq!(p.delay(1, 0.5), Duration::from_millis(2500));
        assert_eq!(p.delay(1, 1.5), Duration::from_millis(7500));
        assert_eq!(p.delay(9, 1.0), MAX_DELAY);
        assert_eq!(p.delay(u32::MAX, 1.0), MAX_DELAY);
    }
}
