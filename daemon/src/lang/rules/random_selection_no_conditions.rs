//! `random_selection_no_conditions` (error): a node with `selection="random"`
//! has no conditional outgoing edges; random tiebreaking and condition order
//! conflict (workflows/transitions.mdx, "Random selection").

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.nodes_with("selection") {
        let Some(attr) = node.attrs.get("selection") else {
            continue;
        };
        if attr.value.as_text().trim() != "random" {
            continue;
        }
        let Some((_, edge)) = cx.out_edges(i).find(|(_, e)| e.condition().is_some()) else {
            continue;
        };
        out.push(
            Diagnostic::error(
                "random_selection_no_conditions",
                format!(
                    "`{}` selects at random but its edge to `{}` has a condition",
                    node.id, edge.to
                ),
            )
            .at(attr.value_span)
            .on_node(&node.id)
            .with_hint("use unconditional edges with `weight`, or remove `selection=\"random\"`"),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn random_selection_with_a_condition_is_an_error_on_the_attribute() {
        let src = wrap(
            "  pick [prompt=\"x\", selection=\"random\"]\n  start -> pick\n  pick -> exit [condition=\"outcome=succeeded\"]\n  pick -> exit",
        );
        let d = of_rule(&src, "random_selection_no_conditions");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("pick"));
        assert_eq!(
            d[0].span.map(|s| (s.line, s.column)),
            Some((4, 31)),
            "at the quoted value"
        );
    }

    #[test]
    fn random_selection_over_weighted_edges_is_quiet() {
        let src = wrap(
            "  pick [prompt=\"x\", selection=\"random\"]\n  a [prompt=\"a\"]\n  start -> pick\n  pick -> a [weight=3]\n  pick -> exit [weight=1]\n  a -> exit",
        );
        assert!(of_rule(&src, "random_selection_no_conditions").is_empty());
    }
}
