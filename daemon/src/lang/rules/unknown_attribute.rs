//! `unknown_attribute` (warning): an attribute neither Weft nor Graphviz
//! reads where it is written. It is ignored, which usually hides a typo.

use rustc_hash::FxHashSet;

use super::{Cx, closest};
use crate::lang::attrs::{self, Attr, Attrs, Scope};
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Defaults and chained edges share one written attribute: report it once.
    let mut seen = FxHashSet::default();
    for attr in unknown(&cx.graph.attrs, Scope::Graph, &mut seen) {
        out.push(warn(attr, Scope::Graph));
    }
    for node in &cx.graph.nodes {
        for attr in unknown(&node.attrs, Scope::Node, &mut seen) {
            out.push(warn(attr, Scope::Node).on_node(&node.id));
        }
    }
    for edge in &cx.graph.edges {
        for attr in unknown(&edge.attrs, Scope::Edge, &mut seen) {
            out.push(warn(attr, Scope::Edge).on_edge(&edge.from, &edge.to));
        }
    }
}

fn unknown<'a>(attrs: &'a Attrs, scope: Scope, seen: &mut FxHashSet<u32>) -> Vec<&'a Attr> {
    attrs
        .iter()
        .filter(|a| !a.key.is_known(scope) && seen.insert(a.key_span.start))
        .collect()
}

fn warn(attr: &Attr, scope: Scope) -> Diagnostic {
    let key = attr.key.as_str();
    let elsewhere = [Scope::Graph, Scope::Node, Scope::Edge]
        .into_iter()
        .find(|s| *s != scope && attrs::declared_type(*s, key).is_some());
    let hint = match (closest(key, attrs::names(scope)), elsewhere) {
        (Some(near), _) => format!("did you mean `{near}`?"),
        (None, Some(other)) => format!(
            "`{key}` is {} attribute; Weft ignores it on {}",
            article(other),
            article(scope)
        ),
        (None, None) => "Weft ignores this attribute".to_string(),
    };
    Diagnostic::warning(
        "unknown_attribute",
        format!("unknown {} attribute `{key}`", scope.describe()),
    )
    .at(attr.key_span)
    .with_hint(hint)
}

fn article(scope: Scope) -> &'static str {
    match scope {
        Scope::Graph => "a graph",
        Scope::Node => "a node",
        Scope::Edge => "an edge",
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_misspelt_node_attribute_suggests_the_known_one() {
        let src = wrap("  plan [promt=\"x\"]\n  start -> plan -> exit");
        let d = of_rule(&src, "unknown_attribute");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("plan"));
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 9)));
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `prompt`?"));
    }

    #[test]
    fn an_attribute_from_another_scope_says_where_it_belongs() {
        let src = wrap("  start -> exit [prompt=\"x\"]");
        let d = of_rule(&src, "unknown_attribute");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].edge, Some(("start".into(), "exit".into())));
        assert_eq!(
            d[0].hint.as_deref(),
            Some("`prompt` is a node attribute; Weft ignores it on an edge")
        );
    }

    #[test]
    fn a_chained_edge_attribute_is_reported_once() {
        let src = wrap(
            "  a [prompt=\"x\"]\n  start -> a -> exit [flavour=\"x\"]\n  graph [zzz_custom=1]",
        );
        let d = of_rule(&src, "unknown_attribute");
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[1].hint.as_deref(), Some("Weft ignores this attribute"));
    }

    #[test]
    fn known_presentation_and_stylesheet_attributes_are_quiet() {
        let src = wrap(concat!(
            "  graph [goal=\"g\", rankdir=LR, bgcolor=white, model_stylesheet=\"* { model: m; speed: fast; }\"]\n",
            "  plan [prompt=\"x\", fillcolor=red, style=filled]\n",
            "  start -> plan [color=blue, weight=2]\n",
            "  plan -> exit",
        ));
        assert!(of_rule(&src, "unknown_attribute").is_empty());
    }
}
