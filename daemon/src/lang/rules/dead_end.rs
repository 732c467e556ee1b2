//! `dead_end` (warning): every declared node other than the exit has an
//! outgoing edge. A run that reaches a stage without one ends there, without
//! checking goal gates. A warning, as the language issue specifies (it
//! overrides the stricter default noted in fabro-docs INDEX.md): a dead end
//! is sometimes deliberate while a workflow is being written.
//! Undeclared nodes are left to `undeclared_node`.

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        if !node.declared || node.handler == Handler::Exit || !cx.outgoing[i].is_empty() {
            continue;
        }
        out.push(
            Diagnostic::warning(
                "dead_end",
                format!("`{}` has no outgoing edge: the run would end there without checking goal gates", node.id),
            )
            .at(node.span)
            .on_node(&node.id)
            .with_hint(format!("add an edge from `{}` to the next stage or to the exit", node.id)),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_stage_with_no_way_out_is_reported() {
        let src = wrap("  a [prompt=\"x\"]\n  b [prompt=\"y\"]\n  start -> a -> exit\n  a -> b");
        let d = of_rule(&src, "dead_end");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error(), "a dead end is a warning");
        assert_eq!(d[0].node_id.as_deref(), Some("b"));
        assert_eq!(d[0].span.map(|s| s.line), Some(5));
    }

    #[test]
    fn the_exit_and_undeclared_nodes_are_not_dead_ends() {
        assert!(of_rule(&wrap("  start -> a -> exit\n  a -> typo"), "dead_end").is_empty());
    }
}
