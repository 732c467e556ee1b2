//! `weft validate` and `weft graph` through the real binary: output formats,
//! positions, and exit codes (0 valid, 1 invalid, 2 usage or I/O).

use weft_tests::Sandbox;

const VALID: &str = r#"digraph Fix {
    graph [goal="Make the test pass"]
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    implement [prompt="Fix it: {{ goal }}", max_visits=3]
    test [shape=parallelogram, script="true"]
    start -> implement -> test
    test -> exit [condition="outcome=succeeded"]
    test -> implement
}
"#;

const TYPO: &str = r#"digraph Typo {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    test [shape=parallelogram, script="true", on_failure="exit"]
    start -> test -> tset
    test -> exit
}
"#;

#[test]
fn a_valid_workflow_exits_zero_with_its_summary() {
    let sb = Sandbox::new();
    sb.write("fix.fabro", VALID);
    let run = sb.run(&["validate", "fix.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.trim(), "Workflow: Fix (4 nodes, 4 edges)");
    assert!(
        run.stderr.is_empty(),
        "no diagnostics expected: {}",
        run.stderr
    );
}

#[test]
fn an_invalid_workflow_exits_one_with_a_rustc_style_report() {
    let sb = Sandbox::new();
    sb.write("typo.fabro", TYPO);
    let run = sb.run(&["validate", "typo.fabro"]);
    assert_eq!(run.code, 1, "{run:?}");
    let expected = "error[undeclared_node]: `tset` is used in an edge but never declared
 --> typo.fabro:5:22
  |
5 |     start -> test -> tset
  |                      ^^^^
  = hint: did you mean `test`?
";
    assert!(run.stderr.contains(expected), "stderr was:\n{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("Workflow: Typo (4 nodes, 3 edges): invalid"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_output_is_one_object_per_file_with_positions() {
    let sb = Sandbox::new();
    sb.write("fix.fabro", VALID);
    sb.write("typo.fabro", TYPO);
    let run = sb.run(&["validate", "--json", "fix.fabro", "typo.fabro"]);
    assert_eq!(run.code, 1, "one file is invalid: {run:?}");
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["file"], "fix.fabro");
    assert_eq!(lines[0]["name"], "Fix");
    assert_eq!(lines[0]["valid"], true);
    assert_eq!(lines[0]["nodes"], 4);
    assert_eq!(lines[0]["edges"], 4);
    assert_eq!(lines[1]["valid"], false);
    let d = &lines[1]["diagnostics"][0];
    assert_eq!(d["rule"], "undeclared_node");
    assert_eq!(d["severity"], "error");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(5), Some(22))
    );
    assert_eq!(d["node_id"], "tset");
    assert_eq!(d["hint"], "did you mean `test`?");
    assert!(d.get("edge").is_none(), "absent fields are omitted");
}

#[test]
fn warnings_alone_keep_exit_zero() {
    let sb = Sandbox::new();
    sb.write(
        "warn.fabro",
        VALID.replace("max_visits=3", "max_visits=3, colour=red"),
    );
    let run = sb.run(&["validate", "warn.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("warning[unknown_attribute]"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("valid (1 warning)"), "{}", run.stdout);
}

#[test]
fn an_unreadable_file_exits_two_even_beside_invalid_ones() {
    let sb = Sandbox::new();
    sb.write("typo.fabro", TYPO);
    let run = sb.run(&["validate", "typo.fabro", "missing.fabro"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("cannot read `missing.fabro`"),
        "{}",
        run.stderr
    );
    let json = sb.run(&["validate", "--json", "missing.fabro"]);
    assert_eq!(json.code, 2);
    let v: serde_json::Value = serde_json::from_str(json.stdout.trim()).expect("JSON");
    assert_eq!(v["diagnostics"][0]["rule"], "io");
}

#[test]
fn usage_errors_exit_two() {
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["validate"]).code, 2, "no files");
    assert_eq!(
        sb.run(&["validate", "--bogus", "x.fabro"]).code,
        2,
        "unknown flag"
    );
    assert_eq!(
        sb.run(&["validate", "--input", "novalue", "x.fabro"]).code,
        2,
        "bad input"
    );
}

#[test]
fn syntax_errors_point_at_the_fault() {
    let sb = Sandbox::new();
    sb.write("bad.fabro", "digraph Bad {\n  a [label=\"x\" shape]\n}\n");
    let run = sb.run(&["validate", "--json", "bad.fabro"]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
    let d = &v["diagnostics"][0];
    assert_eq!(d["rule"], "syntax");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(21))
    );
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.contains("expected `=` after attribute `shape`")),
        "{d}"
    );
}

#[test]
fn non_utf8_input_is_a_positioned_error() {
    let sb = Sandbox::new();
    sb.write("latin1.fabro", b"digraph G {\n  a [label=\"caf\xe9\"]\n}\n");
    let run = sb.run(&["validate", "--json", "latin1.fabro"]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(run.stdout.trim()).expect("JSON");
    let d = &v["diagnostics"][0];
    assert_eq!(d["rule"], "syntax");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(16))
    );
}

#[test]
fn inputs_fill_templates_and_missing_ones_are_errors() {
    let sb = Sandbox::new();
    sb.write(
        "inputs.fabro",
        "digraph I {\n  start [shape=Mdiamond]\n  exit [shape=Msquare]\n  t [shape=parallelogram, script=\"make {{ inputs.target }}\"]\n  start -> t -> exit\n}\n",
    );
    let missing = sb.run(&["validate", "--json", "inputs.fabro"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stdout.contains("\"rule\":\"template\""),
        "{}",
        missing.stdout
    );
    let given = sb.run(&[
        "graph",
        "--json",
        "--input",
        "target=release",
        "inputs.fabro",
    ]);
    assert_eq!(given.code, 0, "{given:?}");
    let g: serde_json::Value = serde_json::from_str(&given.stdout).expect("JSON");
    let t = g["nodes"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["id"] == "t"))
        .expect("node t");
    assert_eq!(t["attrs"]["script"], "make release");
}

#[test]
fn graph_json_shows_handlers_classes_and_stylesheet_models() {
    let sb = Sandbox::new();
    sb.write(
        "models.fabro",
        r#"digraph M {
            graph [goal="g", model_stylesheet="* { model: small; } .coding { model: big; } #review { model: best; }"]
            start [shape=Mdiamond]
            exit [shape=Msquare]
            subgraph cluster_c { label="Coding"; implement [prompt="do it"] }
            review [shape=tab, prompt="review", class="coding"]
            plan [prompt="plan", model="mine"]
            start -> plan -> implement -> review -> exit
        }"#,
    );
    let run = sb.run(&["graph", "--json", "models.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    let g: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let node = |id: &str| {
        g["nodes"]
            .as_array()
            .and_then(|n| n.iter().find(|n| n["id"] == id))
            .cloned()
            .expect("node")
    };
    assert_eq!(node("implement")["handler"], "agent");
    assert_eq!(node("implement")["classes"], serde_json::json!(["coding"]));
    assert_eq!(
        node("implement")["attrs"]["model"],
        "big",
        "class beats universal"
    );
    assert_eq!(node("review")["handler"], "prompt");
    assert_eq!(node("review")["attrs"]["model"], "best", "id beats class");
    assert_eq!(
        node("plan")["attrs"]["model"],
        "mine",
        "explicit attribute wins"
    );
    assert!(
        node("start")["attrs"].get("model").is_none(),
        "only LLM nodes are styled"
    );
    assert_eq!(g["start"], "start");
    assert_eq!(g["exit"], "exit");
}

#[test]
fn graph_dot_output_validates_to_the_same_summary() {
    let sb = Sandbox::new();
    sb.write("fix.fabro", VALID);
    let run = sb.run(&["graph", "fix.fabro"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("digraph Fix {"), "{}", run.stdout);
    sb.write("printed.fabro", &run.stdout);
    let again = sb.run(&["validate", "printed.fabro"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.stdout.trim(), "Workflow: Fix (4 nodes, 4 edges)");
}

#[test]
fn graph_still_prints_an_invalid_workflow_but_exits_one() {
    let sb = Sandbox::new();
    sb.write("typo.fabro", TYPO);
    let run = sb.run(&["graph", "typo.fabro"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("digraph Typo {"), "{}", run.stdout);
    assert!(
        run.stderr.contains("error[undeclared_node]"),
        "{}",
        run.stderr
    );
    let unparsable = sb.write("bad.fabro", "digraph Bad { a -- b }");
    let run = sb.run(&["graph", unparsable.to_str().expect("utf-8 path")]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "nothing to print: {}", run.stdout);
    assert!(run.stderr.contains("error[syntax]"), "{}", run.stderr);
}

#[test]
fn help_and_version_work() {
    let sb = Sandbox::new();
    let help = sb.run(&["--help"]);
    assert_eq!(help.code, 0);
    assert!(
        help.stdout.contains("validate") && help.stdout.contains("graph"),
        "{}",
        help.stdout
    );
    let version = sb.run(&["--version"]);
    assert_eq!(version.code, 0);
    assert!(version.stdout.starts_with("weft "), "{}", version.stdout);
}
