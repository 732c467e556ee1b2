//! `ssh://` engines: the hermetic Podman service (`weft_tests::podman`)
//! reached through the system's `ssh` client and a real `sshd`, which runs
//! per connection in inetd mode behind the client's `ProxyCommand`
//! (`weft_tests::sshd`): no port, and nothing of the machine's ssh setup
//! used or changed.
#![allow(clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use weft::sandbox::Settings;
use weft::sandbox::docker::{Engine, SandboxError};
use weft::sandbox::ssh::OPEN_BOUND;
use weft_tests::podman::{PodmanService, TEST_IMAGE, bash};
use weft_tests::sshd::SshServer;

/// How long ssh and sshd may take to be gone once the engine is dropped:
/// far above the milliseconds it takes, for a loaded machine.
const GONE_BOUND: Duration = Duration::from_secs(20);

fn words(command: &str) -> Vec<String> {
    command.split_whitespace().map(str::to_string).collect()
}

fn assert_no_process_left(ssh: &SshServer) {
    if let Err(left) = ssh.wait_for_no_process(GONE_BOUND) {
        panic!("ssh processes left behind: {left:#?}");
    }
}

#[test]
fn sandbox_check_through_ssh_names_the_engine_and_image_and_leaves_no_process() {
    let service = PodmanService::start();
    let ssh = SshServer::new();
    let sb = weft_tests::Sandbox::new();
    // The tunnel's private directory goes under TMPDIR: it must be gone too.
    let tmp = ssh.dir().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let address = ssh.address(&service.socket());
    let out = sb
        .weft()
        .env("DOCKER_HOST", &address)
        .env("WEFT_SSH_COMMAND", ssh.ssh_command())
        .env("TMPDIR", &tmp)
        .args(["sandbox", "check", "--image", TEST_IMAGE])
        .output()
        .expect("weft sandbox check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("(API 1.41) at {address}\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("image: {TEST_IMAGE} is there")),
        "{stdout}"
    );

    assert_no_process_left(&ssh);
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .expect("tmp")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "the tunnel's directory is left: {left:?}");
}

#[tokio::test]
async fn an_exec_through_an_ssh_engine_returns_its_output_and_exit_code() {
    let service = PodmanService::start();
    let ssh = SshServer::new();
    let work = tempfile::tempdir().expect("work dir");
    let address = ssh.address(&service.socket());
    let engine =
        Engine::connect_with_ssh(&address, &words(&ssh.ssh_command())).expect("connect over ssh");
    assert_eq!(engine.host(), address);
    let container = engine
        .ensure_container("run-ssh", work.path(), &Settings::new(TEST_IMAGE))
        .await
        .expect("create")
        .id;

    let outcome = bash(
        &engine,
        &container,
        "echo out; echo err >&2; echo made > /work/made.txt; exit 7",
    )
    .await;
    assert_eq!(outcome.exit_code, Some(7), "{outcome:?}");
    assert_eq!(outcome.stdout, "out\n");
    assert_eq!(outcome.stderr, "err\n");
    // The remote engine is this machine: the work dir is shared.
    let made = std::fs::read_to_string(work.path().join("made.txt")).expect("made.txt");
    assert_eq!(made, "made\n");

    // A clone keeps the tunnel open after the original is gone.
    let clone = engine.clone();
    drop(engine);
    clone.remove(&container).await.expect("remove");
    assert_eq!(service.container_ids(), Vec::<String>::new());
    assert!(!ssh.processes().is_empty(), "the tunnel closed too early");
    drop(clone);
    assert_no_process_left(&ssh);
}

#[test]
fn a_refused_login_is_unreachable_with_ssh_reason_and_leaves_no_process() {
    let ssh = SshServer::new();
    let address = ssh.address(Path::new("/run/podman/podman.sock"));
    let begun = Instant::now();
    let error = Engine::connect_with_ssh(&address, &words(&ssh.stranger_ssh_command()))
        .map(drop)
        .expect_err("a key sshd does not know");
    let took = begun.elapsed();
    let text = error.to_string();
    assert!(matches!(error, SandboxError::Unreachable { .. }), "{text}");
    assert!(
        text.starts_with(&format!("no Docker engine at {address} (DOCKER_HOST): ")),
        "{text}"
    );
    assert!(
        text.contains("ssh said: root@weft-test: Permission denied (publickey)"),
        "{text}"
    );
    assert!(took < OPEN_BOUND, "refused after {took:?}");
    assert_no_process_left(&ssh);
}

#[test]
fn a_remote_socket_nobody_listens_on_is_named_with_the_usual_ones() {
    let ssh = SshServer::new();
    let missing = ssh.dir().join("none.sock");
    let address = ssh.address(&missing);
    let error = Engine::connect_with_ssh(&address, &words(&ssh.ssh_command()))
        .map(drop)
        .expect_err("no engine at that socket");
    let text = error.to_string();
    assert!(matches!(error, SandboxError::Unreachable { .. }), "{text}");
    assert!(
        text.contains(&format!(
            "ssh logged in to weft-test, but nothing answers at {} there",
            missing.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("/var/run/docker.sock") && text.contains("/run/podman/podman.sock"),
        "{text}"
    );
    assert_no_process_left(&ssh);
}
