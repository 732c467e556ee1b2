//! `duration_valid` (error): a wait node pauses for its `duration`, which is
//! required and must be more than zero. Values that are not durations at all
//! are reported by the parser (`attribute_type`).

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for node in cx.graph.nodes.iter().filter(|n| n.handler == Handler::Wait) {
        let d = match node.attrs.get("duration") {
            None => Diagnostic::error(
                "duration_valid",
                format!("wait node `{}` has no duration", node.id),
            )
            .at(node.span)
            .with_hint("add how long to pause, e.g. `duration=\"30s\"`"),
            Some(attr) if attr.value.as_duration().is_some_and(|d| d.amount == 0) => {
                Diagnostic::error(
                    "duration_valid",
                    format!("wait node `{}` waits for no time", node.id),
                )
                .at(attr.value_span)
                .with_hint("give a positive duration, e.g. `duration=\"30s\"`, or remove the node")
            }
            Some(_) => continue,
        };
        out.push(d.on_node(&node.id));
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_wait_without_duration_is_an_error() {
        let src = wrap("  pause [shape=insulator]\n  start -> pause -> exit");
        let d = of_rule(&src, "duration_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("pause"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn a_zero_duration_is_an_error_at_the_value() {
        let src = wrap("  pause [type=wait, duration=0s]\n  start -> pause -> exit");
        let d = of_rule(&src, "duration_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 30)));
    }

    #[test]
    fn a_badly_typed_duration_is_left_to_the_parser() {
        let src = wrap("  pause [shape=insulator, duration=30]\n  start -> pause -> exit");
        assert!(of_rule(&src, "duration_valid").is_empty());
        assert_eq!(of_rule(&src, "attribute_type").len(), 1);
    }

    #[test]
    fn a_wait_with_a_duration_is_quiet() {
        let src = wrap("  pause [shape=insulator, duration=\"2m\"]\n  start -> pause -> exit");
        assert!(of_rule(&src, "duration_valid").is_empty());
    }
}
