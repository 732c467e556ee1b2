//! `freeform_edge_count`: a human gate has at most one `freeform=true` edge
//! (error on each extra one), and `freeform=true` out of any other node has
//! no effect (warning) (workflows/human-in-the-loop.mdx, "Freeform input").

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        let mut first: Option<&str> = None;
        for (_, edge) in cx.out_edges(i) {
            let Some(attr) = edge.attrs.get("freeform") else {
                continue;
            };
            if attr.value.as_bool() != Some(true) {
                continue;
            }
            let d = if node.handler != Handler::Human {
                Diagnostic::warning(
                    "freeform_edge_count",
                    format!(
                        "`freeform=true` has no effect: `{}` is not a human gate",
                        node.id
                    ),
                )
                .at(attr.value_span)
                .with_hint(
                    "remove `freeform=true`, or make the node a human gate with `shape=hexagon`",
                )
            } else if let Some(first) = first {
                Diagnostic::error(
                    "freeform_edge_count",
                    format!(
                        "human gate `{}` already has a freeform edge, to `{first}`",
                        node.id
                    ),
                )
                .at(edge.span)
                .with_hint(
                    "keep one `freeform=true` edge and give the others labels as fixed choices",
                )
            } else {
                first = Some(&edge.to);
                continue;
            };
            out.push(d.on_edge(&edge.from, &edge.to));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_second_freeform_edge_on_a_gate_is_an_error() {
        let src = wrap(
            "  review [shape=hexagon]\n  a [prompt=\"x\"]\n  start -> review\n  review -> a [freeform=true]\n  review -> exit [freeform=true]\n  a -> exit",
        );
        let d = of_rule(&src, "freeform_edge_count");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].edge, Some(("review".into(), "exit".into())));
        assert_eq!(d[0].span.map(|s| s.line), Some(8));
    }

    #[test]
    fn freeform_out_of_a_non_gate_is_a_warning() {
        let src = wrap("  a [prompt=\"x\"]\n  start -> a\n  a -> exit [freeform=true]");
        let d = of_rule(&src, "freeform_edge_count");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warning);
        assert_eq!(d[0].edge, Some(("a".into(), "exit".into())));
    }

    #[test]
    fn one_freeform_edge_beside_fixed_choices_is_quiet() {
        let src = wrap(
            "  review [shape=hexagon]\n  a [prompt=\"x\"]\n  start -> review\n  review -> exit [label=\"[A] Approve\"]\n  review -> a [freeform=true]\n  a -> review",
        );
        assert!(of_rule(&src, "freeform_edge_count").is_empty());
    }
}
