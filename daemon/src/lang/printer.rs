//! Prints a graph back as normalised DOT: one graph attribute block, every
//! node with its effective attributes, every edge with its own, in
//! declaration order. Parsing the output gives the same graph.

use std::fmt::Write as _;

use super::attrs::{self, Attrs, Scope};
use super::graph::Graph;
use super::value::{Value, write_quoted};

/// The graph as normalised DOT text.
#[must_use]
pub fn to_dot(graph: &Graph) -> String {
    let mut out = String::with_capacity(64 + graph.nodes.len() * 48 + graph.edges.len() * 24);
    let _ = writeln!(out, "digraph {} {{", graph.name);
    if !graph.attrs.is_empty() {
        out.push_str("    graph ");
        write_attrs(&mut out, &graph.attrs, Scope::Graph, None);
        out.push('\n');
    }
    for node in &graph.nodes {
        out.push_str("    ");
        write_id(&mut out, &node.id);
        let classes = node.classes();
        let class = (!classes.is_empty()).then(|| classes.join(" "));
        if !node.attrs.is_empty() || class.is_some() {
            out.push(' ');
            write_attrs(&mut out, &node.attrs, Scope::Node, class.as_deref());
        }
        out.push('\n');
    }
    for edge in &graph.edges {
        out.push_str("    ");
        write_id(&mut out, &edge.from);
        out.push_str(" -> ");
        write_id(&mut out, &edge.to);
        if !edge.attrs.is_empty() {
            out.push(' ');
            write_attrs(&mut out, &edge.attrs, Scope::Edge, None);
        }
        out.push('\n');
    }
    out.push_str("}\n");
    out
}

/// Writes a node id: bare, except the dotted ids of spliced imports, which
/// Graphviz reads only when quoted (`"review.check"`).
fn write_id(out: &mut String, id: &str) {
    if id.contains('.') {
        let _ = write_quoted(out, id);
    } else {
        out.push_str(id);
    }
}

/// Writes `[k=v, ...]`. `class` (when given) replaces the `class` attribute
/// so that subgraph classes survive flattening.
fn write_attrs(out: &mut String, attrs: &Attrs, scope: Scope, class: Option<&str>) {
    out.push('[');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push_str(", ");
        }
    };
    for attr in attrs.iter().filter(|a| class.is_none() || a.key != "class") {
        sep(out);
        let _ = write!(
            out,
            "{}={}",
            attr.key,
            printable(scope, &attr.key, &attr.value)
        );
    }
    if let Some(class) = class {
        sep(out);
        out.push_str("class=");
        let _ = write_quoted(out, class);
    }
    out.push(']');
}

/// Bare words print bare only when they read back as the same word; text
/// values of string-typed attributes print bare when they are plain
/// identifiers (`shape=Mdiamond`), since those read back as the same text.
fn printable(scope: Scope, key: &str, value: &Value) -> String {
    match value {
        Value::Str(s)
            if attrs::declared_type(scope, key) == Some(super::value::ValueType::String)
                && is_plain_identifier(s) =>
        {
            s.to_string()
        }
        Value::Word(w) if Value::from_word(w) != *value || w.is_empty() => {
            let mut s = String::new();
            let _ = write_quoted(&mut s, w);
            s
        }
        other => other.to_string(),
    }
}

/// The graph as JSON: the graph's attributes, nodes with their handler,
/// classes and effective attributes, and edges with theirs. Positions are
/// included so tools can point back into the file.
#[must_use]
pub(crate) fn to_json(graph: &Graph) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = graph
        .nodes
        .iter()
        .map(|n| {
            serde_json::json!({
                "id": &*n.id,
                "handler": n.handler,
                "shape": n.shape(),
                "label": n.label(),
                "classes": n.classes(),
                "attrs": n.attrs,
                "line": n.span.line,
                "column": n.span.column,
            })
        })
        .collect();
    let edges: Vec<serde_json::Value> = graph
        .edges
        .iter()
        .map(|e| {
            serde_json::json!({
                "from": &*e.from,
                "to": &*e.to,
                "attrs": e.attrs,
                "line": e.span.line,
                "column": e.span.column,
            })
        })
        .collect();
    serde_json::json!({
        "name": graph.name,
        "attrs": graph.attrs,
        "start": graph.start().map(|n| n.id.as_ref()),
        // The one exit, as before; `exits` lists them all (a workflow may
        // have several, see terminal_node).
        "exit": graph.exit().map(|n| n.id.as_ref()),
        "exits": graph.exit_nodes().iter().map(|n| n.id.as_ref()).collect::<Vec<&str>>(),
        "nodes": nodes,
        "edges": edges,
    })
}

fn is_plain_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !matches!(s, "true" | "false")
        && !s.eq_ignore_ascii_case("node")
        && !s.eq_ignore_ascii_case("edge")
        && !s.eq_ignore_ascii_case("graph")
        && !s.eq_ignore_ascii_case("subgraph")
        && !s.eq_ignore_ascii_case("digraph")
        && !s.eq_ignore_ascii_case("strict")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parser::parse;

    #[test]
    fn printed_graphs_parse_back_to_the_same_graph() {
        let src = r#"digraph G {
            graph [goal="Ship \"it\"", rankdir=LR, stall_timeout=30m]
            node [timeout="900s"]
            start [shape=Mdiamond]
            subgraph cluster_a { label="Impl Work"; a [prompt="line1\nline2", max_retries="3", model=gpt-5.2-codex] }
            exit [shape=Msquare]
            start -> a -> exit [condition="outcome=succeeded", weight=2]
        }"#;
        let first = parse(src).expect("parses").graph;
        let printed = to_dot(&first);
        let second = parse(&printed).expect("printed output parses").graph;
        assert_eq!(to_dot(&second), printed);
        let a = second.node("a").expect("a");
        assert_eq!(a.classes(), vec!["impl-work".to_string()]);
        assert_eq!(a.attrs.value("max_retries"), Some(&Value::Int(3)));
        assert_eq!(second.edges.len(), 2);
    }
}
