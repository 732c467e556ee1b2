//! Workflows in the dialect of StrongDM's Attractor spec, read unchanged
//! (issue 21): the spec's complete examples and one file per spelling Weft
//! reads for it, in `tests/fixtures/attractor/`. Every file there validates
//! without errors, and says exactly which notes and warnings it gets, so a
//! new fixture must be listed here.

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use weft::engine::retry::{PolicySource, RetryPolicy};
use weft::lang::{LoadOptions, Workflow};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/attractor")
}

fn load_with(name: &str, options: &LoadOptions) -> Workflow {
    let path = dir().join(name);
    Workflow::load(&path, options).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load(name: &str) -> Workflow {
    load_with(name, &LoadOptions::default())
}

/// What each fixture gets besides errors (it gets none): `severity rule
/// line:column`, in order.
const EXPECTED: &[(&str, &[&str])] = &[
    ("01-simple.dot", &[]),
    ("02-branch.dot", &[]),
    (
        "03-review.dot",
        &[
            "warning undeclared_node 14:20",
            "warning undeclared_node 15:20",
        ],
    ),
    (
        "04-stylesheet.dot",
        &[
            "info attractor_spelling 5:17",
            "info attractor_spelling 5:47",
            "info attractor_spelling 6:21",
            "info attractor_spelling 6:49",
            "info attractor_spelling 7:32",
            "info attractor_spelling 7:52",
        ],
    ),
    (
        "05-smoke.dot",
        &[
            "info attractor_spelling 5:82",
            "info all_conditional_edges 6:5",
            "warning goal_gate_has_retry 6:82",
            "info all_conditional_edges 7:5",
        ],
    ),
    (
        "attribute-tables.dot",
        &[
            "info attractor_spelling 5:31",
            "info attractor_spelling 5:61",
            "info attractor_spelling 6:9",
            "info attractor_spelling 17:36",
            "info attractor_spelling 21:25",
            "info attractor_spelling 21:46",
            "info all_conditional_edges 24:5",
            "warning tool_command_deprecated 24:61",
        ],
    ),
    (
        "default-max-retry.dot",
        &[
            "info attractor_spelling 5:34",
            "warning tool_command_deprecated 9:33",
        ],
    ),
    (
        "goal-variable.dot",
        &[
            "info attractor_spelling 11:40",
            "info attractor_spelling 12:26",
        ],
    ),
    (
        "node-model-spellings.dot",
        &[
            "info attractor_spelling 9:11",
            "info attractor_spelling 13:40",
            "info attractor_spelling 14:43",
            "info attractor_spelling 14:69",
        ],
    ),
];

fn findings(wf: &Workflow) -> Vec<String> {
    wf.diagnostics
        .iter()
        .map(|d| {
            let (line, column) = d.span.map_or((0, 0), |s| (s.line, s.column));
            format!("{} {} {line}:{column}", d.severity.as_str(), d.rule)
        })
        .collect()
}

#[test]
fn every_attractor_fixture_validates_with_exactly_its_notes() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("the fixture directory")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".dot"))
        .collect();
    names.sort();
    let listed: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, listed, "every fixture has its expectations here");
    for (name, expected) in EXPECTED {
        let wf = load(name);
        assert!(
            wf.diagnostics.iter().all(|d| !d.is_error()),
            "{name}: {:?}",
            wf.diagnostics
        );
        assert_eq!(findings(&wf), *expected, "{name}: {:?}", wf.diagnostics);
    }
}

fn node_text(wf: &Workflow, id: &str, key: &str) -> Option<String> {
    wf.graph
        .as_ref()?
        .node(id)?
        .attrs
        .text(key)
        .map(|t| t.into_owned())
}

#[test]
fn the_specs_stylesheet_example_assigns_the_models_it_names() {
    let wf = load("04-stylesheet.dot");
    let models: Vec<_> = ["plan", "implement", "critical_review"]
        .iter()
        .map(|id| {
            (
                node_text(&wf, id, "model"),
                node_text(&wf, id, "provider"),
                node_text(&wf, id, "reasoning_effort"),
            )
        })
        .collect();
    let some = |s: &str| Some(s.to_string());
    assert_eq!(
        models,
        vec![
            (some("claude-sonnet-4-5"), some("anthropic"), None),
            (some("claude-opus-4-6"), some("anthropic"), None),
            (some("gpt-5.2"), some("openai"), some("high")),
        ]
    );
}

#[test]
fn node_model_spellings_are_the_nodes_own_values_and_beat_the_stylesheet() {
    let wf = load("node-model-spellings.dot");
    let of = |id: &str| (node_text(&wf, id, "model"), node_text(&wf, id, "provider"));
    let some = |s: &str| Some(s.to_string());
    assert_eq!(of("draft"), (some("gpt-5.2"), some("openai")));
    assert_eq!(of("polish"), (some("gpt-5.2-mini"), some("openai")));
    assert_eq!(
        of("check"),
        (some("claude-haiku-4-5"), some("openai")),
        "the default block's provider is the node's own; the model comes from the stylesheet"
    );
}

#[test]
fn default_max_retry_gives_nodes_their_retries() {
    let wf = load("default-max-retry.dot");
    let graph = wf.graph.as_ref().expect("graph");
    let node = graph.node("test").expect("test");
    let (policy, source) = RetryPolicy::resolve(node, graph);
    assert_eq!(policy.max_attempts, 4);
    assert_eq!(source, PolicySource::DefaultMaxRetries);
}

#[test]
fn goal_variable_becomes_the_runs_goal_in_prompts_only() {
    let wf = load("goal-variable.dot");
    assert_eq!(
        node_text(&wf, "plan", "prompt").as_deref(),
        Some("Plan how to reach: Create a hello world Python script (not $goals)")
    );
    assert_eq!(
        node_text(&wf, "build", "label").as_deref(),
        Some("Build $goal"),
        "a label stays as written; the stage expands it when it is the prompt"
    );
    assert_eq!(
        node_text(&wf, "show", "script").as_deref(),
        Some("goal=x; echo $goal"),
        "a shell variable in a script"
    );
    let overridden = load_with(
        "goal-variable.dot",
        &LoadOptions {
            goal: Some("Ship it".into()),
            ..LoadOptions::default()
        },
    );
    assert_eq!(
        node_text(&overridden, "plan", "prompt").as_deref(),
        Some("Plan how to reach: Ship it (not $goals)"),
        "--goal applies"
    );
    let smoke = load("05-smoke.dot");
    assert_eq!(
        node_text(&smoke, "plan", "prompt").as_deref(),
        Some("Plan how to create a hello world script for: Create a hello world Python script")
    );
}

#[test]
fn weft_validate_prints_the_notes_and_counts_them() {
    let home = tempfile::tempdir().expect("temp home");
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("validate")
        .arg(dir().join("04-stylesheet.dot"))
        .env("WEFT_HOME", home.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("weft runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("Workflow: Pipeline (5 nodes, 4 edges) — valid (6 notes)"),
        "{stdout}"
    );
    assert!(
        stderr.contains(
            "info[attractor_spelling]: `llm_model` in the model stylesheet is the Attractor spec's name for `model`"
        ),
        "{stderr}"
    );
}
