//! `terminal_node` (error): a workflow has exactly one exit node
//! (`shape=Msquare`, or a node with id `exit`/`Exit`/`end`/`End`).

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    match cx.graph.exit_nodes().as_slice() {
        [] => out.push(
            Diagnostic::error("terminal_node", "the workflow has no exit node")
                .at(cx.graph.span)
                .with_hint("add `exit [shape=Msquare]` and an edge from the last stage to it"),
        ),
        [_] => {}
        [first, rest @ ..] => {
            for extra in rest {
                out.push(
                    Diagnostic::error(
                        "terminal_node",
                        format!(
                            "`{}` is a second exit node (the first is `{}`)",
                            extra.id, first.id
                        ),
                    )
                    .at(extra.span)
                    .on_node(&extra.id)
                    .with_hint(format!(
                        "a workflow has exactly one exit node: route this edge to `{}`",
                        first.id
                    )),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_missing_exit_node_is_an_error_on_the_graph() {
        let d = of_rule(
            "digraph G {\n start -> a\n a [prompt=\"x\"]\n}",
            "terminal_node",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].span.map(|s| s.line), Some(1));
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("exit [shape=Msquare]"))
        );
    }

    #[test]
    fn each_extra_exit_node_is_reported_where_it_is_declared() {
        let src = wrap("  done [shape=Msquare]\n  also [shape=Msquare]\n  start -> exit");
        let d = of_rule(&src, "terminal_node");
        let ids: Vec<_> = d.iter().map(|d| d.node_id.as_deref()).collect();
        assert_eq!(ids, [Some("done"), Some("also")]);
        assert!(d.iter().all(|d| d.is_error()));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn a_node_named_end_is_the_exit() {
        assert!(of_rule("digraph G { start -> end }", "terminal_node").is_empty());
        assert!(of_rule(&wrap("  start -> exit"), "terminal_node").is_empty());
    }
}
