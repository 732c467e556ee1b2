//! `exit_no_outgoing` (error): no edge leaves the exit node; reaching it
//! ends the run (reference/dot-language.mdx, "Validation").

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        if node.handler != Handler::Exit {
            continue;
        }
        for (_, edge) in cx.out_edges(i) {
            out.push(
                Diagnostic::error(
                    "exit_no_outgoing",
                    format!("edge `{} -> {}` leaves the exit node", edge.from, edge.to),
                )
                .at(edge.span)
                .on_edge(&edge.from, &edge.to)
                .with_hint(format!(
                    "the run ends at the exit node: remove this edge, or route to `{}` before the exit",
                    edge.to
                )),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_edge_out_of_exit_is_an_error_on_that_edge() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a -> exit\n  exit -> a");
        let d = of_rule(&src, "exit_no_outgoing");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].edge, Some(("exit".into(), "a".into())));
        assert_eq!(d[0].span.map(|s| s.line), Some(6));
    }

    #[test]
    fn edges_into_exit_are_quiet() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a -> exit");
        assert!(of_rule(&src, "exit_no_outgoing").is_empty());
    }
}
