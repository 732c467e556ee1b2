//! Properties of the language front end, checked on generated input:
//! printing a parsed graph and parsing it again gives the same graph, and no
//! input — random text or a valid workflow with random damage — panics the
//! loader.

use proptest::prelude::*;
use weft::lang::graph::Graph;
use weft::lang::parser::parse;
use weft::lang::printer::to_dot;
use weft::lang::{LoadOptions, Workflow};

/// The parts of a graph that printing must preserve: ids, handlers, classes
/// and attribute values (not positions, which printing changes).
fn meaning(g: &Graph) -> (String, Vec<String>, Vec<String>, Vec<String>) {
    let attrs = |a: &weft::lang::attrs::Attrs| {
        a.iter()
            .filter(|x| x.key != "class")
            .map(|x| format!("{}={:?}", x.key, x.value))
            .collect::<Vec<_>>()
            .join(",")
    };
    (
        g.name.clone(),
        vec![attrs(&g.attrs)],
        g.nodes
            .iter()
            .map(|n| {
                format!(
                    "{}:{:?}:{:?}:{}",
                    n.id,
                    n.handler,
                    n.classes(),
                    attrs(&n.attrs)
                )
            })
            .collect(),
        g.edges
            .iter()
            .map(|e| format!("{}->{}:{}", e.from, e.to, attrs(&e.attrs)))
            .collect(),
    )
}

fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("start".to_string()),
        Just("exit".to_string()),
        "[a-z_][a-z0-9_]{0,6}".prop_filter("not a keyword", |s| {
            !matches!(
                s.as_str(),
                "graph" | "node" | "edge" | "subgraph" | "digraph" | "strict"
            )
        }),
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i32>().prop_map(|i| i.to_string()),
        (-1000i32..1000, 1u32..100).prop_map(|(a, b)| format!("{a}.{b}")),
        Just("true".to_string()),
        Just("false".to_string()),
        (
            1u32..500,
            prop_oneof![Just("ms"), Just("s"), Just("m"), Just("h"), Just("d")]
        )
            .prop_map(|(n, u)| format!("{n}{u}")),
        "[A-Za-z][A-Za-z0-9_.-]{0,10}"
            .prop_map(|w| w.trim_end_matches('-').to_string())
            .prop_filter("non-empty bare word", |w| !w.is_empty()),
        // Quoted text with escapes, newlines, unicode and template-free braces.
        proptest::collection::vec(
            prop_oneof![
                "[ -!#-\\[\\]-~]{1,8}",
                Just("\\\"".to_string()),
                Just("\\\\".to_string()),
                Just("\\n".to_string()),
                Just("\\t".to_string()),
                Just("\\d".to_string()),
                Just("é ✓".to_string()),
                Just("\n".to_string()),
            ],
            0..6,
        )
        .prop_map(|parts| format!(
            "\"{}\"",
            parts
                .concat()
                .replace("{{", "{ {")
                .replace("{%", "{ %")
                .replace("{#", "{ #")
        )),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("label".to_string()),
        Just("shape".to_string()),
        Just("max_retries".to_string()),
        Just("goal_gate".to_string()),
        Just("timeout".to_string()),
        Just("weight".to_string()),
        Just("class".to_string()),
        Just("human.default_choice".to_string()),
        "[a-z][a-z_]{0,8}",
    ]
}

fn attr_list() -> impl Strategy<Value = String> {
    proptest::collection::vec((key(), value()), 0..4).prop_map(|pairs| {
        if pairs.is_empty() {
            String::new()
        } else {
            let body: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!(" [{}]", body.join(", "))
        }
    })
}

/// One statement; subgraphs nest up to `depth`.
fn statement(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        (ident(), attr_list()).prop_map(|(id, a)| format!("{id}{a}")),
        (proptest::collection::vec(ident(), 2..4), attr_list())
            .prop_map(|(ids, a)| format!("{}{a}", ids.join(" -> "))),
        attr_list()
            .prop_filter("non-empty", |a| !a.is_empty())
            .prop_map(|a| format!("node{a}")),
        attr_list()
            .prop_filter("non-empty", |a| !a.is_empty())
            .prop_map(|a| format!("edge{a}")),
        value().prop_map(|v| format!("rankdir={v}")),
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    prop_oneof![
        4 => leaf,
        1 => (proptest::option::of("[A-Za-z][A-Za-z ]{0,10}"), proptest::collection::vec(statement(depth - 1), 0..4))
            .prop_map(|(label, body)| {
                let label = label.map(|l| format!("label=\"{l}\"\n")).unwrap_or_default();
                format!("subgraph cluster_x {{\n{label}{}\n}}", body.join("\n"))
            }),
    ]
    .boxed()
}

fn workflow_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(statement(2), 0..12)
        .prop_map(|stmts| format!("digraph Generated {{\n{}\n}}\n", stmts.join(";\n")))
}

/// 300 cases; failures found are kept in `properties.proptest-regressions`
/// beside this file and tried first on every run. (Proptest's default would
/// look under `tests/proptest-regressions/`, since `it/main.rs` makes this
/// directory a crate root.)
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn printing_a_parsed_graph_and_parsing_it_again_gives_the_same_graph(src in workflow_text()) {
        let first = parse(&src).map_err(|e| TestCaseError::fail(format!("{e:?}\n{src}")))?.graph;
        let printed = to_dot(&first);
        let second = parse(&printed).map_err(|e| TestCaseError::fail(format!("{e:?}\n{printed}")))?.graph;
        prop_assert_eq!(meaning(&first), meaning(&second), "printed:\n{}", printed);
        prop_assert_eq!(to_dot(&second), printed);
    }

    #[test]
    fn no_text_panics_the_loader(src in "\\PC{0,300}") {
        let _ = Workflow::from_bytes("p.fabro", src.as_bytes(), std::path::Path::new("/nonexistent"), &LoadOptions::default());
    }

    #[test]
    fn no_bytes_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = Workflow::from_bytes("p.fabro", &bytes, std::path::Path::new("/nonexistent"), &LoadOptions::default());
    }

    #[test]
    fn damaged_workflows_never_panic_the_loader(
        src in workflow_text(),
        cuts in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..4, "[\\[\\]{}=;,\"\\-> a:<]{0,3}"), 1..4),
    ) {
        let mut text = src.into_bytes();
        for (at, remove, insert) in cuts {
            let i = at.index(text.len() + 1);
            let end = (i + remove).min(text.len());
            text.splice(i..end, insert.bytes());
        }
        let _ = Workflow::from_bytes("p.fabro", &text, std::path::Path::new("/nonexistent"), &LoadOptions::default());
    }
}
