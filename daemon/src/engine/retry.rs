//! Node retries: how many attempts a node gets and how long to wait between
//! them (execution/failures.mdx, "Node retries").
//!
//! Decision, the default: the reference gives two. reference/dot-language.mdx
//! says `default_max_retries` defaults to 0; execution/failures.mdx and
//! workflows/stages-and-nodes.mdx say 3. We take 0: a model call is already
//! retried three times by the client (failures.mdx, "LLM retries") before
//! the stage fails, and a command that hit its own `timeout` ran three more
//! times by default (35 s to fail a 1 s timeout), which nobody who wrote
//! `timeout="1s"` expects. A node (`retry_policy`, `max_retries`) or the
//! graph (`default_max_retries`) asks for stage retries.
//!
//! The Attractor spec's `default_max_retry` (singular) is the same setting:
//! the loader copies it to `default_max_retries` (`lang/attractor.rs`), so
//! it is read here under that name. The spec itself says 50 by default in
//! its attribute table and 0 in its retry section; Weft keeps 0 for both
//! dialects, for the reasons above.

use std::time::Duration;

use crate::lang::graph::{Graph, Node};

/// No single backoff delay exceeds this.
pub(crate) const MAX_DELAY: Duration = Duration::from_secs(60);

/// The retry count every node gets unless it (or the graph) says otherwise
/// (see the module's note on the choice).
pub(crate) const DEFAULT_MAX_RETRIES: u32 = 0;

/// Where a node's retry policy comes from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicySource {
    /// The node's `retry_policy` preset.
    RetryPolicy,
    /// The node's `max_retries`.
    MaxRetries,
    /// The graph's `default_max_retries`.
    DefaultMaxRetries,
    /// Nothing set: [`DEFAULT_MAX_RETRIES`].
    Default,
}

impl PolicySource {
    /// The attribute it names (`default` for none).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            PolicySource::RetryPolicy => "retry_policy",
            PolicySource::MaxRetries => "max_retries",
            PolicySource::DefaultMaxRetries => "default_max_retries",
            PolicySource::Default => "default",
        }
    }
}

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
    pub(crate) fn preset(name: &str) -> Option<RetryPolicy> {
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
    /// `retry_policy`, node `max_retries`, graph `default_max_retries`,
    /// [`DEFAULT_MAX_RETRIES`].
    #[must_use]
    pub fn for_node(node: &Node, graph: &Graph) -> RetryPolicy {
        Self::resolve(node, graph).0
    }

    /// [`RetryPolicy::for_node`] and where it came from.
    #[must_use]
    pub fn resolve(node: &Node, graph: &Graph) -> (RetryPolicy, PolicySource) {
        if let Some(policy) = node
            .attrs
            .text("retry_policy")
            .and_then(|name| RetryPolicy::preset(&name))
        {
            return (policy, PolicySource::RetryPolicy);
        }
        let count = |v: Option<&crate::lang::value::Value>| {
            v.and_then(crate::lang::value::Value::as_int)
                .map(|n| u32::try_from(n.max(0)).unwrap_or(u32::MAX))
        };
        if let Some(n) = count(node.attrs.value("max_retries")) {
            return (RetryPolicy::count(n), PolicySource::MaxRetries);
        }
        match count(graph.attrs.value("default_max_retries")) {
            Some(n) => (RetryPolicy::count(n), PolicySource::DefaultMaxRetries),
            None => (
                RetryPolicy::count(DEFAULT_MAX_RETRIES),
                PolicySource::Default,
            ),
        }
    }

    /// The node's effective policy as `weft graph --json` shows it: the
    /// attempts, the backoff, where it came from, and which failures it
    /// retries (a command's non-zero exit only when the node asks itself;
    /// see [`RetryPolicy::explicit`]).
    #[must_use]
    pub fn describe(node: &Node, graph: &Graph) -> serde_json::Value {
        let (policy, source) = Self::resolve(node, graph);
        let retried = if policy.max_attempts <= 1 {
            "none"
        } else if node.handler == crate::lang::Handler::Command && Self::explicit(node) {
            "any failure"
        } else {
            "transient failures"
        };
        serde_json::json!({
            "max_attempts": policy.max_attempts,
            "initial_delay_ms": u64::try_from(policy.initial.as_millis()).unwrap_or(u64::MAX),
            "backoff_factor": policy.factor,
            "max_delay_ms": u64::try_from(MAX_DELAY.as_millis()).unwrap_or(u64::MAX),
            "from": source.as_str(),
            "retries": retried,
        })
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

    fn node(src: &str, id: &str) -> (Graph, Node) {
        let graph = crate::lang::parser::parse(src).expect("parses").graph;
        let node = graph.node(id).expect("node").clone();
        (graph, node)
    }

    #[test]
    fn a_node_that_asks_for_nothing_is_not_retried() {
        let (graph, slow) = node(
            "digraph G { slow [shape=parallelogram, script=\"sleep 5\", timeout=\"1s\"] }",
            "slow",
        );
        let (policy, source) = RetryPolicy::resolve(&slow, &graph);
        assert_eq!(policy.max_attempts, 1, "a timed-out command runs once");
        assert_eq!(source, PolicySource::Default);
        assert_eq!(RetryPolicy::describe(&slow, &graph)["retries"], "none");
    }

    #[test]
    fn node_then_graph_settings_decide_and_are_named() {
        let src = "digraph G { graph [default_max_retries=2]; a [retry_policy=patient, max_retries=9]; b [max_retries=1, shape=parallelogram, script=x]; c [shape=parallelogram, script=x] }";
        let (graph, a) = node(src, "a");
        let b = graph.node("b").expect("b");
        let c = graph.node("c").expect("c");
        assert_eq!(
            RetryPolicy::resolve(&a, &graph),
            (
                RetryPolicy::preset("patient").expect("preset"),
                PolicySource::RetryPolicy
            )
        );
        assert_eq!(
            RetryPolicy::resolve(b, &graph),
            (RetryPolicy::count(1), PolicySource::MaxRetries)
        );
        assert_eq!(
            RetryPolicy::resolve(c, &graph),
            (RetryPolicy::count(2), PolicySource::DefaultMaxRetries)
        );
        let shown = RetryPolicy::describe(b, &graph);
        assert_eq!(shown["max_attempts"], 2);
        assert_eq!(shown["initial_delay_ms"], 5000);
        assert_eq!(shown["from"], "max_retries");
        assert_eq!(shown["retries"], "any failure", "the command asked itself");
        assert_eq!(
            RetryPolicy::describe(c, &graph)["retries"],
            "transient failures",
            "a graph default retries a command's timeout, not its exit status"
        );
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
