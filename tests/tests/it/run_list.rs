//! The run list's filters through each reader of the store's one run-list
//! query (`weft::store::RunFilter`): weftd's `run.list` over its socket,
//! and `weft ps` with and without the daemon. (The app's view is tested in
//! `daemon/src/views/tests.rs`.) Every filter applies before the page is
//! cut, so a filtered page is never short.
//!
//! The history is thirty finished runs recorded through the store's API
//! before any daemon starts (one writer at a time), so their statuses,
//! workflows, labels and order are known exactly.

use std::path::PathBuf;

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::store::{Home, NewRun, Store};
use weft_tests::{RawClient, Sandbox, Weftd};

/// How many runs the history holds.
const RUNS: usize = 30;

/// Run `i` of the history (0 oldest): every third is a `deploy` (the
/// others `build`), the twelve whose number ends in 0, 2, 5 or 7 carry
/// `release` (the others `nightly`), every fourth from 1 failed, run 7's
/// goal mentions a FLAKY test, and run 27 (a release) gets archived.
struct Spec {
    id: String,
    workflow: &'static str,
    label: &'static str,
    status: RunStatus,
    goal: &'static str,
}

fn spec(i: usize) -> Spec {
    Spec {
        id: format!("01JRUNLIST{i:02}00000000000000"),
        workflow: if i.is_multiple_of(3) {
            "deploy"
        } else {
            "build"
        },
        label: if [0, 2, 5, 7].contains(&(i % 10)) {
            "release"
        } else {
            "nightly"
        },
        status: if i % 4 == 1 {
            RunStatus::Failed
        } else {
            RunStatus::Succeeded
        },
        goal: if i == 7 {
            "Fix the FLAKY test"
        } else {
            "routine"
        },
    }
}

/// The archived run.
const ARCHIVED: usize = 27;

/// Records the history in `sb`'s home, run 27 unarchived; returns the ids,
/// oldest first.
fn record_history(sb: &Sandbox) -> Vec<String> {
    let home = Home::at(sb.path().join("home"));
    let mut store = Store::open(&home).unwrap_or_else(|e| panic!("cannot open the store: {e}"));
    (0..RUNS)
        .map(|i| {
            let s = spec(i);
            store
                .create_run(&NewRun {
                    id: s.id.clone(),
                    workflow_name: s.workflow.into(),
                    workflow_path: Some(sb.path().join(format!("{}.fabro", s.workflow))),
                    goal: Some(s.goal.into()),
                    run_dir: home.runs_dir().join(&s.id),
                    work_dir: PathBuf::from(sb.path()),
                    inputs: serde_json::Map::new(),
                    options: json!({}),
                    labels: vec![s.label.into()],
                    node_count: 2,
                    edge_count: 1,
                    created_at: format!("2026-01-01T00:00:{i:02}.000Z"),
                })
                .and_then(|()| store.set_status(&s.id, s.status, None))
                .unwrap_or_else(|e| panic!("cannot record run {i}: {e}"));
            s.id
        })
        .collect()
}

/// The ids of the runs `wanted` picks, newest first: what a filter must list.
fn newest_first(wanted: impl Fn(usize, &Spec) -> bool) -> Vec<String> {
    (0..RUNS)
        .rev()
        .map(|i| (i, spec(i)))
        .filter(|(i, s)| wanted(*i, s))
        .map(|(_, s)| s.id)
        .collect()
}

fn ids_in(listed: &Value) -> Vec<String> {
    listed
        .as_array()
        .unwrap_or_else(|| panic!("not a list of runs: {listed}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn run_list_applies_every_filter_before_the_page_over_the_socket() {
    let sb = Sandbox::new();
    let ids = record_history(&sb);
    let daemon = Weftd::start(&sb);
    let mut client = RawClient::connect(&daemon.socket());
    let archived = client.call(
        1,
        "run.archive",
        json!({"run": ids[ARCHIVED], "archived": true}),
    );
    assert_eq!(archived["result"]["archived"], true, "{archived}");
    let mut list = |params: Value| -> Vec<String> {
        let reply = client.call(2, "run.list", params.clone());
        assert!(reply["error"].is_null(), "run.list {params}: {reply}");
        ids_in(&reply["result"])
    };

    // Each filter alone.
    let cases: Vec<(Value, Vec<String>, &str)> = vec![
        (json!({}), newest_first(|_, _| true), "no filter"),
        (
            json!({"status": "failed"}),
            newest_first(|_, s| s.status == RunStatus::Failed),
            "status",
        ),
        (
            json!({"workflow": "deploy"}),
            newest_first(|_, s| s.workflow == "deploy"),
            "workflow",
        ),
        (
            json!({"workflow": "dep"}),
            vec![],
            "workflow is an exact name",
        ),
        (
            json!({"label": "release"}),
            newest_first(|_, s| s.label == "release"),
            "label",
        ),
        (json!({"label": "rel"}), vec![], "a label matches whole"),
        (
            json!({"text": "flaky"}),
            vec![ids[7].clone()],
            "text in the goal, any case",
        ),
        (
            json!({"text": "DEPLO"}),
            newest_first(|_, s| s.workflow == "deploy"),
            "text in the workflow name",
        ),
        (
            json!({"text": "runlist13"}),
            vec![ids[13].clone()],
            "text in the id",
        ),
        (
            json!({"archived": true}),
            vec![ids[ARCHIVED].clone()],
            "only archived",
        ),
        (
            json!({"archived": false}),
            newest_first(|i, _| i != ARCHIVED),
            "only unarchived",
        ),
        (
            json!({"limit": 3, "offset": 2}),
            newest_first(|_, _| true)[2..5].to_vec(),
            "a page",
        ),
    ];
    for (params, want, what) in cases {
        assert_eq!(list(params.clone()), want, "{what}: {params}");
    }

    // A labelled page comes back full: the five newest runs hold only two
    // releases, and the total is every release.
    let releases = newest_first(|_, s| s.label == "release");
    assert_eq!(releases.len(), 12);
    let page = |offset: u32| json!({"label": "release", "limit": 5, "offset": offset});
    assert_eq!(list(page(0)), [27, 25, 22, 20, 17].map(|i| ids[i].clone()));
    assert_eq!(list(page(5)), releases[5..10]);
    assert_eq!(list(page(10)), releases[10..], "the rest");
    assert_eq!(
        list(json!({"label": "release", "archived": false, "limit": 5})),
        [25, 22, 20, 17, 15].map(|i| ids[i].clone()),
        "the archived release is left out before the page is cut"
    );

    // Filters combine, then the page is cut.
    let combined = newest_first(|i, s| {
        s.workflow == "build"
            && s.label == "release"
            && s.status == RunStatus::Succeeded
            && i != ARCHIVED
    });
    assert!(combined.len() >= 4, "enough to page: {combined:?}");
    assert_eq!(
        list(json!({
            "workflow": "build", "label": "release", "status": "succeeded",
            "archived": false, "limit": 2, "offset": 1
        })),
        combined[1..3],
        "filters combine with AND"
    );
}

#[test]
fn weft_ps_filters_by_status_workflow_and_label_before_its_limit() {
    let sb = Sandbox::new();
    let ids = record_history(&sb);
    // Archived through the store: the CLI has no archive command, and
    // archiving hides a run from the app's list only, not from `weft ps`.
    Store::open(&Home::at(sb.path().join("home")))
        .and_then(|mut store| store.set_archived(&ids[ARCHIVED], true))
        .expect("archive");
    for no_daemon in [true, false] {
        let ps = |args: &[&str]| -> Vec<String> {
            let mut args = [&["ps", "--json"], args].concat();
            if no_daemon {
                args.push("--no-daemon");
            }
            let run = sb.run(&args);
            assert_eq!(run.code, 0, "{args:?}: {run:?}");
            let listed: Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {}", run.stdout));
            ids_in(&listed)
        };
        let how = if no_daemon { "the store" } else { "weftd" };
        assert_eq!(
            ps(&["--label", "release", "--limit", "5"]),
            [27, 25, 22, 20, 17].map(|i| ids[i].clone()),
            "a full page of releases from {how}, the archived one included"
        );
        assert_eq!(
            ps(&["--all", "--label", "release"]),
            newest_first(|_, s| s.label == "release"),
            "every release from {how}"
        );
        assert_eq!(
            ps(&["--all", "--status", "failed"]),
            newest_first(|_, s| s.status == RunStatus::Failed),
            "status, from {how}"
        );
        assert_eq!(
            ps(&["--all", "--workflow", "deploy"]),
            newest_first(|_, s| s.workflow == "deploy"),
            "workflow, from {how}"
        );
        assert_eq!(
            ps(&[
                "--all",
                "--workflow",
                "build",
                "--label",
                "release",
                "--status",
                "succeeded",
                "--limit",
                "3"
            ]),
            newest_first(|_, s| s.workflow == "build"
                && s.label == "release"
                && s.status == RunStatus::Succeeded)[..3],
            "filters combine before the limit, from {how}"
        );
        assert_eq!(
            ps(&["--all"]).len(),
            RUNS,
            "archived runs are listed too, from {how}"
        );
    }
}
