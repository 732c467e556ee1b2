//! `condition_syntax`: every edge `condition` parses. The error points at
//! the offending character inside the condition string.

use rustc_hash::FxHashMap;

use super::Cx;
use crate::lang::condition::{self, ConditionError};
use crate::lang::diagnostic::Diagnostic;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // Workflows repeat the same few conditions on many edges: parse each
    // distinct text once.
    let mut parsed: FxHashMap<&str, Option<ConditionError>> = FxHashMap::default();
    for edge in &cx.graph.edges {
        let Some(attr) = edge.attrs.get("condition") else {
            continue;
        };
        let Some(text) = attr.value.as_str().filter(|t| !t.trim().is_empty()) else {
            continue;
        };
        let error = parsed
            .entry(text)
            .or_insert_with(|| condition::parse(text).err());
        let Some(err) = error else { continue };
        // The parser saw the trimmed-free original text, so offsets map as is.
        let mut d = Diagnostic::error(
            "condition_syntax",
            format!("invalid condition: {}", err.message),
        )
        .at(cx.span_in(attr, err.offset, err.len.max(1)))
        .on_edge(&edge.from, &edge.to);
        if let Some(hint) = &err.hint {
            d = d.with_hint(hint.clone());
        }
        out.push(d);
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_bad_condition_is_reported_on_its_edge_at_the_fault() {
        let src = wrap(
            "  a [shape=parallelogram, script=\"true\"]\n  start -> a\n  a -> exit [condition=\"outcome==succeeded\"]\n  a -> exit",
        );
        let d = of_rule(&src, "condition_syntax");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].edge, Some(("a".into(), "exit".into())));
        let span = d[0].span.expect("span");
        assert_eq!(span.line, 6);
        assert!(span.column > 23, "{span:?}");
    }

    #[test]
    fn good_conditions_are_quiet() {
        let src = wrap(
            "  a [shape=parallelogram, script=\"true\"]\n  start -> a\n  a -> exit [condition=\"outcome=succeeded && context.x != 1 || !flag\"]\n  a -> exit",
        );
        assert!(of_rule(&src, "condition_syntax").is_empty());
    }
}
