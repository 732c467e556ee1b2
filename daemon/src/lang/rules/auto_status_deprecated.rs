//! `auto_status_deprecated` (warning): `auto_status=true` is the old way to
//! let a node's failure pass; `on_failure="succeed"` says the same thing
//! (workflows/transitions.mdx). Beside an `on_failure`, `auto_status` is
//! ignored; `auto_status=false` never did anything.

use rustc_hash::FxHashSet;

use super::Cx;
use crate::lang::diagnostic::Diagnostic;

const RULE: &str = "auto_status_deprecated";

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Node defaults put one written attribute on many nodes: report it once.
    let mut seen = FxHashSet::default();
    for (_, node) in cx.nodes_with("auto_status") {
        let Some(attr) = node.attrs.get("auto_status") else {
            continue;
        };
        if !seen.insert(attr.key_span.start) {
            continue;
        }
        let d = if node.attrs.contains("on_failure") {
            Diagnostic::warning(
                RULE,
                format!(
                    "`auto_status` is ignored beside `on_failure` on `{}`",
                    node.id
                ),
            )
            .with_hint("remove `auto_status`; `on_failure` decides what a failure does")
        } else {
            match attr.value.as_bool() {
                Some(true) => Diagnostic::warning(RULE, "`auto_status` is deprecated")
                    .with_hint("write on_failure=\"succeed\" instead"),
                Some(false) => Diagnostic::warning(RULE, "`auto_status=false` has no effect")
                    .with_hint("remove it"),
                // Not a boolean: the parser reports it (`attribute_type`).
                None => continue,
            }
        };
        out.push(d.at(attr.key_span).on_node(&node.id));
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    const RULE: &str = super::RULE;

    #[test]
    fn auto_status_true_suggests_on_failure_succeed() {
        let src = wrap(
            "  scan [shape=parallelogram, script=\"true\", auto_status=true]\n  start -> scan -> exit",
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("scan"));
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 45)));
        assert_eq!(
            d[0].hint.as_deref(),
            Some("write on_failure=\"succeed\" instead")
        );
    }

    #[test]
    fn auto_status_beside_on_failure_is_ignored() {
        let src = wrap(
            "  scan [prompt=\"x\", auto_status=true, on_failure=exit]\n  start -> scan -> exit",
        );
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message.contains("ignored beside `on_failure`"),
            "{d:?}"
        );
    }

    #[test]
    fn auto_status_false_has_no_effect() {
        let src = wrap("  scan [prompt=\"x\", auto_status=false]\n  start -> scan -> exit");
        let d = of_rule(&src, RULE);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].hint.as_deref(), Some("remove it"));
    }

    #[test]
    fn on_failure_alone_is_quiet() {
        let src = wrap("  scan [prompt=\"x\", on_failure=succeed]\n  start -> scan -> exit");
        assert!(of_rule(&src, RULE).is_empty());
    }
}
