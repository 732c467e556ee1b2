//! The engine, run in-process on small fixture workflows
//! (`tests/fixtures/engine/`), each test asserting the exact stage sequence
//! and final status. Everything is real — SQLite, the run directory, the
//! blob store, child processes — except the clock, which is fake so that
//! retry backoff and wait stages do not sleep (the harness, shared with the
//! prompt-node tests: `harness.rs`).

// A test that cannot set itself up should stop there, with the reason.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use weft::model::EventKind;
use weft::model::RunStatus;
use weft::store::{Home, Store};

use super::harness::{Options, Run, run, run_in, seq};

#[tokio::test]
async fn condition_match_beats_weight() {
    let r = run("condition_beats_weight.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "check", "conditioned", "exit"])
    );
    assert_eq!(r.status(), RunStatus::Succeeded);
}

#[tokio::test]
async fn weight_wins_then_the_lexically_first_target() {
    let r = run("weight_then_lexical.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "pick", "bravo", "exit"]));
}

#[tokio::test]
async fn random_selection_is_repeatable_for_a_seed_and_follows_the_weights() {
    let mut a_count = 0;
    for seed in 0..40 {
        let first = run(
            "random_selection.fabro",
            Options {
                seed: Some(seed),
                ..Options::default()
            },
        )
        .await;
        let again = run(
            "random_selection.fabro",
            Options {
                seed: Some(seed),
                ..Options::default()
            },
        )
        .await;
        assert_eq!(
            first.sequence(),
            again.sequence(),
            "seed {seed} must repeat its path"
        );
        if first.sequence().contains(&"path_a".to_string()) {
            a_count += 1;
        }
    }
    // Weights 3:1, so about 30 of 40; a fair coin would give about 20.
    assert!(
        (24..=38).contains(&a_count),
        "path_a taken {a_count} of 40 times"
    );
}

#[tokio::test]
async fn human_gate_answered_by_accelerator_key() {
    let r = run(
        "approve_gate.fabro",
        Options {
            answers: vec!["a"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "plan", "approve", "implement", "exit"])
    );
    let ctx = r.context();
    assert_eq!(ctx["human.gate.selected"], "A");
    assert_eq!(ctx["human.gate.label"], "[A] Approve");
}

#[tokio::test]
async fn human_gate_answered_by_label_without_its_accelerator() {
    let r = run(
        "approve_gate.fabro",
        Options {
            answers: vec!["Revise"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "plan", "approve", "revise", "exit"])
    );
}

#[tokio::test]
async fn human_gate_freeform_answer_routes_to_the_freeform_edge() {
    let r = run(
        "approve_gate.fabro",
        Options {
            answers: vec!["ship it but add docs"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "plan", "approve", "custom", "exit"])
    );
    let ctx = r.context();
    assert_eq!(ctx["human.gate.selected"], "freeform");
    assert_eq!(ctx["human.gate.text"], "ship it but add docs");
}

#[tokio::test]
async fn interrupted_gate_fails_and_takes_only_the_explicit_failure_route() {
    let r = run(
        "approve_gate.fabro",
        Options {
            answers: vec!["!interrupt"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "plan", "approve", "unanswered", "exit"])
    );
    assert_eq!(r.outcome_of("approve"), "failed");
}

#[tokio::test]
async fn failed_gate_does_not_fall_through_to_an_unconditional_edge() {
    let r = run("gate_fails_closed.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "approve"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(r.reason().contains("approve"), "{}", r.reason());
}

#[tokio::test]
async fn gate_timeout_takes_the_default_choice() {
    let r = run(
        "gate_timeout.fabro",
        Options {
            answers: vec!["!wait"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "approve", "skip_deploy", "exit"])
    );
    assert_eq!(r.named("interview.timeout").len(), 1);
}

#[tokio::test]
async fn diamond_conditions_read_the_previous_stages_outcome() {
    let r = run("diamond_reads_previous_outcome.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "test", "gate", "fix", "test@2", "gate@2", "exit"])
    );
    // The diamond itself always succeeds.
    assert_eq!(r.outcome_of("gate"), "succeeded");
}

#[tokio::test]
async fn an_outcome_no_edge_matches_fails_the_run_naming_the_node_and_the_outcome() {
    let r = run("unmatched_outcome.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "implement"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(
        r.reason()
            .contains("no edge out of implement matches its outcome `partially_succeeded`"),
        "{}",
        r.reason()
    );
    let outcome = r.outcome("implement");
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("ended partially_succeeded")),
        "the stage's own outcome is kept in a note: {outcome:?}"
    );
}

#[tokio::test]
async fn a_run_that_succeeds_past_failures_lists_the_nodes_whose_latest_visit_failed() {
    let r = run("failed_stages_routed_past.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded);
    assert_eq!(
        r.conclusion.failed_stages,
        ["lint"],
        "test failed once but passed on its latest visit"
    );
    let completed = r.named("run.completed");
    assert!(
        matches!(
            &completed[0].kind,
            weft::model::EventKind::RunCompleted { failed_stages, .. } if failed_stages == &["lint"]
        ),
        "run.completed carries them too"
    );
}

#[tokio::test]
async fn retries_wait_longer_each_time_on_the_fake_clock() {
    let r = run("retries_back_off.fabro", Options::default()).await;
    let attempts = std::fs::read_to_string(r.work.path().join("attempts.log")).expect("log");
    assert_eq!(
        attempts.lines().count(),
        4,
        "one attempt plus max_retries=3"
    );
    let slept = r.clock.slept();
    assert_eq!(slept.len(), 3);
    for (i, (delay, base)) in slept.iter().zip([5.0, 10.0, 20.0]).enumerate() {
        let secs = delay.as_secs_f64();
        assert!(
            (base * 0.5..=base * 1.5).contains(&secs),
            "retry {} waited {secs}s, outside the jitter band of {base}s",
            i + 1
        );
    }
    assert_eq!(r.named("stage.retrying").len(), 3);
    assert_eq!(r.outcome_of("flaky"), "failed");
}

#[tokio::test]
async fn allow_partial_turns_exhausted_retries_into_partial_success() {
    let r = run("allow_partial.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "build", "partial", "exit"]));
    assert_eq!(r.outcome_of("build"), "partially_succeeded");
    assert_eq!(r.clock.slept().len(), 2, "linear: three attempts");
}

#[tokio::test]
async fn unsatisfied_goal_gate_jumps_to_its_retry_target() {
    let r = run("goal_gate_retry.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&[
            "start",
            "implement",
            "verify",
            "implement@2",
            "verify@2",
            "exit"
        ])
    );
    assert_eq!(r.status(), RunStatus::Succeeded);
}

#[tokio::test]
async fn unsatisfied_goal_gate_without_retry_target_fails_the_run() {
    let r = run("goal_gate_no_target.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "verify"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(
        r.reason().contains("goal gate unsatisfied for node verify"),
        "{}",
        r.reason()
    );
}

#[tokio::test]
async fn goal_gate_that_never_ran_is_unsatisfied() {
    let r = run("goal_gate_never_ran.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "decide"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(
        r.reason().contains("audit") && r.reason().contains("never ran"),
        "{}",
        r.reason()
    );
}

#[tokio::test]
async fn max_visits_allows_exactly_that_many_executions() {
    let r = run("max_visits.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "again", "again@2", "again@3"]));
    let log = std::fs::read_to_string(r.work.path().join("again.log")).expect("log");
    assert_eq!(log.lines().count(), 3);
    assert_eq!(r.status(), RunStatus::Failed);
    assert_eq!(
        r.reason(),
        "node \"again\" visited 3 times (node limit 3); run is stuck in a cycle"
    );
}

#[tokio::test]
async fn max_visits_zero_lifts_the_graph_limit_for_its_node() {
    let r = run("max_visits_zero.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "again", "again@2", "again@3", "again@4", "exit"])
    );
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
}

#[tokio::test]
async fn a_command_timeout_is_retried_only_when_the_node_asks() {
    let r = run("timeout_not_retried.fabro", Options::default()).await;
    let lines = |name: &str| {
        std::fs::read_to_string(r.work.path().join(name))
            .expect("log")
            .lines()
            .count()
    };
    assert_eq!(lines("slow.log"), 1, "no retry attributes: one attempt");
    assert_eq!(
        lines("asked.log"),
        3,
        "retry_policy=patient: three attempts"
    );
    assert_eq!(r.named("stage.retrying").len(), 2);
    assert_eq!(r.outcome_of("slow"), "failed");
}

#[tokio::test]
async fn repeated_deterministic_failure_trips_the_circuit_breaker() {
    let r = run("circuit_breaker.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "verify", "fix", "verify@2", "fix@2", "verify@3"])
    );
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(
        r.reason()
            .starts_with("deterministic failure cycle detected")
            && r.reason().contains("repeated 3 times (limit 3")
            && r.reason().contains("loop_restart_signature_limit"),
        "{}",
        r.reason()
    );
}

#[tokio::test]
async fn loop_restart_starts_the_context_afresh() {
    let r = run("loop_restart.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "work", "check", "work@2", "check@2", "exit"])
    );
    assert_eq!(r.named("loop.restart").len(), 1);
    let ctx = r.context();
    assert_eq!(ctx["round"], 2);
    assert!(
        !ctx.contains_key("scratch"),
        "keys from before the restart are gone"
    );
    assert_eq!(ctx["graph.goal"], "restart once", "graph keys survive");
}

#[tokio::test]
async fn loop_restart_is_blocked_for_a_deterministic_failure() {
    let r = run("loop_restart_blocked.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "work"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert_eq!(
        r.reason(),
        "loop_restart blocked: failure_class=deterministic (requires transient_infra)"
    );
}

#[tokio::test]
async fn stall_watchdog_stops_a_silent_run_and_kills_its_command() {
    let r = run("stall_watchdog.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(r.reason().starts_with("stalled"), "{}", r.reason());
    assert_eq!(r.named("watchdog.timeout").len(), 1);
    let pid: i32 = std::fs::read_to_string(r.work.path().join("hang.pid"))
        .expect("pid")
        .trim()
        .parse()
        .expect("number");
    let alive = rustix::process::Pid::from_raw(pid)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    assert!(!alive, "the hung command's process was killed");
}

#[tokio::test]
async fn command_routing_output_steers_the_run() {
    let r = run("command_routing_schema.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "review", "fix", "exit"]));
    assert_eq!(r.context()["issues"], 2);
}

#[tokio::test]
async fn command_output_matching_a_custom_schema_lands_in_context() {
    let r = run("command_custom_schema.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded);
    assert_eq!(r.context()["output.audit"]["score"], 91);
}

#[tokio::test]
async fn command_output_breaking_its_schema_fails_once_without_retries() {
    let r = run("command_custom_schema_invalid.fabro", Options::default()).await;
    assert_eq!(r.outcome_of("audit"), "failed");
    assert!(
        r.clock.slept().is_empty(),
        "schema failures are not retried"
    );
    let failed = r.named("stage.failed");
    let reason = match &failed[0].kind {
        EventKind::StageFailed { outcome, .. } => {
            outcome.failure_reason().unwrap_or("").to_string()
        }
        _ => String::new(),
    };
    assert!(
        reason.contains("output schema validation failed"),
        "{reason}"
    );
}

#[tokio::test]
async fn large_context_values_move_to_the_blob_store() {
    let r = run("context_offload.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded);
    let ctx = r.context();
    let report = ctx["report"].as_str().expect("a ref");
    assert!(report.starts_with("blob://sha256/"), "{report}");
    let hex = &report["blob://sha256/".len()..];
    let blob = r.home.path().join("blobs").join(&hex[..2]).join(&hex[2..]);
    let stored: Value = serde_json::from_slice(&std::fs::read(blob).expect("blob")).expect("json");
    assert_eq!(stored.as_str().map(str::len), Some(150_000));
    // Command output always goes to the blob store.
    assert!(
        ctx["command.output"]
            .as_str()
            .is_some_and(|s| s.starts_with("blob://sha256/"))
    );
}

#[tokio::test]
async fn on_failure_exit_stops_at_the_first_failed_node() {
    let r = run("stop_on_failure.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "plan", "implement"]));
    assert_eq!(r.status(), RunStatus::Failed);
    assert!(
        r.named("edge.selected")
            .iter()
            .all(|e| e.node_id.as_deref() != Some("implement"))
    );
}

#[tokio::test]
async fn node_on_failure_route_overrides_a_graph_exit_policy() {
    let r = run("mixed_policies.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "implement", "lint", "verify", "exit"])
    );
    assert_eq!(r.outcome_of("lint"), "failed");
}

#[tokio::test]
async fn on_failure_succeed_promotes_the_outcome() {
    let r = run("best_effort_node.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "required_check", "optional_scan", "exit"])
    );
    assert_eq!(r.outcome_of("optional_scan"), "succeeded");
    assert_eq!(r.status(), RunStatus::Succeeded);
    let completed = r.named("stage.completed");
    let scan = completed
        .iter()
        .find(|e| e.node_id.as_deref() == Some("optional_scan"))
        .expect("scan completed");
    let EventKind::StageCompleted { outcome, .. } = &scan.kind else {
        panic!("stage.completed");
    };
    assert!(
        outcome
            .failure_reason()
            .is_some_and(|r| r.contains("status 3")),
        "original failure kept"
    );
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("on_failure=succeed"))
    );
}

#[tokio::test]
async fn on_failure_succeed_still_prefers_an_explicit_failure_route() {
    let r = run("succeed_prefers_explicit_route.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "scan", "recover", "exit"]));
    assert_eq!(r.outcome_of("scan"), "failed");
}

#[tokio::test]
async fn failed_node_without_route_goes_to_the_retry_target() {
    let r = run("retry_target_chain.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "prepare", "work", "prepare@2", "work@2", "exit"])
    );
    assert_eq!(r.status(), RunStatus::Succeeded);
}

#[tokio::test]
async fn wait_stages_sleep_on_the_run_clock() {
    let r = run("wait_stage.fabro", Options::default()).await;
    assert_eq!(r.sequence(), seq(&["start", "cooldown", "exit"]));
    assert_eq!(r.clock.slept(), vec![Duration::from_secs(30)]);
}

#[tokio::test]
async fn events_are_gap_free_and_mirrored_to_progress_jsonl() {
    let r = run("condition_beats_weight.fabro", Options::default()).await;
    let seqs: Vec<u64> = r.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let progress =
        std::fs::read_to_string(r.conclusion.run_dir.join("progress.jsonl")).expect("progress");
    assert_eq!(progress.lines().count(), r.events.len());
    for name in [
        "manifest.json",
        "graph.fabro",
        "checkpoint.json",
        "conclusion.json",
        "live.json",
    ] {
        assert!(r.conclusion.run_dir.join(name).is_file(), "{name} exists");
    }
    assert!(
        !r.conclusion.run_dir.join("run.pid").exists(),
        "run.pid removed at the end"
    );
    let check = r.conclusion.run_dir.join("nodes/check");
    for name in [
        "status.json",
        "stdout.log",
        "stderr.log",
        "script_invocation.json",
        "script_timing.json",
    ] {
        assert!(check.join(name).is_file(), "nodes/check/{name} exists");
    }
}

#[tokio::test]
async fn dry_run_simulates_llm_nodes_and_approves_gates() {
    let r = run_source_dry(
        r#"digraph D {
            start [shape=Mdiamond]; exit [shape=Msquare]
            plan [prompt="Plan it"]
            ask [shape=hexagon, label="OK?"]
            start -> plan -> ask
            ask -> exit [label="[Y] Yes"]
            ask -> plan [label="[N] No"]
        }"#,
    )
    .await;
    assert_eq!(r.sequence(), seq(&["start", "plan", "ask", "exit"]));
    let ctx = r.context();
    assert!(
        ctx["response.plan"]
            .as_str()
            .is_some_and(|s| s.contains("dry run"))
    );
}

async fn run_source_dry(source: &str) -> Run {
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let path = work.path().join("w.fabro");
    std::fs::write(&path, source).expect("write");
    let options = Options {
        dry_run: true,
        ..Options::default()
    };
    run_in(path, options, home, work).await
}

fn read_time(dir: &Path, name: &str) -> f64 {
    std::fs::read_to_string(dir.join(name))
        .expect("timestamp file")
        .trim()
        .parse()
        .expect("a number")
}

#[tokio::test]
async fn parallel_branches_really_overlap() {
    let r = run("parallel_overlap.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    let w = r.work.path();
    let (a0, a1, b0, b1) = (
        read_time(w, "a.start"),
        read_time(w, "a.end"),
        read_time(w, "b.start"),
        read_time(w, "b.end"),
    );
    assert!(
        a0 < b1 && b0 < a1,
        "the branches ran at the same time: a {a0}..{a1}, b {b0}..{b1}"
    );
    let ctx = r.context();
    assert_eq!(ctx["parallel.branch_count"], 2);
    assert_eq!(ctx["parallel.fan_in.best_id"], "a");
    assert_eq!(ctx["parallel.fan_in.best_outcome"], "succeeded");
    let results = ctx["parallel.results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids: Vec<&str> = results.iter().filter_map(|b| b["id"].as_str()).collect();
    assert_eq!(ids, ["a", "b"], "results in branch order");
    assert_eq!(results[0]["output"], "from-a\n");
    assert!(
        r.conclusion
            .run_dir
            .join("nodes/fork/parallel_results.json")
            .is_file()
    );
}

#[tokio::test]
async fn max_parallel_one_runs_branches_one_after_the_other() {
    let r = run("parallel_serial.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    let w = r.work.path();
    let (a0, a1, b0, b1) = (
        read_time(w, "a.start"),
        read_time(w, "a.end"),
        read_time(w, "b.start"),
        read_time(w, "b.end"),
    );
    assert!(
        a1 <= b0 || b1 <= a0,
        "no overlap: a {a0}..{a1}, b {b0}..{b1}"
    );
}

#[tokio::test]
async fn a_branch_follows_its_own_edges_and_the_join_reads_every_result() {
    let r = run("parallel_branch_routing.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    let mut seq = r.sequence();
    // Branches interleave; compare the set between fork and report.
    let fork = seq.iter().position(|s| s == "fork").expect("fork ran");
    let report = seq.iter().position(|s| s == "report").expect("report ran");
    let mut middle: Vec<String> = seq.drain(fork + 1..report).collect();
    middle.sort();
    assert_eq!(middle, ["check", "lint", "repair"]);
    let out = std::fs::read_to_string(r.conclusion.run_dir.join("nodes/report/stdout.log"))
        .expect("report output");
    assert_eq!(
        out, "check succeeded check/repair repaired\nlint succeeded lint linted\n",
        "the join's command read both branches' results"
    );
    let started = r.named("stage.started");
    let branch_of = |node: &str| {
        started
            .iter()
            .find(|e| e.node_id.as_deref() == Some(node))
            .and_then(|e| match &e.kind {
                EventKind::StageStarted { branch, .. } => branch.clone(),
                _ => None,
            })
    };
    assert_eq!(
        branch_of("repair").as_deref(),
        Some("check"),
        "stages carry their branch id"
    );
    assert_eq!(branch_of("report"), None, "the join runs in the main line");
}

#[tokio::test]
async fn wait_all_with_a_failed_branch_partially_succeeds() {
    let r = run("parallel_partial.fabro", Options::default()).await;
    assert_eq!(r.outcome_of("fork"), "partially_succeeded");
    assert_eq!(r.outcome_of("merge"), "succeeded");
    assert_eq!(r.context()["parallel.fan_in.best_id"], "good");
    assert_eq!(r.status(), RunStatus::Succeeded);
}

#[tokio::test]
async fn first_success_cancels_the_slow_branch_and_kills_its_process() {
    let r = run("parallel_first_success.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    assert_eq!(r.outcome_of("fork"), "succeeded");
    let results = r.context()["parallel.results"].clone();
    assert_eq!(results[0]["status"], "succeeded");
    assert_eq!(results[1]["status"], "skipped", "{results}");
    let pid: i32 = std::fs::read_to_string(r.work.path().join("slow.pid"))
        .expect("the slow branch started before the fast one finished")
        .trim()
        .parse()
        .expect("pid");
    let alive = rustix::process::Pid::from_raw(pid)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok());
    assert!(!alive, "the losing branch's process was killed");
}

fn child_runs(r: &Run) -> Vec<weft::store::RunRecord> {
    let store = Store::open(&Home::at(r.home.path())).expect("store");
    store
        .list_runs(&Default::default())
        .expect("runs")
        .into_iter()
        .filter(|run| run.id != r.conclusion.run_id)
        .collect()
}

/// Runs `body` as the daemon and `weft run` do: on a thread with the main
/// thread's 8 MiB of stack (a test thread has 2 MiB, and a debug build
/// spends about 150 KB of it on each level of nesting).
fn on_a_main_sized_stack<T: Send + 'static>(
    body: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(body)
        })
        .expect("thread")
        .join()
        .expect("the run ends without overflowing the stack")
}

#[test]
fn a_workflow_that_runs_itself_stops_at_the_nesting_limit() {
    let r = on_a_main_sized_stack(run("subworkflow_itself.fabro", Options::default()));
    assert_eq!(r.status(), RunStatus::Failed, "{}", r.reason());
    let children = child_runs(&r);
    assert_eq!(
        children.len(),
        weft::engine::run::MAX_NESTING,
        "one child run per level, and no more"
    );
    let innermost = children
        .iter()
        .filter_map(|c| c.failure_reason.as_deref())
        .find(|why| why.contains("nest more than 16 levels"));
    assert!(
        innermost.is_some(),
        "the innermost stage names the limit: {:?}",
        children
            .iter()
            .map(|c| &c.failure_reason)
            .collect::<Vec<_>>()
    );
}

#[test]
fn fan_outs_nested_past_the_limit_fail_the_stage_instead_of_the_stack() {
    // fork0 branches to a0 and fork1, fork1 to a1 and fork2, ... 40 deep;
    // each level's branches meet at m{i}.
    const DEPTH: usize = 40;
    let mut dot = String::from("digraph Nest {\n start [shape=Mdiamond]; exit [shape=Msquare]\n");
    for i in 0..=DEPTH {
        dot.push_str(&format!(
            " f{i} [shape=component]; a{i} [shape=parallelogram, script=\"true\"]; m{i} [shape=parallelogram, script=\"true\"]\n"
        ));
    }
    dot.push_str(" start -> f0\n");
    for i in 0..DEPTH {
        let j = i + 1;
        dot.push_str(&format!(
            " f{i} -> a{i}; f{i} -> f{j}; a{i} -> m{i}; m{j} -> m{i}\n"
        ));
    }
    dot.push_str(&format!(
        " b [shape=parallelogram, script=\"true\"]; f{DEPTH} -> a{DEPTH}; f{DEPTH} -> b; a{DEPTH} -> m{DEPTH}; b -> m{DEPTH}\n m0 -> exit\n}}\n"
    ));
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("nest.fabro");
    std::fs::write(&path, dot).expect("write");
    let home = tempfile::tempdir().expect("home");
    let work = tempfile::tempdir().expect("work");
    let r = on_a_main_sized_stack(run_in(path, Options::default(), home, work));
    let too_deep = r
        .conclusion
        .stages
        .iter()
        .find(|s| s.node_id == format!("f{}", weft::engine::run::MAX_NESTING))
        .map(|s| s.outcome.clone());
    assert_eq!(
        too_deep.as_deref(),
        Some("failed"),
        "the fan-out one level past the limit fails: {:?}",
        r.sequence()
    );
    assert!(
        r.events
            .iter()
            .any(|e| format!("{:?}", e.kind).contains("nest more than 16 levels")),
        "its failure names the limit"
    );
}

#[tokio::test]
async fn a_sub_workflow_starts_from_the_parent_context_and_merges_its_changes_back() {
    let r = run("subworkflow_context.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    assert_eq!(
        r.sequence(),
        seq(&["start", "prepare", "child", "after", "exit"])
    );
    let ctx = r.context();
    assert_eq!(
        ctx["child_count"], 3,
        "the child's context change reached the parent"
    );
    assert_eq!(ctx["parent_key"], "kept");
    let children = child_runs(&r);
    assert_eq!(children.len(), 1, "one child run");
    let child = &children[0];
    assert_eq!(child.status, RunStatus::Succeeded);
    assert_eq!(ctx["stack.child.run_id"], child.id.as_str());
    assert_eq!(child.options["parent"]["node_id"], "child");
    assert_eq!(
        child.run_dir,
        r.conclusion.run_dir.join("nodes/child/child")
    );
    assert!(
        child.run_dir.join("checkpoint.json").is_file(),
        "the child has its own run directory"
    );
    assert_eq!(
        std::fs::read_to_string(r.work.path().join("child.txt")).expect("child output"),
        "child sees from-parent\n"
    );
}

#[tokio::test]
async fn a_parallel_section_runs_inside_a_sub_workflow() {
    let r = run("subworkflow_parallel.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    let mut branches: Vec<String> = std::fs::read_to_string(r.work.path().join("branches.log"))
        .expect("log")
        .lines()
        .map(str::to_string)
        .collect();
    branches.sort();
    assert_eq!(branches, ["left", "right"]);
    let child = &child_runs(&r)[0];
    let store = Store::open(&Home::at(r.home.path())).expect("store");
    let stages: Vec<String> = store
        .stages(&child.id)
        .expect("stages")
        .into_iter()
        .map(|s| s.node_id)
        .collect();
    assert!(stages.contains(&"merge".to_string()), "{stages:?}");
}

#[tokio::test]
async fn the_stop_condition_cancels_the_child_and_the_stage_succeeds() {
    let r = run("subworkflow_stop.fabro", Options::default()).await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    assert_eq!(r.outcome_of("child"), "succeeded");
    let child = &child_runs(&r)[0];
    assert_eq!(child.status, RunStatus::Cancelled);
    // The manager may see `ready` before the child's long command has even
    // started (it polls every 100 ms): then there is no pid, and nothing to
    // kill. When it had started, it was killed.
    if let Ok(pid) = std::fs::read_to_string(r.work.path().join("forever.pid")) {
        let pid: u32 = pid.trim().parse().expect("number");
        assert!(
            !weft::os::process::is_alive(pid),
            "the child's command was killed"
        );
    }
}

#[tokio::test]
async fn max_cycles_cancels_an_inline_child_and_fails_the_stage() {
    let r = run("subworkflow_inline.fabro", Options::default()).await;
    assert_eq!(
        r.sequence(),
        seq(&["start", "child", "failed_child", "exit"])
    );
    assert_eq!(r.outcome_of("child"), "failed");
    assert_eq!(child_runs(&r)[0].status, RunStatus::Cancelled);
}

#[tokio::test]
async fn a_human_gate_inside_a_branch_is_asked_and_its_stages_carry_the_branch() {
    let r = run(
        "parallel_gate.fabro",
        Options {
            answers: vec!["y"],
            ..Options::default()
        },
    )
    .await;
    assert_eq!(r.status(), RunStatus::Succeeded, "{}", r.reason());
    let store = Store::open(&Home::at(r.home.path())).expect("store");
    let stages = store.stages(&r.conclusion.run_id).expect("stages");
    let branch_of = |node: &str| {
        stages
            .iter()
            .find(|s| s.node_id == node)
            .and_then(|s| s.branch.clone())
    };
    assert_eq!(branch_of("approve").as_deref(), Some("approve"));
    assert_eq!(branch_of("a_done").as_deref(), Some("approve"));
    assert_eq!(branch_of("b").as_deref(), Some("b"));
    assert_eq!(branch_of("merge"), None);
    assert!(stages.iter().all(|s| s.node_id != "a_held"));
    let questions = store
        .questions(Some(&r.conclusion.run_id), false)
        .expect("questions");
    assert_eq!(questions.len(), 1);
    assert_eq!(questions[0].node_id, "approve");
    assert_eq!(r.context()["parallel.results"][0]["status"], "succeeded");
}
