//! `reachability`: every node can run. Walks from the start node along
//! edges and retry targets (a failure may jump to one, execution/failures.mdx).
//! A declared node never reached is a warning; an exit node is an error
//! when no exit can be reached, since the workflow could never finish. Skipped unless there is
//! exactly one start node (`start_node` reports that).

use std::collections::VecDeque;

use super::Cx;
use crate::lang::Handler;
use crate::lang::attrs::Attrs;
use crate::lang::diagnostic::Diagnostic;

const RETRY_KEYS: [&str; 2] = ["retry_target", "fallback_retry_target"];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let graph = cx.graph;
    let Some(start) = graph.start().and_then(|s| cx.index(&s.id)) else {
        return;
    };
    let mut reached = vec![false; graph.nodes.len()];
    let mut queue = VecDeque::from([start]);
    queue.extend(retry_targets(cx, &graph.attrs));
    while let Some(i) = queue.pop_front() {
        if std::mem::replace(&mut reached[i], true) {
            continue;
        }
        queue.extend(cx.outgoing[i].iter().filter_map(|&e| cx.ends(e as usize).1));
        queue.extend(retry_targets(cx, &graph.nodes[i].attrs));
    }
    // The run can finish if it can reach some exit: with several exits
    // (see terminal_node), one out of reach is only a node that never runs.
    let can_finish = graph
        .nodes
        .iter()
        .zip(&reached)
        .any(|(n, r)| *r && n.handler == Handler::Exit);
    for (node, _) in graph.nodes.iter().zip(&reached).filter(|(_, r)| !**r) {
        if node.handler == Handler::Exit && !can_finish {
            out.push(
                Diagnostic::error(
                    "reachability",
                    format!(
                        "the workflow can never finish: no path leads from the start node to `{}`",
                        node.id
                    ),
                )
                .at(node.span)
                .on_node(&node.id)
                .with_hint(format!("add an edge from the last stage to `{}`", node.id)),
            );
        } else if node.declared && node.handler != Handler::Start {
            out.push(
                Diagnostic::warning(
                    "reachability",
                    format!(
                        "`{}` can never run: no path leads to it from the start node",
                        node.id
                    ),
                )
                .at(node.span)
                .on_node(&node.id)
                .with_hint(format!(
                    "add an edge into `{}` from the stage before it, or remove it",
                    node.id
                )),
            );
        }
    }
}

/// The node positions `attrs` names as retry targets.
fn retry_targets<'c>(cx: &'c Cx<'_>, attrs: &'c Attrs) -> impl Iterator<Item = usize> + 'c {
    RETRY_KEYS
        .iter()
        .filter_map(|k| attrs.non_empty(k))
        .filter_map(|t| cx.index(t.trim()))
}

#[cfg(test)]
mod tests {
    use crate::lang::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_node_without_a_path_from_start_is_a_warning() {
        let src = wrap(
            "  a [prompt=\"x\"]\n  orphan [prompt=\"y\"]\n  start -> a -> exit\n  orphan -> exit",
        );
        let d = of_rule(&src, "reachability");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[0].node_id.as_deref(), Some("orphan"));
        assert_eq!(d[0].span.map(|s| s.line), Some(5));
    }

    #[test]
    fn an_unreachable_exit_is_an_error() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a -> a");
        let d = of_rule(&src, "reachability");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("exit"));
        assert_eq!(d[0].span.map(|s| s.line), Some(3));
    }

    #[test]
    fn with_several_exits_one_reachable_exit_is_enough() {
        let src = wrap("  failed [shape=Msquare]\n  a [prompt=\"x\"]\n  start -> a -> exit");
        let d = of_rule(&src, "reachability");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning, "the run can still finish");
        assert_eq!(d[0].node_id.as_deref(), Some("failed"));

        let src = wrap("  failed [shape=Msquare]\n  a [prompt=\"x\"]\n  start -> a -> a");
        let d = of_rule(&src, "reachability");
        let errors: Vec<_> = d
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.node_id.as_deref())
            .collect();
        assert_eq!(errors, [Some("exit"), Some("failed")], "{d:?}");
    }

    #[test]
    fn a_retry_target_counts_as_a_path() {
        let src = wrap(
            "  a [prompt=\"x\", retry_target=\"fix\"]\n  fix [prompt=\"y\"]\n  start -> a -> exit\n  fix -> a",
        );
        assert!(of_rule(&src, "reachability").is_empty());
    }

    #[test]
    fn a_connected_workflow_is_quiet() {
        let src =
            wrap("  a [prompt=\"x\"]\n  b [prompt=\"y\"]\n  start -> a -> b -> exit\n  b -> a");
        assert!(of_rule(&src, "reachability").is_empty());
    }

    #[test]
    fn two_start_nodes_skip_the_rule() {
        let src = wrap("  s2 [shape=Mdiamond]\n  orphan [prompt=\"y\"]\n  start -> exit");
        assert!(of_rule(&src, "reachability").is_empty());
    }
}
