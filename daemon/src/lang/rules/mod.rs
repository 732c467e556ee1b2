//! Validation rules, one file each. A rule reads the parsed graph through a
//! [`Cx`] and appends [`Diagnostic`]s; it never fails and never panics.
//!
//! Each rule has a stable id (its file name), used in output and by tests.
//! [`RULES`] lists them in the order they run.

use rustc_hash::FxHashMap;

use super::attrs::{Attr, Key};
use super::diagnostic::Diagnostic;
use super::graph::{Edge, Graph, Node};
use super::span::Span;
use super::workflow::{FileRef, span_in_value};

mod all_conditional_edges;
mod attractor_spelling;
mod attribute_value;
mod auto_status_deprecated;
mod command_requires_script;
mod condition_syntax;
mod dead_end;
mod direction_valid;
mod duration_valid;
mod edge_target_exists;
mod exit_no_outgoing;
mod failure_falls_through;
mod fidelity_valid;
mod file_outside_tree;
mod freeform_edge_count;
mod goal_gate_has_retry;
mod output_schema_valid;
mod prompt_on_llm_nodes;
mod random_selection_no_conditions;
mod reachability;
mod reserved_keyword_node_id;
mod retry_target_exists;
mod script_on_llm_node;
mod selection_valid;
mod start_no_incoming;
mod start_node;
mod stylesheet_syntax;
mod terminal_node;
mod thread_id_requires_fidelity_full;
mod tool_command_deprecated;
mod type_known;
mod undeclared_node;
mod unknown_attribute;
mod unresolved_file_ref;

/// The id of the stylesheet rule, also used by the loader.
pub(crate) const STYLESHEET_SYNTAX: &str = "stylesheet_syntax";

/// A rule: its id and its check.
pub(crate) type Rule = (&'static str, fn(&Cx<'_>, &mut Vec<Diagnostic>));

/// Every rule, in the order they run.
pub(crate) const RULES: &[Rule] = &[
    ("start_node", start_node::check),
    ("terminal_node", terminal_node::check),
    ("start_no_incoming", start_no_incoming::check),
    ("exit_no_outgoing", exit_no_outgoing::check),
    ("edge_target_exists", edge_target_exists::check),
    ("undeclared_node", undeclared_node::check),
    ("reachability", reachability::check),
    ("dead_end", dead_end::check),
    ("condition_syntax", condition_syntax::check),
    (STYLESHEET_SYNTAX, stylesheet_syntax::check),
    ("all_conditional_edges", all_conditional_edges::check),
    (
        "random_selection_no_conditions",
        random_selection_no_conditions::check,
    ),
    ("selection_valid", selection_valid::check),
    ("prompt_on_llm_nodes", prompt_on_llm_nodes::check),
    ("command_requires_script", command_requires_script::check),
    ("script_on_llm_node", script_on_llm_node::check),
    ("failure_falls_through", failure_falls_through::check),
    ("unresolved_file_ref", unresolved_file_ref::check),
    ("file_outside_tree", file_outside_tree::check),
    ("retry_target_exists", retry_target_exists::check),
    ("goal_gate_has_retry", goal_gate_has_retry::check),
    ("fidelity_valid", fidelity_valid::check),
    (
        "thread_id_requires_fidelity_full",
        thread_id_requires_fidelity_full::check,
    ),
    ("direction_valid", direction_valid::check),
    ("type_known", type_known::check),
    ("freeform_edge_count", freeform_edge_count::check),
    ("reserved_keyword_node_id", reserved_keyword_node_id::check),
    ("duration_valid", duration_valid::check),
    ("attribute_value", attribute_value::check),
    ("auto_status_deprecated", auto_status_deprecated::check),
    ("tool_command_deprecated", tool_command_deprecated::check),
    ("unknown_attribute", unknown_attribute::check),
    (
        crate::lang::attractor::ATTRACTOR_SPELLING,
        attractor_spelling::check,
    ),
    ("output_schema_valid", output_schema_valid::check),
];

/// What rules read: the graph plus indexes computed once for all of them.
pub(crate) struct Cx<'a> {
    pub graph: &'a Graph,
    /// The parsed text, for placing errors inside attribute values.
    pub source: &'a str,
    pub file_refs: &'a [FileRef],
    /// Outgoing edge positions per node position.
    pub outgoing: Adjacency,
    /// Incoming edge positions per node position.
    pub incoming: Adjacency,
    /// Each edge's endpoints as node positions (`from`, `to`), [`NO_NODE`]
    /// for an id that is not a node (see [`Cx::ends`]). Looked up once here
    /// so that rules never hash an id again.
    ends: Vec<(u32, u32)>,
    /// Node positions by the known attribute keys they set (keyed by
    /// [`Key::id`]), built in one walk so that a rule about a rare attribute
    /// visits only the nodes that have it (a large graph does not fit in the
    /// caches, and every full walk over it costs).
    with_key: FxHashMap<usize, Vec<u32>>,
}

/// An edge end that names no node, in [`Cx`]'s table of ends. Positions
/// are stored in 32 bits: the table has one entry per edge, and the
/// workflow's size cap keeps positions far below the limit.
const NO_NODE: u32 = u32::MAX;

/// A node position as stored in [`Cx`]'s tables.
fn slot(i: Option<usize>) -> u32 {
    i.and_then(|i| u32::try_from(i).ok()).unwrap_or(NO_NODE)
}

/// A stored position back as a node position.
fn position(slot: u32) -> Option<usize> {
    (slot != NO_NODE).then_some(slot as usize)
}

impl<'a> Cx<'a> {
    /// Builds the indexes for `graph`.
    #[must_use]
    pub fn new(graph: &'a Graph, source: &'a str, file_refs: &'a [FileRef]) -> Self {
        let ends: Vec<(u32, u32)> = graph
            .edges
            .iter()
            .map(|edge| {
                (
                    slot(graph.node_index_of(&edge.from)),
                    slot(graph.node_index_of(&edge.to)),
                )
            })
            .collect();
        let outgoing = Adjacency::new(graph.nodes.len(), ends.iter().map(|&(from, _)| from));
        let incoming = Adjacency::new(graph.nodes.len(), ends.iter().map(|&(_, to)| to));
        let mut with_key: FxHashMap<usize, Vec<u32>> = FxHashMap::default();
        for (i, node) in graph.nodes.iter().enumerate() {
            for attr in node.attrs.iter() {
                if let Some(id) = attr.key.id() {
                    with_key.entry(id).or_default().push(slot(Some(i)));
                }
            }
        }
        Cx {
            with_key,
            graph,
            source,
            file_refs,
            outgoing,
            incoming,
            ends,
        }
    }

    /// The position of the node with this id.
    #[must_use]
    pub fn index(&self, id: &str) -> Option<usize> {
        self.graph.node_index(id)
    }

    /// The nodes that set the known attribute `key`, with their positions,
    /// in node order.
    pub(crate) fn nodes_with(&self, key: &str) -> impl Iterator<Item = (usize, &'a Node)> + '_ {
        let graph = self.graph;
        Key::new(key)
            .id()
            .and_then(|id| self.with_key.get(&id))
            .into_iter()
            .flatten()
            .map(move |&i| (i as usize, &graph.nodes[i as usize]))
    }

    /// The positions of edge `e`'s ends (`from`, `to`); `None` for an id
    /// that is not a node.
    #[must_use]
    pub fn ends(&self, e: usize) -> (Option<usize>, Option<usize>) {
        let (from, to) = self.ends[e];
        (position(from), position(to))
    }

    /// The node an edge leads to, when it exists.
    #[must_use]
    pub fn target(&self, e: usize) -> Option<&'a Node> {
        self.ends(e).1.map(|i| &self.graph.nodes[i])
    }

    /// The outgoing edges of the node at position `i`.
    pub(crate) fn out_edges(&self, i: usize) -> impl Iterator<Item = (usize, &'a Edge)> + '_ {
        self.outgoing[i]
            .iter()
            .map(|&e| (e as usize, &self.graph.edges[e as usize]))
    }

    /// The incoming edges of the node at position `i`.
    pub(crate) fn in_edges(&self, i: usize) -> impl Iterator<Item = (usize, &'a Edge)> + '_ {
        self.incoming[i]
            .iter()
            .map(|&e| (e as usize, &self.graph.edges[e as usize]))
    }

    /// Places a problem inside an attribute's value (see [`span_in_value`]).
    #[must_use]
    pub(crate) fn span_in(&self, attr: &Attr, offset: usize, len: usize) -> Span {
        span_in_value(self.source, attr, offset, len)
    }

    /// Where a node's attribute is written, or the node itself.
    #[must_use]
    pub(crate) fn attr_span(&self, node: &Node, key: &str) -> Span {
        node.attrs.get(key).map_or(node.span, |a| a.value_span)
    }
}

/// Edge positions grouped by node, in two flat arrays (compressed rows):
/// `adj[i]` is the slice of edges at node `i`, in edge order. Two
/// allocations for the whole graph instead of one per node.
pub(crate) struct Adjacency {
    starts: Vec<u32>,
    edges: Vec<u32>,
}

impl Adjacency {
    /// Groups edge positions by the node each one names ([`NO_NODE`]: none).
    fn new(nodes: usize, node_of_edge: impl Iterator<Item = u32> + Clone) -> Self {
        let mut starts = vec![0u32; nodes + 1];
        for i in node_of_edge.clone().filter_map(position) {
            starts[i + 1] += 1;
        }
        for i in 0..nodes {
            starts[i + 1] += starts[i];
        }
        let mut next = starts.clone();
        let mut edges = vec![0u32; starts[nodes] as usize];
        for (e, i) in node_of_edge.enumerate() {
            if let Some(i) = position(i) {
                edges[next[i] as usize] = slot(Some(e));
                next[i] += 1;
            }
        }
        Adjacency { starts, edges }
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [u32];
    fn index(&self, i: usize) -> &[u32] {
        &self.edges[self.starts[i] as usize..self.starts[i + 1] as usize]
    }
}

/// Runs every rule over `graph`, appending to `out`.
pub fn check(graph: &Graph, source: &str, file_refs: &[FileRef], out: &mut Vec<Diagnostic>) {
    let cx = Cx::new(graph, source, file_refs);
    for (_, rule) in RULES {
        rule(&cx, out);
    }
}

/// The closest of `candidates` to `word` by edit distance, if close enough
/// to be a plausible typo (at most a third of the word's length, min 1).
/// For a short, fixed list (attribute names, enumerated values); a rule that
/// suggests among a workflow's own ids uses [`Suggestions`], whose work is
/// bounded however many findings there are.
#[must_use]
pub(crate) fn closest<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let word = Chars::of(word);
    let limit = typo_limit(word.len());
    candidates
        .into_iter()
        .filter(|c| *c != &*word)
        .filter_map(|c| {
            let c_chars = Chars::of(c);
            // The distance is at least the difference in length: skip the
            // candidates that cannot be close before computing it.
            if c_chars.len().abs_diff(word.len()) > limit {
                return None;
            }
            distance_within(&word, &c_chars, limit).map(|d| (d, c))
        })
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// How far a plausible typo of a word of `len` characters may be.
fn typo_limit(len: usize) -> usize {
    (len / 3).max(1)
}

/// How much comparing a rule may spend on "did you mean" hints among a
/// workflow's ids, in cells of the edit-distance table (about a nanosecond
/// each). Suggesting for every one of 5,000 undeclared nodes among 5,000
/// declared ones took 9 seconds; past this budget, findings get the plain
/// hint.
pub(crate) const SUGGESTION_WORK: usize = 20_000_000;

/// "Did you mean" among many candidates (a workflow's node ids), for many
/// findings, within [`SUGGESTION_WORK`]: candidates are kept by length, so
/// only those of a plausible length are compared.
///
/// The candidates are sorted on the first question, not before: a valid
/// workflow asks none, and sorting 100,000 ids cost more than most rules.
pub(crate) struct Suggestions<'c> {
    /// The candidates until the first question.
    candidates: Option<Box<dyn Iterator<Item = &'c str> + 'c>>,
    /// Candidates sorted by length in characters, then text.
    by_len: Vec<(usize, &'c str)>,
    work_left: usize,
}

impl<'c> Suggestions<'c> {
    /// Suggestions among `candidates`.
    pub fn new(candidates: impl IntoIterator<Item = &'c str> + 'c) -> Self {
        Suggestions {
            candidates: Some(Box::new(candidates.into_iter())),
            by_len: Vec::new(),
            work_left: SUGGESTION_WORK,
        }
    }

    /// The closest candidate to `word`, as [`closest`] would find it; `None`
    /// as well once the budget is spent.
    pub(crate) fn closest(&mut self, word: &str) -> Option<&'c str> {
        if let Some(candidates) = self.candidates.take() {
            self.by_len = candidates.map(|c| (Chars::of(c).len(), c)).collect();
            self.by_len.sort_unstable();
            self.by_len.dedup();
        }
        let chars = Chars::of(word);
        let len = chars.len();
        let limit = typo_limit(len);
        let from = self.by_len.partition_point(|(l, _)| l + limit < len);
        let mut best: Option<(usize, &'c str)> = None;
        for &(c_len, c) in &self.by_len[from..] {
            if c_len > len + limit {
                break;
            }
            let cost = (len + 1) * (c_len + 1);
            let Some(left) = self.work_left.checked_sub(cost) else {
                self.work_left = 0;
                return None;
            };
            self.work_left = left;
            if c == word {
                continue;
            }
            if let Some(d) = distance_within(&chars, &Chars::of(c), limit)
                && best.is_none_or(|b| (d, c) < b)
            {
                best = Some((d, c));
            }
        }
        best.map(|(_, c)| c)
    }
}

/// A word's characters: its bytes when it is ASCII (no allocation), else
/// its chars.
enum Chars<'a> {
    Ascii { text: &'a str },
    Wide { text: &'a str, chars: Vec<char> },
}

impl<'a> Chars<'a> {
    fn of(text: &'a str) -> Chars<'a> {
        if text.is_ascii() {
            Chars::Ascii { text }
        } else {
            Chars::Wide {
                text,
                chars: text.chars().collect(),
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Chars::Ascii { text } => text.len(),
            Chars::Wide { chars, .. } => chars.len(),
        }
    }

    fn get(&self, i: usize) -> u32 {
        match self {
            Chars::Ascii { text } => u32::from(text.as_bytes()[i]),
            Chars::Wide { chars, .. } => u32::from(chars[i]),
        }
    }
}

impl std::ops::Deref for Chars<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Chars::Ascii { text } | Chars::Wide { text, .. } => text,
        }
    }
}

/// Edit distance over characters where an adjacent swap counts as one edit
/// (optimal string alignment), so `tset` is one edit from `test`.
#[must_use]
pub fn edit_distance(a: &str, b: &str) -> usize {
    distance_within(&Chars::of(a), &Chars::of(b), usize::MAX).unwrap_or(usize::MAX)
}

/// [`edit_distance`] when it is at most `limit`: stops as soon as every
/// entry of a row is over the limit. Rows live on the stack for words of up
/// to 64 characters.
fn distance_within(a: &Chars<'_>, b: &Chars<'_>, limit: usize) -> Option<usize> {
    const STACK: usize = 65;
    let n = b.len();
    let mut stack = [[0usize; STACK]; 3];
    let mut heap: Vec<Vec<usize>>;
    // Three rolling rows: two back (for swaps), previous, current.
    let [mut two_back, mut prev, mut cur]: [&mut [usize]; 3] = if n < STACK {
        let [x, y, z] = &mut stack;
        [&mut x[..=n], &mut y[..=n], &mut z[..=n]]
    } else {
        heap = vec![vec![0; n + 1]; 3];
        let [x, y, z] = &mut heap[..] else {
            return None;
        };
        [&mut x[..], &mut y[..], &mut z[..]]
    };
    for (j, slot) in prev.iter_mut().enumerate() {
        *slot = j;
    }
    for i in 0..a.len() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for j in 0..n {
            let cost = usize::from(a.get(i) != b.get(j));
            let mut best = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && a.get(i) == b.get(j - 1) && a.get(i - 1) == b.get(j) {
                best = best.min(two_back[j - 1] + 1);
            }
            cur[j + 1] = best;
            row_min = row_min.min(best);
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(&mut two_back, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[n]).filter(|d| *d <= limit)
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::lang::diagnostic::Diagnostic;
    use crate::lang::workflow::{LoadOptions, Workflow};

    /// Loads `src` (from a temp-free in-memory path) and returns every
    /// diagnostic.
    pub fn diagnostics(src: &str) -> Vec<Diagnostic> {
        Workflow::from_bytes(
            "test.fabro",
            src.as_bytes(),
            std::path::Path::new("."),
            &LoadOptions::default(),
        )
        .diagnostics
    }

    /// The diagnostics of one rule.
    pub fn of_rule(src: &str, rule: &str) -> Vec<Diagnostic> {
        diagnostics(src)
            .into_iter()
            .filter(|d| d.rule == rule)
            .collect()
    }

    /// A valid minimal workflow around `body` (start, exit and `body`).
    pub fn wrap(body: &str) -> String {
        format!("digraph T {{\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n{body}\n}}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacency_groups_edges_by_node_in_edge_order() {
        let adj = Adjacency::new(3, [2, 0, NO_NODE, 2, 0].into_iter());
        assert_eq!(&adj[0], &[1, 4]);
        assert!(adj[1].is_empty());
        assert_eq!(&adj[2], &[0, 3], "an edge naming no node is left out");
    }

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
        assert_eq!(edit_distance("tset", "test"), 1, "a swap is one edit");
    }

    #[test]
    fn distances_past_the_limit_are_not_computed_to_the_end() {
        let (a, b) = (Chars::of("implement"), Chars::of("xxxxxxxxx"));
        assert_eq!(distance_within(&a, &b, 2), None);
        assert_eq!(distance_within(&a, &Chars::of("implment"), 2), Some(1));
        assert_eq!(edit_distance("naïve", "naive"), 1, "characters, not bytes");
        let long = "x".repeat(100);
        assert_eq!(
            edit_distance(&long, &format!("{long}y")),
            1,
            "longer than the stack rows"
        );
    }

    #[test]
    fn suggestions_among_many_ids_agree_with_closest_and_stop_at_the_budget() {
        let ids: Vec<String> = (0..5_000).map(|i| format!("step_{i}")).collect();
        let mut s = Suggestions::new(ids.iter().map(String::as_str));
        assert_eq!(
            s.closest("stpe_42"),
            closest("stpe_42", ids.iter().map(String::as_str))
        );
        assert_eq!(
            s.closest("step_42"),
            closest("step_42", ids.iter().map(String::as_str)),
            "not the word itself"
        );
        assert_ne!(s.closest("step_42"), Some("step_42"));
        let mut spent = 0;
        while s.closest("stpe_42").is_some() {
            spent += 1;
            assert!(spent < 10_000, "the budget ends the suggestions");
        }
        assert_eq!(s.closest("stpe_42"), None, "and they stay ended");
    }

    #[test]
    fn closest_suggests_only_plausible_typos() {
        assert_eq!(
            closest("implment", ["implement", "plan"]),
            Some("implement")
        );
        assert_eq!(closest("zzz", ["implement", "plan"]), None);
    }

    #[test]
    fn every_rule_is_documented_in_the_language_guide() {
        let guide =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/language.md"))
                .expect("docs/language.md exists");
        for (id, _) in RULES {
            assert!(
                guide.contains(&format!("| `{id}` |")),
                "docs/language.md has no row for rule `{id}`"
            );
        }
    }

    #[test]
    fn every_rule_id_is_unique() {
        let mut ids: Vec<_> = RULES.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}
