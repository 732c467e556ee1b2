//! Sandboxes against a real engine: `weft::sandbox::docker` talking to a
//! hermetic Podman service (`weft_tests::podman`), one per test (nextest
//! runs each test in its own process; the service starts in well under a
//! second and lives in its own mount namespace, so parallel tests never
//! share one).
#![allow(clippy::expect_used)]

use std::sync::Mutex;
use std::time::{Duration, Instant};

use weft::model::Stream;
use weft::sandbox::docker::{Command, Engine, SandboxError};
use weft::sandbox::{Network, Settings};
use weft_tests::podman::{PodmanService, TEST_IMAGE, bash};
use weft_tests::processes_naming;

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(ToString::to_string).collect()
}

fn engine_of(service: &PodmanService) -> Engine {
    Engine::connect_to(&service.docker_host()).expect("connect")
}

#[tokio::test]
async fn a_runs_container_is_found_again_by_its_label_restarted_when_stopped_and_removed() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let mut settings = Settings::new(TEST_IMAGE);
    settings.cpus = Some(1.0);
    settings.pids = Some(64);
    let engine = engine_of(&service);
    let made = engine
        .ensure_container("run-a", work.path(), &settings)
        .await
        .expect("create");
    assert!(made.running);

    // A daemon restarted after kill -9 connects afresh and finds it.
    let restarted = engine_of(&service);
    let found = restarted
        .ensure_container("run-a", work.path(), &settings)
        .await
        .expect("find");
    assert_eq!(found, made);
    assert_eq!(service.container_ids(), vec![made.id.clone()]);

    let still_live = restarted
        .containers_of_finished_runs(&["run-a"])
        .await
        .expect("list");
    assert_eq!(still_live, vec![]);
    let finished = restarted
        .containers_of_finished_runs(&["run-b"])
        .await
        .expect("list");
    assert_eq!(finished, vec![made.clone()]);

    // A container whose processes were killed is started again.
    service.kill_container(&made.id);
    let deadline = Instant::now() + Duration::from_secs(60);
    while restarted
        .containers_of_run("run-a")
        .await
        .expect("list")
        .iter()
        .any(|c| c.running)
    {
        assert!(Instant::now() < deadline, "the killed container still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = restarted
        .ensure_container("run-a", work.path(), &settings)
        .await
        .expect("start again");
    assert_eq!(started, made);
    assert_eq!(bash(&restarted, &made.id, "true").await.exit_code, Some(0));

    restarted.remove(&made.id).await.expect("remove");
    assert_eq!(service.container_ids(), Vec::<String>::new());
    restarted
        .remove(&made.id)
        .await
        .expect("removing again is fine");
}

#[tokio::test]
async fn an_exec_streams_its_output_and_exit_code_with_its_env_and_workdir() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let mut settings = Settings::new(TEST_IMAGE);
    settings.env = vec![("SANDBOX_VAR".to_string(), "box".to_string())];
    let engine = engine_of(&service);
    let container = engine
        .ensure_container("run-exec", work.path(), &settings)
        .await
        .expect("create")
        .id;

    let seen = Mutex::new(Vec::new());
    let argv = argv(&[
        "bash",
        "-c",
        "echo out; echo err >&2; echo \"$FOO $SANDBOX_VAR\"; pwd; echo made > /work/made.txt; exit 3",
    ]);
    let env = [("FOO".to_string(), "bar".to_string())];
    let outcome = engine
        .exec(
            &container,
            Command {
                argv: &argv,
                env: &env,
                workdir: Some("/tmp"),
                user: None,
            },
            |stream, bytes| {
                seen.lock()
                    .expect("lock")
                    .push((stream, String::from_utf8_lossy(bytes).into_owned()));
            },
            std::future::pending(),
        )
        .await
        .expect("exec");
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(outcome.stdout, "out\nbar box\n/tmp\n");
    assert_eq!(outcome.stderr, "err\n");
    assert_eq!(outcome.stdout_bytes, 17);
    assert!(!outcome.cancelled);
    let seen = seen.into_inner().expect("lock");
    let streamed = |which: Stream| -> String {
        seen.iter()
            .filter(|(s, _)| *s == which)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    assert_eq!(streamed(Stream::Stdout), outcome.stdout);
    assert_eq!(streamed(Stream::Stderr), outcome.stderr);

    let written = std::fs::read_to_string(work.path().join("made.txt")).expect("made.txt");
    assert_eq!(written, "made\n");

    let default_dir = bash(&engine, &container, "pwd").await;
    assert_eq!(default_dir.exit_code, Some(0));
    assert_eq!(default_dir.stdout, "/work\n");
}

#[tokio::test]
async fn a_sandbox_without_network_has_only_loopback() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let settings = Settings::new(TEST_IMAGE);
    assert_eq!(settings.network, Network::None);
    let engine = engine_of(&service);
    let container = engine
        .ensure_container("run-net", work.path(), &settings)
        .await
        .expect("create")
        .id;
    let outcome = bash(&engine, &container, "cat /proc/net/dev").await;
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    // Two header lines, then one line per interface: `  lo: 0 0 ...`.
    let interfaces: Vec<&str> = outcome
        .stdout
        .lines()
        .skip(2)
        .filter_map(|line| line.split_once(':').map(|(name, _)| name.trim()))
        .collect();
    assert_eq!(interfaces, vec!["lo"], "{}", outcome.stdout);
}

#[tokio::test]
async fn an_allocation_over_the_memory_limit_is_killed_and_counted() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let mut settings = Settings::new(TEST_IMAGE);
    settings.memory_bytes = Some(64 << 20);
    let engine = engine_of(&service);
    let container = engine
        .ensure_container("run-oom", work.path(), &settings)
        .await
        .expect("create")
        .id;
    assert_eq!(engine.oom_kills(&container).await.expect("count"), Some(0));

    let argv = argv(&["dd", "if=/dev/zero", "of=/dev/null", "bs=200M", "count=1"]);
    let over = engine
        .exec(
            &container,
            Command::new(&argv),
            |_, _| {},
            std::future::pending(),
        )
        .await
        .expect("exec");
    // SIGKILL: the API has no OOM flag for an exec; the cgroup counts it.
    assert_eq!(over.exit_code, Some(137), "{over:?}");
    let kills = engine.oom_kills(&container).await.expect("count");
    assert!(kills.is_some_and(|n| n >= 1), "oom_kill {kills:?}");

    // The container lives on, and an allocation under the limit succeeds.
    let under = bash(
        &engine,
        &container,
        "dd if=/dev/zero of=/dev/null bs=16M count=1",
    )
    .await;
    assert_eq!(under.exit_code, Some(0), "{under:?}");
}

#[tokio::test]
async fn cancelling_a_long_exec_returns_promptly_and_leaves_no_process() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let engine = engine_of(&service);
    let container = engine
        .ensure_container("run-cancel", work.path(), &Settings::new(TEST_IMAGE))
        .await
        .expect("create")
        .id;

    // A child in the group and one that left it: both must go.
    let argv = argv(&[
        "bash",
        "-c",
        "sleep 300 & (setsid sleep 301 &); echo started; sleep 302",
    ]);
    let started = tokio::sync::Notify::new();
    let begun = Instant::now();
    let outcome = engine
        .exec(
            &container,
            Command::new(&argv),
            |_, bytes| {
                if bytes.windows(7).any(|w| w == b"started") {
                    started.notify_one();
                }
            },
            started.notified(),
        )
        .await
        .expect("exec");
    let took = begun.elapsed();
    assert!(outcome.cancelled);
    assert_eq!(outcome.exit_code, Some(137), "{outcome:?}");
    // Bounded far above the ~1 s it takes, for a loaded machine; the
    // command itself would take 300 s.
    assert!(took < Duration::from_secs(60), "cancelling took {took:?}");

    let left = bash(&engine, &container, "ps -o pid,args").await;
    assert!(!left.stdout.contains("sleep 30"), "{}", left.stdout);

    // Dropping the service leaves no process and no mount of its own.
    let dir = service.dir().to_path_buf();
    drop(service);
    assert_eq!(processes_naming(&dir), Vec::<String>::new());
    let mounts = std::fs::read_to_string("/proc/mounts").expect("mounts");
    assert!(!mounts.contains(&*dir.to_string_lossy()), "{mounts}");
    assert!(!dir.exists());
}

#[tokio::test]
async fn an_unreachable_engine_is_named_with_what_to_do() {
    let dir = tempfile::tempdir().expect("dir");
    let missing = format!("unix://{}", dir.path().join("none.sock").display());
    let error = Engine::connect_to(&missing)
        .map(drop)
        .expect_err("no socket");
    let text = error.to_string();
    assert!(matches!(error, SandboxError::Unreachable { .. }), "{text}");
    assert!(
        text.contains(&missing) && text.contains("DOCKER_HOST"),
        "{text}"
    );
    assert!(text.contains("podman system service"), "{text}");

    // A socket nobody listens on any more.
    let dead = dir.path().join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&dead).expect("bind"));
    let host = format!("unix://{}", dead.display());
    let text = ping_error(&host).await;
    assert!(
        text.starts_with(&format!(
            "no Docker engine at {host} (DOCKER_HOST): connection refused;"
        )),
        "{text}"
    );

    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let host = format!("tcp://127.0.0.1:{port}");
    let text = ping_error(&host).await;
    assert!(
        text.starts_with(&format!(
            "no Docker engine at {host} (DOCKER_HOST): connection refused;"
        )),
        "{text}"
    );
}

async fn ping_error(host: &str) -> String {
    let engine = Engine::connect_to(host).expect("connect is lazy");
    let error = engine.ping().await.expect_err("nothing listens");
    assert!(matches!(error, SandboxError::Unreachable { .. }), "{error}");
    error.to_string()
}

#[tokio::test]
async fn a_missing_image_is_named_with_the_engine_and_no_container_is_left() {
    let service = PodmanService::start();
    let work = tempfile::tempdir().expect("work dir");
    let engine = engine_of(&service);
    let error = engine
        .ensure_container(
            "run-img",
            work.path(),
            &Settings::new("weft-no-such-image:1"),
        )
        .await
        .expect_err("no such image");
    let text = error.to_string();
    assert!(matches!(error, SandboxError::ImageMissing { .. }), "{text}");
    assert!(text.contains("weft-no-such-image:1"), "{text}");
    assert!(text.contains(&service.docker_host()), "{text}");
    assert!(text.contains("build or pull"), "{text}");
    assert_eq!(service.container_ids(), Vec::<String>::new());
}

#[test]
fn sandbox_check_names_the_engine_and_its_image_or_says_why_not() {
    let service = PodmanService::start();
    let sb = weft_tests::Sandbox::new();
    let check = |args: &[&str], host: &str| {
        let out = sb
            .weft()
            .env("DOCKER_HOST", host)
            .args(["sandbox", "check"])
            .args(args)
            .output()
            .expect("weft sandbox check");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let host = service.docker_host();
    let (code, stdout, stderr) = check(&["--image", TEST_IMAGE], &host);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("(API 1.41) at unix://"), "{stdout}");
    assert!(
        stdout.contains(&format!("image: {TEST_IMAGE} is there")),
        "{stdout}"
    );

    let (code, stdout, stderr) = check(&["--image", "weft-missing:1", "--json"], &host);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let report = weft_tests::json(&stdout);
    assert_eq!(report["reachable"], true);
    assert_eq!(report["image_present"], false);
    assert_eq!(report["ok"], false);

    let gone = format!("unix://{}/gone.sock", service.dir().display());
    let (code, stdout, stderr) = check(&["--image", TEST_IMAGE], &gone);
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains("no Docker engine at unix://") && stderr.contains("(DOCKER_HOST)"),
        "{stderr}"
    );
}
