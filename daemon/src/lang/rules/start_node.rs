//! `start_node`: a workflow has exactly one start node (`shape=Mdiamond`, or
//! a node with id `start`/`Start`).

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let starts = cx.graph.start_nodes();
    match starts.as_slice() {
        [] => out.push(
            Diagnostic::error("start_node", "the workflow has no start node")
                .at(cx.graph.span)
                .with_hint("add `start [shape=Mdiamond]` and an edge from it to the first stage"),
        ),
        [_] => {}
        [first, rest @ ..] => {
            for extra in rest {
                out.push(
                    Diagnostic::error(
                        "start_node",
                        format!(
                            "`{}` is a second start node (the first is `{}`)",
                            extra.id, first.id
                        ),
                    )
                    .at(extra.span)
                    .on_node(&extra.id)
                    .with_hint("a workflow has exactly one start node: change this node's shape"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::of_rule;

    #[test]
    fn a_missing_start_node_is_an_error() {
        let d = of_rule(
            "digraph G { a [prompt=\"x\"]; exit [shape=Msquare]; a -> exit }",
            "start_node",
        );
        assert_eq!(d.len(), 1);
        assert!(d[0].is_error());
    }

    #[test]
    fn a_second_start_node_is_reported_where_it_is_declared() {
        let d = of_rule(
            "digraph G {\n s1 [shape=Mdiamond]\n s2 [shape=Mdiamond]\n exit [shape=Msquare]\n s1 -> exit\n s2 -> exit\n}",
            "start_node",
        );
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].node_id.as_deref(), Some("s2"));
        assert_eq!(d[0].span.map(|s| s.line), Some(3));
    }

    #[test]
    fn a_node_named_start_is_the_start() {
        assert!(of_rule("digraph G { start -> exit }", "start_node").is_empty());
    }
}
