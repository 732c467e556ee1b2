//! `undeclared_node` (ours): an edge names a node that no statement
//! declares. Fabro and Graphviz create the node there (an agent whose
//! prompt is its id), and Attractor workflows rely on it (the spec's own
//! human-gate example routes to `ship_it` and `fixes`, declared by their
//! edges alone). A typo looks the same, so the rule tells them apart: the
//! node is an error when a declared id is close to it ("did you mean") or
//! when no edge leaves it (it could only end the run there); otherwise,
//! a node with edges in and out is meant, and it is a warning.

use super::{Cx, Suggestions};
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let graph = cx.graph;
    // The ids to suggest, collected once on the first finding. Filtering every
    // node again for each finding made a workflow written only as edges
    // (`a -> b -> c`, every node undeclared) quadratic: 10k nodes took 120 ms.
    // Comparing each finding with every declared id was quadratic too (5,000
    // typos among 5,000 nodes took 9 s): `Suggestions` bounds that work.
    let mut declared: Option<Suggestions<'_>> = None;
    for (i, node) in graph.nodes.iter().enumerate().filter(|(_, n)| !n.declared) {
        // Nodes the reference lets edges create by id alone.
        if node.handler == crate::lang::Handler::Start || node.handler == crate::lang::Handler::Exit
        {
            continue;
        }
        let declared = declared.get_or_insert_with(|| {
            Suggestions::new(
                graph
                    .nodes
                    .iter()
                    .filter(|n| n.declared)
                    .map(|n| n.id.as_ref()),
            )
        });
        let message = format!("`{}` is used in an edge but never declared", node.id);
        let d = match (declared.closest(&node.id), cx.outgoing[i].is_empty()) {
            (Some(near), _) => {
                Diagnostic::error("undeclared_node", message).with_hint(format!("did you mean `{near}`?"))
            }
            (None, true) => Diagnostic::error("undeclared_node", message).with_hint(format!(
                "no edge leaves it, so the run would stop there: declare it, e.g. `{} [label=\"...\", prompt=\"...\"]`, or fix the edge",
                node.id
            )),
            (None, false) => Diagnostic::warning(
                "undeclared_node",
                format!(
                    "`{}` is declared only by its edges: it runs as an agent whose prompt is `{}`",
                    node.id, node.id
                ),
            )
            .with_hint(format!(
                "declare it to say what it does, e.g. `{} [label=\"...\", prompt=\"...\"]`",
                node.id
            )),
        };
        out.push(d.at(node.span).on_node(&node.id));
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_typo_in_an_edge_suggests_the_declared_node() {
        let src = wrap("  implement [prompt=\"x\"]\n  start -> implement\n  implment -> exit");
        let d = of_rule(&src, "undeclared_node");
        assert_eq!(d.len(), 1);
        assert!(d[0].is_error());
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `implement`?"));
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((6, 3)), "{d:?}");
    }

    #[test]
    fn a_node_declared_by_edges_in_and_out_is_a_warning_as_in_attractor_s_review_example() {
        let src = "digraph Review {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n  review_gate [shape=hexagon, label=\"Review Changes\"]\n  start -> review_gate\n  review_gate -> ship_it [label=\"[A] Approve\"]\n  review_gate -> fixes [label=\"[F] Fix\"]\n  ship_it -> exit\n  fixes -> review_gate\n}";
        let d = of_rule(src, "undeclared_node");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d.iter().all(|d| !d.is_error()), "{d:?}");
        assert!(
            d[0].message
                .contains("runs as an agent whose prompt is `ship_it`"),
            "{d:?}"
        );
    }

    #[test]
    fn an_undeclared_node_no_edge_leaves_is_an_error() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a -> exit\n  a -> nowhere_else");
        let d = of_rule(&src, "undeclared_node");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.contains("no edge leaves it")),
            "{d:?}"
        );
    }

    #[test]
    fn start_and_exit_may_be_created_by_edges() {
        assert!(
            of_rule(
                "digraph G { start -> a; a [prompt=\"x\"]; a -> exit }",
                "undeclared_node"
            )
            .is_empty()
        );
    }
}
