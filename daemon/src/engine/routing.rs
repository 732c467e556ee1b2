//! Edge selection: where a run goes after a stage, in exactly the order of
//! workflows/transitions.mdx:
//!
//! 1. the outcome's `jump_to_node`;
//! 2. edges whose `condition` holds (highest weight, then lexically first
//!    target);
//! 3. the edge whose label matches the preferred label (accelerators
//!    stripped);
//! 4. the first suggested next id that an edge points to;
//! 5. for a failed outcome, the failure policy (`on_failure`): `exit` skips
//!    the unconditional fallback, `succeed` promotes the outcome and selects
//!    again, `route` goes on (a failed human gate never falls through);
//! 6. unconditional edges (weight, then target);
//! 7. for a failed outcome, the retry targets: node `retry_target`, node
//!    `fallback_retry_target`, graph `retry_target`, graph
//!    `fallback_retry_target`.
//!
//! Pure: it reads the graph, the outcome and the context, and draws from the
//! random source only for `selection="random"` nodes.

use rand::{Rng, RngExt};
use serde_json::{Map, Value};

use super::interviewer::parse_accelerator;
use crate::lang::condition::{self, Env};
use crate::lang::graph::{Edge, Graph, Handler, Node};
use crate::model::EdgeReason;
use crate::model::{Failure, FailureClass, Outcome, Status};

/// Where to go next.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub target: String,
    /// The edge taken (position in `graph.edges`); `None` for jumps and
    /// retry targets, which follow no edge.
    pub edge: Option<usize>,
    pub reason: EdgeReason,
}

/// The routing decision for a finished stage.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Next(Selection),
    /// `on_failure="exit"` stopped routing and no retry target applies.
    Stop,
    /// No edge or retry target leads anywhere: the run ends here.
    End,
}

/// What `on_failure` resolves to for a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailurePolicy {
    Route,
    Exit,
    Succeed,
}

impl FailurePolicy {
    fn parse(text: &str) -> Option<FailurePolicy> {
        match text.trim() {
            "route" => Some(FailurePolicy::Route),
            "exit" => Some(FailurePolicy::Exit),
            "succeed" => Some(FailurePolicy::Succeed),
            _ => None,
        }
    }

    /// The node's effective policy and where it came from (`node` or
    /// `graph`): node `on_failure`, node `auto_status=true` (the deprecated
    /// spelling of `succeed`), graph `on_failure`, `route`.
    #[must_use]
    pub fn of(node: &Node, graph: &Graph) -> (FailurePolicy, &'static str) {
        if let Some(p) = node
            .attrs
            .text("on_failure")
            .and_then(|t| FailurePolicy::parse(&t))
        {
            return (p, "node");
        }
        if node
            .attrs
            .value("auto_status")
            .and_then(crate::lang::value::Value::as_bool)
            == Some(true)
        {
            return (FailurePolicy::Succeed, "node");
        }
        if let Some(p) = graph
            .attrs
            .text("on_failure")
            .and_then(|t| FailurePolicy::parse(&t))
        {
            return (p, "graph");
        }
        (FailurePolicy::Route, "graph")
    }
}

/// What conditions on the node's edges read as `outcome` and
/// `preferred_label`. For most nodes that is the stage's own outcome. A
/// conditional (diamond) node always succeeds, so its edges read the
/// previous stage's outcome instead, from the context (see docs/engine.md).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub outcome: &'a str,
    pub preferred_label: &'a str,
}

/// Selects the next step after `node` finished with `outcome`.
///
/// May rewrite `outcome`: under `on_failure="succeed"` a failed outcome with
/// no explicit route is promoted to `succeeded` (its failure details kept,
/// a note added) before the second selection; and an outcome that is not a
/// failure but matches none of the node's edges becomes one (see
/// [`unmatched`]), so that the run fails there instead of ending as if it
/// had reached the exit.
pub(crate) fn select(
    graph: &Graph,
    node: &Node,
    outcome: &mut Outcome,
    context: &Map<String, Value>,
    subject: Option<Subject<'_>>,
    rng: &mut impl Rng,
) -> Route {
    let route = by_edges(graph, node, outcome, context, subject, rng);
    if route == Route::End {
        unmatched(graph, node, outcome, subject);
    }
    route
}

/// The run ends at `node` with an outcome that is not a failure although
/// the node has edges: none matched it (all of them conditional, every one
/// false). Before issue 21 the run then ended as succeeded, as if the
/// exit had been reached; now the stage fails, naming the outcome no edge
/// matched (a routing directive's `partial_success` where the edges cover
/// success and failure, typically), and the run fails with it. A node
/// whose edges all go to the exit keeps ending the run as before: the
/// `all_conditional_edges` rule accepts that on purpose.
fn unmatched(graph: &Graph, node: &Node, outcome: &mut Outcome, subject: Option<Subject<'_>>) {
    if outcome.status == Status::Failed || node.handler == Handler::Exit {
        return;
    }
    let mut edges = graph.edges_from(&node.id).peekable();
    if edges.peek().is_none() {
        // A dead end (no edge at all): the run is over there, by design.
        return;
    }
    if edges.all(|e| {
        graph
            .node(&e.to)
            .is_some_and(|n| n.handler == Handler::Exit)
    }) {
        return;
    }
    let message = match subject {
        Some(read) => format!(
            "no edge out of {} matches the outcome `{}` of the stage before it",
            node.id, read.outcome
        ),
        None => format!(
            "no edge out of {} matches its outcome `{}`",
            node.id,
            outcome.status.as_str()
        ),
    };
    let was = outcome.status;
    outcome.status = Status::Failed;
    outcome.failure = Some(Failure {
        class: FailureClass::Deterministic,
        message,
        retryable: false,
    });
    outcome.notes.push(format!(
        "the stage ended {}; no edge matched it",
        was.as_str()
    ));
}

/// Selection proper: jump, explicit routes, failure policy, unconditional
/// edges, retry targets.
fn by_edges(
    graph: &Graph,
    node: &Node,
    outcome: &mut Outcome,
    context: &Map<String, Value>,
    subject: Option<Subject<'_>>,
    rng: &mut impl Rng,
) -> Route {
    if let Some(target) = &outcome.jump_to_node {
        return Route::Next(Selection {
            target: target.clone(),
            edge: None,
            reason: EdgeReason::Jump,
        });
    }
    let edges: Vec<usize> = graph
        .outgoing(&node.id)
        .iter()
        .map(|&e| e as usize)
        .collect();
    let random = node.attrs.text("selection").as_deref() == Some("random");

    if let Some(found) = explicit(graph, &edges, outcome, context, subject, random, rng) {
        return Route::Next(found);
    }

    if outcome.status == Status::Failed {
        let (policy, scope) = FailurePolicy::of(node, graph);
        match policy {
            FailurePolicy::Succeed => {
                outcome.status = Status::Succeeded;
                outcome.notes.push(format!(
                    "failure promoted to succeeded by {scope} on_failure=succeed"
                ));
                // Routed as a success: conditions now see `succeeded`; labels
                // and suggestions did not match before and still do not.
                if let Some(found) =
                    by_condition(graph, &edges, outcome, context, None, random, rng)
                {
                    return Route::Next(found);
                }
                return unconditional(graph, &edges, random, rng).map_or(Route::End, Route::Next);
            }
            FailurePolicy::Exit => {
                return retry_target(graph, node).map_or(Route::Stop, Route::Next);
            }
            FailurePolicy::Route if node.handler == Handler::Human => {
                // A failed gate never falls through to an unconditional edge.
                return retry_target(graph, node).map_or(Route::End, Route::Next);
            }
            FailurePolicy::Route => {}
        }
    }

    if let Some(found) = unconditional(graph, &edges, random, rng) {
        return Route::Next(found);
    }
    if outcome.status == Status::Failed
        && let Some(found) = retry_target(graph, node)
    {
        return Route::Next(found);
    }
    Route::End
}

/// Steps 2–4: conditions, preferred label, suggested next ids.
fn explicit(
    graph: &Graph,
    edges: &[usize],
    outcome: &Outcome,
    context: &Map<String, Value>,
    subject: Option<Subject<'_>>,
    random: bool,
    rng: &mut impl Rng,
) -> Option<Selection> {
    if let Some(found) = by_condition(graph, edges, outcome, context, subject, random, rng) {
        return Some(found);
    }
    if let Some(wanted) = outcome.preferred_label.as_deref().map(normalise_label)
        && !wanted.is_empty()
    {
        let matching: Vec<usize> = edges
            .iter()
            .copied()
            .filter(|&i| {
                graph.edges[i]
                    .label()
                    .is_some_and(|l| normalise_label(&l) == wanted)
            })
            .collect();
        if let Some(i) = pick(graph, &matching, random, rng) {
            return Some(selection(graph, i, EdgeReason::PreferredLabel));
        }
    }
    for id in &outcome.suggested_next_ids {
        let matching: Vec<usize> = edges
            .iter()
            .copied()
            .filter(|&i| *graph.edges[i].to == **id)
            .collect();
        if let Some(i) = pick(graph, &matching, random, rng) {
            return Some(selection(graph, i, EdgeReason::SuggestedNext));
        }
    }
    None
}

fn by_condition(
    graph: &Graph,
    edges: &[usize],
    outcome: &Outcome,
    context: &Map<String, Value>,
    subject: Option<Subject<'_>>,
    random: bool,
    rng: &mut impl Rng,
) -> Option<Selection> {
    let env = Env {
        outcome: subject.map_or(outcome.status.as_str(), |s| s.outcome),
        preferred_label: subject.map_or_else(
            || outcome.preferred_label.as_deref().unwrap_or(""),
            |s| s.preferred_label,
        ),
        context,
    };
    let matching: Vec<usize> = edges
        .iter()
        .copied()
        .filter(|&i| {
            graph.edges[i].condition().is_some_and(|text| {
                // Validation rejects unparsable conditions before a run
                // starts; one that slipped through never matches.
                condition::parse(&text).is_ok_and(|c| c.evaluate(&env))
            })
        })
        .collect();
    pick(graph, &matching, random, rng).map(|i| selection(graph, i, EdgeReason::Condition))
}

fn unconditional(
    graph: &Graph,
    edges: &[usize],
    random: bool,
    rng: &mut impl Rng,
) -> Option<Selection> {
    let open: Vec<usize> = edges
        .iter()
        .copied()
        .filter(|&i| graph.edges[i].condition().is_none())
        .collect();
    pick(graph, &open, random, rng).map(|i| selection(graph, i, EdgeReason::Unconditional))
}

/// The first retry target that names a node: node `retry_target`, node
/// `fallback_retry_target`, graph `retry_target`, graph `fallback_retry_target`.
#[must_use]
pub fn retry_target(graph: &Graph, node: &Node) -> Option<Selection> {
    let candidates = [
        node.attrs.non_empty("retry_target"),
        node.attrs.non_empty("fallback_retry_target"),
        graph.attrs.non_empty("retry_target"),
        graph.attrs.non_empty("fallback_retry_target"),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|id| graph.node(id).is_some())
        .map(|id| Selection {
            target: id.into_owned(),
            edge: None,
            reason: EdgeReason::RetryTarget,
        })
}

fn selection(graph: &Graph, i: usize, reason: EdgeReason) -> Selection {
    Selection {
        target: graph.edges[i].to.to_string(),
        edge: Some(i),
        reason,
    }
}

/// One edge of `candidates`: the highest weight, ties to the lexically first
/// target id; or, for `selection="random"`, a weighted draw in which a
/// weight of 0 or less counts as 1.
fn pick(graph: &Graph, candidates: &[usize], random: bool, rng: &mut impl Rng) -> Option<usize> {
    if candidates.len() <= 1 {
        return candidates.first().copied();
    }
    if random {
        let weight = |e: &Edge| u64::try_from(e.weight()).unwrap_or(0).max(1);
        let total: u64 = candidates.iter().map(|&i| weight(&graph.edges[i])).sum();
        let mut draw = rng.random_range(0..total);
        for &i in candidates {
            let w = weight(&graph.edges[i]);
            if draw < w {
                return Some(i);
            }
            draw -= w;
        }
        return candidates.last().copied();
    }
    candidates.iter().copied().min_by(|&a, &b| {
        let (ea, eb) = (&graph.edges[a], &graph.edges[b]);
        eb.weight()
            .cmp(&ea.weight())
            .then_with(|| ea.to.cmp(&eb.to))
    })
}

/// A label as compared for matching: accelerator stripped, trimmed, lower case.
#[must_use]
pub(crate) fn normalise_label(label: &str) -> String {
    let (_, text) = parse_accelerator(label);
    text.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use rand::SeedableRng;
    use rand::rngs::SmallRng;

    use super::*;
    use crate::lang::{LoadOptions, Workflow};

    fn graph(body: &str) -> Graph {
        let src =
            format!("digraph T {{\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n{body}\n}}\n");
        Workflow::from_bytes(
            "t.fabro",
            src.as_bytes(),
            std::path::Path::new("."),
            &LoadOptions::default(),
        )
        .graph
        .expect("parses")
    }

    fn route(
        graph: &Graph,
        id: &str,
        outcome: &mut Outcome,
        subject: Option<Subject<'_>>,
    ) -> Route {
        let node = graph.node(id).expect("node");
        let mut rng = SmallRng::seed_from_u64(1);
        select(graph, node, outcome, &Map::new(), subject, &mut rng)
    }

    #[test]
    fn an_outcome_no_conditional_edge_matches_becomes_a_failure_naming_it() {
        let g = graph(
            "  a [prompt=\"x\"]\n  b [prompt=\"y\"]\n  start -> a\n  a -> b [condition=\"outcome=success\"]\n  a -> start [condition=\"outcome=fail\"]\n  b -> exit",
        );
        let mut partial = Outcome::with_status(Status::PartiallySucceeded);
        assert_eq!(route(&g, "a", &mut partial, None), Route::End);
        assert_eq!(partial.status, Status::Failed);
        assert_eq!(
            partial.failure_reason(),
            Some("no edge out of a matches its outcome `partially_succeeded`")
        );
        let mut success = Outcome::succeeded();
        assert!(matches!(route(&g, "a", &mut success, None), Route::Next(_)));
    }

    #[test]
    fn a_diamond_names_the_outcome_it_read_and_a_dead_end_still_ends_quietly() {
        let g = graph(
            "  a [prompt=\"x\"]\n  gate [shape=diamond]\n  last [prompt=\"z\"]\n  start -> a -> gate\n  gate -> last [condition=\"outcome=success\"]\n  gate -> a [condition=\"outcome=fail\"]\n  last -> exit\n  lone [prompt=\"l\"]\n  start -> lone",
        );
        let mut own = Outcome::succeeded();
        let read = Subject {
            outcome: "partially_succeeded",
            preferred_label: "",
        };
        assert_eq!(route(&g, "gate", &mut own, Some(read)), Route::End);
        assert_eq!(
            own.failure_reason(),
            Some(
                "no edge out of gate matches the outcome `partially_succeeded` of the stage before it"
            )
        );
        let mut done = Outcome::succeeded();
        assert_eq!(route(&g, "lone", &mut done, None), Route::End);
        assert_eq!(
            done.status,
            Status::Succeeded,
            "no edges at all: a dead end"
        );
    }

    #[test]
    fn conditions_that_all_lead_to_the_exit_still_end_the_run_there() {
        let g = graph("  a [prompt=\"x\"]\n  start -> a\n  a -> exit [condition=\"context.done\"]");
        let mut success = Outcome::succeeded();
        assert_eq!(route(&g, "a", &mut success, None), Route::End);
        assert_eq!(success.status, Status::Succeeded);
    }
}
