//! `type_known` (warning): a node's `type` names a handler, and its `shape`
//! (when no known `type` overrides it) selects one. Anything else falls back
//! to the shape, and unknown shapes run as agents, which is rarely what a
//! typo meant (reference/dot-language.mdx, "Node types").

use rustc_hash::FxHashSet;

use super::{Cx, closest};
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written attribute on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for node in &cx.graph.nodes {
        // Only a finding needs the words: formatting them for every node
        // was most of this rule's cost on a large graph.
        let runs_as = || {
            if node.handler == Handler::Agent {
                "as an agent".to_string()
            } else {
                format!("by its shape, as `{}`", node.handler.name())
            }
        };
        let ty = node.attrs.get("type");
        let ty_known = ty.is_some_and(|a| Handler::from_type(&a.value.as_text()).is_some());
        if let Some(attr) = ty.filter(|_| !ty_known) {
            let text = attr.value.as_text();
            if seen.insert(attr.value_span.start) {
                let d = Diagnostic::warning(
                    "type_known",
                    format!("unknown type `{text}`: `{}` runs {}", node.id, runs_as()),
                );
                out.push(
                    suggest(d, &text, &Handler::ALL.map(Handler::name), "types")
                        .at(attr.value_span)
                        .on_node(&node.id),
                );
            }
        }
        let Some(attr) = node.attrs.get("shape").filter(|_| !ty_known) else {
            continue;
        };
        let text = attr.value.as_text();
        if Handler::from_shape(&text).is_none() && seen.insert(attr.value_span.start) {
            let d = Diagnostic::warning(
                "type_known",
                format!(
                    "shape `{text}` selects no handler: `{}` runs as an agent",
                    node.id
                ),
            );
            out.push(
                suggest(d, &text, &Handler::ALL.map(Handler::shape), "shapes")
                    .at(attr.value_span)
                    .on_node(&node.id),
            );
        }
    }
}

fn suggest(d: Diagnostic, text: &str, known: &[&str], what: &str) -> Diagnostic {
    match closest(text, known.iter().copied()) {
        Some(near) => d.with_hint(format!("did you mean `{near}`?")),
        None => d.with_hint(format!("known {what}: {}", known.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_unknown_type_is_a_warning_with_a_suggestion() {
        let src = wrap("  run [type=\"comand\", script=\"true\"]\n  start -> run -> exit");
        let d = of_rule(&src, "type_known");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("run"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert_eq!(
            d[0].message,
            "unknown type `comand`: `run` runs as an agent"
        );
        assert_eq!(d[0].hint.as_deref(), Some("did you mean `command`?"));
    }

    #[test]
    fn an_unknown_type_says_the_shape_decides() {
        let src = wrap(
            "  run [type=\"shell\", shape=parallelogram, script=\"true\"]\n  start -> run -> exit",
        );
        let d = of_rule(&src, "type_known");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("by its shape, as `command`"), "{d:?}");
    }

    #[test]
    fn an_unknown_shape_runs_as_an_agent() {
        let src = wrap(concat!(
            "  plan [shape=ellipse, prompt=\"x\"]\n",
            "  review [shape=tabb, prompt=\"y\"]\n",
            "  start -> plan -> review -> exit",
        ));
        let d = of_rule(&src, "type_known");
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("known shapes: Mdiamond"),
            "{d:?}"
        );
        assert_eq!(d[1].hint.as_deref(), Some("did you mean `tab`?"));
    }

    #[test]
    fn a_known_type_makes_any_shape_fine() {
        let src = wrap(concat!(
            "  run [type=command, shape=ellipse, script=\"true\"]\n",
            "  plan [type=agent_loop, prompt=\"x\"]\n",
            "  start -> run -> plan -> exit",
        ));
        assert!(of_rule(&src, "type_known").is_empty());
    }
}
