//! `start_no_incoming` (error): no edge leads into the start node; the start
//! runs once, first (reference/dot-language.mdx, "Validation").

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        if node.handler != Handler::Start {
            continue;
        }
        for (_, edge) in cx.in_edges(i) {
            out.push(
                Diagnostic::error(
                    "start_no_incoming",
                    format!(
                        "edge `{} -> {}` leads into the start node",
                        edge.from, edge.to
                    ),
                )
                .at(edge.span)
                .on_edge(&edge.from, &edge.to)
                .with_hint(
                    "the start node runs only once: point this edge at the first stage instead",
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_edge_back_into_start_is_an_error_on_that_edge() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a\n  a -> start\n  a -> exit");
        let d = of_rule(&src, "start_no_incoming");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].edge, Some(("a".into(), "start".into())));
        assert_eq!(d[0].span.map(|s| s.line), Some(6));
    }

    #[test]
    fn loops_that_avoid_start_are_quiet() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a\n  a -> a\n  a -> exit");
        assert!(of_rule(&src, "start_no_incoming").is_empty());
    }
}
