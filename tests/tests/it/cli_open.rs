//! `weft open`: the deep link to a run, a stage visit's tab, a bar tab or a
//! question, printed or handed to the desktop app (docs/cli.md, docs/app.md
//! "Deep links"). The "app" here is a script that records its arguments:
//! the real app's side of a link is tests/app/deeplink.py's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use weft_tests::{Sandbox, json, wait_until};

const QUICK: &str = r#"digraph Quick { start [shape=Mdiamond]; exit [shape=Msquare]
  say [shape=parallelogram, script="echo said"]
  start -> say -> exit }"#;

/// One finished run of QUICK; its id.
fn one_run(sb: &Sandbox) -> String {
    sb.write("quick.fabro", QUICK);
    let run = sb.run(&["run", "--no-daemon", "quick.fabro", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    json(&run.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A run that asked one question (its gate fails at once: no one answers
/// from a closed stdin); the run's id and the question's.
fn asked_run(sb: &Sandbox) -> (String, String) {
    sb.write(
        "gate.fabro",
        r#"digraph Gate { start [shape=Mdiamond]; exit [shape=Msquare]
  approve [shape=hexagon, label="Ship it?"]
  start -> approve -> exit }"#,
    );
    let run = sb.run(&["run", "--no-daemon", "gate.fabro", "--json"]);
    let run_id = json(&run.stdout)["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let events = sb.run(&["events", &run_id, "--json"]);
    assert_eq!(events.code, 0, "{events:?}");
    let question = events
        .stdout
        .lines()
        .map(json)
        .find_map(|e| e["properties"]["question_id"].as_str().map(String::from))
        .unwrap_or_else(|| panic!("the run asked no question: {events:?}"));
    (run_id, question)
}

/// A fake desktop app, named in settings.toml: it writes its arguments,
/// one a line, to the returned file (whole, by a rename), then its pid
/// beside it, and stays up, as the real app does.
fn fake_app(sb: &Sandbox) -> PathBuf {
    let opened = sb.path().join("opened.txt");
    let app = sb.write(
        "fake-app.sh",
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{o}.tmp' && mv '{o}.tmp' '{o}'\n\
             echo $$ > '{o}.pid'\nexec sleep 60\n",
            o = opened.display()
        ),
    );
    let made_executable = Command::new("chmod").arg("+x").arg(&app).status();
    assert!(made_executable.is_ok_and(|s| s.success()));
    sb.write("home/settings.toml", format!("app = '{}'\n", app.display()));
    opened
}

/// Ends the fake app once it has said its pid.
fn stop_fake_app(opened: &Path) {
    let pid_file = opened.with_extension("txt.pid");
    wait_until("the fake app says its pid", Duration::from_secs(10), || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n'))
    });
    let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
    let _ = Command::new("kill").arg(pid.trim()).status();
}

#[test]
fn open_print_gives_the_canonical_link_of_each_place() {
    let sb = Sandbox::new();
    let id = one_run(&sb);
    let print = |args: &[&str]| {
        let mut all = vec!["open"];
        all.extend_from_slice(args);
        all.push("--print");
        let out = sb.run(&all);
        assert_eq!(out.code, 0, "weft {all:?}: {out:?}");
        out.stdout.trim_end().to_string()
    };
    let prefix = &id[..id.len() - 4];
    assert_eq!(
        print(&[prefix]),
        format!("weft://run/{id}"),
        "a prefix is resolved"
    );
    assert_eq!(
        print(&["last", "--stage", "say"]),
        format!("weft://run/{id}/stage/say")
    );
    assert_eq!(
        print(&["last", "--stage", "say@1", "--tab", "transcript"]),
        format!("weft://run/{id}/stage/say@1/transcript")
    );
    assert_eq!(
        print(&["last", "--stage", "say", "--tab", "output"]),
        format!("weft://run/{id}/stage/say@1/output"),
        "a tab without a visit opens the latest recorded visit"
    );
    assert_eq!(
        print(&["last", "--bar", "cost"]),
        format!("weft://run/{id}/cost")
    );
    assert_eq!(
        print(&[format!("WEFT://run/{id}/stage/%73ay@01/output/").as_str()]),
        format!("weft://run/{id}/stage/say@1/output"),
        "a link given whole is printed in its canonical spelling"
    );
    let as_json = sb.run(&["open", "last", "--print", "--json"]);
    assert_eq!(as_json.code, 0, "{as_json:?}");
    assert_eq!(
        json(&as_json.stdout),
        serde_json::json!({ "link": format!("weft://run/{id}") })
    );

    for (args, says) in [
        (vec!["last", "--tab", "output"], "--stage"),
        (vec!["last", "--stage", "say@0"], "counted from 1"),
        (
            vec!["last", "--stage", "say@1", "--tab", "timeline"],
            "not a stage tab",
        ),
        (vec!["last", "--bar", "output"], "not a run bar tab"),
        (
            vec!["last", "--stage", "never", "--tab", "output"],
            "no visit of `never`",
        ),
        (vec!["last", "--question", "q/1"], "not a question id"),
        (vec!["last", "--question", "01Q"], "has no question `01Q`"),
        (vec!["last", "--stage", "say@+1"], "not a number"),
        (vec!["last", "--stage", "say@ 1"], "not a number"),
        (vec!["last", "--stage", "me@home"], "needs its visit"),
        (
            vec!["weft://gates", "--bar", "cost"],
            "names its place itself",
        ),
    ] {
        let mut all = vec!["open"];
        all.extend_from_slice(&args);
        all.push("--print");
        let out = sb.run(&all);
        assert_eq!(out.code, 2, "weft {all:?}: {out:?}");
        assert!(out.stdout.is_empty(), "no link for weft {all:?}");
        assert!(
            out.stderr.contains(says),
            "weft {all:?} should say {says}: {}",
            out.stderr
        );
    }
}

#[test]
fn open_question_takes_only_a_question_the_run_asked() {
    let sb = Sandbox::new();
    let (run, question) = asked_run(&sb);
    let out = sb.run(&["open", &run, "--question", &question, "--print"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout.trim_end(),
        format!("weft://run/{run}/question/{question}")
    );
    // A question of another run is not this run's.
    let other = one_run(&sb);
    let out = sb.run(&["open", &other, "--question", &question, "--print"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!("run {other} has no question")),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn open_starts_the_configured_app_with_exactly_the_link_and_does_not_wait_for_it() {
    let sb = Sandbox::new();
    let id = one_run(&sb);
    let opened = fake_app(&sb);
    let started = Instant::now();
    let out = sb.run(&["open", "last", "--stage", "say@1", "--tab", "output"]);
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{out:?}");
    let link = format!("weft://run/{id}/stage/say@1/output");
    assert_eq!(out.stdout.trim_end(), link, "the link is printed");
    wait_until("the app is started", Duration::from_secs(10), || {
        opened.is_file()
    });
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap_or_default(),
        format!("{link}\n"),
        "the link is the app's one argument"
    );
    stop_fake_app(&opened);
    assert!(
        took < Duration::from_secs(30),
        "weft open returned while the app (which sleeps 60 s) ran: {took:?}"
    );
}

#[test]
fn open_of_an_unknown_run_is_a_clear_error() {
    let sb = Sandbox::new();
    one_run(&sb);
    let opened = fake_app(&sb);
    let out = sb.run(&["open", "nosuchrun"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("no run matches `nosuchrun`"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    assert!(!opened.exists(), "no app for a run that is not there");
}

#[test]
fn open_refuses_a_hostile_link_and_starts_nothing() {
    let sb = Sandbox::new();
    let opened = fake_app(&sb);
    let long = format!("weft://run/R/stage/{}", "x".repeat(3000));
    for link in [
        "weft://run/../../etc/passwd",
        "weft://run/01R/stage/%FF",
        "weft://run/01R/stage/a%0Ab@1",
        "weft://run/01R/stage/x@99999999999",
        "weft://run/01R?cmd=rm",
        "weft://settings",
        "weft://",
        long.as_str(),
    ] {
        let out = sb.run(&["open", link]);
        assert_eq!(out.code, 2, "{link}: {out:?}");
        assert!(
            out.stderr.contains("not a Weft link"),
            "{link}: {}",
            out.stderr
        );
        assert!(out.stderr.len() < 1_000, "a short error: {}", out.stderr);
    }
    // `weft open` starts the app before it returns, and the app writes its
    // file at once: an app started by a refused link (all but the last
    // some commands ago) would have written it by now. The good link
    // below overwrites the file, so this is the check that counts.
    assert!(
        !opened.exists(),
        "a refused link started the app: {:?}",
        std::fs::read_to_string(&opened)
    );
    let good = sb.run(&["open", "weft://gates"]);
    assert_eq!(good.code, 0, "{good:?}");
    wait_until("the app is started", Duration::from_secs(10), || {
        opened.is_file()
    });
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap_or_default(),
        "weft://gates\n",
        "the good link reached the app"
    );
    stop_fake_app(&opened);
}

#[test]
fn without_the_app_the_error_gives_the_link_and_the_setting() {
    let sb = Sandbox::new();
    let id = one_run(&sb);
    let missing = sb.path().join("no-such-app");
    sb.write(
        "home/settings.toml",
        format!("app = '{}'\n", missing.display()),
    );
    let out = sb.run(&["open", "last"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
    assert!(
        out.stderr.contains("app = "),
        "says how to set it: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!("weft://run/{id}")),
        "gives the link to open by hand: {}",
        out.stderr
    );
}
