//! Runs whose commands execute in a container (`--sandbox docker`), end to
//! end: `weft run` through the real weftd, against a hermetic Podman
//! service speaking the Docker Engine API (`weft_tests::podman`), with the
//! test image (busybox and bash). What a stage writes in `/work` lands in
//! the run's worktree; network, memory, cancellation, a crash of weftd and
//! an engine or image that is not there each behave as docs/sandbox.md
//! says.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use weft::model::RunStatus;
use weft::store::{Home, Store};
use weft_fakellm::{FakeLlm, Reply, ToolCall};
use weft_tests::podman::{PodmanService, TEST_IMAGE};
use weft_tests::{Sandbox, Weftd, events, git_repo, named, wait_for_status, wait_until};

const BOUND: Duration = Duration::from_secs(120);

fn home(sb: &Sandbox) -> Home {
    Home::at(sb.path().join("home"))
}

fn run_dir(sb: &Sandbox, run_id: &str) -> PathBuf {
    Store::open_read_only(&home(sb))
        .and_then(|s| s.find_run(run_id))
        .expect("run")
        .run_dir
}

/// `weft run FILE --json --sandbox docker ARGS` with `DOCKER_HOST` at
/// `docker_host`, and the test image unless ARGS name one: the printed
/// conclusion and stderr.
fn run_in(
    sb: &Sandbox,
    docker_host: &str,
    file: &str,
    args: &[&str],
    env: &[(String, String)],
) -> (Value, String) {
    let image: &[&str] = if args.contains(&"--sandbox-image") {
        &[]
    } else {
        &["--sandbox-image", TEST_IMAGE]
    };
    let out = sb
        .weft()
        .env("DOCKER_HOST", docker_host)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(["run", file, "--json", "--sandbox", "docker"])
        .args(image)
        .args(args)
        .output()
        .expect("weft run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let conclusion = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no conclusion ({e}); stderr:\n{stderr}"));
    (conclusion, stderr)
}

/// `weft run FILE --detach --sandbox docker` of the test image with
/// `DOCKER_HOST` at `docker_host`, and ARGS: the run's id.
fn start_detached(sb: &Sandbox, docker_host: &str, file: &str, args: &[&str]) -> String {
    let out = sb
        .weft()
        .env("DOCKER_HOST", docker_host)
        .args(["run", file, "--detach", "--sandbox", "docker"])
        .args(["--sandbox-image", TEST_IMAGE])
        .args(args)
        .output()
        .expect("weft run");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn node_log(sb: &Sandbox, run_id: &str, node: &str, log: &str) -> String {
    read(&run_dir(sb, run_id).join("nodes").join(node).join(log))
}

const WRITE: &str = r#"digraph W {
    start [shape=Mdiamond]; exit [shape=Msquare]
    write [shape=parallelogram, script="[ -d /weft/nodes ] && echo \"in $PWD as $(id -u)\" && echo made > made.txt"]
    check [shape=parallelogram, script="cat made.txt; echo '{\"outcome\": \"success\", \"notes\": \"from the container\"}' > \"$WEFT_STATUS_FILE\""]
    start -> write -> check -> exit }"#;

#[test]
fn command_stages_run_in_one_container_whose_files_land_in_the_worktree_and_which_goes_with_the_run()
 {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    let repo = sb.path().join("repo");
    git_repo(&repo, &[("README", "hi\n")]);
    std::fs::write(repo.join("write.fabro"), WRITE).expect("workflow");
    let (conclusion, stderr) = run_in(
        &sb,
        &service.docker_host(),
        &repo.join("write.fabro").display().to_string(),
        &["--work-dir", &repo.display().to_string()],
        &[],
    );
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}\n{stderr}");
    let run_id = conclusion["run_id"].as_str().expect("id").to_string();

    assert_eq!(
        node_log(&sb, &run_id, "write", "stdout.log"),
        "in /work as 0\n",
        "the command ran in the container, in the work dir's mount"
    );
    let branch = format!("weft/run/{run_id}");
    assert_eq!(
        weft_tests::git(&repo, &["show", &format!("{branch}:made.txt")]),
        "made\n",
        "the file the container wrote is in the run's checkpoint"
    );
    assert!(
        !repo.join("made.txt").exists(),
        "the user's checkout is not touched"
    );
    assert_eq!(node_log(&sb, &run_id, "check", "stdout.log"), "made\n");

    let all = events(&sb, &run_id);
    let write = named(&all, "stage.completed")
        .into_iter()
        .find(|e| e["node_id"] == "write")
        .expect("write completed");
    assert_eq!(
        write["properties"]["outcome"]["files_touched"],
        json!(["made.txt"]),
        "the checkpoint commit saw the container's file"
    );
    let check = named(&all, "stage.completed")
        .into_iter()
        .find(|e| e["node_id"] == "check")
        .expect("check completed");
    assert_eq!(
        check["properties"]["outcome"]["notes"],
        json!(["from the container"]),
        "the status file written inside reached the engine"
    );

    let ready = named(&all, "sandbox.ready");
    let attach: Vec<&str> = ready
        .iter()
        .map(|e| e["properties"]["attach"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(attach, ["created", "running"], "one container for both");
    let container = ready[0]["properties"]["container"].as_str().expect("id");
    assert_eq!(ready[1]["properties"]["container"], container);
    assert_eq!(ready[0]["properties"]["image"], TEST_IMAGE);
    let removed = named(&all, "sandbox.removed");
    assert_eq!(removed.len(), 1, "{all:?}");
    assert_eq!(removed[0]["properties"]["container"], container);
    assert_eq!(service.container_ids(), Vec::<String>::new());
    assert!(!run_dir(&sb, &run_id).join("sandbox.json").exists());

    // Where each stage ran is shown.
    let logs = sb.run(&["logs", &run_id, "write"]);
    assert!(
        logs.stdout.contains(container) || logs.stderr.contains(container),
        "{logs:?}"
    );
}

#[test]
fn the_agents_shell_runs_in_the_container_and_its_file_tools_see_the_same_files() {
    let service = PodmanService::start();
    let fake = FakeLlm::start();
    let key = format!("sk-sandbox-agent-{}", std::process::id());
    fake.script(
        &key,
        [
            Reply::ToolCalls(vec![ToolCall::new(
                "c1",
                "shell",
                json!({"command": "[ -d /weft/nodes ] && echo inside > from_shell.txt && pwd"}),
            )]),
            Reply::ToolCalls(vec![ToolCall::new(
                "c2",
                "read_file",
                json!({"file_path": "from_shell.txt"}),
            )]),
            Reply::Text("Done.".into()),
        ],
    );
    let sb = Sandbox::new();
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    sb.write(
        "agent.fabro",
        r#"digraph A { start [shape=Mdiamond]; exit [shape=Msquare]
        work [shape=box, prompt="Make a file."]
        start -> work -> exit }"#,
    );
    let env = [
        ("OPENAI_API_KEY".to_string(), key.clone()),
        ("OPENAI_BASE_URL".to_string(), format!("{}/v1", fake.url())),
    ];
    let (conclusion, stderr) = run_in(
        &sb,
        &service.docker_host(),
        "agent.fabro",
        &[
            "--model",
            "gpt-5.2",
            "--work-dir",
            &work.display().to_string(),
        ],
        &env,
    );
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}\n{stderr}");
    assert_eq!(read(&work.join("from_shell.txt")), "inside\n");
    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 3);
    let second = sent[1].body.to_string();
    assert!(second.contains("/work"), "shell ran in /work: {second}");
    assert!(
        sent[2].body.to_string().contains("inside"),
        "read_file saw the file the shell wrote"
    );
    let run_id = conclusion["run_id"].as_str().expect("id");
    let all = events(&sb, run_id);
    assert_eq!(named(&all, "sandbox.ready").len(), 1, "{all:?}");
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn a_sandbox_has_no_network_and_its_memory_limit_kills_what_goes_over_it() {
    let service = PodmanService::start();
    // A server on the host's loopback, which the host itself reaches.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let sb = Sandbox::new();
    sb.write(
        "limits.fabro",
        format!(
            r#"digraph L {{ start [shape=Mdiamond]; exit [shape=Msquare]
            net [shape=parallelogram, script="if (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo reached; else echo refused; fi; ls /sys/class/net"]
            hog [shape=parallelogram, script="dd if=/dev/zero of=/dev/null bs=200M count=1"]
            start -> net -> hog -> exit }}"#
        ),
    );
    sb.write(
        "run.toml",
        "[workflow]\ngraph = \"limits.fabro\"\n[run.sandbox]\nprovider = \"docker\"\nmemory = \"64MiB\"\npids = 64\n",
    );
    let (conclusion, stderr) = run_in(&sb, &service.docker_host(), "run.toml", &[], &[]);
    let run_id = conclusion["run_id"].as_str().expect("id");
    assert_eq!(
        conclusion["failed_stages"],
        json!(["hog"]),
        "{conclusion}\n{stderr}"
    );
    assert_eq!(
        node_log(&sb, run_id, "net", "stdout.log"),
        "refused\nlo\n",
        "only the container's own loopback"
    );
    listener.set_nonblocking(true).expect("nonblocking");
    assert!(listener.accept().is_err(), "nothing reached the host");
    let all = events(&sb, run_id);
    let failed = named(&all, "stage.failed");
    let reason = failed[0]["properties"]["outcome"].to_string();
    assert!(
        failed[0]["node_id"] == "hog"
            && reason.contains("status 137: killed by the sandbox's memory limit (64 MiB)"),
        "{failed:?}"
    );
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn cancelling_a_run_mid_command_leaves_no_process_and_no_container() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    sb.write(
        "slow.fabro",
        r#"digraph S { start [shape=Mdiamond]; exit [shape=Msquare]
        slow [shape=parallelogram, script="echo started; sleep 313 & sleep 314; wait"]
        start -> slow -> exit }"#,
    );
    let run_id = start_detached(&sb, &service.docker_host(), "slow.fabro", &[]);
    let stdout = || {
        std::fs::read_to_string(run_dir(&sb, &run_id).join("nodes/slow/stdout.log"))
            .unwrap_or_default()
    };
    wait_until("the command has started", BOUND, || stdout() == "started\n");
    assert_eq!(service.container_ids().len(), 1);
    let cancel = sb.run(&["cancel", &run_id]);
    assert_eq!(cancel.code, 0, "{cancel:?}");
    wait_for_status(&home(&sb), &run_id, RunStatus::Cancelled);
    assert_eq!(service.container_ids(), Vec::<String>::new());
    assert_eq!(
        sleeping(&["313", "314"]),
        Vec::<String>::new(),
        "no process of the command is left"
    );
}

/// Host pids of `sleep N` processes (a container's processes are the
/// host's, in other namespaces).
fn sleeping(seconds: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_sleep = words.first().is_some_and(|w| w.ends_with(b"sleep"));
        if is_sleep
            && words
                .get(1)
                .is_some_and(|n| seconds.iter().any(|s| s.as_bytes() == *n))
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
fn a_run_resumed_after_weftd_is_killed_reuses_its_container_without_the_dead_attempts_command() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    // `mark` leaves a file in the container's own file system (not the
    // work dir): only the same container has it at `wait`'s second try.
    sb.write(
        "crash.fabro",
        r#"digraph C { start [shape=Mdiamond]; exit [shape=Msquare]
        mark [shape=parallelogram, script="echo here > /tmp/mark"]
        wait [shape=parallelogram, script="echo waiting; while [ ! -f go ]; do sleep 0.05; done; cat /tmp/mark; sleep 315 & true"]
        start -> mark -> wait -> exit }"#,
    );
    let daemon = Weftd::start(&sb);
    let work_dir = work.display().to_string();
    let run_id = start_detached(
        &sb,
        &service.docker_host(),
        "crash.fabro",
        &["--no-checkpoint", "--work-dir", &work_dir],
    );
    let log = run_dir(&sb, &run_id).join("nodes/wait/stdout.log");
    wait_until("wait is waiting", BOUND, || {
        std::fs::read_to_string(&log).unwrap_or_default() == "waiting\n"
    });
    let before = service.container_ids();
    assert_eq!(before.len(), 1);
    daemon.signal("KILL");
    drop(daemon);

    std::fs::write(work.join("go"), "").expect("go");
    let resumed = sb
        .weft()
        .args(["resume", &run_id, "--json"])
        .output()
        .expect("weft resume");
    let conclusion: Value = serde_json::from_slice(&resumed.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&resumed.stderr)));
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}");
    assert_eq!(
        read(&log),
        "waiting\nhere\n",
        "the resumed stage found the first container's file"
    );
    let all = events(&sb, &run_id);
    let attach: Vec<&str> = named(&all, "sandbox.ready")
        .iter()
        .map(|e| e["properties"]["attach"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(attach, ["created", "running", "reused"], "{all:?}");
    assert_eq!(service.container_ids(), Vec::<String>::new());
    assert_eq!(sleeping(&["315"]), Vec::<String>::new());
}

#[test]
fn a_missing_image_or_an_unreachable_engine_fails_the_run_before_its_first_stage() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    sb.write(
        "one.fabro",
        r#"digraph O { start [shape=Mdiamond]; exit [shape=Msquare]
        one [shape=parallelogram, script="touch ran"]
        start -> one -> exit }"#,
    );
    let (conclusion, _) = run_in(
        &sb,
        &service.docker_host(),
        "one.fabro",
        &["--sandbox-image", "weft-missing:1"],
        &[],
    );
    assert_eq!(conclusion["status"], "failed");
    let reason = conclusion["failure_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("image weft-missing:1 not found")
            && reason.contains(&service.docker_host()),
        "{reason}"
    );
    assert_eq!(conclusion["stages"], json!([]), "no stage ran");

    let nowhere = format!("unix://{}/nowhere.sock", sb.path().display());
    let (conclusion, _) = run_in(&sb, &nowhere, "one.fabro", &[], &[]);
    assert_eq!(conclusion["status"], "failed");
    let reason = conclusion["failure_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains(&format!("no Docker engine at {nowhere}")),
        "{reason}"
    );
    assert!(!sb.path().join("ran").exists());
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn a_kept_container_stays_and_one_an_ended_run_left_is_removed_when_weftd_starts() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    sb.write(
        "one.fabro",
        r#"digraph O { start [shape=Mdiamond]; exit [shape=Msquare]
        one [shape=parallelogram, script="true"]
        start -> one -> exit }"#,
    );
    let (conclusion, _) = run_in(
        &sb,
        &service.docker_host(),
        "one.fabro",
        &["--preserve-sandbox"],
        &[],
    );
    assert_eq!(conclusion["status"], "succeeded");
    let run_id = conclusion["run_id"].as_str().expect("id");
    let kept = named(&events(&sb, run_id), "sandbox.kept").len();
    assert_eq!(kept, 1);
    assert_eq!(service.container_ids().len(), 1, "kept on purpose");
    let record_path = run_dir(&sb, run_id).join("sandbox.json");
    let mut record: Value = serde_json::from_str(&read(&record_path)).expect("record");
    assert_eq!(record["kept"], true);

    // Restarting weftd leaves a kept container alone...
    sb.run(&["daemon", "stop"]);
    let daemon = Weftd::start(&sb);
    drop(daemon);
    assert_eq!(service.container_ids().len(), 1);

    // ...and removes one whose run ended without removing it (a crash
    // between the run's end and the removal leaves this record).
    record["kept"] = json!(false);
    std::fs::write(&record_path, record.to_string()).expect("record");
    let daemon = Weftd::start(&sb);
    // The record goes once the container has.
    wait_until("the leftover and its record are removed", BOUND, || {
        !record_path.exists()
    });
    assert_eq!(service.container_ids(), Vec::<String>::new());
    drop(daemon);
}

#[test]
fn a_command_over_its_timeout_in_the_container_is_killed_with_what_it_started() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    sb.write(
        "late.fabro",
        r#"digraph T { graph [on_failure="exit"]
        start [shape=Mdiamond]; exit [shape=Msquare]
        late [shape=parallelogram, script="sleep 316 & sleep 317", timeout="1s"]
        start -> late -> exit }"#,
    );
    let (conclusion, stderr) = run_in(&sb, &service.docker_host(), "late.fabro", &[], &[]);
    assert_eq!(conclusion["status"], "failed", "{conclusion}\n{stderr}");
    let reason = conclusion["failure_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("timed out after 1s"), "{reason}");
    assert_eq!(sleeping(&["316", "317"]), Vec::<String>::new());
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn a_container_killed_between_stages_is_started_again_for_the_next_command() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).expect("work");
    sb.write(
        "gate.fabro",
        r#"digraph G { start [shape=Mdiamond]; exit [shape=Msquare]
        before [shape=parallelogram, script="echo one > one.txt"]
        wait [shape=hexagon, label="Go on?"]
        after [shape=parallelogram, script="cat one.txt > two.txt"]
        start -> before -> wait
        wait -> after [label="[Y] Yes"]
        after -> exit }"#,
    );
    let work_dir = work.display().to_string();
    let run_id = start_detached(
        &sb,
        &service.docker_host(),
        "gate.fabro",
        &["--no-checkpoint", "--work-dir", &work_dir],
    );
    wait_until("the gate asks", BOUND, || {
        !named(&events(&sb, &run_id), "interview.started").is_empty()
    });
    let ids = service.container_ids();
    assert_eq!(ids.len(), 1);
    // As the last resort of a cancel does, or a reboot: its processes die.
    service.kill_container(&ids[0]);
    let answer = sb.run(&["answer", &run_id, "--key", "Y"]);
    assert_eq!(answer.code, 0, "{answer:?}");
    wait_for_status(&home(&sb), &run_id, RunStatus::Succeeded);
    assert_eq!(read(&work.join("two.txt")), "one\n");
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn the_containers_commands_get_the_runs_environment_its_mounts_and_its_user() {
    let service = PodmanService::start();
    let sb = Sandbox::new();
    let data = sb.path().join("data");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(data.join("in.txt"), "shared\n").expect("in.txt");
    sb.write(
        "env.fabro",
        r#"digraph E { start [shape=Mdiamond]; exit [shape=Msquare]
        look [shape=parallelogram, script="echo \"${WEFT_TEST_SEEN:-unset} ${WEFT_TEST_API_KEY:-unset} ${WEFT_TEST_DENIED:-unset} ${TMPDIR:-unset} $(id -u):$(id -g)\"; cat /data/in.txt; if (echo x > /data/new.txt) 2>/dev/null; then echo written; else echo read-only; fi"]
        start -> look -> exit }"#,
    );
    sb.write(
        "run.toml",
        format!(
            "[workflow]\ngraph = \"env.fabro\"\n[run.env]\ndeny = [\"WEFT_TEST_DENIED\"]\n\
             [run.sandbox]\nprovider = \"docker\"\nuser = \"1234:1234\"\nmounts = [\"{}:/data\"]\n",
            data.display()
        ),
    );
    let env = [
        ("WEFT_TEST_SEEN", "seen"),
        // Withheld on the host by its name, so in the container too.
        ("WEFT_TEST_API_KEY", "hunter2-value"),
        ("WEFT_TEST_DENIED", "denied"),
        // Describes the host: the image's own (none here) takes its place.
        ("TMPDIR", "/host/only/tmp"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let (conclusion, stderr) = run_in(&sb, &service.docker_host(), "run.toml", &[], &env);
    assert_eq!(conclusion["status"], "succeeded", "{conclusion}\n{stderr}");
    let run_id = conclusion["run_id"].as_str().expect("id");
    assert_eq!(
        node_log(&sb, run_id, "look", "stdout.log"),
        "seen unset unset unset 1234:1234\nshared\nread-only\n"
    );
    assert!(!data.join("new.txt").exists());
    assert_eq!(service.container_ids(), Vec::<String>::new());
}
