//! `fidelity_valid` (error, our choice): `fidelity` on a node or edge, and
//! the graph's `default_fidelity`, must name a mode the engine can resolve
//! (execution/context.mdx, "Fidelity"). Fabro falls back silently; a typo
//! there would quietly change what an agent sees, so it does not run.

use rustc_hash::FxHashSet;

use super::{Cx, closest};
use crate::lang::attrs::{Attr, Attrs};
use crate::lang::diagnostic::Diagnostic;

/// Every fidelity mode.
pub(super) const MODES: &[&str] = &[
    "compact",
    "full",
    "truncate",
    "summary:high",
    "summary:medium",
    "summary:low",
];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Defaults and chained edges share one written attribute: report it once.
    let mut seen = FxHashSet::default();
    if let Some(d) = invalid(&cx.graph.attrs, "default_fidelity", &mut seen) {
        out.push(d);
    }
    for (_, node) in cx.nodes_with("fidelity") {
        if let Some(d) = invalid(&node.attrs, "fidelity", &mut seen) {
            out.push(d.on_node(&node.id));
        }
    }
    for edge in &cx.graph.edges {
        if let Some(d) = invalid(&edge.attrs, "fidelity", &mut seen) {
            out.push(d.on_edge(&edge.from, &edge.to));
        }
    }
}

fn invalid(attrs: &Attrs, key: &str, seen: &mut FxHashSet<u32>) -> Option<Diagnostic> {
    let Attr {
        value, value_span, ..
    } = attrs.get(key)?;
    let text = value.as_text();
    if MODES.contains(&text.as_ref()) || !seen.insert(value_span.start) {
        return None;
    }
    let near = MODES
        .iter()
        .copied()
        .find(|m| m.eq_ignore_ascii_case(&text))
        .or_else(|| closest(&text, MODES.iter().copied()));
    let modes = MODES.join(", ");
    let hint = match near {
        Some(m) => format!("did you mean `{m}`? fidelity is one of {modes}"),
        None => format!("fidelity is one of {modes}"),
    };
    Some(
        Diagnostic::error("fidelity_valid", format!("unknown fidelity `{text}`"))
            .at(*value_span)
            .with_hint(hint),
    )
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_misspelt_node_fidelity_is_an_error_with_a_suggestion() {
        let src = wrap("  plan [prompt=\"x\", fidelity=\"ful\"]\n  start -> plan -> exit");
        let d = of_rule(&src, "fidelity_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("did you mean `full`?"),
            "{d:?}"
        );
    }

    #[test]
    fn graph_default_and_edge_fidelity_are_checked() {
        let src = wrap(
            "  graph [default_fidelity=\"summary:hi\"]\n  start -> exit [fidelity=\"everything\"]",
        );
        let d = of_rule(&src, "fidelity_valid");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].hint.as_deref().unwrap().contains("`summary:high`"),
            "{d:?}"
        );
        assert_eq!(d[1].edge, Some(("start".into(), "exit".into())));
    }

    #[test]
    fn a_bad_default_is_reported_once_not_per_node() {
        let src = wrap(
            "  node [fidelity=\"FULL\"]\n  a [prompt=\"x\"]\n  b [prompt=\"y\"]\n  start -> a -> b -> exit",
        );
        let d = of_rule(&src, "fidelity_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("did you mean `full`?"),
            "{d:?}"
        );
    }

    #[test]
    fn every_documented_mode_is_accepted() {
        let src = wrap(concat!(
            "  graph [default_fidelity=\"summary:medium\"]\n",
            "  a [prompt=\"x\", fidelity=\"full\"]\n",
            "  b [prompt=\"y\", fidelity=\"summary:low\"]\n",
            "  start -> a -> b [fidelity=\"truncate\"]\n",
            "  b -> exit [fidelity=compact]",
        ));
        assert!(of_rule(&src, "fidelity_valid").is_empty());
    }
}
