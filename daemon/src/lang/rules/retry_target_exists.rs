//! `retry_target_exists` (error, our choice: a retry would jump to nowhere):
//! `retry_target` and `fallback_retry_target`, on a node or the graph, name a
//! node of the workflow (execution/failures.mdx, "Goal gates").

use super::{Cx, Suggestions};
use crate::lang::attrs::Attrs;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let mut ids = Suggestions::new(cx.graph.nodes.iter().map(|n| n.id.as_ref()));
    check_attrs(cx, &cx.graph.attrs, None, &mut ids, out);
    let mut nodes: Vec<usize> = cx
        .nodes_with("retry_target")
        .chain(cx.nodes_with("fallback_retry_target"))
        .map(|(i, _)| i)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    for i in nodes {
        let node = &cx.graph.nodes[i];
        check_attrs(cx, &node.attrs, Some(&node.id), &mut ids, out);
    }
}

fn check_attrs(
    cx: &Cx<'_>,
    attrs: &Attrs,
    node: Option<&str>,
    ids: &mut Suggestions<'_>,
    out: &mut Vec<Diagnostic>,
) {
    for key in ["retry_target", "fallback_retry_target"] {
        let Some(attr) = attrs.get(key) else { continue };
        let value = attr.value.as_text();
        let target = value.trim();
        if target.is_empty() || cx.index(target).is_some() {
            continue;
        }
        let hint = match ids.closest(target) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("set `{key}` to the id of a node in this workflow"),
        };
        let mut d = Diagnostic::error(
            "retry_target_exists",
            format!("`{key}` names `{target}`, which is not a node"),
        )
        .at(attr.value_span)
        .with_hint(hint);
        if let Some(id) = node {
            d = d.on_node(id);
        }
        out.push(d);
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_retry_target_naming_no_node_is_an_error_with_a_suggestion() {
        let src = wrap(
            "  implement [prompt=\"x\"]\n  verify [prompt=\"y\", retry_target=\"implment\"]\n  start -> implement -> verify -> exit",
        );
        let d = of_rule(&src, "retry_target_exists");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("verify"));
        assert_eq!(
            d[0].span.map(|s| (s.line, s.column)),
            Some((5, 36)),
            "at the quoted value"
        );
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `implement`?"));
    }

    #[test]
    fn a_graph_fallback_target_is_checked_too() {
        let src = wrap("  graph [fallback_retry_target=\"nowhere\"]\n  start -> exit");
        let d = of_rule(&src, "retry_target_exists");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].node_id, None);
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn targets_that_exist_are_quiet() {
        let src = wrap(
            "  graph [retry_target=\"implement\"]\n  implement [prompt=\"x\"]\n  verify [prompt=\"y\", fallback_retry_target=\"implement\"]\n  start -> implement -> verify -> exit",
        );
        assert!(of_rule(&src, "retry_target_exists").is_empty());
    }
}
