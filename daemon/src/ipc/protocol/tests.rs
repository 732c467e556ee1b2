use std::collections::BTreeSet;
use std::fmt::Debug;

use serde_json::{Map, Value, json};

use super::*;
use crate::model::{Event, EventKind, RunStatus, RunSummary};
use crate::store::{QuestionRecord, QuestionStatus, RunRecord, StageRecord, StoreError};

fn event(seq: u64) -> Event {
    Event {
        seq,
        ts: "2026-12-02T12:00:00.000Z".into(),
        run_id: "01JRUN".into(),
        node_id: Some("build".into()),
        visit: Some(1),
        kind: EventKind::StageStarted {
            handler: "command".into(),
            attempt: 1,
            branch: None,
        },
    }
}

fn run_record() -> RunRecord {
    RunRecord {
        pid_start: None,
        id: "01JRUN".into(),
        workflow_name: "ship".into(),
        workflow_path: Some("/w/ship.fabro".into()),
        goal: Some("ship it".into()),
        status: RunStatus::Running,
        run_dir: "/h/runs/20261202-01JRUN".into(),
        work_dir: "/w".into(),
        inputs: Map::from_iter([("env".to_string(), json!("prod"))]),
        options: json!({"dry_run": false, "seed": 7}),
        labels: vec!["nightly".into()],
        created_at: "2026-12-02T12:00:00.000Z".into(),
        started_at: Some("2026-12-02T12:00:00.010Z".into()),
        finished_at: None,
        failure_reason: None,
        pid: Some(4242),
        last_seq: 9,
        checkpoint: Some("{\"next_node_id\":\"test\"}".into()),
        node_count: 5,
        edge_count: 4,
        llm: None,
        archived: false,
        failed_stages: Vec::new(),
    }
}

fn stage_record() -> StageRecord {
    StageRecord {
        run_id: "01JRUN".into(),
        node_id: "build".into(),
        visit: 1,
        rank: 1,
        handler: "command".into(),
        status: "succeeded".into(),
        attempts: 1,
        started_at: "2026-12-02T12:00:00.020Z".into(),
        finished_at: Some("2026-12-02T12:00:01.020Z".into()),
        duration_ms: Some(1000),
        failure_reason: None,
        outcome: Some(json!({"status": "succeeded"})),
        branch: None,
    }
}

fn question_record() -> QuestionRecord {
    QuestionRecord {
        id: "q-01JRUN-review-1".into(),
        run_id: "01JRUN".into(),
        node_id: "review".into(),
        visit: 1,
        text: "Ship it?".into(),
        options: vec!["[A] Approve".into(), "[R] Reject".into()],
        freeform: false,
        status: QuestionStatus::Answered,
        answer: Some(json!({"selected": "[A] Approve"})),
        asked_at: "2026-12-02T12:00:02.000Z".into(),
        answered_at: Some("2026-12-02T12:00:09.000Z".into()),
        permission: None,
    }
}

/// An external agent's permission request put to a person.
fn permission_record() -> QuestionRecord {
    QuestionRecord {
        id: "q-01JRUN-work-perm".into(),
        node_id: "work".into(),
        text: "claude asks permission: Run cargo test".into(),
        options: vec!["Allow".into(), "Reject".into()],
        status: QuestionStatus::Pending,
        answer: None,
        answered_at: None,
        permission: Some(crate::model::PermissionAsk {
            agent: "claude".into(),
            tool_kind: "execute".into(),
            title: "Run cargo test".into(),
            locations: vec!["/work".into()],
            command: Some("cargo test".into()),
            input: Some("{\n  \"command\": \"cargo test\"\n}".into()),
            options: vec![
                crate::model::PermissionChoice {
                    label: "Allow".into(),
                    kind: "allow_once".into(),
                },
                crate::model::PermissionChoice {
                    label: "Reject".into(),
                    kind: "reject_once".into(),
                },
            ],
        }),
        ..question_record()
    }
}

/// Serialises a request and a result of method `M` to lines, reads them
/// back the way the server and the client do, and checks nothing changed.
/// Returns the method name so the caller can check every method was seen.
fn round_trip<M>(params: M, result: M::Output) -> &'static str
where
    M: Method + Clone,
    M::Output: PartialEq + Debug,
{
    let line =
        serde_json::to_string(&Request::new(7u64, &params).expect("encodes")).expect("serialises");
    let value: Value = serde_json::from_str(&line).expect("the request line is JSON");
    let (id, call) = decode_request(value).expect("the server reads the request back");
    assert_eq!(id, Some(Id::from(7u64)), "the id survives the trip");
    assert_eq!(call, params.into(), "the params survive the trip: {line}");
    assert_eq!(call.name(), M::NAME);

    let line = serde_json::to_string(&ServerMessage::from(Response::success(
        Some(Id::from(7u64)),
        &result,
    )))
    .expect("serialises");
    let value: Value = serde_json::from_str(&line).expect("the response line is JSON");
    let Ok(ServerMessage::Response(response)) = ServerMessage::from_value(value) else {
        panic!("a response reads back as a response: {line}");
    };
    let Outcome::Result(value) = response.outcome else {
        panic!("a success reads back as a result: {line}");
    };
    let back: M::Output = serde_json::from_value(value).expect("the result reads back");
    assert_eq!(back, result, "the result survives the trip: {line}");
    M::NAME
}

#[test]
fn every_method_request_and_result_survive_a_round_trip() {
    let mut start = RunStart::new(WorkflowSource::Path("/w/ship.fabro".into()), "/w");
    start.goal = Some("ship it".into());
    start.inputs.insert("env".into(), "prod".into());
    start.seed = Some(42);
    start.labels = vec!["nightly".into()];
    start.artifacts = vec!["dist/**".into()];
    start.env = CallerEnv(vec![("PATH".into(), "/usr/bin".into())]);
    let mut inline = RunStart::new(WorkflowSource::Source("digraph { a -> b }".into()), "/w");
    inline.base_dir = Some("/w/flows".into());
    inline.dry_run = true;
    inline.auto_approve = true;
    let started = RunStarted {
        run_id: "01JRUN".into(),
        run_dir: "/h/runs/20261202-01JRUN".into(),
        status: RunStatus::Queued,
    };

    let seen: BTreeSet<&str> = [
        round_trip(start, started.clone()),
        round_trip(inline, started.clone()),
        round_trip(
            RunList {
                status: Some(RunStatus::Failed),
                workflow: Some("ship".into()),
                label: Some("nightly".into()),
                text: Some("prod".into()),
                limit: Some(20),
                offset: Some(40),
                archived: Some(false),
            },
            vec![RunSummary::from(run_record())],
        ),
        round_trip(RunList::default(), vec![]),
        round_trip(
            RunGet { run: "01J".into() },
            RunDetail {
                run: run_record(),
                stages: vec![stage_record()],
            },
        ),
        round_trip(
            RunCancel { run: "01J".into() },
            CancelRequested {
                run_id: "01JRUN".into(),
                status: RunStatus::Running,
            },
        ),
        round_trip(
            RunResume {
                run: "01J".into(),
                auto_approve: true,
                env: CallerEnv(vec![("HOME".into(), "/home/me".into())]),
            },
            started,
        ),
        round_trip(
            RunEvents {
                run: "01J".into(),
                after_seq: 3,
                limit: Some(100),
            },
            EventPage {
                run_id: "01JRUN".into(),
                events: vec![event(4), event(5)],
            },
        ),
        round_trip(
            Subscribe {
                subscription: "cli-1".into(),
                run: Some("01J".into()),
                after_seq: 0,
            },
            Subscribed {
                subscription: "cli-1".into(),
                run_id: Some("01JRUN".into()),
            },
        ),
        round_trip(
            Subscribe {
                subscription: "app".into(),
                run: None,
                after_seq: 0,
            },
            Subscribed {
                subscription: "app".into(),
                run_id: None,
            },
        ),
        round_trip(
            Unsubscribe {
                subscription: "cli-1".into(),
            },
            Unsubscribed { existed: true },
        ),
        round_trip(
            QuestionList {
                run: Some("01J".into()),
                pending_only: false,
            },
            vec![question_record(), permission_record()],
        ),
        round_trip(
            QuestionAnswer {
                question: "q-01JRUN-review-1".into(),
                answer: AnswerBy::Key("A".into()),
            },
            question_record(),
        ),
        round_trip(
            QuestionAnswer {
                question: "q-01JRUN-review-1".into(),
                answer: AnswerBy::Label("Approve".into()),
            },
            question_record(),
        ),
        round_trip(
            QuestionAnswer {
                question: "q-01JRUN-review-1".into(),
                answer: AnswerBy::Text("yes, but fix the typo".into()),
            },
            question_record(),
        ),
        round_trip(
            DaemonStatus {},
            DaemonInfo {
                version: "0.1.0".into(),
                protocol: PROTOCOL_VERSION,
                pid: 4242,
                uptime_ms: 1234,
                runs_running: 2,
                runs_queued: 1,
                home: "/h".into(),
                db_path: "/h/weft.db".into(),
                socket_path: "/h/run/weftd.sock".into(),
                notifications_paused: Some(true),
            },
        ),
        round_trip(
            NotificationsPause { paused: Some(true) },
            NotificationsState { paused: true },
        ),
        round_trip(
            RunArchive {
                run: "01J".into(),
                archived: true,
            },
            RunSummary::from(run_record()),
        ),
        round_trip(
            RunSteer {
                run: "01J".into(),
                node: Some("fix".into()),
                text: "use the new API".into(),
            },
            SteerQueued {
                run_id: "01JRUN".into(),
                node_id: "fix".into(),
                visit: 2,
            },
        ),
        round_trip(RunTimeline { run: "01J".into() }, vec![timeline_entry()]),
        round_trip(
            RunFork {
                run: "01J".into(),
                target: Some("plan@2".into()),
                rewind: true,
            },
            crate::engine::fork::Forked {
                run_id: "01JNEW".into(),
                run_dir: "/h/runs/20261203-01JNEW".into(),
                source: "01JRUN".into(),
                from: timeline_entry(),
                archived_source: true,
            },
        ),
        round_trip(
            RunApply {
                run: "01J".into(),
                to: Some("feature".into()),
                patch: false,
                force: true,
            },
            RunApplied {
                run_id: "01JRUN".into(),
                run_branch: "weft/run/01JRUN".into(),
                repo: "/src/shop".into(),
                applied: crate::git::Applied::Merged {
                    branch: "feature".into(),
                    from: "a".repeat(40),
                    commit: "b".repeat(40),
                    worktree_updated: false,
                },
            },
        ),
        round_trip(
            DaemonStop {},
            DaemonStopping {
                pid: 4242,
                runs_interrupted: 2,
            },
        ),
    ]
    .into_iter()
    .collect();
    let all: BTreeSet<&str> = Call::METHODS.iter().copied().collect();
    assert_eq!(seen, all, "every method needs a round-trip sample here");
}

#[test]
fn a_request_line_has_the_exact_wire_shape() {
    let request = Request::new(1u64, &RunGet { run: "01J".into() }).expect("encodes");
    assert_eq!(
        serde_json::to_string(&request).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":1,"method":"run.get","params":{"run":"01J"}}"#
    );

    let mut start = RunStart::new(WorkflowSource::Path("/w/ship.fabro".into()), "/w");
    start.env = CallerEnv(vec![("HOME".into(), "/home/me".into())]);
    let request = Request::new(2u64, &start).expect("encodes");
    assert_eq!(
        serde_json::to_string(&request).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":2,"method":"run.start","params":{"auto_approve":false,"dry_run":false,"env":[["HOME","/home/me"]],"work_dir":"/w","workflow":{"path":"/w/ship.fabro"}}}"#
    );

    let request = Request::new(
        3u64,
        &QuestionAnswer {
            question: "q1".into(),
            answer: AnswerBy::Key("A".into()),
        },
    )
    .expect("encodes");
    assert_eq!(
        serde_json::to_string(&request).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":3,"method":"question.answer","params":{"answer":{"key":"A"},"question":"q1"}}"#
    );
}

#[test]
fn replies_and_notifications_have_the_exact_wire_shape() {
    let reply = Response::success(
        Some(Id::from(3u64)),
        &Subscribed {
            subscription: "s1".into(),
            run_id: None,
        },
    );
    assert_eq!(
        serde_json::to_string(&reply).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":3,"result":{"run_id":null,"subscription":"s1"}}"#
    );

    let error = Response::failure(
        Some(Id::from(4u64)),
        RpcError::from(StoreError::RunNotFound("zz".into())),
    );
    assert_eq!(
        serde_json::to_string(&error).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":4,"error":{"code":-32001,"message":"no run matches `zz`","data":{"code":"run.not_found"}}}"#
    );

    let parse = Response::failure(
        None,
        RpcError::parse_error("expected value at line 1 column 1"),
    );
    assert_eq!(
        serde_json::to_string(&parse).expect("serialises"),
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"expected value at line 1 column 1","data":{"code":"rpc.parse_error"}}}"#,
        "an unreadable request is answered with a null id"
    );

    let notification = Notification::event(
        "s1",
        Event {
            seq: 12,
            ts: "2026-12-02T12:00:00.000Z".into(),
            run_id: "01JRUN".into(),
            node_id: None,
            visit: None,
            kind: EventKind::RunCompleted {
                duration_ms: 5,
                failed_stages: Vec::new(),
                exit_node: None,
            },
        },
    );
    assert_eq!(
        serde_json::to_string(&ServerMessage::from(notification)).expect("serialises"),
        r#"{"jsonrpc":"2.0","method":"event","params":{"subscription":"s1","event":{"seq":12,"ts":"2026-12-02T12:00:00.000Z","run_id":"01JRUN","event":"run.completed","properties":{"duration_ms":5}}}}"#
    );
}

#[test]
fn a_notification_reads_back_as_a_notification() {
    let sent = Notification::event("s1", event(1));
    let value = serde_json::to_value(&sent).expect("serialises");
    let back = ServerMessage::from_value(value).expect("reads back");
    assert_eq!(back, ServerMessage::Notification(Box::new(sent)));
}

#[test]
fn params_may_be_omitted_or_null_for_methods_without_params() {
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":{}}"#,
    ] {
        let value: Value = serde_json::from_str(line).expect("JSON");
        let (_, call) = decode_request(value).expect(line);
        assert_eq!(call, Call::DaemonStatus(DaemonStatus {}), "{line}");
    }
}

#[test]
fn optional_params_take_their_documented_defaults() {
    let value = json!({"jsonrpc": "2.0", "id": "a", "method": "question.list"});
    let (id, call) = decode_request(value).expect("valid");
    assert_eq!(id, Some(Id::String("a".into())), "string ids are echoed");
    assert_eq!(
        call,
        Call::QuestionList(QuestionList {
            run: None,
            pending_only: true
        }),
        "question.list lists pending questions unless told otherwise"
    );
    let value =
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": {"subscription": "s"}});
    let (_, call) = decode_request(value).expect("valid");
    assert_eq!(
        call,
        Call::Subscribe(Subscribe {
            subscription: "s".into(),
            run: None,
            after_seq: 0
        })
    );
}

#[test]
fn unknown_fields_are_ignored_for_forward_compatibility() {
    let value = json!({"jsonrpc": "2.0", "id": 1, "method": "run.get",
        "params": {"run": "01J", "with_artifacts": true}});
    let (_, call) = decode_request(value).expect("a newer client's extra field is ignored");
    assert_eq!(call, Call::RunGet(RunGet { run: "01J".into() }));
}

#[test]
fn an_unknown_method_is_rejected_under_its_request_id() {
    let value = json!({"jsonrpc": "2.0", "id": 9, "method": "run.explode"});
    let rejection = decode_request(value).expect_err("unknown method");
    assert_eq!(rejection.id, Some(Id::from(9u64)));
    assert_eq!(rejection.error.code, code::METHOD_NOT_FOUND);
    assert_eq!(rejection.error.data_code(), "rpc.method_not_found");
    assert!(
        rejection.error.message.contains("run.start"),
        "the message lists the methods there are: {}",
        rejection.error.message
    );
}

#[test]
fn params_of_the_wrong_shape_are_invalid_params() {
    let value = json!({"jsonrpc": "2.0", "id": 9, "method": "run.events",
        "params": {"run": "01J", "after_seq": "three"}});
    let rejection = decode_request(value).expect_err("bad params");
    assert_eq!(rejection.id, Some(Id::from(9u64)));
    assert_eq!(rejection.error.code, code::INVALID_PARAMS);
    assert_eq!(rejection.error.data_code(), "rpc.invalid_params");

    let value = json!({"jsonrpc": "2.0", "id": 9, "method": "run.get"});
    let rejection = decode_request(value).expect_err("missing required param");
    assert_eq!(rejection.error.code, code::INVALID_PARAMS);
}

#[test]
fn anything_but_a_json_rpc_2_request_object_is_an_invalid_request() {
    for (value, id) in [
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "daemon.status"}]),
            None,
        ),
        (json!("daemon.status"), None),
        (
            json!({"jsonrpc": "1.0", "id": 5, "method": "daemon.status"}),
            Some(Id::from(5u64)),
        ),
        (
            json!({"id": 6, "method": "daemon.status"}),
            Some(Id::from(6u64)),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 7, "method": 12}),
            Some(Id::from(7u64)),
        ),
        (
            json!({"jsonrpc": "2.0", "id": true, "method": "daemon.status"}),
            None,
        ),
        (
            json!({"jsonrpc": "2.0", "id": {"n": 1}, "method": "daemon.status"}),
            None,
        ),
    ] {
        let rejection = decode_request(value.clone()).expect_err("invalid");
        assert_eq!(rejection.error.code, code::INVALID_REQUEST, "{value}");
        assert_eq!(rejection.id, id, "the id is kept when readable: {value}");
    }
}

#[test]
fn a_request_without_id_is_a_notification() {
    let value = json!({"jsonrpc": "2.0", "method": "daemon.status"});
    let (id, _) = decode_request(value).expect("valid");
    assert_eq!(id, None, "the server must not reply to it");
}

#[test]
fn any_id_json_rpc_allows_is_echoed_exactly_as_given() {
    for id in [
        json!(-1),
        json!(1.5),
        json!(0),
        json!("a"),
        json!(null),
        json!(u64::MAX),
    ] {
        let value = json!({"jsonrpc": "2.0", "id": id, "method": "daemon.status"});
        let (got, _) = decode_request(value).expect("a valid request");
        let got = got.expect("an id, so a reply is owed (`null` included)");
        let reply = serde_json::to_value(Response::success(Some(got), &json!({}))).expect("json");
        assert_eq!(reply["id"], id, "the reply carries the id as sent");
    }
}

fn timeline_entry() -> crate::store::TimelineEntry {
    crate::store::TimelineEntry {
        ordinal: 3,
        node_id: "plan".into(),
        visit: 2,
        status: "succeeded".into(),
        seq: 17,
        ts: "2026-12-03T12:00:00.000Z".into(),
        next_node: Some("build".into()),
        git_commit_sha: Some("0123456789abcdef0123456789abcdef01234567".into()),
        checkpoint: serde_json::json!({"version": 1, "current_node": "plan"}),
    }
}
