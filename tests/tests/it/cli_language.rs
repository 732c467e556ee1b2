//! Language choices of issue 14 through the real binary: DOT attribute
//! lists without separators, Fabro's legacy `tool_command`, the warning for
//! a command whose failure falls through, zero timeouts and visit limits,
//! and retries only when asked (shown by `weft graph --json`).

use serde_json::Value;
use weft_tests::Sandbox;

const HEAD: &str = "digraph G {\n start [shape=Mdiamond]\n exit [shape=Msquare]\n";

#[test]
fn attribute_lists_without_separators_are_accepted_as_graphviz_does() {
    let sb = Sandbox::new();
    sb.write(
        "flow.fabro",
        format!(
            "{HEAD} run [label=\"Run\" shape=parallelogram; script=\"true\" on_failure=\"exit\"]\n start -> run -> exit\n}}\n"
        ),
    );
    let run = sb.run(&["validate", "flow.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

#[test]
fn fabros_legacy_tool_command_runs_as_the_script_with_a_warning() {
    let sb = Sandbox::new();
    sb.write(
        "legacy_tool.fabro",
        format!(
            "{HEAD} echo [shape=parallelogram, tool_command=\"echo legacy >> out.txt\", on_failure=\"exit\"]\n start -> echo -> exit\n}}\n"
        ),
    );
    let check = sb.run(&["validate", "legacy_tool.fabro"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check.stderr.contains(
            "warning[tool_command_deprecated]: `tool_command` is the old name of `script`"
        ) && check.stderr.contains("hint: rename it to `script`"),
        "{}",
        check.stderr
    );
    let run = sb.run(&["run", "--no-daemon", "legacy_tool.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    let out = std::fs::read_to_string(sb.path().join("out.txt")).expect("the command ran");
    assert_eq!(out, "legacy\n");
}

#[test]
fn a_command_whose_failure_would_route_onward_is_warned_about() {
    let sb = Sandbox::new();
    sb.write(
        "flow.fabro",
        format!(
            "{HEAD} test [shape=parallelogram, script=\"cargo test\"]\n deploy [shape=parallelogram, script=\"./deploy\", on_failure=\"exit\"]\n start -> test -> deploy -> exit\n}}\n"
        ),
    );
    let run = sb.run(&["validate", "flow.fabro"]);
    assert_eq!(run.code, 0, "a warning: {run:?}");
    assert!(
        run.stderr.contains(
            "warning[failure_falls_through]: if `test` fails, the run goes on to `deploy`"
        ) && run.stderr.contains(" --> flow.fabro:4:2"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_zero_timeout_is_an_error() {
    let sb = Sandbox::new();
    sb.write(
        "flow.fabro",
        format!(
            "{HEAD} run [shape=parallelogram, script=\"true\", timeout=\"0s\", on_failure=\"exit\"]\n start -> run -> exit\n}}\n"
        ),
    );
    let run = sb.run(&["validate", "flow.fabro"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("error[duration_valid]: `run` has a timeout of zero"),
        "{}",
        run.stderr
    );
}

const SLOW: &str = " slow [shape=parallelogram, timeout=\"200ms\", script=\"echo attempt >> attempts.log; sleep 5\"]\n start -> slow -> exit\n}\n";

#[test]
fn graph_json_shows_each_nodes_effective_retry_policy() {
    let sb = Sandbox::new();
    sb.write("flow.fabro", format!("{HEAD}{SLOW}"));
    let run = sb.run(&["graph", "--json", "flow.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    let graph: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let nodes = graph["nodes"].as_array().expect("nodes");
    let slow = nodes.iter().find(|n| n["id"] == "slow").expect("slow");
    assert_eq!(slow["retry"]["max_attempts"], 1);
    assert_eq!(slow["retry"]["from"], "default");
    assert_eq!(slow["retry"]["retries"], "none");
    let start = nodes.iter().find(|n| n["id"] == "start").expect("start");
    assert!(
        start.get("retry").is_none(),
        "the start and exit run nothing"
    );
}

#[test]
fn a_timed_out_command_without_retry_attributes_runs_once() {
    let sb = Sandbox::new();
    sb.write("flow.fabro", format!("{HEAD}{SLOW}"));
    let run = sb.run(&["run", "--no-daemon", "flow.fabro"]);
    assert_eq!(run.code, 0, "the failure routes onward: {run:?}");
    let attempts = std::fs::read_to_string(sb.path().join("attempts.log")).expect("log");
    assert_eq!(attempts.lines().count(), 1, "one attempt, not four");
}

#[test]
fn max_visits_zero_lifts_the_graph_limit_for_its_node() {
    let sb = Sandbox::new();
    sb.write(
        "flow.fabro",
        "digraph Loop {\n graph [max_node_visits=2, loop_restart_signature_limit=10]\n start [shape=Mdiamond]\n exit [shape=Msquare]\n again [shape=parallelogram, max_visits=0, script=\"echo run >> again.log; test $(wc -l < again.log) -ge 4\"]\n start -> again\n again -> exit [condition=\"outcome=succeeded\"]\n again -> again\n}\n",
    );
    let run = sb.run(&["run", "--no-daemon", "flow.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    let visits = std::fs::read_to_string(sb.path().join("again.log")).expect("log");
    assert_eq!(visits.lines().count(), 4);
}
