//! `goal_gate_has_retry` (warning): a `goal_gate=true` node has a retry
//! target on itself or on the graph; otherwise an unsatisfied gate at the
//! exit simply fails the run (execution/failures.mdx, "Goal gates").

use super::Cx;
use crate::lang::attrs::Attrs;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    if has_retry_target(&cx.graph.attrs) {
        return;
    }
    for (_, node) in cx.nodes_with("goal_gate") {
        let Some(gate) = node.attrs.get("goal_gate") else {
            continue;
        };
        if gate.value.as_bool() != Some(true) || has_retry_target(&node.attrs) {
            continue;
        }
        out.push(
            Diagnostic::warning(
                "goal_gate_has_retry",
                format!("goal gate `{}` has no retry target: if it is unsatisfied at the exit, the run fails", node.id),
            )
            .at(gate.value_span)
            .on_node(&node.id)
            .with_hint(format!("add `retry_target=\"<node>\"` to `{}` or to the graph", node.id)),
        );
    }
}

fn has_retry_target(attrs: &Attrs) -> bool {
    attrs.non_empty("retry_target").is_some() || attrs.non_empty("fallback_retry_target").is_some()
}

#[cfg(test)]
mod tests {
    use crate::lang::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_goal_gate_without_a_retry_target_is_a_warning() {
        let src = wrap("  verify [prompt=\"y\", goal_gate=\"true\"]\n  start -> verify -> exit");
        let d = of_rule(&src, "goal_gate_has_retry");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[0].node_id.as_deref(), Some("verify"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn a_retry_target_on_the_gate_or_the_graph_is_enough() {
        let on_node = wrap(
            "  verify [prompt=\"y\", goal_gate=true, retry_target=\"verify\"]\n  start -> verify -> exit",
        );
        let on_graph = wrap(
            "  graph [fallback_retry_target=\"verify\"]\n  verify [prompt=\"y\", goal_gate=true]\n  start -> verify -> exit",
        );
        assert!(of_rule(&on_node, "goal_gate_has_retry").is_empty());
        assert!(of_rule(&on_graph, "goal_gate_has_retry").is_empty());
    }

    #[test]
    fn goal_gate_false_is_quiet() {
        let src = wrap("  verify [prompt=\"y\", goal_gate=false]\n  start -> verify -> exit");
        assert!(of_rule(&src, "goal_gate_has_retry").is_empty());
    }
}
