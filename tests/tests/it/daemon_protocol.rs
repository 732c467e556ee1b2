//! weftd's protocol under load and at its edges, over its real socket:
//! request ids as JSON-RPC allows them, pages beyond the end, the run-list
//! filters, a large `run.start` that must not stall other clients, and
//! subscribers that stop reading.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::store::{Home, Store};
use weft_tests::{RawClient, Sandbox, Weftd, wait_for_status};

const TRIVIAL: &str = "digraph T { start [shape=Mdiamond]; exit [shape=Msquare]; start -> exit }";

/// Starts a run of `source` (inline) with `labels` and returns its id.
fn start(client: &mut RawClient, sb: &Sandbox, source: &str, labels: &[&str]) -> String {
    let reply = client.call(
        1,
        "run.start",
        json!({"workflow": {"source": source}, "work_dir": sb.path(), "labels": labels}),
    );
    reply["result"]["run_id"]
        .as_str()
        .unwrap_or_else(|| panic!("run.start failed: {reply}"))
        .to_string()
}

#[test]
fn every_id_json_rpc_allows_is_echoed_as_sent() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let mut client = RawClient::connect(&daemon.socket());
    for id in [
        json!(-1),
        json!(1.5),
        json!(0),
        json!("req-7"),
        json!(null),
        json!(u64::MAX),
    ] {
        client.send(&json!({"jsonrpc": "2.0", "id": id, "method": "daemon.status"}));
        let reply = client.recv().unwrap_or_else(|| panic!("no reply"));
        assert_eq!(reply["id"], id, "the id comes back as sent: {reply}");
        assert!(reply["result"]["pid"].is_u64(), "{reply}");
    }
    // Not an id at all: an invalid request, answered under `null`.
    client.send(&json!({"jsonrpc": "2.0", "id": [1], "method": "daemon.status"}));
    let reply = client.recv().unwrap_or_else(|| panic!("no reply"));
    assert_eq!(reply["id"], Value::Null);
    assert_eq!(reply["error"]["data"]["code"], "rpc.invalid_request");
    // Without an id: a notification, never answered; the next reply is the
    // next request's.
    client.send(&json!({"jsonrpc": "2.0", "method": "daemon.status"}));
    client.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "daemon.status"}));
    let reply = client.recv().unwrap_or_else(|| panic!("no reply"));
    assert_eq!(reply["id"], 8);
}

#[test]
fn events_after_a_seq_beyond_the_run_are_an_empty_page() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let mut client = RawClient::connect(&daemon.socket());
    let run = start(&mut client, &sb, TRIVIAL, &[]);
    wait_for_status(&home, &run, RunStatus::Succeeded);
    let last = Store::open_read_only(&home)
        .and_then(|s| s.find_run(&run))
        .map(|r| r.last_seq)
        .unwrap_or_else(|e| panic!("{e}"));
    for after in [
        last,
        last + 1,
        1 << 62,
        i64::MAX.unsigned_abs() + 1,
        u64::MAX,
    ] {
        let reply = client.call(2, "run.events", json!({"run": run, "after_seq": after}));
        assert_eq!(
            reply["result"]["events"],
            json!([]),
            "after_seq {after}: {reply}"
        );
    }
    let reply = client.call(3, "run.events", json!({"run": run, "after_seq": 0}));
    assert_eq!(
        reply["result"]["events"].as_array().map(Vec::len),
        usize::try_from(last).ok()
    );
}

#[test]
fn run_list_filters_labels_and_archived_before_paging() {
    let sb = Sandbox::new();
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let mut client = RawClient::connect(&daemon.socket());
    // Newest first: r5 … r0; every other one is a release.
    let ids: Vec<String> = (0..6)
        .map(|i| {
            let label = if i % 2 == 0 { "release" } else { "nightly" };
            let id = start(&mut client, &sb, TRIVIAL, &[label]);
            wait_for_status(&home, &id, RunStatus::Succeeded);
            id
        })
        .collect();
    let listed = |client: &mut RawClient, params: Value| -> Vec<String> {
        let reply = client.call(9, "run.list", params);
        reply["result"]
            .as_array()
            .unwrap_or_else(|| panic!("run.list failed: {reply}"))
            .iter()
            .map(|r| r["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let page = |client: &mut RawClient, offset: u32| {
        listed(
            client,
            json!({"label": "release", "limit": 2, "offset": offset}),
        )
    };
    assert_eq!(
        page(&mut client, 0),
        [ids[4].clone(), ids[2].clone()],
        "a full page of releases"
    );
    assert_eq!(page(&mut client, 2), [ids[0].clone()]);
    let archived = client.call(10, "run.archive", json!({"run": ids[2], "archived": true}));
    assert_eq!(archived["result"]["archived"], true, "{archived}");
    assert_eq!(
        listed(&mut client, json!({"archived": true})),
        [ids[2].clone()]
    );
    assert_eq!(
        listed(
            &mut client,
            json!({"archived": false, "label": "release", "limit": 2})
        ),
        [ids[4].clone(), ids[0].clone()],
        "the archived release is left out before the page is cut"
    );
    assert_eq!(listed(&mut client, json!({})).len(), 6, "absent: both");
}

/// CPU time (user + system, in clock ticks) the process has used so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15; `fields` starts at field 3.
    field(11) + field(12)
}

#[test]
fn a_status_request_is_answered_while_another_clients_large_workflow_loads() {
    let sb = Sandbox::new();
    // A valid workflow of about 6 MB (the file cap is 8 MiB): loading and
    // validating it takes the daemon a second or more of CPU. A gate
    // first, so the run then waits instead of running 70,000 stages.
    let mut dot = String::from(
        "digraph Big { start [shape=Mdiamond]; exit [shape=Msquare]\n\
         approve [shape=hexagon, label=\"Go?\"]\n\
         start -> approve\napprove -> exit [label=\"[H] Hold\"]\napprove -> n0 [label=\"[G] Go\"]\n",
    );
    let nodes = 70_000;
    for i in 0..nodes {
        dot.push_str(&format!(
            "  n{i} [shape=parallelogram, script=\"echo n{i}\"]\n"
        ));
    }
    for i in 1..nodes {
        dot.push_str(&format!("  n{} -> n{i}\n", i - 1));
    }
    dot.push_str(&format!("  n{} -> exit\n}}\n", nodes - 1));
    let workflow = sb.write("big.fabro", &dot);
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let pid = daemon.child.id();

    let mut loader = RawClient::connect(&daemon.socket());
    let before = cpu_ticks(pid);
    loader.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "run.start",
        "params": {"workflow": {"path": workflow}, "work_dir": sb.path()}}));
    // The daemon is busy with the workflow once it has spent a tenth of a
    // second (ten ticks) of CPU on it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while cpu_ticks(pid) < before + 10 {
        assert!(Instant::now() < deadline, "weftd never got to the workflow");
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut other = RawClient::connect(&daemon.socket());
    let status = other.call(2, "daemon.status", json!({}));
    assert!(status["result"]["pid"].is_u64(), "{status}");
    // Answered while the workflow was still loading: the run it becomes is
    // recorded only once it is loaded and valid.
    let recorded = Store::open_read_only(&home)
        .and_then(|s| s.list_runs(&Default::default()))
        .map(|runs| runs.len())
        .unwrap_or(0);
    assert_eq!(
        recorded, 0,
        "daemon.status waited until the large workflow was loaded"
    );
    let started = loader
        .recv()
        .unwrap_or_else(|| panic!("no reply to run.start"));
    assert!(
        started["result"]["run_id"].is_string(),
        "the large workflow still starts: {started}"
    );
}

/// A workflow of `stages` commands, each printing `bytes` of output.
fn chatty(stages: usize, bytes: usize) -> String {
    let mut dot = String::from("digraph Chatty { start [shape=Mdiamond]; exit [shape=Msquare]\n");
    for i in 0..stages {
        dot.push_str(&format!(
            "  s{i} [shape=parallelogram, script=\"head -c {bytes} /dev/zero | tr '\\\\0' x; echo\"]\n"
        ));
    }
    dot.push_str("  start -> s0\n");
    for i in 1..stages {
        dot.push_str(&format!("  s{} -> s{i}\n", i - 1));
    }
    dot.push_str(&format!("  s{} -> exit\n}}\n", stages - 1));
    dot
}

#[test]
fn subscribers_that_stop_reading_are_dropped_with_a_lagged_notice_and_catch_up() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "subscriber_buffer_bytes = 16384\n");
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    // Five clients that subscribe to every run, ten times each, and then
    // do not read: each event is owed to each of them ten times over.
    let mut idle: Vec<RawClient> = (0..5)
        .map(|c| {
            let mut client = RawClient::connect(&daemon.socket());
            for s in 0..10 {
                let reply = client.call(
                    s + 1,
                    "subscribe",
                    json!({"subscription": format!("c{c}-s{s}")}),
                );
                assert!(reply["result"].is_object(), "{reply}");
            }
            client
        })
        .collect();
    let mut starter = RawClient::connect(&daemon.socket());
    let run = start(&mut starter, &sb, &chatty(20, 4000), &[]);
    wait_for_status(&home, &run, RunStatus::Succeeded);
    let last = Store::open_read_only(&home)
        .and_then(|s| s.find_run(&run))
        .map(|r| r.last_seq)
        .unwrap_or_else(|e| panic!("{e}"));
    // The daemon kept serving meanwhile.
    let status = starter.call(2, "daemon.status", json!({}));
    assert!(status["result"]["pid"].is_u64());
    for (c, client) in idle.iter_mut().enumerate() {
        let mut lagged = std::collections::BTreeSet::new();
        let mut events = 0;
        while lagged.len() < 10 {
            let message = client.recv().unwrap_or_else(|| {
                panic!(
                    "client {c}: the stream ended with {} lagged notices",
                    lagged.len()
                )
            });
            match message["method"].as_str() {
                Some("lagged") => {
                    lagged.insert(message["params"]["subscription"].to_string());
                }
                Some("event") => events += 1,
                _ => {}
            }
        }
        assert!(
            events < 10 * usize::try_from(last).unwrap_or(usize::MAX),
            "client {c} was sent fewer events than it was owed ({events})"
        );
        // The subscriptions are over; a new one replays the run from the
        // database (what the Weft client does on `lagged`).
        let reply = client.call(
            99,
            "subscribe",
            json!({"subscription": "again", "run": run, "after_seq": 0}),
        );
        assert!(reply["result"].is_object(), "{reply}");
        let mut seqs = Vec::new();
        while seqs.last() != Some(&last) {
            let message = client.recv().unwrap_or_else(|| panic!("replay ended"));
            if message["params"]["subscription"] == "again" {
                seqs.push(message["params"]["event"]["seq"].as_u64().unwrap_or(0));
            }
        }
        assert_eq!(seqs, (1..=last).collect::<Vec<_>>(), "client {c}");
    }
}

#[test]
fn weft_events_follow_that_falls_behind_still_prints_every_event_once() {
    let sb = Sandbox::new();
    sb.write("home/settings.toml", "subscriber_buffer_bytes = 16384\n");
    let daemon = Weftd::start(&sb);
    let home = Home::at(&daemon.home);
    let mut starter = RawClient::connect(&daemon.socket());
    let gate_then_chatty = chatty(30, 20_000).replacen(
        "start -> s0",
        "gate [shape=hexagon, label=\"Go?\"]\n  start -> gate\n  gate -> s0 [label=\"[G] Go\"]",
        1,
    );
    let run = start(&mut starter, &sb, &gate_then_chatty, &[]);
    wait_for_status(&home, &run, RunStatus::Blocked);
    // `weft events --follow` writing into a pipe nobody reads until the
    // run is over: it blocks on its output, stops reading its socket, and
    // the daemon drops its subscription as lagged.
    let follower = sb
        .weft()
        .args(["events", &run, "--follow", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let answered = sb.run(&["answer", &run, "--key", "G"]);
    assert_eq!(answered.code, 0, "{}", answered.stderr);
    wait_for_status(&home, &run, RunStatus::Succeeded);
    let out = follower
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seqs: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).map_or(0, |v| v["seq"].as_u64().unwrap_or(0)))
        .collect();
    let last = Store::open_read_only(&home)
        .and_then(|s| s.find_run(&run))
        .map(|r| r.last_seq)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        seqs,
        (1..=last).collect::<Vec<_>>(),
        "every event once, in order"
    );
}
