//! `all_conditional_edges` (error): a stage whose outgoing edges all carry a
//! condition may find no route, and the run stops there. Quiet when every
//! edge goes to the exit, or when the conditions plainly cover every outcome:
//! `outcome=X` with `outcome!=X`, or `outcome=` for all four outcomes
//! (execution/outcomes.mdx; Attractor spellings accepted).

use super::Cx;
use crate::lang::Handler;
use crate::lang::diagnostic::Diagnostic;

/// The four outcomes, canonical spelling first, then the Attractor one.
const OUTCOMES: [(&str, &str); 4] = [
    ("succeeded", "success"),
    ("failed", "fail"),
    ("partially_succeeded", "partial_success"),
    ("skipped", "skipped"),
];

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        if matches!(node.handler, Handler::Start | Handler::Exit) || cx.outgoing[i].is_empty() {
            continue;
        }
        // Cheap test first: almost every node has an unconditional edge.
        if cx.out_edges(i).any(|(_, edge)| edge.condition().is_none()) {
            continue;
        }
        let mut tests = Vec::new();
        let mut all_to_exit = true;
        for (e, edge) in cx.out_edges(i) {
            let Some(condition) = edge.condition() else {
                break;
            };
            tests.push(outcome_test(&condition));
            all_to_exit &= cx.target(e).is_some_and(|n| n.handler == Handler::Exit);
        }
        if tests.len() < cx.outgoing[i].len() || all_to_exit || exhaustive(&tests) {
            continue;
        }
        out.push(
            Diagnostic::error(
                "all_conditional_edges",
                format!(
                    "every edge out of `{}` has a condition: when none matches, the run stops here",
                    node.id
                ),
            )
            .at(node.span)
            .on_node(&node.id)
            .with_hint(format!(
                "add one edge from `{}` without a condition as the fallback",
                node.id
            )),
        );
    }
}

/// A whole condition of the form `outcome=V` or `outcome!=V`: whether it is
/// `=`, and the outcome's index in [`OUTCOMES`].
fn outcome_test(condition: &str) -> Option<(bool, usize)> {
    let (key, equal, value) = match condition.split_once("!=") {
        Some((k, v)) => (k, false, v),
        None => condition.split_once('=').map(|(k, v)| (k, true, v))?,
    };
    let value = value.trim();
    let at = OUTCOMES
        .iter()
        .position(|(a, b)| value == *a || value == *b)?;
    (key.trim() == "outcome").then_some((equal, at))
}

/// True when the simple outcome tests cover every outcome.
fn exhaustive(tests: &[Option<(bool, usize)>]) -> bool {
    let has = |t: (bool, usize)| tests.contains(&Some(t));
    (0..OUTCOMES.len()).all(|o| has((true, o)))
        || (0..OUTCOMES.len()).any(|o| has((true, o)) && has((false, o)))
}

#[cfg(test)]
mod tests {
    use crate::lang::rules::test_support::{of_rule, wrap};

    fn gate(edges: &str) -> String {
        wrap(&format!(
            "  a [prompt=\"x\"]\n  fix [prompt=\"y\"]\n  start -> a\n  fix -> a\n{edges}"
        ))
    }

    #[test]
    fn a_stage_with_only_conditional_edges_is_an_error() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded\"]\n  a -> fix [condition=\"outcome=failed\"]",
        );
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(d[0].node_id.as_deref(), Some("a"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
    }

    #[test]
    fn an_unconditional_fallback_is_quiet() {
        let src = gate("  a -> exit [condition=\"outcome=succeeded\"]\n  a -> fix");
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }

    #[test]
    fn an_outcome_and_its_negation_cover_everything() {
        let src = gate(
            "  a -> exit [condition=\"outcome = success\"]\n  a -> fix [condition=\"outcome!=succeeded\"]",
        );
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }

    #[test]
    fn all_four_outcomes_cover_everything() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded\"]\n  a -> exit [condition=\"outcome=partial_success\"]\n  a -> fix [condition=\"outcome=fail\"]\n  a -> fix [condition=\"outcome=skipped\"]",
        );
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }

    #[test]
    fn compound_conditions_are_not_taken_as_exhaustive() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded && context.ok=true\"]\n  a -> fix [condition=\"outcome!=succeeded\"]",
        );
        assert_eq!(of_rule(&src, "all_conditional_edges").len(), 1);
    }

    #[test]
    fn conditions_that_all_lead_to_the_exit_are_quiet() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded\"]\n  a -> exit [condition=\"context.done\"]",
        );
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }
}
