//! The graph model: a workflow's nodes and edges with their attributes, as
//! the parser builds it and the validator and engine read it.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use serde::Serialize;

use super::attrs::Attrs;
use super::span::Span;

/// What executes a node. Decided by `type=` when set, else by `shape`
/// (reference/dot-language.mdx, "Node types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Handler {
    Start,
    Exit,
    /// Multi-turn LLM with tools (`box`, the default).
    Agent,
    /// A single LLM call (`tab`).
    Prompt,
    /// A shell or Python script (`parallelogram`).
    Command,
    /// A human gate (`hexagon`).
    Human,
    /// Routing only (`diamond`).
    Conditional,
    /// Fan-out (`component`).
    Parallel,
    /// Fan-in (`tripleoctagon`).
    FanIn,
    /// A pause (`insulator`).
    Wait,
    /// A sub-workflow (`house`).
    SubWorkflow,
}

impl Handler {
    /// The handler a Graphviz shape selects; unknown shapes run as agents.
    #[must_use]
    pub(crate) fn from_shape(shape: &str) -> Option<Handler> {
        Some(match shape {
            "Mdiamond" => Handler::Start,
            "Msquare" => Handler::Exit,
            "box" => Handler::Agent,
            "tab" => Handler::Prompt,
            "parallelogram" => Handler::Command,
            "hexagon" => Handler::Human,
            "diamond" => Handler::Conditional,
            "component" => Handler::Parallel,
            "tripleoctagon" => Handler::FanIn,
            "insulator" => Handler::Wait,
            "house" => Handler::SubWorkflow,
            _ => return None,
        })
    }

    /// The handler a `type=` value names, including the legacy aliases
    /// (`agent_loop`, `codergen`, `one_shot`, `tool`, `tool_command`, ...).
    #[must_use]
    pub(crate) fn from_type(ty: &str) -> Option<Handler> {
        Some(match ty {
            "start" => Handler::Start,
            "exit" => Handler::Exit,
            "agent" | "agent_loop" | "codergen" | "codergen_mode" => Handler::Agent,
            "prompt" | "one_shot" => Handler::Prompt,
            "command" | "tool" | "tool_command" => Handler::Command,
            "human" | "wait.human" => Handler::Human,
            "conditional" => Handler::Conditional,
            "parallel" => Handler::Parallel,
            "parallel.fan_in" | "fan_in" => Handler::FanIn,
            "wait" => Handler::Wait,
            "stack.manager_loop" | "sub_workflow" => Handler::SubWorkflow,
            _ => return None,
        })
    }

    /// The canonical `type=` name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Handler::Start => "start",
            Handler::Exit => "exit",
            Handler::Agent => "agent",
            Handler::Prompt => "prompt",
            Handler::Command => "command",
            Handler::Human => "human",
            Handler::Conditional => "conditional",
            Handler::Parallel => "parallel",
            Handler::FanIn => "parallel.fan_in",
            Handler::Wait => "wait",
            Handler::SubWorkflow => "stack.manager_loop",
        }
    }

    /// The shape Graphviz draws this handler with.
    #[must_use]
    pub fn shape(self) -> &'static str {
        match self {
            Handler::Start => "Mdiamond",
            Handler::Exit => "Msquare",
            Handler::Agent => "box",
            Handler::Prompt => "tab",
            Handler::Command => "parallelogram",
            Handler::Human => "hexagon",
            Handler::Conditional => "diamond",
            Handler::Parallel => "component",
            Handler::FanIn => "tripleoctagon",
            Handler::Wait => "insulator",
            Handler::SubWorkflow => "house",
        }
    }

    /// True for the handlers that call a language model.
    #[must_use]
    pub(crate) fn uses_llm(self) -> bool {
        matches!(self, Handler::Agent | Handler::Prompt)
    }

    /// Every handler, in the order of the reference's node-type table.
    pub const ALL: [Handler; 11] = [
        Handler::Start,
        Handler::Exit,
        Handler::Agent,
        Handler::Prompt,
        Handler::Command,
        Handler::Human,
        Handler::Conditional,
        Handler::Parallel,
        Handler::FanIn,
        Handler::Wait,
        Handler::SubWorkflow,
    ];
}

/// A node's id: shared, immutable text (`Arc<str>`), cheap to clone.
pub(crate) type NodeId = std::sync::Arc<str>;

/// A step of the workflow as written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Shared with the edges that name this node, so a large graph holds
    /// each id once.
    pub id: NodeId,
    /// Where the node was first mentioned (its declaration, or the edge that
    /// created it).
    pub span: Span,
    /// True once a node statement declared it; false for nodes that only
    /// edges mention (see the `undeclared_node` rule).
    pub declared: bool,
    pub attrs: Attrs,
    /// Classes from the labels of the subgraphs the node appears in.
    pub subgraph_classes: Vec<String>,
    /// Resolved by [`Graph::finish`] from `type` and `shape`.
    pub handler: Handler,
}

impl Node {
    /// A node with no attributes.
    #[must_use]
    pub fn new(id: &str, span: Span) -> Self {
        Node {
            id: NodeId::from(id),
            span,
            declared: false,
            attrs: Attrs::new(),
            subgraph_classes: Vec::new(),
            handler: Handler::Agent,
        }
    }

    /// The node's shape, `box` when unset.
    #[must_use]
    pub fn shape(&self) -> &str {
        self.attrs
            .value("shape")
            .and_then(|v| v.as_str())
            .unwrap_or("box")
    }

    /// The display label: `label`, or the id when unset.
    #[must_use]
    pub fn label(&self) -> std::borrow::Cow<'_, str> {
        self.attrs
            .text("label")
            .unwrap_or(std::borrow::Cow::Borrowed(&self.id))
    }

    /// Every class: the `class` attribute (split on commas and spaces) then
    /// the subgraph classes, without duplicates.
    #[must_use]
    pub fn classes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let Some(list) = self.attrs.text("class") {
            for class in list.split(|c: char| c == ',' || c.is_whitespace()) {
                if !class.is_empty() && !out.iter().any(|c| c == class) {
                    out.push(class.to_string());
                }
            }
        }
        for class in &self.subgraph_classes {
            if !out.contains(class) {
                out.push(class.clone());
            }
        }
        out
    }

    fn resolve_handler(&self) -> Handler {
        self.attrs
            .value("type")
            .and_then(|v| v.as_str())
            .and_then(Handler::from_type)
            .or_else(|| Handler::from_shape(self.shape()))
            .unwrap_or(Handler::Agent)
    }
}

/// A directed connection between two nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub from: NodeId,
    pub to: NodeId,
    /// The whole `a -> b` (for chains, the pair's own ids).
    pub span: Span,
    pub from_span: Span,
    pub to_span: Span,
    pub attrs: Attrs,
}

impl Edge {
    /// The `condition`, when set and not blank.
    #[must_use]
    pub fn condition(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.attrs.non_empty("condition")
    }

    /// The `label`, when set.
    #[must_use]
    pub fn label(&self) -> Option<std::borrow::Cow<'_, str>> {
        self.attrs.text("label")
    }

    /// The `weight`, 0 when unset.
    #[must_use]
    pub fn weight(&self) -> i64 {
        self.attrs
            .value("weight")
            .and_then(super::value::Value::as_int)
            .unwrap_or(0)
    }
}

impl PartialEq for Graph {
    /// Graphs are equal when their contents are; the index follows from them.
    fn eq(&self, other: &Graph) -> bool {
        self.name == other.name
            && self.span == other.span
            && self.attrs == other.attrs
            && self.nodes == other.nodes
            && self.edges == other.edges
    }
}

/// Node ids hash with foldhash: fast, and its high bits are well mixed,
/// which the table's probing relies on (FxHash's are not, for ids such as
/// `n1`, `n2`, ... and the probes then degrade into string comparisons).
fn hash(id: &str) -> u64 {
    static STATE: std::sync::LazyLock<DefaultHashBuilder> =
        std::sync::LazyLock::new(DefaultHashBuilder::default);
    STATE.hash_one(id)
}

/// A parsed workflow graph.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub name: String,
    pub span: Span,
    pub attrs: Attrs,
    /// Nodes in order of first mention.
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Node positions, hashed by id. Each entry holds a second handle on
    /// the node's shared id, so a lookup compares ids without reaching into
    /// `nodes` (one cache miss fewer per lookup on a large graph), and an
    /// edge's endpoint, which shares that same id, matches by pointer.
    index: HashTable<(NodeId, usize)>,
    /// Each node's outgoing edges, built at the first [`Graph::outgoing`]
    /// call (the engine's, once the graph is final): routing then reads a
    /// node's few edges instead of scanning them all, which made a stage's
    /// cost grow with the size of the workflow.
    outgoing: std::sync::OnceLock<Outgoing>,
}

/// Edge positions grouped by their source node's position.
#[derive(Debug, Clone, Default)]
struct Outgoing {
    /// `edges[starts[i]..starts[i + 1]]` leave node `i`, in file order.
    starts: Vec<u32>,
    edges: Vec<u32>,
    /// How many edges the graph had when this was built: a graph changed
    /// since falls back to scanning.
    of: usize,
}

impl Graph {
    /// An empty graph called `name`.
    #[must_use]
    pub fn new(name: impl Into<String>, span: Span) -> Self {
        Graph {
            name: name.into(),
            span,
            ..Graph::default()
        }
    }

    /// The node with this id.
    #[must_use]
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.node_index(id).and_then(|i| self.nodes.get(i))
    }

    /// The position of the node with this id in [`Graph::nodes`].
    #[must_use]
    pub(crate) fn node_index(&self, id: &str) -> Option<usize> {
        self.index
            .find(hash(id), |(known, _)| &**known == id)
            .map(|&(_, i)| i)
    }

    /// The position of the node whose id is `id`: like
    /// [`Graph::node_index`], but an id shared with the node (as an edge's
    /// endpoints are) matches without comparing text.
    #[must_use]
    pub(crate) fn node_index_of(&self, id: &NodeId) -> Option<usize> {
        self.index
            .find(hash(id), |(known, _)| {
                std::sync::Arc::ptr_eq(known, id) || **known == **id
            })
            .map(|&(_, i)| i)
    }

    /// The node with this id, created (undeclared, at `span`) if missing.
    /// Returns its position, its shared id and whether it was created.
    pub(crate) fn node_entry(&mut self, id: &str, span: Span) -> (usize, NodeId, bool) {
        if let Some((known, i)) = self.index.find(hash(id), |(known, _)| &**known == id) {
            return (*i, known.clone(), false);
        }
        let node = Node::new(id, span);
        let shared = node.id.clone();
        (self.add_node(node), shared, true)
    }

    /// Adds a node, replacing none: callers check [`Graph::node`] first.
    pub(crate) fn add_node(&mut self, node: Node) -> usize {
        let i = self.nodes.len();
        self.index
            .insert_unique(hash(&node.id), (node.id.clone(), i), |(id, _)| hash(id));
        self.nodes.push(node);
        i
    }

    /// Makes room for `nodes` more nodes and `edges` more edges.
    pub(crate) fn reserve(&mut self, nodes: usize, edges: usize) {
        self.nodes.reserve(nodes);
        self.index.reserve(nodes, |(id, _)| hash(id));
        self.edges.reserve(edges);
    }

    /// Resolves every node's handler from its final attributes. Call after
    /// all attributes are in place (parsing, stylesheet application).
    ///
    /// The reference also lets the ids `start`/`Start` mark the start node
    /// and `exit`/`Exit`/`end`/`End` the exit, when no node has the start
    /// (or exit) shape and the named node sets neither `shape` nor `type`.
    pub fn finish(&mut self) {
        for node in &mut self.nodes {
            node.handler = node.resolve_handler();
        }
        self.mark_by_id(Handler::Start, &["start", "Start"]);
        self.mark_by_id(Handler::Exit, &["exit", "Exit", "end", "End"]);
    }

    fn mark_by_id(&mut self, handler: Handler, ids: &[&str]) {
        if self.nodes.iter().any(|n| n.handler == handler) {
            return;
        }
        let Some(i) = ids.iter().find_map(|id| self.node_index(id)) else {
            return;
        };
        if let Some(node) = self.nodes.get_mut(i)
            && !node.attrs.contains("shape")
            && !node.attrs.contains("type")
        {
            node.handler = handler;
        }
    }

    /// Every node with the start handler (see [`Graph::finish`]).
    #[must_use]
    pub(crate) fn start_nodes(&self) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.handler == Handler::Start)
            .collect()
    }

    /// Every node with the exit handler (see [`Graph::finish`]).
    #[must_use]
    pub(crate) fn exit_nodes(&self) -> Vec<&Node> {
        self.nodes
            .iter()
            .filter(|n| n.handler == Handler::Exit)
            .collect()
    }

    /// The positions in [`Graph::edges`] of the edges leaving `node`, in
    /// file order: borrowed from the index, copied only when the graph
    /// changed since the index was built.
    pub(crate) fn outgoing(&self, node: &str) -> std::borrow::Cow<'_, [u32]> {
        let built = self.outgoing.get_or_init(|| self.group_edges());
        match self.node_index(node) {
            Some(i) if built.of == self.edges.len() && i + 1 < built.starts.len() => {
                let (from, to) = (built.starts[i] as usize, built.starts[i + 1] as usize);
                std::borrow::Cow::Borrowed(&built.edges[from..to])
            }
            _ => (0..self.edges.len())
                .filter(|&e| &*self.edges[e].from == node)
                .map(|e| e as u32)
                .collect(),
        }
    }

    /// The edges leaving `node`, in file order ([`Graph::outgoing`]).
    pub(crate) fn edges_from<'g>(&'g self, node: &str) -> impl Iterator<Item = &'g Edge> + 'g {
        let at = self.outgoing(node);
        (0..at.len()).map(move |k| &self.edges[at[k] as usize])
    }

    fn group_edges(&self) -> Outgoing {
        let mut counts = vec![0u32; self.nodes.len() + 1];
        let from: Vec<Option<usize>> = self
            .edges
            .iter()
            .map(|e| self.node_index_of(&e.from))
            .collect();
        for i in from.iter().flatten() {
            counts[i + 1] += 1;
        }
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        let mut next = counts.clone();
        let mut edges = vec![0u32; self.edges.len()];
        for (e, i) in from.iter().enumerate() {
            if let Some(i) = i {
                edges[next[*i] as usize] = e as u32;
                next[*i] += 1;
            }
        }
        Outgoing {
            starts: counts,
            edges,
            of: self.edges.len(),
        }
    }

    /// The single start node, when there is exactly one.
    #[must_use]
    pub fn start(&self) -> Option<&Node> {
        match self.start_nodes().as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The single exit node, when there is exactly one.
    #[must_use]
    pub fn exit(&self) -> Option<&Node> {
        match self.exit_nodes().as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_s_outgoing_edges_come_in_file_order_even_after_the_edges_change() {
        let src = "digraph G { a -> b; c -> a; a -> c; b -> c; a -> b [label=again] }";
        let mut graph = crate::lang::parser::parse(src).expect("parses").graph;
        let targets = |g: &Graph, id: &str| -> Vec<String> {
            g.edges_from(id).map(|e| e.to.to_string()).collect()
        };
        assert_eq!(targets(&graph, "a"), ["b", "c", "b"]);
        assert_eq!(targets(&graph, "c"), ["a"]);
        assert!(targets(&graph, "nobody").is_empty());
        // Built once; an edge added later is still seen (by the fallback).
        let extra = Edge {
            to: graph.nodes[2].id.clone(),
            ..graph.edges[0].clone()
        };
        graph.edges.push(extra);
        assert_eq!(targets(&graph, "a"), ["b", "c", "b", "c"]);
    }

    #[test]
    fn every_handler_reads_back_from_its_shape_and_type_name() {
        for h in Handler::ALL {
            assert_eq!(Handler::from_shape(h.shape()), Some(h), "{h:?}");
            assert_eq!(Handler::from_type(h.name()), Some(h), "{h:?}");
        }
    }
}
