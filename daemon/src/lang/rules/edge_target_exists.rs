//! `edge_target_exists` (error): both ends of every edge are nodes of the
//! graph. The parser creates a node for every id an edge names, so this only
//! fires on graphs built in code (tools, imports, the UI's editor).

use super::{Cx, Suggestions};
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let mut ids = Suggestions::new(cx.graph.nodes.iter().map(|n| n.id.as_ref()));
    for (e, edge) in cx.graph.edges.iter().enumerate() {
        let (from, to) = cx.ends(e);
        if from.is_some() && to.is_some() {
            continue;
        }
        let missing: Vec<&str> = [(edge.from.as_ref(), from), (edge.to.as_ref(), to)]
            .into_iter()
            .filter_map(|(id, at)| at.is_none().then_some(id))
            .collect();
        let Some(&first) = missing.first() else {
            continue;
        };
        let names = missing
            .iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(" and ");
        let hint = match ids.closest(first) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("add a node `{first}` or point the edge at an existing node"),
        };
        out.push(
            Diagnostic::error(
                "edge_target_exists",
                format!(
                    "edge `{} -> {}` names {names}, which is not a node",
                    edge.from, edge.to
                ),
            )
            .at(edge.span)
            .on_edge(&edge.from, &edge.to)
            .with_hint(hint),
        );
    }
}

#[cfg(test)]
mod tests {

    use crate::lang::attrs::Attrs;
    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::graph::{Edge, Graph, Node};
    use crate::lang::span::Span;

    /// A graph of `nodes` (the first a start, the last an exit) and `edges`,
    /// built without the parser, each item on its own line.
    fn graph(nodes: &[&str], edges: &[(&str, &str)]) -> Graph {
        let line = |n: usize| Span {
            line: u32::try_from(n + 1).unwrap_or(0),
            ..Span::default()
        };
        let mut g = Graph::new("G", line(0));
        for (i, id) in nodes.iter().enumerate() {
            g.add_node(Node::new(id, line(i + 1)));
        }
        for (i, (from, to)) in edges.iter().enumerate() {
            let span = line(nodes.len() + i + 1);
            g.edges.push(Edge {
                from: (*from).into(),
                to: (*to).into(),
                span,
                from_span: span,
                to_span: span,
                attrs: Attrs::new(),
            });
        }
        g.finish();
        g
    }

    fn run(g: &Graph) -> Vec<Diagnostic> {
        let cx = super::super::Cx::new(g, "", &[]);
        let mut out = Vec::new();
        super::check(&cx, &mut out);
        out
    }

    #[test]
    fn an_edge_to_a_missing_node_is_an_error_with_a_suggestion() {
        let g = graph(
            &["start", "implement", "exit"],
            &[("start", "implement"), ("implement", "exti")],
        );
        let d = run(&g);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].edge, Some(("implement".into(), "exti".into())));
        assert_eq!(d[0].span.map(|s| s.line), Some(6));
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `exit`?"));
    }

    #[test]
    fn an_edge_from_a_missing_node_is_reported_once() {
        let g = graph(
            &["start", "exit"],
            &[("start", "exit"), ("ghost", "phantom")],
        );
        let d = run(&g);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message.contains("`ghost` and `phantom`"),
            "{}",
            d[0].message
        );
    }

    #[test]
    fn edges_between_existing_nodes_are_quiet() {
        let g = graph(&["start", "a", "exit"], &[("start", "a"), ("a", "exit")]);
        assert!(run(&g).is_empty());
    }

    #[test]
    fn parsed_workflows_never_trigger_it() {
        let src = crate::lang::rules::test_support::wrap("  start -> a -> exit");
        assert!(crate::lang::rules::test_support::of_rule(&src, "edge_target_exists").is_empty());
    }
}
