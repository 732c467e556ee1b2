//! `selection_valid` (warning): `selection`, on a node or the graph, is
//! `deterministic` or `random` (workflows/transitions.mdx).

use super::{Cx, closest};
use crate::lang::attrs::Attr;
use crate::lang::diagnostic::Diagnostic;

const CHOICES: [&str; 2] = ["deterministic", "random"];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    if let Some(d) = cx.graph.attrs.get("selection").and_then(diagnose) {
        out.push(d);
    }
    for (_, node) in cx.nodes_with("selection") {
        if let Some(d) = node.attrs.get("selection").and_then(diagnose) {
            out.push(d.on_node(&node.id));
        }
    }
}

fn diagnose(attr: &Attr) -> Option<Diagnostic> {
    let value = attr.value.as_text();
    if CHOICES.contains(&value.as_ref()) {
        return None;
    }
    let choices = "`selection` is `deterministic` (the default) or `random`";
    let hint = match closest(&value, CHOICES) {
        Some(near) => format!("did you mean `{near}`? {choices}"),
        None => choices.to_string(),
    };
    Some(
        Diagnostic::warning("selection_valid", format!("unknown selection `{value}`"))
            .at(attr.value_span)
            .with_hint(hint),
    )
}

#[cfg(test)]
mod tests {
    use crate::lang::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_misspelt_selection_suggests_the_close_one() {
        let src = wrap("  pick [prompt=\"x\", selection=\"randon\"]\n  start -> pick -> exit");
        let d = of_rule(&src, "selection_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[0].node_id.as_deref(), Some("pick"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(
            d[0].hint
                .as_deref()
                .is_some_and(|h| h.starts_with("did you mean `random`?")),
            "{d:?}"
        );
    }

    #[test]
    fn a_graph_selection_is_checked_too() {
        let d = of_rule(
            &wrap("  graph [selection=\"fastest\"]\n  start -> exit"),
            "selection_valid",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].node_id, None);
        assert_eq!(
            d[0].hint.as_deref(),
            Some("`selection` is `deterministic` (the default) or `random`")
        );
    }

    #[test]
    fn both_known_selections_are_quiet() {
        let src = wrap(
            "  graph [selection=deterministic]\n  pick [prompt=\"x\", selection=random]\n  start -> pick -> exit",
        );
        assert!(of_rule(&src, "selection_valid").is_empty());
    }
}
