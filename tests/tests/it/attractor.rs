//! Workflows in the dialect of StrongDM's Attractor spec, read unchanged:
//! the spec's complete examples (tests/fixtures/attractor/, copied from
//! the spec) run through weftd against the fake provider and take the path
//! the spec describes for them.

use std::path::PathBuf;

use serde_json::Value;
use weft_fakellm::{FakeLlm, Recorded, Wire};
use weft_tests::Sandbox;

/// The fixture `name` of tests/fixtures/attractor/.
fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/attractor")
        .join(name)
}

/// What one `weft run --json --auto-approve` of a fixture gave, with the
/// requests the fake model received.
struct Ran {
    conclusion: Value,
    requests: Vec<Recorded>,
}

impl Ran {
    /// The nodes the run visited, in order.
    fn path(&self) -> Vec<String> {
        self.conclusion["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["node_id"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The request that carried `text` in its body.
    fn request_with(&self, text: &str) -> &Recorded {
        self.requests
            .iter()
            .find(|r| r.body.to_string().contains(text))
            .unwrap_or_else(|| panic!("no request holds {text:?}"))
    }
}

/// Runs the fixture `name` through the daemon with every provider pointed
/// at one fake server, gates approved automatically.
fn run(name: &str) -> Ran {
    let fake = FakeLlm::start();
    let key = format!("sk-attractor-{}-{name}", std::process::id());
    let sb = Sandbox::new();
    let file = sb.write(
        name,
        std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}")),
    );
    let url = fake.url();
    let out = sb
        .weft()
        .env("OPENAI_API_KEY", &key)
        .env("OPENAI_BASE_URL", format!("{url}/v1"))
        .env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", &url)
        .env("GEMINI_API_KEY", &key)
        .env("GEMINI_BASE_URL", &url)
        .args(["run", "--json", "--auto-approve"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let conclusion: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {stderr}"));
    Ran {
        conclusion,
        requests: fake.requests(&key),
    }
}

#[test]
fn the_spec_s_simple_workflow_runs_its_two_stages_in_order() {
    let ran = run("01-simple.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    assert_eq!(ran.path(), ["start", "run_tests", "report", "exit"]);
    ran.request_with("Run the test suite and report results");
    ran.request_with("Summarize the test results");
}

#[test]
fn the_spec_s_branching_workflow_leaves_the_gate_for_the_exit_when_validate_succeeds() {
    let ran = run("02-branch.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    assert_eq!(
        ran.path(),
        ["start", "plan", "implement", "validate", "gate", "exit"]
    );
}

#[test]
fn the_spec_s_human_gate_approves_and_ships_through_nodes_its_edges_declare() {
    let ran = run("03-review.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    // Auto-approve takes the first option, `[A] Approve`.
    assert_eq!(ran.path(), ["start", "review_gate", "ship_it", "exit"]);
    // A node declared by its edges alone is an agent whose prompt is its id.
    assert_eq!(ran.requests.len(), 1, "one agent stage ran");
    ran.request_with("ship_it");
}

#[test]
fn the_spec_s_stylesheet_example_asks_each_node_s_model_by_its_attractor_property_names() {
    let ran = run("04-stylesheet.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    assert_eq!(
        ran.path(),
        ["start", "plan", "implement", "critical_review", "exit"]
    );
    // One request per stage, in order: `*` gives Sonnet, `.code` Opus, and
    // `#critical_review` GPT-5.2 over OpenAI's API.
    let asked: Vec<(String, Wire)> = ran
        .requests
        .iter()
        .map(|r| {
            (
                r.body["model"].as_str().unwrap_or_default().to_string(),
                r.provider,
            )
        })
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert_eq!(asked[0].0, "claude-sonnet-4-5", "{asked:?}");
    assert_eq!(asked[1].0, "claude-opus-4-6", "{asked:?}");
    assert_eq!(asked[2].0, "gpt-5.2", "{asked:?}");
    assert_eq!(asked[0].1, Wire::Anthropic, "{asked:?}");
    assert!(
        matches!(asked[2].1, Wire::OpenAiResponses | Wire::OpenAiChat),
        "OpenAI's API: {asked:?}"
    );
}

#[test]
fn the_spec_s_smoke_test_expands_goal_and_passes_its_goal_gate() {
    let ran = run("05-smoke.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    assert_eq!(ran.path(), ["start", "plan", "implement", "review", "done"]);
    let plan = ran.request_with("Plan how to create a hello world script for:");
    let body = plan.body.to_string();
    assert!(
        body.contains("for: Create a hello world Python script"),
        "$goal became the goal: {body}"
    );
    assert!(!body.contains("$goal"), "{body}");
}

#[test]
fn every_attribute_of_the_spec_s_tables_is_read_and_the_node_s_own_llm_model_wins() {
    let ran = run("attribute-tables.dot");
    assert_eq!(ran.conclusion["status"], "succeeded", "{}", ran.conclusion);
    // The gate's first option is `[Y] Yes`; the diamond passes on the gate's
    // success to its `outcome=success` edge.
    assert_eq!(
        ran.path(),
        ["start", "plan", "check", "approve", "route", "exit"]
    );
    assert_eq!(ran.requests.len(), 1, "one model stage ran");
    let plan = &ran.requests[0];
    assert_eq!(
        plan.body["model"], "gpt-5.2",
        "the node's llm_model beats the stylesheet's"
    );
    assert!(matches!(
        plan.provider,
        Wire::OpenAiResponses | Wire::OpenAiChat
    ));
    assert!(
        plan.body
            .to_string()
            .contains("Plan the work for: Exercise every attribute"),
        "{}",
        plan.body
    );
}
