//! `failure_falls_through` (warning): a command whose only ways out are
//! unconditional edges, in a graph with no `on_failure`. When it fails, the
//! default failure policy (`route`, workflows/transitions.mdx) takes the
//! unconditional edge as for a success, so a failing test step leads on to
//! the deploy, and a run whose every check failed can still end
//! "succeeded". Those are Fabro's semantics and stay; this rule says so
//! where it happens.
//!
//! Not reported: a node that decides for itself (`on_failure`,
//! `auto_status`), a goal gate (the exit checks it), and edges into a
//! diamond (its conditions read the command's outcome) or a fan-in (the
//! join weighs failed branches).

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

const RULE: &str = "failure_falls_through";

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let graph = cx.graph;
    if graph.attrs.contains("on_failure") {
        return;
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        if node.handler != Handler::Command
            || node.attrs.contains("on_failure")
            || node.attrs.contains("auto_status")
            || node.attrs.value("goal_gate").and_then(|v| v.as_bool()) == Some(true)
        {
            continue;
        }
        let mut onward = None;
        let mut handled = false;
        for (e, edge) in cx.out_edges(i) {
            let routes = cx
                .target(e)
                .is_some_and(|t| matches!(t.handler, Handler::Conditional | Handler::FanIn));
            if edge.condition().is_some() || routes {
                handled = true;
                break;
            }
            onward.get_or_insert(edge);
        }
        let Some(edge) = onward.filter(|_| !handled) else {
            continue;
        };
        out.push(
            Diagnostic::warning(
                RULE,
                format!(
                    "if `{}` fails, the run goes on to `{}` as if it had succeeded: its only way out is an unconditional edge",
                    node.id, edge.to
                ),
            )
            .at(node.span)
            .on_node(&node.id)
            .with_hint(format!(
                "route the failure, e.g. `{} -> fix [condition=\"outcome=failed\"]`; or stop the run when it fails with `on_failure=\"exit\"` on `{}` or on the graph; or, if going on is meant, say so with `on_failure=\"route\"`",
                node.id, node.id
            )),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    const RULE: &str = super::RULE;

    #[test]
    fn a_test_step_with_only_an_unconditional_edge_is_reported() {
        let src = wrap(
            "  test [shape=parallelogram, script=\"cargo test\"]\n  deploy [shape=parallelogram, script=\"./deploy\"]\n  start -> test -> deploy -> exit",
        );
        let d = of_rule(&src, RULE);
        let ids: Vec<_> = d.iter().map(|d| d.node_id.as_deref()).collect();
        assert_eq!(ids, [Some("test"), Some("deploy")], "{d:?}");
        assert!(!d[0].is_error());
        assert!(d[0].message.contains("goes on to `deploy`"), "{d:?}");
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 3)));
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("on_failure=\"exit\"")),
            "{d:?}"
        );
    }

    #[test]
    fn routed_or_policed_failures_are_quiet() {
        for body in [
            // A failure edge.
            "  test [shape=parallelogram, script=\"t\"]\n  fix [shape=parallelogram, script=\"f\", on_failure=\"exit\"]\n  start -> test -> exit\n  test -> fix [condition=\"outcome=failed\"]\n  fix -> test",
            // The node's own policy.
            "  test [shape=parallelogram, script=\"t\", on_failure=\"exit\"]\n  start -> test -> exit",
            // A diamond reads the outcome.
            "  test [shape=parallelogram, script=\"t\"]\n  check [shape=diamond]\n  start -> test -> check\n  check -> exit [condition=\"outcome=succeeded\"]\n  check -> test [condition=\"outcome=failed\"]",
            // A goal gate is checked at the exit.
            "  test [shape=parallelogram, script=\"t\", goal_gate=true, retry_target=test]\n  start -> test -> exit",
        ] {
            let d = of_rule(&wrap(body), RULE);
            assert!(d.is_empty(), "{body}\n{d:?}");
        }
        let graph_policy = wrap(
            "  graph [on_failure=\"exit\"]\n  test [shape=parallelogram, script=\"t\"]\n  start -> test -> exit",
        );
        assert!(of_rule(&graph_policy, RULE).is_empty());
    }
}
