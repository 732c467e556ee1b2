//! `undeclared_node` (ours): an edge names a node that no statement
//! declares. Fabro silently creates an agent there; it is almost always a
//! typo, so it is an error with a "did you mean" hint.

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
    for node in graph.nodes.iter().filter(|n| !n.declared) {
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
        let mut d = Diagnostic::error(
            "undeclared_node",
            format!("`{}` is used in an edge but never declared", node.id),
        )
        .at(node.span)
        .on_node(&node.id);
        d = match declared.closest(&node.id) {
            Some(near) => d.with_hint(format!("did you mean `{near}`?")),
            None => d.with_hint(format!(
                "declare it, e.g. `{} [label=\"...\", prompt=\"...\"]`",
                node.id
            )),
        };
        out.push(d);
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
