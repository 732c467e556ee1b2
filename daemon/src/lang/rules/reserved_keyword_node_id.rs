//! `reserved_keyword_node_id` (warning): a node id is not a reserved word
//! (`graph`, `digraph`, `subgraph`, `node`, `edge`, `strict`, `if`) in any
//! letter case: DOT tools read the DOT keywords case-insensitively, so such a
//! file may not round-trip through Graphviz.

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

const RESERVED: [&str; 7] = [
    "graph", "digraph", "subgraph", "node", "edge", "strict", "if",
];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for node in &cx.graph.nodes {
        if !RESERVED.iter().any(|k| node.id.eq_ignore_ascii_case(k)) {
            continue;
        }
        out.push(
            Diagnostic::warning(
                "reserved_keyword_node_id",
                format!("node id `{}` is a reserved word", node.id),
            )
            .at(node.span)
            .on_node(&node.id)
            .with_hint(format!("rename it, e.g. `{}_step`", node.id)),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_keyword_as_a_node_id_is_a_warning() {
        let src = wrap("  if [prompt=\"y\"]\n  start -> if -> exit");
        let d = of_rule(&src, "reserved_keyword_node_id");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[0].node_id.as_deref(), Some("if"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert_eq!(d[0].hint.as_deref(), Some("rename it, e.g. `if_step`"));
    }

    #[test]
    fn keywords_are_matched_in_any_case() {
        // `Strict` cannot open a statement, but the parser accepts it after `->`.
        let src = wrap("  IF [prompt=\"x\"]\n  start -> IF -> Strict -> exit");
        let d = of_rule(&src, "reserved_keyword_node_id");
        let ids: Vec<_> = d.iter().map(|d| d.node_id.as_deref()).collect();
        assert_eq!(ids, [Some("IF"), Some("Strict")]);
    }

    #[test]
    fn ids_that_merely_contain_a_keyword_are_quiet() {
        let src = wrap(
            "  node_a [prompt=\"x\"]\n  edge_check [prompt=\"y\"]\n  start -> node_a -> edge_check -> exit",
        );
        assert!(of_rule(&src, "reserved_keyword_node_id").is_empty());
    }
}
