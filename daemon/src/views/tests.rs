use std::path::PathBuf;
use std::time::Instant;

use super::*;
use crate::ipc::protocol::RunList;
use crate::model::EventKind;
use crate::model::RunStatus;
use crate::store::{NewRun, QuestionStatus, StageCommit};

fn home() -> (tempfile::TempDir, Home) {
    let temp = tempfile::tempdir().expect("temp dir");
    let home = Home::at(temp.path().join("home"));
    (temp, home)
}

fn new_run(home: &Home, id: &str, workflow: &str, goal: &str, created_at: &str) -> NewRun {
    let dir = RunDir::create(&home.runs_dir(), id).expect("run dir");
    NewRun {
        id: id.into(),
        workflow_name: workflow.into(),
        workflow_path: Some(PathBuf::from(format!("/work/{workflow}.fabro"))),
        goal: Some(goal.into()),
        run_dir: dir.path().to_path_buf(),
        work_dir: PathBuf::from("/work"),
        inputs: serde_json::Map::new(),
        options: serde_json::json!({"auto_approve": true, "seed": 7, "env": [["SECRET", "x"]]}),
        labels: vec![format!("{workflow}-label")],
        node_count: 3,
        edge_count: 2,
        created_at: created_at.into(),
    }
}

/// Records a finished command stage `node@visit` with its output files.
fn stage(store: &mut Store, home: &Home, run_id: &str, node: &str, visit: u32, stdout: &str) {
    store
        .stage_started(run_id, node, visit, "command")
        .expect("stage started");
    let record = store.run(run_id).expect("read").expect("run exists");
    let dir = RunDir::open(record.run_dir);
    let folder = dir.ensure_node_dir(node, visit).expect("node dir");
    std::fs::write(folder.join("stdout.log"), stdout).expect("stdout");
    std::fs::write(folder.join("stderr.log"), "warning: careful\n").expect("stderr");
    std::fs::write(
        folder.join("script_invocation.json"),
        r#"{"command": "make test", "language": "shell"}"#,
    )
    .expect("invocation");
    std::fs::write(folder.join("status.json"), r#"{"status": "succeeded"}"#).expect("status");
    let _ = home;
    store
        .commit_stage(&StageCommit {
            run_id,
            node_id: node,
            visit,
            status: "succeeded",
            attempts: 1,
            duration_ms: 5,
            failure_reason: None,
            outcome: serde_json::json!({"status": "succeeded"}),
            events: vec![(
                EventKind::RunNotice {
                    message: format!("{node} done"),
                },
                Some((node, visit)),
            )],
            checkpoint: "{}".into(),
            files: None,
        })
        .expect("commit");
}

fn question(store: &mut Store, id: &str, run_id: &str, status: QuestionStatus) {
    store
        .insert_question(&QuestionRecord {
            id: id.into(),
            run_id: run_id.into(),
            node_id: "gate".into(),
            visit: 1,
            text: "Ship it?".into(),
            options: vec!["Yes".into(), "No".into()],
            freeform: false,
            status,
            answer: None,
            asked_at: "2026-01-01T00:00:00.000Z".into(),
            answered_at: None,
            permission: None,
        })
        .expect("question");
}

#[test]
fn a_home_without_a_database_lists_no_runs() {
    let (_temp, home) = home();
    let views = Views::open(&home).expect("opening an empty home is not an error");
    let page = views.runs(&RunList::default()).expect("runs");
    assert_eq!(page.total, 0);
    assert!(page.runs.is_empty());
    let err = views.run("01ABC").expect_err("no run can be found");
    assert_eq!(err.code(), "run.not_found");
}

#[test]
fn runs_filter_page_count_and_badge_pending_questions() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    for (i, workflow) in ["build", "deploy", "build", "build"].iter().enumerate() {
        let id = format!("01RUN{i}");
        let created = format!("2026-01-0{}T00:00:00.000Z", i + 1);
        let goal = if i == 3 {
            "Fix the FLAKY test"
        } else {
            "routine"
        };
        store
            .create_run(&new_run(&home, &id, workflow, goal, &created))
            .expect("create");
    }
    store
        .set_status("01RUN2", RunStatus::Failed, Some("boom"))
        .expect("status");
    question(&mut store, "q1", "01RUN3", QuestionStatus::Pending);
    question(&mut store, "q2", "01RUN3", QuestionStatus::Pending);
    question(&mut store, "q3", "01RUN1", QuestionStatus::Answered);

    let views = Views::open(&home).expect("views");
    let all = views.runs(&RunList::default()).expect("runs");
    let ids: Vec<&str> = all.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["01RUN3", "01RUN2", "01RUN1", "01RUN0"],
        "newest first"
    );
    assert_eq!(all.total, 4);
    assert_eq!(
        all.open_questions,
        BTreeMap::from([("01RUN3".to_string(), 2)]),
        "only pending questions count, and runs without any are absent"
    );

    let page = views
        .runs(&RunList {
            workflow: Some("build".into()),
            limit: Some(1),
            offset: Some(1),
            ..RunList::default()
        })
        .expect("page");
    assert_eq!(page.total, 3, "total counts every match, not the page");
    assert_eq!(page.runs.len(), 1);
    assert_eq!(page.runs[0].id, "01RUN2");

    let failed = views
        .runs(&RunList {
            status: Some(RunStatus::Failed),
            ..RunList::default()
        })
        .expect("failed");
    assert_eq!(failed.total, 1);

    let text = views
        .runs(&RunList {
            text: Some("flaky".into()),
            ..RunList::default()
        })
        .expect("text");
    assert_eq!(text.runs.len(), 1, "text matches the goal ignoring case");
    assert_eq!(text.runs[0].id, "01RUN3");

    let label = views
        .runs(&RunList {
            label: Some("deploy-label".into()),
            ..RunList::default()
        })
        .expect("label");
    assert_eq!(label.total, 1, "label filters in SQL too");
    assert_eq!(label.runs[0].id, "01RUN1");
}

/// Thirty runs, newest last; twelve carry `release`, spread among the
/// others (every run whose number ends in 0, 2, 5 or 7); `R27`, a release,
/// is archived.
fn thirty_runs_twelve_released(home: &Home) -> Vec<String> {
    let mut store = Store::open(home).expect("store");
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = format!("R{i:02}");
        let mut run = new_run(
            home,
            &id,
            "ship",
            "goal",
            &format!("2026-01-01T00:00:{i:02}.000Z"),
        );
        run.labels = if [0, 2, 5, 7].contains(&(i % 10)) {
            vec!["release".into()]
        } else {
            vec!["nightly".into()]
        };
        store.create_run(&run).expect("create");
        ids.push(id);
    }
    store.set_archived("R27", true).expect("archive");
    ids
}

#[test]
fn a_labelled_page_comes_back_full_and_the_total_counts_every_labelled_run() {
    let (_temp, home) = home();
    thirty_runs_twelve_released(&home);
    let views = Views::open(&home).expect("views");
    let page = |offset| {
        views
            .runs(&RunList {
                label: Some("release".into()),
                limit: Some(5),
                offset: Some(offset),
                ..RunList::default()
            })
            .expect("runs")
    };
    let ids = |page: &RunsPage| -> Vec<String> { page.runs.iter().map(|r| r.id.clone()).collect() };
    let first = page(0);
    assert_eq!(
        ids(&first),
        ["R27", "R25", "R22", "R20", "R17"],
        "five releases, newest first, although the five newest runs hold two"
    );
    assert_eq!(
        first.total, 12,
        "the total counts every release, not the page"
    );
    assert_eq!(ids(&page(5)), ["R15", "R12", "R10", "R07", "R05"]);
    let last = page(10);
    assert_eq!(ids(&last), ["R02", "R00"], "the rest");
    assert_eq!(last.total, 12);
}

#[test]
fn archived_runs_are_listed_only_when_asked_for() {
    let (_temp, home) = home();
    thirty_runs_twelve_released(&home);
    let views = Views::open(&home).expect("views");
    let runs = |archived, label: Option<&str>| {
        views
            .runs(&RunList {
                archived,
                label: label.map(str::to_string),
                limit: Some(5),
                ..RunList::default()
            })
            .expect("runs")
    };
    let hidden = runs(Some(false), Some("release"));
    let ids: Vec<&str> = hidden.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        ["R25", "R22", "R20", "R17", "R15"],
        "the archived release is left out before the page is cut"
    );
    assert_eq!(hidden.total, 11);
    let only = runs(Some(true), None);
    assert_eq!(only.runs.len(), 1);
    assert_eq!(
        (only.runs[0].id.as_str(), only.runs[0].archived),
        ("R27", true)
    );
    assert_eq!(only.total, 1);
    assert_eq!(runs(None, None).total, 30, "absent: archived or not");
    assert_eq!(runs(Some(false), None).total, 29);
}

#[test]
fn run_view_gathers_stages_questions_graph_and_options_without_env() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let run = new_run(&home, "01VIEW", "build", "g", "2026-01-01T00:00:00.000Z");
    std::fs::write(run.run_dir.join("graph.fabro"), "digraph build {}").expect("graph");
    store.create_run(&run).expect("create");
    stage(&mut store, &home, "01VIEW", "test", 1, "ok\n");
    stage(&mut store, &home, "01VIEW", "test", 2, "ok again\n");
    question(&mut store, "q1", "01VIEW", QuestionStatus::Answered);

    let views = Views::open(&home).expect("views");
    let view = views.run("01vi").expect("found by a lower-case prefix");
    assert_eq!(view.run.id, "01VIEW");
    assert_eq!(view.graph_source, "digraph build {}");
    assert_eq!(view.stages.len(), 2);
    assert_eq!(view.questions.len(), 1, "answered questions are listed too");
    assert!(view.options.auto_approve);
    assert_eq!(view.options.seed, Some(7));
    let json = serde_json::to_string(&view).expect("serialises");
    assert!(
        !json.contains("SECRET"),
        "the stored env never reaches the app"
    );

    let events = views.events("01VIEW", 0, 1).expect("events");
    assert_eq!(events.len(), 1, "the limit holds");
    let rest = views.events("01VIEW", events[0].seq, 100).expect("events");
    assert_eq!(rest.len(), 1, "after_seq skips what was seen");
}

#[test]
fn stage_files_read_the_stage_folder_and_cut_long_logs_at_their_end() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let run = new_run(&home, "01FILES", "build", "g", "2026-01-01T00:00:00.000Z");
    store.create_run(&run).expect("create");
    let long = "x".repeat(100) + "\n";
    let mut big = long.repeat((STAGE_TEXT_MAX as usize / long.len()) + 10);
    big.push_str("the last line\n");
    stage(&mut store, &home, "01FILES", "build", 1, &big);

    let views = Views::open(&home).expect("views");
    let files = views.stage_files("01FILES", "build", 1).expect("files");
    let stdout = files.stdout.expect("stdout was written");
    assert!(stdout.len() as u64 <= STAGE_TEXT_MAX);
    assert!(
        stdout.ends_with("the last line\n"),
        "a cut log keeps its end"
    );
    assert!(stdout.starts_with('x'), "and starts at a whole line");
    assert_eq!(files.truncated, ["stdout"]);
    assert_eq!(files.stderr.as_deref(), Some("warning: careful\n"));
    assert_eq!(files.script.as_deref(), Some("make test"));
    assert_eq!(
        files.status,
        Some(serde_json::json!({"status": "succeeded"}))
    );
    assert_eq!(files.prompt, None, "a command stage has no prompt");

    let none = views.stage_files("01FILES", "never", 1).expect("files");
    assert_eq!(none, StageFiles::default());
}

#[test]
fn stage_files_not_written_yet_come_from_the_stage_s_commit() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let run = new_run(&home, "01LATER", "build", "g", "2026-01-01T00:00:00.000Z");
    store.create_run(&run).expect("create");
    store
        .stage_started("01LATER", "build", 1, "command")
        .expect("stage started");
    let files: crate::store::StageFiles = [
        (
            "status.json".to_string(),
            Some(r#"{"status": "failed"}"#.to_string()),
        ),
        (
            "script_invocation.json".to_string(),
            Some(r#"{"command": "cargo test"}"#.to_string()),
        ),
    ]
    .into_iter()
    .collect();
    store
        .commit_stage(&StageCommit {
            run_id: "01LATER",
            node_id: "build",
            visit: 1,
            status: "failed",
            attempts: 1,
            duration_ms: 5,
            failure_reason: None,
            outcome: serde_json::json!({"status": "failed"}),
            events: Vec::new(),
            checkpoint: "{}".into(),
            files: Some(&files),
        })
        .expect("commit");
    // The writer has not written them: the stage's folder does not exist.
    let views = Views::open(&home).expect("views");
    let shown = views.stage_files("01LATER", "build", 1).expect("files");
    assert_eq!(shown.status, Some(serde_json::json!({"status": "failed"})));
    assert_eq!(shown.script.as_deref(), Some("cargo test"));
}

#[test]
fn search_logs_finds_lines_in_every_stage_ignoring_case() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    let run = new_run(&home, "01SEARCH", "build", "g", "2026-01-01T00:00:00.000Z");
    store.create_run(&run).expect("create");
    stage(
        &mut store,
        &home,
        "01SEARCH",
        "a",
        1,
        "one\nERROR: disk full\nthree\n",
    );
    stage(
        &mut store,
        &home,
        "01SEARCH",
        "b",
        2,
        "fine\nan error again\n",
    );

    let views = Views::open(&home).expect("views");
    let found = views.search_logs("01SEARCH", "error", 100).expect("search");
    let summary: Vec<(String, u32, LogStream, u32)> = found
        .iter()
        .map(|m| (m.node_id.clone(), m.visit, m.stream, m.line_number))
        .collect();
    assert_eq!(
        summary,
        [
            ("a".to_string(), 1, LogStream::Stdout, 2),
            ("b".to_string(), 2, LogStream::Stdout, 2),
        ]
    );
    assert_eq!(found[0].line, "ERROR: disk full");
    assert_eq!(
        views
            .search_logs("01SEARCH", "careful", 1)
            .expect("search")
            .len(),
        1,
        "the limit holds (stderr of both stages matches)"
    );
    assert!(
        views
            .search_logs("01SEARCH", "", 10)
            .expect("search")
            .is_empty()
    );
}

#[test]
fn the_run_list_of_ten_thousand_runs_pages_fast() {
    let (_temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    store
        .in_transaction(|store| {
            let runs_dir = home.runs_dir();
            for i in 0..10_000 {
                let id = format!("01BULK{i:05}");
                let workflow = if i % 2 == 0 { "even" } else { "odd" };
                let run = NewRun {
                    id: id.clone(),
                    workflow_name: workflow.into(),
                    workflow_path: None,
                    goal: Some(format!("goal number {i}")),
                    run_dir: runs_dir.join(&id),
                    work_dir: PathBuf::from("/work"),
                    inputs: serde_json::Map::new(),
                    options: serde_json::Value::Null,
                    labels: vec![],
                    node_count: 3,
                    edge_count: 2,
                    created_at: format!("2026-01-01T00:00:{:02}.{:03}Z", i / 1000, i % 1000),
                };
                store.create_run(&run)?;
            }
            Ok(())
        })
        .expect("bulk insert");

    let views = Views::open(&home).expect("views");
    let started = Instant::now();
    let page = views
        .runs(&RunList {
            workflow: Some("odd".into()),
            text: Some("NUMBER 9".into()),
            limit: Some(100),
            offset: Some(10),
            ..RunList::default()
        })
        .expect("runs");
    let elapsed = started.elapsed();
    assert_eq!(page.total, 556, "odd runs whose goal holds `number 9`");
    assert_eq!(page.runs.len(), 100);
    assert_eq!(
        page.runs[0].id, "01BULK09979",
        "newest first after the offset (9999, 9997, … skipped)"
    );
    assert!(
        elapsed.as_millis() < 500,
        "a filtered page of 10,000 runs takes {elapsed:?}; it must feel instant"
    );
}

#[test]
fn the_notification_arguments_name_the_question_to_open() {
    let link = DeepLink::from_args(["--run", "01R", "--question", "q1"]).expect("valid");
    assert_eq!(link.as_ref().map(|l| l.path()), Some("run/01R/question/q1"));
    let swapped = DeepLink::from_args(["--question=q1", "--run=01R"]).expect("valid");
    assert_eq!(swapped, link, "order and `=` do not matter");
    assert_eq!(
        DeepLink::from_args(["--run", "01R"]),
        Ok(None),
        "both are needed"
    );
    assert_eq!(
        DeepLink::from_args(["--run", "--question", "q1"]),
        Ok(None),
        "a flag is not a value"
    );
    assert_eq!(DeepLink::from_args(Vec::<String>::new()), Ok(None));
    assert!(
        DeepLink::from_args(["--run", "01R", "--question", "q/1"]).is_err(),
        "the old flags are checked as ids too"
    );
}

#[test]
fn a_link_argument_opens_its_place_and_a_bad_one_is_an_error() {
    let link = DeepLink::from_args(["weft://run/01R/stage/build@2/output"]).expect("valid");
    assert_eq!(
        link.map(|l| l.path().to_string()),
        Some("run/01R/stage/build@2/output".to_string())
    );
    let err = DeepLink::from_args(["weft://run/01R/stage/build@0"]).expect_err("visit 0");
    assert!(err.contains("from 1"), "{err}");
}

#[test]
fn every_form_of_the_grammar_reads_back_to_itself() {
    let paths = [
        "runs",
        "gates",
        "launch",
        "spending",
        "retros",
        "run/01RUN",
        "run/01RUN/timeline",
        "run/01RUN/events",
        "run/01RUN/retro",
        "run/01RUN/cost",
        "run/01RUN/stage/build",
        "run/01RUN/stage/build@3",
        "run/01RUN/stage/build@3/transcript",
        "run/01RUN/stage/build@1/output",
        "run/01RUN/stage/build@1/files",
        "run/01RUN/stage/build@1/artifacts",
        "run/01RUN/stage/build@1/routing",
        "run/01RUN/stage/build@1/context",
        "run/01RUN/question/01Q-a_b",
    ];
    for path in paths {
        let link =
            DeepLink::parse(&format!("weft://{path}")).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(link.path(), path);
        assert_eq!(link.url(), format!("weft://{path}"));
        assert_eq!(DeepLink::parse(path), Ok(link.clone()), "PATH alone");
        assert_eq!(DeepLink::parse(&link.url()), Ok(link), "round trip");
    }
}

#[test]
fn the_constructors_write_the_canonical_links() {
    let url = |l: Result<DeepLink, String>| l.expect("valid").url();
    assert_eq!(url(DeepLink::screen("gates")), "weft://gates");
    assert_eq!(url(DeepLink::run("01R")), "weft://run/01R");
    assert_eq!(url(DeepLink::run_bar("01R", "cost")), "weft://run/01R/cost");
    assert_eq!(
        url(DeepLink::stage("01R", "build", None, None)),
        "weft://run/01R/stage/build"
    );
    assert_eq!(
        url(DeepLink::stage("01R", "build", Some(2), Some("routing"))),
        "weft://run/01R/stage/build@2/routing"
    );
    assert_eq!(
        url(DeepLink::question("01R", "01Q")),
        "weft://run/01R/question/01Q"
    );
    assert!(
        DeepLink::stage("01R", "build", None, Some("output")).is_err(),
        "a tab needs a visit"
    );
    assert!(DeepLink::stage("01R", "build", Some(0), None).is_err());
    assert!(
        DeepLink::run_bar("01R", "output").is_err(),
        "a stage tab is not a bar tab"
    );
    assert!(DeepLink::screen("settings").is_err());
}

#[test]
fn node_ids_are_percent_encoded_and_any_spelling_reads_the_same() {
    let link = DeepLink::stage("01R", "review step@home/ü", Some(1), None).expect("any DOT id");
    assert_eq!(link.path(), "run/01R/stage/review%20step%40home%2F%C3%BC@1");
    let back = DeepLink::parse(&link.url()).expect("reads back");
    assert_eq!(back, link);
    // Lower-case escapes, an escaped safe character and the scheme's case
    // are spellings of the same place.
    assert_eq!(
        DeepLink::parse("WEFT://run/01R/stage/review%20step%40home%2f%c3%bc@01")
            .map(|l| l.path().to_string()),
        Ok(link.path().to_string())
    );
    assert_eq!(
        DeepLink::parse("weft://run/01R/stage/%62uild").map(|l| l.path().to_string()),
        Ok("run/01R/stage/build".into())
    );
    assert_eq!(
        DeepLink::parse("weft://runs/").map(|l| l.path().to_string()),
        Ok("runs".into()),
        "the trailing slash a launcher adds"
    );
}

#[test]
fn the_legacy_ui_paths_read_as_their_new_forms() {
    let path = |text: &str| DeepLink::parse(text).map(|l| l.path().to_string());
    assert_eq!(path("runs/01R"), Ok("run/01R".into()));
    assert_eq!(
        path("runs/01R/question/Q1"),
        Ok("run/01R/question/Q1".into())
    );
    assert_eq!(
        path("runs/01R/node/build"),
        Ok("run/01R/stage/build".into())
    );
}

#[test]
fn hostile_links_are_refused_with_a_reason_never_a_panic() {
    let long_run = "R".repeat(129);
    let huge = format!("weft://run/01R/stage/{}", "n".repeat(3000));
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "no place"),
        ("weft://".into(), "no place"),
        ("weft:///runs".into(), "not a place"),
        ("https://example.com/runs".into(), "not a weft:// link"),
        ("weft://settings".into(), "not a place"),
        ("weft://run".into(), "not a place"),
        ("weft://run/".into(), "not a place"),
        ("weft://run//stage/x".into(), "id is empty"),
        (format!("weft://run/{long_run}"), "at most 128"),
        ("weft://run/01R%2F..%2Fx".into(), "not a run id"),
        ("weft://run/01R/../../etc".into(), "not a place"),
        ("weft://run/01R/stage/x@".into(), "not a number"),
        ("weft://run/01R/stage/x@-1".into(), "not a number"),
        ("weft://run/01R/stage/x@0".into(), "from 1"),
        ("weft://run/01R/stage/x@99999999999".into(), "too large"),
        ("weft://run/01R/stage/x@1@2".into(), "percent-encoded"),
        ("weft://run/01R/stage/x/output".into(), "needs a visit"),
        (
            "weft://run/01R/stage/x@1/timeline".into(),
            "not a stage tab",
        ),
        ("weft://run/01R/transcript".into(), "not a run bar tab"),
        ("weft://run/01R/stage/x@1/output/more".into(), "not a place"),
        ("weft://run/01R/stage/%".into(), "two hex digits"),
        ("weft://run/01R/stage/%G1".into(), "two hex digits"),
        ("weft://run/01R/stage/%+1".into(), "two hex digits"),
        ("weft://run/01R/stage/%FF".into(), "UTF-8"),
        ("weft://run/01R/stage/a%0Ab".into(), "control character"),
        ("weft://run/01R/stage/a b".into(), "percent-encoded"),
        ("weft://run/01R?x=1".into(), "percent-encoded"),
        ("weft://runs#top".into(), "percent-encoded"),
        ("weft://run/01R/question/Q%00".into(), "not a question id"),
        ("weft://run/01R/question/Q@1".into(), "percent-encoded"),
        ("weft://run/01R/stage/x%40@1".into(), "ok"),
        (huge, "at most 2048"),
        ("weft://run/01R/stage/é".into(), "percent-encoded"),
    ];
    for (text, why) in cases {
        let got = DeepLink::parse(&text);
        if why == "ok" {
            assert!(got.is_ok(), "{text}: {got:?}");
            continue;
        }
        let err = got.expect_err(&text);
        assert!(err.contains(why), "{text}: `{err}` should say {why}");
        assert!(err.len() < 600, "the error stays short: {err}");
    }
    // A node id that fits in a link but whose encoding does not.
    let wide = "é".repeat(400);
    assert!(DeepLink::stage("01R", &wide, None, None).is_err());
}

#[test]
fn a_link_read_from_json_is_checked_and_kept_canonical() {
    let read = |json: &str| serde_json::from_str::<DeepLink>(json);
    assert_eq!(
        read(r#"{"path": "WEFT://run/01R/stage/%62uild@01/"}"#)
            .ok()
            .map(|l| l.path().to_string()),
        Some("run/01R/stage/build@1".to_string()),
        "a spelling of a place reads as its canonical path"
    );
    for hostile in [
        r#"{"path": "run/../../etc/passwd"}"#,
        r#"{"path": "run/01R/stage/a%E2%80%AEb"}"#,
        r#"{"path": "settings"}"#,
        r#"{"path": ""}"#,
        r#"{"path": "runs", "more": 1}"#,
        r#"{}"#,
    ] {
        assert!(read(hostile).is_err(), "{hostile} is refused");
    }
    let link = DeepLink::stage("01R", "build step", Some(2), Some("output")).expect("valid");
    let json = serde_json::to_string(&link).expect("serializes");
    assert_eq!(
        json, r#"{"path":"run/01R/stage/build%20step@2/output"}"#,
        "the wire shape is unchanged"
    );
    assert_eq!(read(&json).ok(), Some(link), "round trip");
}

#[test]
fn node_ids_with_invisible_format_characters_are_refused() {
    for node in [
        "a\u{202E}b",
        "a\u{200B}b",
        "\u{FEFF}build",
        "a\u{2066}b",
        "a\u{00AD}b",
        "a\u{E0041}b",
    ] {
        let err = DeepLink::stage("01R", node, None, None).expect_err(node);
        assert!(err.contains("format character"), "{node:?}: {err}");
        let encoded: String = node.bytes().map(|b| format!("%{b:02X}")).collect();
        let err = DeepLink::parse(&format!("weft://run/01R/stage/{encoded}")).expect_err(node);
        assert!(
            err.contains("format character"),
            "{node:?} in a link: {err}"
        );
    }
    assert!(
        DeepLink::stage("01R", "review-é-步", None, None).is_ok(),
        "other non-ASCII letters are node ids"
    );
}

#[test]
fn a_stage_argument_is_read_as_a_link_reads_it() {
    use crate::model::link::node_and_visit;
    assert_eq!(node_and_visit("build"), Ok(("build", None)));
    assert_eq!(node_and_visit("build@2"), Ok(("build", Some(2))));
    assert_eq!(node_and_visit("build@02"), Ok(("build", Some(2))));
    assert_eq!(
        node_and_visit("me@home@1"),
        Ok(("me@home", Some(1))),
        "the last `@` separates the visit"
    );
    for bad in [
        "build@+1", "build@-1", "build@ 1", "build@", "build@0", "me@home",
    ] {
        assert!(node_and_visit(bad).is_err(), "{bad}");
        let link = format!("weft://run/01R/stage/{bad}");
        assert!(DeepLink::parse(&link).is_err(), "{link}");
    }
}

#[test]
fn a_link_is_told_by_its_scheme_in_any_case() {
    assert!(DeepLink::is_link("weft://runs"));
    assert!(DeepLink::is_link("WeFt://x"));
    assert!(DeepLink::is_link("weft://"));
    assert!(!DeepLink::is_link("weft:/runs"));
    assert!(!DeepLink::is_link("runs"));
    assert!(!DeepLink::is_link("wef"));
    assert!(!DeepLink::is_link("weft:/é"), "no panic at a char boundary");
}

#[test]
fn app_errors_keep_the_stable_code() {
    let e = AppError::from(StoreError::RunNotFound("01X".into()));
    assert_eq!(e.code, "run.not_found", "the UI matches on the code");
    assert!(e.message.contains("01X"));
    let socket = PathBuf::from("/tmp/none.sock");
    let e = AppError::from(crate::ipc::client::ClientError::DaemonNotRunning { socket });
    assert_eq!(
        e.code, "daemon.not_running",
        "so the UI can offer to start it"
    );
}

#[test]
fn app_errors_carry_the_paths_an_apply_refusal_names() {
    use crate::ipc::protocol::RpcError;
    use serde_json::{Value, json};
    let dirty = RpcError::new(
        Code::ApplyDirty,
        "the checkout has uncommitted changes (a.txt, b/c.rs)",
    )
    .with_detail("paths", json!(["a.txt", "b/c.rs", 7]));
    let e = AppError::from(crate::ipc::client::ClientError::Rpc(dirty));
    assert_eq!(e.code, "apply.dirty");
    assert_eq!(
        e.paths,
        ["a.txt", "b/c.rs"],
        "the UI lists the dirty files; what is not a string is no path"
    );
    let many: Vec<Value> = (0..500).map(|i| Value::String(format!("f{i}"))).collect();
    let flood =
        RpcError::new(Code::ApplyConflicts, "conflicts").with_detail("paths", Value::Array(many));
    let e = AppError::from(crate::ipc::client::ClientError::Rpc(flood));
    assert_eq!(e.paths.len(), MAX_ERROR_PATHS, "a peer's list is bounded");
    let plain = AppError::from(crate::ipc::client::ClientError::Rpc(RpcError::new(
        Code::RunNotFound,
        "no run",
    )));
    assert!(plain.paths.is_empty());
    assert_eq!(
        serde_json::to_value(&plain).expect("json"),
        json!({"code": "run.not_found", "message": "no run"}),
        "an error without paths has none on the wire"
    );
}

/// A home with run `01ART` that captured `out/report.md` twice (the
/// second version wins), `shot.png` and `data.bin`.
fn home_with_artifacts() -> (tempfile::TempDir, Home) {
    use crate::store::{Blobs, NewArtifact};
    let (temp, home) = home();
    let mut store = Store::open(&home).expect("store");
    store
        .create_run(&new_run(
            &home,
            "01ART",
            "build",
            "g",
            "2026-01-01T00:00:00.000Z",
        ))
        .expect("run");
    let blobs = Blobs::new(&home);
    let capture = |store: &mut Store, path: &str, bytes: &[u8]| {
        let (blob, _) = blobs.put(bytes).expect("blob");
        store
            .record_artifact(&NewArtifact {
                run_id: "01ART",
                node_id: "make",
                visit: 1,
                path,
                blob: &blob,
                size: bytes.len() as u64,
            })
            .expect("artifact");
    };
    capture(&mut store, "out/report.md", b"# old\n");
    capture(&mut store, "out/report.md", b"# Report\n\xffok\n");
    capture(&mut store, "shot.png", b"\x89PNG");
    capture(&mut store, "data.bin", b"\0\x01");
    (temp, home)
}

#[test]
fn artifact_reads_the_latest_capture_as_text_or_base64() {
    let (_temp, home) = home_with_artifacts();
    let views = Views::open(&home).expect("views");

    let md = views.artifact("01ART", "out/report.md").expect("md");
    assert_eq!(md.media, "text/markdown");
    assert_eq!(
        md.text.as_deref(),
        Some("# Report\n\u{fffd}ok\n"),
        "the latest version, lossy"
    );
    assert_eq!(md.size, 13);
    assert!(!md.truncated && md.base64.is_none());

    let png = views.artifact("01A", "shot.png").expect("png");
    assert_eq!(png.media, "image/png");
    assert_eq!(png.base64.as_deref(), Some("iVBORw=="));
    assert!(png.text.is_none());

    let bin = views.artifact("01ART", "data.bin").expect("bin");
    assert_eq!(bin.media, "application/octet-stream");
    assert!(bin.text.is_none() && bin.base64.is_none());

    let missing = views.artifact("01ART", "missing.txt").unwrap_err();
    assert_eq!(
        missing.code(),
        "artifact.not_found",
        "the UI tells a missing artifact from a failed read by this code"
    );
    assert_eq!(
        missing.to_string(),
        "run 01ART captured no artifact `missing.txt`"
    );
    assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64_encode(b"fo"), "Zm8=");
    assert_eq!(artifact_media("a/B.JSON"), "application/json");
}

#[test]
fn export_writes_the_latest_capture_under_the_run_directory() {
    let (_temp, home) = home_with_artifacts();
    let views = Views::open(&home).expect("views");
    let run_dir = views.run_dir("01ART").expect("run dir");

    let file = views
        .export_artifact("01A", "out/report.md")
        .expect("export");
    assert_eq!(file, run_dir.path().join("artifacts/out/report.md"));
    assert_eq!(
        std::fs::read(&file).expect("exported"),
        b"# Report\n\xffok\n",
        "the latest version, byte for byte"
    );

    // Someone edits the exported copy: revealing again restores the capture.
    std::fs::write(&file, b"edited").expect("edit");
    views
        .export_artifact("01ART", "out/report.md")
        .expect("again");
    assert_eq!(
        std::fs::read(&file).expect("restored"),
        b"# Report\n\xffok\n"
    );

    let missing = views.export_artifact("01ART", "nope.txt").unwrap_err();
    assert_eq!(missing.code(), "artifact.not_found");
}

#[test]
fn export_refuses_a_blob_whose_bytes_do_not_match_their_hash() {
    let (_temp, home) = home_with_artifacts();
    let views = Views::open(&home).expect("views");
    let png = {
        let store = Store::open(&home).expect("store");
        store
            .artifacts("01ART")
            .expect("artifacts")
            .into_iter()
            .find(|a| a.path == "shot.png")
            .expect("png")
    };
    let blob = png.blob().expect("blob ref");
    let stored = crate::store::Blobs::new(&home).path(&blob);
    std::fs::write(&stored, b"not the png").expect("damage the blob");

    let err = views.export_artifact("01ART", "shot.png").unwrap_err();
    assert_eq!(err.code(), "blob.missing");
    let run_dir = views.run_dir("01ART").expect("run dir");
    assert!(
        !run_dir.path().join("artifacts/shot.png").exists(),
        "damaged bytes are never shown as the artifact"
    );
}

#[test]
fn attention_lists_the_oldest_pending_gates_and_counts_gates_and_active_runs() {
    let (_temp, home) = home();
    assert_eq!(
        Views::open(&home)
            .expect("views")
            .attention(10)
            .expect("an empty home"),
        Attention::default()
    );
    let mut store = Store::open(&home).expect("store");
    for (i, (workflow, status)) in [
        ("build", RunStatus::Running),
        ("deploy", RunStatus::Blocked),
        ("build", RunStatus::Failed),
        ("build", RunStatus::Queued),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("01RUN{i}");
        let created = format!("2026-01-0{}T00:00:00.000Z", i + 1);
        store
            .create_run(&new_run(&home, &id, workflow, "routine", &created))
            .expect("create");
        store.set_status(&id, status, None).expect("status");
    }
    question(&mut store, "q1", "01RUN1", QuestionStatus::Pending);
    question(&mut store, "q2", "01RUN1", QuestionStatus::Pending);
    question(&mut store, "q3", "01RUN2", QuestionStatus::Answered);

    let attention = Views::open(&home)
        .expect("views")
        .attention(1)
        .expect("attention");
    assert_eq!(
        attention,
        Attention {
            gates: vec![WaitingGate {
                run_id: "01RUN1".into(),
                question_id: "q1".into(),
                workflow: "deploy".into(),
                question: "Ship it?".into(),
            }],
            gates_total: 2,
            running: 1,
            active: 3,
        },
        "one gate listed of two pending; queued, running and blocked runs are active"
    );
}
