//! Naming runs: the short ids `weft ps` shows, `last` and `last~N`, and
//! the README's examples with more than one run in the store.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_tests::{Sandbox, json};

const QUICK: &str = r#"digraph Quick { start [shape=Mdiamond]; exit [shape=Msquare]
  say [shape=parallelogram, script="echo said $WEFT_RUN_ID"]
  start -> say -> exit }"#;

/// Runs QUICK `n` times at once (so that their ids share a long prefix)
/// and returns the run ids, oldest first.
fn runs_started_together(sb: &Sandbox, n: usize) -> Vec<String> {
    sb.write("quick.fabro", QUICK);
    let children: Vec<_> = (0..n)
        .map(|_| {
            sb.weft()
                .args(["run", "--no-daemon", "quick.fabro", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    let mut ids: Vec<String> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            json(&String::from_utf8_lossy(&out.stdout))["run_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

fn shared_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[test]
fn ps_shows_short_unique_ids_that_every_command_takes() {
    let sb = Sandbox::new();
    let ids = runs_started_together(&sb, 3);
    let table = sb.run(&["ps", "--no-daemon"]);
    assert_eq!(table.code, 0, "{table:?}");
    let shown: Vec<&str> = table
        .stdout
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert_eq!(shown.len(), 3, "{}", table.stdout);
    for short in &shown {
        let full = ids
            .iter()
            .find(|id| id.starts_with(short))
            .unwrap_or_else(|| panic!("`{short}` is a prefix of a run id: {ids:?}"));
        assert!(
            short.len() >= 8 && short.len() < full.len(),
            "short: {short}"
        );
        let longest_shared = ids
            .iter()
            .filter(|other| *other != full)
            .map(|other| shared_prefix(full, other))
            .max()
            .unwrap_or(0);
        assert!(
            short.len() > longest_shared,
            "`{short}` reaches past the {longest_shared} characters {full} shares with another run"
        );
        for args in [
            vec!["logs", short, "say"],
            vec!["logs", short, "say", "--no-daemon"],
        ] {
            let logs = sb.run(&args);
            assert_eq!(logs.code, 0, "{args:?}: {logs:?}");
            assert!(logs.stdout.contains(&format!("said {full}")), "{logs:?}");
        }
        let lower = short.to_lowercase();
        let events = sb.run(&["events", &lower, "--json", "--no-daemon"]);
        assert_eq!(events.code, 0, "{events:?}");
    }
}

#[test]
fn an_ambiguous_prefix_is_an_error_listing_the_candidates() {
    let sb = Sandbox::new();
    let ids = runs_started_together(&sb, 2);
    let prefix = &ids[0][..shared_prefix(&ids[0], &ids[1])];
    for args in [vec!["logs", prefix, "--no-daemon"], vec!["logs", prefix]] {
        let logs = sb.run(&args);
        assert_eq!(logs.code, 2, "{args:?}: {logs:?}");
        assert!(
            ids.iter().all(|id| logs.stderr.contains(id.as_str())),
            "{args:?}: both candidates are named: {}",
            logs.stderr
        );
    }
}

#[test]
fn last_and_last_n_name_the_newest_runs_and_the_readme_examples_work() {
    let sb = Sandbox::new();
    sb.write(
        "slow.fabro",
        r#"digraph Slow { start [shape=Mdiamond]; exit [shape=Msquare]
           wait [shape=parallelogram, script="echo $$ > wait.pid; while [ ! -f go ]; do sleep 0.02; done"]
           start -> wait -> exit }"#,
    );
    sb.write("quick.fabro", QUICK);
    // The older run is cancelled mid-stage; the newer one succeeds.
    let started = sb.run(&["run", "slow.fabro", "--detach", "--json"]);
    assert_eq!(started.code, 0, "{started:?}");
    let slow = json(&started.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sb.path().join("wait.pid").is_file() {
        assert!(Instant::now() < deadline, "the slow stage never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sb.run(&["cancel", "last"]).code, 0, "cancel takes `last`");
    let quick = sb.run(&["run", "quick.fabro", "--json"]);
    assert_eq!(quick.code, 0, "{quick:?}");
    let quick = json(&quick.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // README: `weft events last --follow`, then `weft resume` of a run.
    let events = sb.run(&["events", "last", "--follow", "--json"]);
    assert_eq!(events.code, 0, "{events:?}");
    assert!(
        events.stdout.lines().all(|l| l.contains(&quick)),
        "`last` is the newest run"
    );
    let earlier = sb.run(&["logs", "LAST~1"]);
    assert_eq!(earlier.code, 0, "{earlier:?}");
    assert!(earlier.stdout.contains("== wait@1"), "{}", earlier.stdout);
    sb.write("go", "");
    let resumed = sb.run(&["resume", "last~1", "--json"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(json(&resumed.stdout)["run_id"], slow.as_str());
    assert_eq!(json(&resumed.stdout)["status"], "succeeded");
    let beyond = sb.run(&["logs", "last~2"]);
    assert_eq!(beyond.code, 2, "{beyond:?}");
}

#[test]
fn ps_filters_by_label_and_limit_must_be_at_least_one() {
    let sb = Sandbox::new();
    sb.write("quick.fabro", QUICK);
    for label in ["env=prod", "env=dev"] {
        let run = sb.run(&["run", "--no-daemon", "quick.fabro", "--label", label]);
        assert_eq!(run.code, 0, "{run:?}");
    }
    for no_daemon in [true, false] {
        let mut args = vec!["ps", "--label", "env=prod", "--json"];
        if no_daemon {
            args.push("--no-daemon");
        }
        let listed = sb.run(&args);
        assert_eq!(listed.code, 0, "{listed:?}");
        let runs = json(&listed.stdout);
        let labels: Vec<&Value> = runs
            .as_array()
            .map(|a| a.iter().map(|r| &r["labels"]).collect())
            .unwrap_or_default();
        assert_eq!(labels, [&serde_json::json!(["env=prod"])], "{args:?}");
    }
    let one = sb.run(&["ps", "--limit", "1", "--json", "--no-daemon"]);
    assert_eq!(json(&one.stdout).as_array().map(Vec::len), Some(1));
    let zero = sb.run(&["ps", "--limit", "0", "--no-daemon"]);
    assert_eq!(zero.code, 2, "--limit 0 is refused: {zero:?}");
    assert!(zero.stderr.contains("--limit"), "{}", zero.stderr);
}
