//! `direction_valid` (warning): the graph's `rankdir` is one of Graphviz's
//! directions. Only drawing depends on it, so a bad one is not an error.

use super::{Cx, closest};
use crate::lang::diagnostic::Diagnostic;

const DIRECTIONS: &[&str] = &["TB", "LR", "BT", "RL"];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let Some(attr) = cx.graph.attrs.get("rankdir") else {
        return;
    };
    let text = attr.value.as_text();
    if DIRECTIONS.contains(&text.as_ref()) {
        return;
    }
    let near = DIRECTIONS
        .iter()
        .copied()
        .find(|d| d.eq_ignore_ascii_case(&text))
        .or_else(|| closest(&text, DIRECTIONS.iter().copied()));
    let hint = match near {
        Some(d) => format!("did you mean `{d}`? `rankdir` is one of TB, LR, BT, RL"),
        None => "`rankdir` is one of TB, LR, BT, RL".to_string(),
    };
    out.push(
        Diagnostic::warning("direction_valid", format!("unknown rankdir `{text}`"))
            .at(attr.value_span)
            .with_hint(hint),
    );
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn an_unknown_direction_is_a_warning_with_a_suggestion() {
        let d = of_rule(&wrap("  rankdir=lr\n  start -> exit"), "direction_valid");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(!d[0].is_error());
        assert_eq!(d[0].span.map(|s| (s.line, s.column)), Some((4, 11)));
        assert!(
            d[0].hint
                .as_deref()
                .unwrap()
                .starts_with("did you mean `LR`?"),
            "{d:?}"
        );
    }

    #[test]
    fn graphviz_directions_are_quiet() {
        for dir in ["TB", "LR", "BT", "RL"] {
            let src = wrap(&format!("  graph [rankdir={dir}]\n  start -> exit"));
            assert!(of_rule(&src, "direction_valid").is_empty(), "{dir}");
        }
    }
}
