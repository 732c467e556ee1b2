//! `all_conditional_edges` (error, or an info note): a stage whose outgoing
//! edges all carry a condition may find no route. The error names an
//! outcome the node can end with that no edge matches (the run would stop
//! there: a failure fails the run, and since issue 21 so does any other
//! outcome no edge matches).
//!
//! Quiet when every edge goes to the exit, or when the conditions surely
//! cover all four outcomes (decided on the `outcome` clauses, every other
//! clause counting as unknown; `outcome=X` with `outcome!=X`, say).
//!
//! Otherwise the conditions need only cover the outcomes the node's handler
//! can produce on its own ([`outcomes_of`]; docs/language.md,
//! "Conditions"): then the workflow is valid with an info note. This is how
//! the Attractor spec writes its edges (`outcome=success` and
//! `outcome=fail` out of a stage). A routing directive (an agent's JSON, a
//! command's `output_schema="routing"`) may report another outcome: that is
//! the author's explicit choice, and if no edge matches it the run fails
//! naming the node and the outcome (`engine/routing.rs`).
//!
//! A failure needs no edge when the node handles it otherwise: with
//! `on_failure="exit"` (it stops the run), `on_failure="succeed"` or
//! `auto_status=true` (it routes as a success), or a retry target.

use rustc_hash::FxHashSet;

use super::Cx;
use crate::lang::Handler;
use crate::lang::condition;
use crate::lang::diagnostic::{Diagnostic, Severity};
use crate::lang::graph::Node;

const RULE: &str = "all_conditional_edges";

/// The four outcomes as conditions and the context spell them.
const OUTCOMES: [&str; 4] = ["succeeded", "failed", "partially_succeeded", "skipped"];

/// A set of outcomes, one bit per [`OUTCOMES`] entry.
type Outcomes = u8;
const SUCCEEDED: Outcomes = 1;
const FAILED: Outcomes = 2;
const PARTIAL: Outcomes = 4;
const EVERY: Outcomes = 0b1111;

pub(super) fn check(cx: &Cx<'_>, out: &mut Vec<Diagnostic>) {
    // The ids retry targets name, gathered on the first diamond that needs
    // them: once, not once per diamond (a graph may have many of both).
    let mut retry_targets: Option<FxHashSet<String>> = None;
    for (i, node) in cx.graph.nodes.iter().enumerate() {
        if matches!(node.handler, Handler::Start | Handler::Exit) || cx.outgoing[i].is_empty() {
            continue;
        }
        // Cheap test first: almost every node has an unconditional edge.
        if cx.out_edges(i).any(|(_, edge)| edge.condition().is_none()) {
            continue;
        }
        let mut covered: Outcomes = 0;
        let mut all_to_exit = true;
        for (e, edge) in cx.out_edges(i) {
            all_to_exit &= cx.target(e).is_some_and(|n| n.handler == Handler::Exit);
            // A condition that does not parse is `condition_syntax`'s error;
            // it covers nothing here.
            let Some(parsed) = edge.condition().and_then(|c| condition::parse(&c).ok()) else {
                continue;
            };
            for (bit, outcome) in OUTCOMES.iter().enumerate() {
                if parsed.given_outcome(outcome) == Some(true) {
                    covered |= 1 << bit;
                }
            }
        }
        if all_to_exit || covered == EVERY {
            continue;
        }
        let diamond = node.handler == Handler::Conditional;
        let possible = if diamond {
            let named = retry_targets.get_or_insert_with(|| retry_target_ids(cx));
            outcomes_before(cx, i, named)
        } else {
            outcomes_of(node, cx)
        };
        if !diamond && failure_handled(node, cx) {
            covered |= FAILED;
        }
        let missing = possible & !covered;
        out.push(if missing == 0 {
            note(node, possible, diamond)
        } else {
            error(node, missing, diamond)
        });
    }
}

/// The outcomes a node's handler can produce on its own (no routing
/// directive), after its own settings: `allow_partial=true` adds
/// partially_succeeded (retries exhausted), `auto_status=true` and
/// `on_failure="succeed"` turn a failure into a success before it routes.
fn outcomes_of(node: &Node, cx: &Cx<'_>) -> Outcomes {
    let mut outcomes = match node.handler {
        Handler::Start | Handler::Exit | Handler::Wait => SUCCEEDED,
        Handler::Agent
        | Handler::Prompt
        | Handler::Command
        | Handler::Human
        | Handler::FanIn
        | Handler::SubWorkflow => SUCCEEDED | FAILED,
        Handler::Parallel => {
            if node.attrs.text("join_policy").as_deref() == Some("first_success") {
                SUCCEEDED | FAILED
            } else {
                // wait_all: partially succeeded when some branches failed.
                SUCCEEDED | PARTIAL | FAILED
            }
        }
        Handler::Conditional => EVERY,
    };
    if flag(node, "allow_partial") {
        outcomes |= PARTIAL;
    }
    if outcomes & FAILED != 0 && failure_policy(node, cx) == Some("succeed") {
        outcomes = (outcomes & !FAILED) | SUCCEEDED;
    }
    outcomes
}

/// What a diamond's edges read: the outcome of the stage before it (see
/// docs/engine.md), so the union over the nodes with an edge into it. All
/// four when one of those is a diamond too, when a retry target names it
/// (a jump from any failed stage), or when nothing leads into it.
fn outcomes_before(cx: &Cx<'_>, i: usize, retry_targets: &FxHashSet<String>) -> Outcomes {
    let named_by_retry = retry_targets.contains::<str>(&cx.graph.nodes[i].id);
    let mut outcomes = 0;
    for (e, _) in cx.in_edges(i) {
        match cx.ends(e).0.map(|from| &cx.graph.nodes[from]) {
            Some(from) if from.handler != Handler::Conditional => outcomes |= outcomes_of(from, cx),
            _ => return EVERY,
        }
    }
    if named_by_retry || outcomes == 0 {
        EVERY
    } else {
        outcomes
    }
}

/// Every id a retry target names, on the graph or on a node.
fn retry_target_ids(cx: &Cx<'_>) -> FxHashSet<String> {
    let mut ids = FxHashSet::default();
    for key in ["retry_target", "fallback_retry_target"] {
        ids.extend(cx.graph.attrs.text(key).map(|t| t.trim().to_string()));
        for (_, node) in cx.nodes_with(key) {
            ids.extend(node.attrs.text(key).map(|t| t.trim().to_string()));
        }
    }
    ids
}

/// True when a failure of `node` goes somewhere without an edge matching
/// it: `on_failure="exit"` stops the run, a retry target takes it.
fn failure_handled(node: &Node, cx: &Cx<'_>) -> bool {
    if failure_policy(node, cx) == Some("exit") {
        return true;
    }
    let exists =
        |target: Option<std::borrow::Cow<'_, str>>| target.is_some_and(|t| cx.index(&t).is_some());
    ["retry_target", "fallback_retry_target"]
        .iter()
        .any(|key| exists(node.attrs.text(key)) || exists(cx.graph.attrs.text(key)))
}

/// The node's failure policy as the engine resolves it: node `on_failure`,
/// node `auto_status=true` (meaning `succeed`), graph `on_failure`.
fn failure_policy<'a>(node: &Node, cx: &Cx<'a>) -> Option<&'static str> {
    let known = |text: Option<std::borrow::Cow<'_, str>>| {
        text.and_then(|t| {
            ["route", "exit", "succeed"]
                .into_iter()
                .find(|p| *p == t.trim())
        })
    };
    known(node.attrs.text("on_failure"))
        .or_else(|| flag(node, "auto_status").then_some("succeed"))
        .or_else(|| known(cx.graph.attrs.text("on_failure")))
}

fn flag(node: &Node, key: &str) -> bool {
    node.attrs
        .value(key)
        .and_then(crate::lang::value::Value::as_bool)
        == Some(true)
}

/// `succeeded or failed`, in [`OUTCOMES`] order.
fn names(outcomes: Outcomes, joiner: &str) -> String {
    let names: Vec<&str> = OUTCOMES
        .iter()
        .enumerate()
        .filter(|(bit, _)| outcomes & (1 << bit) != 0)
        .map(|(_, name)| *name)
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} {joiner} {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

fn error(node: &Node, missing: Outcomes, diamond: bool) -> Diagnostic {
    let id = &node.id;
    let which = names(missing, "or");
    let message = if diamond {
        format!(
            "`{id}` routes on the outcome of the stage before it, which can be {which}, and no edge out of `{id}` matches that"
        )
    } else {
        format!("`{id}` can end {which}, and no edge out of it matches that")
    };
    let first = OUTCOMES
        .iter()
        .enumerate()
        .find(|(bit, _)| missing & (1 << bit) != 0)
        .map_or("failed", |(_, name)| *name);
    Diagnostic::error(RULE, message)
        .at(node.span)
        .on_node(id)
        .with_hint(format!(
            "add an edge from `{id}` with `condition=\"outcome={first}\"`, or one without a condition as the fallback"
        ))
}

fn note(node: &Node, possible: Outcomes, diamond: bool) -> Diagnostic {
    let id = &node.id;
    let can = names(possible, "and");
    let message = if diamond {
        format!(
            "the conditions out of `{id}` cover every outcome the stages before it can end with on their own ({can})"
        )
    } else {
        format!(
            "the conditions out of `{id}` cover every outcome it can end with on its own ({can})"
        )
    };
    let others = names(EVERY & !possible, "and");
    Diagnostic::new(RULE, Severity::Info, message)
        .at(node.span)
        .on_node(id)
        .with_hint(format!(
            "{others} can only come from a routing directive in a stage's output; if no edge matches the outcome, the run fails at `{id}`"
        ))
}

#[cfg(test)]
mod tests {
    use crate::lang::diagnostic::Severity;
    use crate::lang::rules::test_support::{of_rule, wrap};

    fn gate(edges: &str) -> String {
        wrap(&format!(
            "  a [prompt=\"x\"]\n  fix [prompt=\"y\"]\n  start -> a\n  fix -> a\n{edges}"
        ))
    }

    #[test]
    fn success_and_failure_edges_out_of_an_agent_are_valid_with_a_note() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded\"]\n  a -> fix [condition=\"outcome=failed\"]",
        );
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Info);
        assert_eq!(d[0].node_id.as_deref(), Some("a"));
        assert_eq!(d[0].span.map(|s| s.line), Some(4));
        assert!(d[0].message.contains("(succeeded and failed)"), "{d:?}");
    }

    #[test]
    fn an_outcome_the_stage_can_end_with_and_no_edge_matches_is_named_in_the_error() {
        let src = gate(
            "  a [allow_partial=true]\n  a -> exit [condition=\"outcome=succeeded\"]\n  a -> fix [condition=\"outcome=failed\"]",
        );
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(
            d[0].message,
            "`a` can end partially_succeeded, and no edge out of it matches that"
        );
        assert_eq!(
            d[0].hint.as_deref(),
            Some(
                "add an edge from `a` with `condition=\"outcome=partially_succeeded\"`, or one without a condition as the fallback"
            )
        );
    }

    #[test]
    fn a_success_edge_alone_leaves_failure_unmatched() {
        let src = gate("  a -> fix [condition=\"outcome=succeeded\"]\n  fix -> exit");
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert!(d[0].message.contains("can end failed"), "{d:?}");
    }

    #[test]
    fn a_failure_the_node_handles_otherwise_needs_no_edge() {
        for handled in ["on_failure=exit", "retry_target=fix", "auto_status=true"] {
            let src = gate(&format!(
                "  a [{handled}]\n  a -> fix [condition=\"outcome=succeeded\"]\n  fix -> exit"
            ));
            let d = of_rule(&src, "all_conditional_edges");
            assert_eq!(d.len(), 1, "{handled}: {d:?}");
            assert_eq!(d[0].severity, Severity::Info, "{handled}: {d:?}");
        }
    }

    #[test]
    fn a_parallel_node_covered_only_for_success_and_failure_is_refused_naming_partial_success() {
        let src = wrap(concat!(
            "  fan [shape=component]\n  b1 [prompt=\"1\"]\n  b2 [prompt=\"2\"]\n  join [shape=tripleoctagon]\n",
            "  start -> fan\n  fan -> b1\n  fan -> b2\n  b1 -> join\n  b2 -> join\n",
            "  join -> exit\n",
        ));
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
        let src = wrap(concat!(
            "  work [shape=component]\n  next [prompt=\"n\"]\n  fix [prompt=\"f\"]\n",
            "  start -> work\n  work -> next [condition=\"outcome=success\"]\n  work -> fix [condition=\"outcome=fail\"]\n",
            "  next -> exit\n  fix -> exit\n",
        ));
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert_eq!(
            d[0].message,
            "`work` can end partially_succeeded, and no edge out of it matches that"
        );
    }

    #[test]
    fn a_diamond_reads_the_outcomes_of_the_stages_before_it() {
        let before = |node: &str| {
            wrap(&format!(
                "  {node}\n  check [shape=diamond]\n  start -> a -> check\n  check -> exit [condition=\"outcome=success\"]\n  check -> a [condition=\"outcome=fail\"]"
            ))
        };
        let d = of_rule(&before("a [prompt=\"x\"]"), "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Info);
        let d = of_rule(
            &before("a [prompt=\"x\", allow_partial=true]"),
            "all_conditional_edges",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert!(
            d[0].message
                .contains("the stage before it, which can be partially_succeeded"),
            "{d:?}"
        );
        let d = of_rule(
            &before("a [prompt=\"x\"]\n  graph [retry_target=check]"),
            "all_conditional_edges",
        );
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(
            d[0].message
                .contains("which can be partially_succeeded or skipped"),
            "a retry target jumps there from any stage: {d:?}"
        );
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
    fn compound_conditions_cover_only_what_their_outcome_clauses_decide() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded && context.ok=true\"]\n  a -> fix [condition=\"outcome!=succeeded\"]",
        );
        let d = of_rule(&src, "all_conditional_edges");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].is_error());
        assert!(d[0].message.contains("can end succeeded,"), "{d:?}");
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded || outcome=partial_success\"]\n  a -> fix [condition=\"outcome=fail || outcome=skipped\"]",
        );
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }

    #[test]
    fn conditions_that_all_lead_to_the_exit_are_quiet() {
        let src = gate(
            "  a -> exit [condition=\"outcome=succeeded\"]\n  a -> exit [condition=\"context.done\"]",
        );
        assert!(of_rule(&src, "all_conditional_edges").is_empty());
    }
}
