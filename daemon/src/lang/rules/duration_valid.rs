//! `duration_valid` (error): a wait node pauses for its `duration`, which is
//! required and must be more than zero; a node's `timeout` must be more than
//! zero too (`timeout="0s"` would fail every attempt of a command the moment
//! it starts, and time a gate out before anyone saw it). Values that are not
//! durations at all are reported by the parser (`attribute_type`).

use rustc_hash::FxHashSet;

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    check_waits(cx, out);
    // Node defaults put one written `timeout` on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for (_, node) in cx.nodes_with("timeout") {
        let Some(attr) = node.attrs.get("timeout") else {
            continue;
        };
        if attr.value.as_duration().is_none_or(|d| d.amount != 0)
            || !seen.insert(attr.value_span.start)
        {
            continue;
        }
        out.push(
            Diagnostic::error(
                "duration_valid",
                format!("`{}` has a timeout of zero", node.id),
            )
            .at(attr.value_span)
            .on_node(&node.id)
            .with_hint("a timeout must be more than zero: give one, e.g. `timeout=\"10m\"`, or remove it for the default (600 s for a command; a gate without one waits for its answer)"),
        );
    }
}

fn check_waits(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
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
    fn a_zero_timeout_is_an_error_at_the_value() {
        let src = wrap(
            "  node [timeout=\"0s\"]\n  a [shape=parallelogram, script=\"true\"]\n  b [shape=parallelogram, script=\"true\", timeout=\"1s\"]\n  start -> a -> b -> exit",
        );
        let d = of_rule(&src, "duration_valid");
        assert_eq!(d.len(), 1, "one written value, reported once: {d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 17)));
        assert!(d[0].message.contains("timeout of zero"), "{d:?}");
        let ms =
            wrap("  a [shape=parallelogram, script=\"true\", timeout=0ms]\n  start -> a -> exit");
        assert_eq!(of_rule(&ms, "duration_valid").len(), 1);
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
