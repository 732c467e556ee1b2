//! weftd's desktop notifications, observed on a private D-Bus session bus:
//! `dbus-monitor` captures the `Notify` calls while a real notification
//! server (dunst, on an Xvfb display) owns `org.freedesktop.Notifications`.

use std::process::Command;

use weft_fakellm::{FakeLlm, Reply, ToolCall, Usage};
use weft_tests::{Sandbox, binary};

/// Runs `body` (bash) in a private X display and session bus with a real
/// notification server (dunst) owning `org.freedesktop.Notifications` and a
/// weftd on `home`; `before` runs first (a `dbus-monitor`, say). Every
/// process started here is stopped before it returns. `body` runs with
/// `set -e`: the status is a failure when one of its commands failed
/// (a wait loop's `CONDITION && break` is not one: a loop that gives up
/// is caught by the test's own assertions).
fn in_desktop_session(
    home: &std::path::Path,
    before: &str,
    body: &str,
) -> std::process::ExitStatus {
    let script = format!(
        r#"set -u
{before}
dunst > /dev/null 2>&1 &
for i in $(seq 100); do
  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q 'boolean true' && break
  sleep 0.1
done
export WEFT_HOME='{home}'
'{weftd}' --foreground > '{home}/weftd.out' 2>&1 &
D=$!
# Whatever ends the script stops what it started, keeping its status.
stop_all() {{
  status=$?
  set +e
  kill -TERM $D; wait $D
  kill $(jobs -p) 2>/dev/null
  exit $status
}}
trap stop_all EXIT
for i in $(seq 100); do '{weft}' daemon status > /dev/null 2>&1 && break; sleep 0.1; done
set -e
{body}
"#,
        home = home.display(),
        weftd = binary("weftd").display(),
        weft = binary("weft").display(),
    );
    Command::new("xvfb-run")
        .args(["-a", "dbus-run-session", "--", "bash", "-c", &script])
        // Not the test's own directory, which is inside Weft's repository:
        // a run started there would be checkpointed in it.
        .current_dir(home)
        .status()
        .unwrap_or_else(|e| {
            panic!("xvfb-run and dbus-run-session are needed (make deps installs them): {e}")
        })
}

/// Runs `body` in [`in_desktop_session`], which must succeed, with every
/// `Notify` call the session's notification service receives written to
/// `monitor` (dbus-monitor); what the monitor saw.
fn in_monitored_session(home: &std::path::Path, monitor: &std::path::Path, body: &str) -> String {
    let status = in_desktop_session(
        home,
        &format!(
            "dbus-monitor --session \"interface='org.freedesktop.Notifications',member='Notify'\" > '{}' 2>&1 &",
            monitor.display()
        ),
        body,
    );
    assert!(
        status.success(),
        "a command in the desktop session failed ({status})"
    );
    std::fs::read_to_string(monitor).unwrap_or_default()
}

#[test]
fn a_failing_command_fails_the_desktop_session() {
    let sb = Sandbox::new();
    let home = sb.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let marker = sb.path().join("reached");
    let failed = in_desktop_session(&home, "", &format!("false\ntouch '{}'", marker.display()));
    assert!(!failed.success(), "{failed}");
    assert!(!marker.exists(), "the body stops at the failed command");
    let fine = in_desktop_session(&home, "", "true");
    assert!(fine.success(), "{fine}");
}

#[test]
fn opening_a_gate_sends_one_notify_call_naming_the_workflow_with_the_question() {
    let sb = Sandbox::new();
    let workflow = sb.write(
        "gate.fabro",
        r#"digraph GateFlow { start [shape=Mdiamond]; exit [shape=Msquare]
           approve [shape=hexagon, label="Ship release 2.0?"]
           start -> approve
           approve -> exit [label="[Y] Yes"] }"#,
    );
    let home = sb.path().join("home");
    let monitor = sb.path().join("monitor.log");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let weft = binary("weft");
    let log = in_monitored_session(
        &home,
        &monitor,
        &format!(
            r#"'{weft}' run '{workflow}' --detach > /dev/null
for i in $(seq 300); do grep -q 'member=Notify' '{monitor}' && break; sleep 0.1; done
# A second call for the same gate would follow at once; give it the time to.
sleep 0.5"#,
            weft = weft.display(),
            workflow = workflow.display(),
            monitor = monitor.display(),
        ),
    );
    let calls = log.matches("member=Notify").count();
    assert_eq!(
        calls, 1,
        "one Notify call for one gate; the monitor saw:\n{log}"
    );
    assert!(
        log.contains("Weft: GateFlow needs you"),
        "the summary names the workflow:\n{log}"
    );
    assert!(
        log.contains("Ship release 2.0?"),
        "the body holds the question:\n{log}"
    );
}

#[test]
fn clicking_a_gate_notification_opens_the_app_at_that_question() {
    let sb = Sandbox::new();
    let workflow = sb.write(
        "gate.fabro",
        r#"digraph GateFlow { start [shape=Mdiamond]; exit [shape=Msquare]
           approve [shape=hexagon, label="Ship release 2.0?"]
           start -> approve
           approve -> exit [label="[Y] Yes"] }"#,
    );
    let home = sb.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    // The "app": records the arguments it was started with.
    let opened = sb.path().join("opened.txt");
    let app = sb.write(
        "fake-app.sh",
        format!("#!/bin/sh\necho \"$@\" > '{}'\n", opened.display()),
    );
    let make_executable = Command::new("chmod").arg("+x").arg(&app).status();
    assert!(make_executable.is_ok_and(|s| s.success()));
    std::fs::write(
        home.join("settings.toml"),
        format!("app = '{}'\n", app.display()),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let questions = sb.path().join("questions.json");
    // dunstctl's `action` performs the notification's default action, as a
    // click on it does.
    let weft = binary("weft");
    let status = in_desktop_session(
        &home,
        "",
        &format!(
            r#"'{weft}' run '{workflow}' --detach > /dev/null
for i in $(seq 100); do '{weft}' questions --json > '{questions}'; grep -q 'Ship release' '{questions}' && break; sleep 0.1; done
for i in $(seq 50); do [ "$(dunstctl count displayed)" -ge 1 ] && break; sleep 0.1; done
dunstctl action 0
for i in $(seq 100); do [ -s '{opened}' ] && break; sleep 0.1; done"#,
            weft = weft.display(),
            workflow = workflow.display(),
            questions = questions.display(),
            opened = opened.display(),
        ),
    );
    assert!(
        status.success(),
        "a command in the desktop session failed ({status})"
    );
    let listed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&questions).unwrap_or_default())
            .unwrap_or_else(|e| panic!("weft questions --json: {e}"));
    let question = &listed[0];
    // The question's deep link, as the app's one argument.
    let expected = format!(
        "weft://run/{}/question/{}",
        question["run_id"].as_str().unwrap_or("?"),
        question["id"].as_str().unwrap_or("?")
    );
    let args = std::fs::read_to_string(&opened).unwrap_or_default();
    assert_eq!(
        args.trim(),
        expected,
        "the click started the app at the gate's question; weftd said:\n{}",
        std::fs::read_to_string(home.join("weftd.out")).unwrap_or_default()
    );
}

#[test]
fn a_gate_opened_while_notifications_are_paused_is_not_shown_and_resuming_shows_the_next() {
    let sb = Sandbox::new();
    let gate = |name: &str, question: &str| {
        format!(
            r#"digraph {name} {{ start [shape=Mdiamond]; exit [shape=Msquare]
               approve [shape=hexagon, label="{question}"]
               start -> approve
               approve -> exit [label="[Y] Yes"] }}"#
        )
    };
    // The paused run's gate waits behind a stage that waits for `go`, so
    // that `weft events --follow` is subscribed before the gate opens and
    // sees its event live: weftd decides about a notification before it
    // sends the event to subscribers, so seeing it means the decision was
    // made while paused (a question in the store is not enough: it is
    // written before its event).
    let go = sb.path().join("go");
    let follow = sb.path().join("follow.log");
    let paused = sb.write(
        "paused.fabro",
        format!(
            r#"digraph PausedFlow {{ start [shape=Mdiamond]; exit [shape=Msquare]
               wait_go [shape=parallelogram, script="for i in $(seq 1200); do [ -e '{go}' ] && exit 0; sleep 0.05; done; exit 1"]
               approve [shape=hexagon, label="Asked while paused?"]
               start -> wait_go -> approve
               approve -> exit [label="[Y] Yes"] }}"#,
            go = go.display()
        ),
    );
    let resumed = sb.write(
        "resumed.fabro",
        gate("ResumedFlow", "Asked after resuming?"),
    );
    let home = sb.path().join("home");
    let monitor = sb.path().join("monitor.log");
    let said = sb.path().join("said.txt");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let weft = binary("weft");
    // Notifications are shown in the order their events happen, so once
    // the resumed gate's is seen, the paused gate's would have been too.
    let log = in_monitored_session(
        &home,
        &monitor,
        &format!(
            r#"'{weft}' notifications pause > '{said}'
'{weft}' notifications status >> '{said}'
'{weft}' daemon status --json >> '{said}'
run=$('{weft}' run '{paused}' --detach)
'{weft}' events "$run" --follow > '{follow}' 2>&1 &
for i in $(seq 300); do grep -q 'stage.started' '{follow}' && break; sleep 0.1; done
touch '{go}'
for i in $(seq 300); do grep -q 'interview.started' '{follow}' && break; sleep 0.1; done
'{weft}' notifications resume --json >> '{said}'
'{weft}' run '{resumed}' --detach > /dev/null
for i in $(seq 300); do grep -q 'ResumedFlow' '{monitor}' && break; sleep 0.1; done"#,
            weft = weft.display(),
            paused = paused.display(),
            resumed = resumed.display(),
            said = said.display(),
            monitor = monitor.display(),
            go = go.display(),
            follow = follow.display(),
        ),
    );
    assert!(
        log.contains("Weft: ResumedFlow needs you"),
        "the gate after resuming is shown:\n{log}"
    );
    let followed = std::fs::read_to_string(&follow).unwrap_or_default();
    assert!(
        followed.contains("interview.started"),
        "the paused run reached its gate:\n{followed}"
    );
    assert!(
        !log.contains("PausedFlow"),
        "the gate opened while paused is never shown:\n{log}"
    );
    assert_eq!(log.matches("member=Notify").count(), 1, "{log}");
    let said = std::fs::read_to_string(&said).unwrap_or_default();
    assert!(
        said.starts_with(
            "notifications paused until `weft notifications resume` or weftd restarts\nnotifications are paused\n"
        ),
        "{said}"
    );
    assert!(
        said.contains("\"notifications_paused\":true"),
        "daemon status reports the pause: {said}"
    );
    assert!(said.ends_with("{\"paused\":false}\n"), "{said}");
}

/// A turn of the fake model with `input` tokens of usage: reading a file,
/// or (`last`) the agent's final answer.
fn turn(input: u64, last: bool) -> Reply {
    Reply::Turn {
        text: last.then(|| "Done".to_string()),
        tool_calls: if last {
            Vec::new()
        } else {
            vec![ToolCall::new(
                "",
                "read_file",
                serde_json::json!({"file_path": "notes.txt"}),
            )]
        },
        usage: Some(Usage {
            input,
            output: 0,
            ..Usage::default()
        }),
        finish: None,
    }
}

#[test]
fn a_run_nearing_its_budget_sends_a_notification_naming_the_spend() {
    // gpt-5.2 costs $1.80 per million input tokens: two turns of 500k are
    // $1.80 of a $2 budget, past its 80% warning, and the last turn stays
    // under the limit, so the run finishes without a budget question.
    let fake = FakeLlm::start();
    let key = format!("sk-notify-budget-{}", std::process::id());
    fake.script(
        &key,
        [
            turn(500_000, false),
            turn(500_000, false),
            turn(1_000, true),
        ],
    );
    let sb = Sandbox::new();
    sb.write("notes.txt", "x\n");
    let workflow = sb.write(
        "spend.fabro",
        r#"digraph SpendFlow { start [shape=Mdiamond]; exit [shape=Msquare]
           fix [shape=box, prompt="Read notes.txt, then say Done."]
           start -> fix -> exit }"#,
    );
    let home = sb.path().join("home");
    std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
    let monitor = sb.path().join("monitor.log");
    let log = in_monitored_session(
        &home,
        &monitor,
        &format!(
            r#"cd '{dir}'
OPENAI_API_KEY='{key}' OPENAI_BASE_URL='{url}/v1' '{weft}' run '{workflow}' --detach --model gpt-5.2 --max-cost 2 > /dev/null
for i in $(seq 600); do grep -q 'SpendFlow finished' '{monitor}' && break; sleep 0.1; done"#,
            dir = sb.path().display(),
            url = fake.url(),
            weft = binary("weft").display(),
            workflow = workflow.display(),
            monitor = monitor.display(),
        ),
    );
    assert!(
        log.contains("Weft: SpendFlow is nearing its budget"),
        "the budget warning is a notification; the monitor saw:\n{log}\nweftd said:\n{}",
        std::fs::read_to_string(home.join("weftd.out")).unwrap_or_default()
    );
    assert!(log.contains("spent"), "its body gives the spend:\n{log}");
    assert_eq!(fake.requests(&key).len(), 3, "the run went on to the end");
}
