//! `thread_id_requires_fidelity_full` (warning): nodes share a conversation
//! thread only at `full` fidelity (execution/context.mdx, "Full fidelity and
//! threads"), so a `thread_id` whose effective fidelity is anything else has
//! no effect. Fidelity resolves edge first, then node, then the graph's
//! `default_fidelity`, then `compact`. Unknown modes are left to
//! `fidelity_valid`.

use rustc_hash::FxHashSet;

use super::Cx;
use super::fidelity_valid::MODES;
use crate::lang::diagnostic::Diagnostic;
use crate::lang::graph::Node;

const RULE: &str = "thread_id_requires_fidelity_full";

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let graph = cx.graph;
    let default_thread = graph.attrs.non_empty("default_thread");
    // Threads and fidelity only shape what a model sees.
    for (i, node) in graph
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.handler.uses_llm())
    {
        let own = node.attrs.non_empty("thread_id");
        let Some(thread) = own.as_ref().or(default_thread.as_ref()) else {
            continue;
        };
        let fidelity = node_fidelity(cx, node);
        // Edges that all enter at full fidelity override the node's.
        let entered_full = !cx.incoming[i].is_empty()
            && cx
                .in_edges(i)
                .all(|(_, e)| e.attrs.text("fidelity").is_some_and(|f| f == "full"));
        if fidelity == "full" || entered_full || !MODES.contains(&fidelity.as_str()) {
            continue;
        }
        let span = if own.is_some() {
            cx.attr_span(node, "thread_id")
        } else {
            node.span
        };
        out.push(
            Diagnostic::warning(
                RULE,
                format!(
                    "`{}` is in thread `{thread}` but its fidelity is `{fidelity}`",
                    node.id
                ),
            )
            .at(span)
            .on_node(&node.id)
            .with_hint(format!(
                "set fidelity=\"full\" on `{}`: threads share a conversation only at full fidelity",
                node.id
            )),
        );
    }
    // Chained edges share one written attribute: report it once.
    let mut seen = FxHashSet::default();
    for (e, edge) in graph.edges.iter().enumerate() {
        let Some(attr) = edge.attrs.get("thread_id") else {
            continue;
        };
        // The thread is the one the target joins; only model nodes have one.
        let Some(target) = cx.target(e).filter(|n| n.handler.uses_llm()) else {
            continue;
        };
        let fidelity = edge
            .attrs
            .text("fidelity")
            .map_or_else(|| node_fidelity(cx, target), |f| f.into_owned());
        let blank = attr.value.as_text().trim().is_empty();
        if blank
            || fidelity == "full"
            || !MODES.contains(&fidelity.as_str())
            || !seen.insert(attr.value_span.start)
        {
            continue;
        }
        let thread = attr.value.as_text();
        let message = format!(
            "edge `{}` -> `{}` sets thread `{thread}` but its fidelity is `{fidelity}`",
            edge.from, edge.to
        );
        out.push(
            Diagnostic::warning(RULE, message)
            .at(attr.value_span)
            .on_edge(&edge.from, &edge.to)
            .with_hint("set fidelity=\"full\" on the edge: threads share a conversation only at full fidelity"),
        );
    }
}

/// The node's own `fidelity`, else the graph's `default_fidelity`, else `compact`.
fn node_fidelity(cx: &Cx<'_>, node: &Node) -> String {
    node.attrs
        .text("fidelity")
        .or_else(|| cx.graph.attrs.text("default_fidelity"))
        .map_or_else(|| "compact".to_string(), |f| f.into_owned())
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    const RULE: &str = super::RULE;

    #[test]
    fn a_thread_without_full_fidelity_is_warned_about() {
        let src = wrap("  impl [prompt=\"x\", thread_id=\"impl\"]\n  start -> impl -> exit");
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("impl"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(d[0].message.contains("`compact`"), "{d:?}");
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("set fidelity=\"full\"")
        );
    }

    #[test]
    fn the_graph_default_thread_applies_to_llm_nodes_only() {
        let src = wrap(concat!(
            "  graph [default_thread=\"main\", default_fidelity=\"summary:high\"]\n",
            "  plan [prompt=\"x\"]\n",
            "  run [shape=parallelogram, script=\"true\"]\n",
            "  start -> plan -> run -> exit",
        ));
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert!(d[0].message.contains("`summary:high`"), "{d:?}");
    }

    #[test]
    fn an_edge_thread_needs_full_fidelity() {
        let src = wrap(
            "  plan [prompt=\"x\"]\n  start -> plan [thread_id=\"t\", fidelity=\"compact\"]\n  plan -> exit",
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].edge, Some(("start".into(), "plan".into())));
        assert_eq!(d[0].span.map(|s| s.line), Some(5));
    }

    #[test]
    fn an_unknown_fidelity_is_left_to_fidelity_valid() {
        let src = wrap(concat!(
            "  node [thread_id=\"t\", fidelity=\"ful\"]\n",
            "  a [prompt=\"x\"]\n",
            "  start -> a -> exit [thread_id=\"u\"]",
        ));
        assert!(of_rule(&src, RULE).is_empty());
        assert_eq!(of_rule(&src, "fidelity_valid").len(), 1);
    }

    #[test]
    fn threads_at_full_fidelity_are_quiet() {
        let src = wrap(concat!(
            "  graph [default_thread=\"main\", default_fidelity=\"full\"]\n",
            "  node [thread_id=\"impl\", fidelity=\"full\"]\n",
            "  a [prompt=\"x\"]\n",
            "  b [prompt=\"y\", fidelity=\"compact\"]\n",
            "  start -> a -> b [fidelity=\"full\"]\n",
            "  b -> exit [thread_id=\"t\", fidelity=\"full\"]",
        ));
        assert!(of_rule(&src, RULE).is_empty(), "{:?}", of_rule(&src, RULE));
    }
}
