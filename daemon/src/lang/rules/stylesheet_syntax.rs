//! `stylesheet_syntax`: the graph's `model_stylesheet` parses. The error is
//! placed at its true line and column inside the attribute's string.

use super::{Cx, STYLESHEET_SYNTAX};
use crate::lang::diagnostic::Diagnostic;
use crate::lang::stylesheet;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    let Some(attr) = cx.graph.attrs.get("model_stylesheet") else {
        return;
    };
    let text = attr.value.as_text();
    if let Err(e) = stylesheet::parse(&text) {
        let mut d = Diagnostic::error(
            STYLESHEET_SYNTAX,
            format!("invalid model stylesheet: {}", e.message),
        )
        .at(cx.span_in(attr, e.offset, e.len.max(1)));
        if let Some(hint) = e.hint {
            d = d.with_hint(hint);
        }
        out.push(d);
    }
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    #[test]
    fn a_stylesheet_error_points_into_the_attribute_string() {
        let src = wrap(
            "  graph [model_stylesheet=\"\n    * { model: x; }\n    .c { modle: y; }\n  \"]\n  start -> exit",
        );
        let d = of_rule(&src, super::STYLESHEET_SYNTAX);
        assert_eq!(d.len(), 1, "{d:?}");
        let span = d[0].span.expect("span");
        // Line 6 of the file is `    .c { modle: y; }`; `modle` starts at column 10.
        assert_eq!((span.line, span.column), (6, 10), "{d:?}");
    }

    #[test]
    fn a_valid_stylesheet_is_quiet() {
        let src =
            wrap("  graph [model_stylesheet=\"* { model: claude-haiku-4-5; }\"]\n  start -> exit");
        assert!(of_rule(&src, super::STYLESHEET_SYNTAX).is_empty());
    }
}
