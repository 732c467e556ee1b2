//! Sandboxes (issue 22): what running a run's commands in a container
//! costs, next to running them on the host (the local provider).
//!
//! It starts the hermetic Podman Docker-API service of the sandbox tests
//! (`weft_tests::podman`; root and the Debian packages `make test`
//! installs) and measures, through `weft::sandbox::docker::Engine`:
//!
//! - **start**: a new run's container (`ensure_container`: the lookup by
//!   label, create, start) and its removal;
//! - **resume**: `ensure_container` for a run whose container exists, as
//!   a restarted daemon finds it: running, and stopped (started again);
//! - **exec**: `bash -c true` through `Engine::exec` next to
//!   `weft::exec::process::run` of the same script on the host, and where
//!   an exec's time goes: one API round trip (`_ping`), the exec's three
//!   API calls timed one by one, and `runc exec` alone;
//! - **output**: 1 MiB printed in large writes and in 16,384 lines, and
//!   16 MiB in large writes, both ways;
//! - **parallel**: K execs at once from K tasks, both ways;
//! - **cpu**: the CPU time an exec costs, and which process spends it: the
//!   client, the Podman service, conmon and `runc exec`, the exit command
//!   conmon runs later, the command itself; next to the host's.
//!
//! `cargo bench -p weft-tests --bench sandbox` (`-- --reps N`: samples per
//! row, default 20; `-- --parallel K`: default 4; `-- --only exec,output`:
//! those groups only). Prints Markdown tables and the load average before
//! and after; it checks only that each command did what it should (exit 0,
//! all of its output). docs/performance.md has the figures.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use weft::exec::cancel::Cancel;
use weft::exec::process::{self, Language, Script};
use weft::model::Stream;
use weft::sandbox::Settings;
use weft::sandbox::docker::{Command, Container, Engine};
use weft_tests::podman::{PodmanService, TEST_IMAGE};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

/// A group of rows: a function of the bench's setup. Each group makes (and
/// removes) the containers it needs.
type Group = fn(&Bench) -> Result<Vec<Row>>;

/// The groups, in the order they run and print; `--only` picks by name.
/// `weftd` runs the release `weft` and `weftd` beside this bench's
/// executable (`cargo build --release -p weft --bins` first).
const GROUPS: &[(&str, Group)] = &[
    ("start", start),
    ("resume", resume),
    ("exec", exec),
    ("output", output),
    ("parallel", parallel),
    ("cpu", cpu),
    ("weftd", weftd),
];

/// Stages of the workflow the `weftd` rows run.
const WEFTD_STAGES: usize = 20;

/// A chain of `WEFTD_STAGES` command stages running `true`.
fn chain_of_true() -> String {
    let mut text = String::from("digraph Chain { start [shape=Mdiamond]; exit [shape=Msquare]\n");
    for i in 0..WEFTD_STAGES {
        text.push_str(&format!("  s{i} [shape=parallelogram, script=\"true\"]\n"));
    }
    text.push_str("  start -> s0\n");
    for i in 1..WEFTD_STAGES {
        text.push_str(&format!("  s{} -> s{i}\n", i - 1));
    }
    text.push_str(&format!("  s{} -> exit }}\n", WEFTD_STAGES - 1));
    text
}

/// The same workflow run by weftd (`weft run --json`, one daemon for all
/// runs, started before the timing) on the host and with `--sandbox
/// docker`, alternated: the wall time of `weft run` and the run's own
/// duration from its conclusion. The sandbox's includes making the run's
/// container and removing it at the end.
fn weftd(b: &Bench) -> Result<Vec<Row>> {
    let sb = weft_tests::Sandbox::new();
    sb.write("chain.fabro", chain_of_true());
    let daemon = weft_tests::Weftd::start(&sb);
    let reps = b.reps.min(10);
    let run = |sandboxed: bool| -> Result<(Duration, Duration)> {
        let mut cmd = sb.weft();
        cmd.args(["run", "chain.fabro", "--json"]);
        if sandboxed {
            cmd.env("DOCKER_HOST", b.service.docker_host()).args([
                "--sandbox",
                "docker",
                "--sandbox-image",
                TEST_IMAGE,
            ]);
        }
        let t = Instant::now();
        let out = cmd.output()?;
        let wall = t.elapsed();
        let conclusion: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        if conclusion["status"] != "succeeded" {
            return Err(format!(
                "the chain did not succeed: {conclusion} {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        let own = Duration::from_millis(conclusion["duration_ms"].as_u64().unwrap_or(0));
        Ok((wall, own))
    };
    // One of each first, untimed: the first container sets up the image's
    // storage, the first run warms the daemon.
    run(false)?;
    run(true)?;
    let (mut local_wall, mut local_own, mut docker_wall, mut docker_own) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let (wall, own) = run(false)?;
        local_wall.push(wall);
        local_own.push(own);
        let (wall, own) = run(true)?;
        docker_wall.push(wall);
        docker_own.push(own);
    }
    drop(daemon);
    let added = percentile(&docker_own, 0.5).saturating_sub(percentile(&local_own, 0.5))
        / u32::try_from(WEFTD_STAGES).unwrap_or(1);
    Ok(vec![
        Row::new(
            format!("{WEFTD_STAGES} stages on the host: `weft run` wall time"),
            local_wall,
        ),
        Row::new(
            format!("{WEFTD_STAGES} stages on the host: the run's duration"),
            local_own,
        ),
        Row::new(
            format!("{WEFTD_STAGES} stages, `--sandbox docker`: `weft run` wall time"),
            docker_wall,
        ),
        Row::new(
            format!("{WEFTD_STAGES} stages, `--sandbox docker`: the run's duration"),
            docker_own,
        )
        .note(format!(
            "container made and removed included; {} more per stage than on the host (p50s)",
            ms(added)
        )),
    ])
}

/// The script of the exec rows.
const TRUE: &str = "true";

/// 1 MiB in the large writes of one process (`head` writes what it reads
/// from /dev/zero, a few KiB at a time).
const MIB_LARGE: &str = "head -c 1048576 /dev/zero";

/// 16 MiB the same way: enough that moving it, not starting the command,
/// is most of the time (the throughput).
const MIB16_LARGE: &str = "head -c 16777216 /dev/zero";

/// 1 MiB as 16,384 lines of 64 bytes, one `write` each (bash's `echo`
/// builtin): the shape of a test runner's or a compiler's output.
const MIB_LINES: &str = "for i in {1..16384}; do echo 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde; done";

const MIB: u64 = 1024 * 1024;

/// What every group works with.
struct Bench {
    service: PodmanService,
    engine: Engine,
    settings: Settings,
    /// The run's work directory: bind-mounted at /work in containers, and
    /// the host commands' working directory.
    work: tempfile::TempDir,
    /// Where the host commands' (and the execs') output logs go.
    logs: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    reps: usize,
    parallel: usize,
}

/// One line of a table: what was timed, each sample, and a remark.
struct Row {
    what: String,
    samples: Vec<Duration>,
    note: String,
    /// One value, a total divided by this many commands (the CPU rows),
    /// rather than samples.
    averaged_over: Option<usize>,
}

impl Row {
    fn new(what: impl Into<String>, samples: Vec<Duration>) -> Row {
        Row {
            what: what.into(),
            samples,
            note: String::new(),
            averaged_over: None,
        }
    }

    /// A total over `commands` commands, shown per command.
    fn per_command(what: impl Into<String>, total: Duration, commands: usize) -> Row {
        Row {
            averaged_over: Some(commands),
            ..Row::new(
                what,
                vec![total / u32::try_from(commands.max(1)).unwrap_or(1)],
            )
        }
    }

    fn note(mut self, note: impl Into<String>) -> Row {
        self.note = note.into();
        self
    }

    /// A remark drawn from the row's own samples.
    fn note_from(mut self, note: impl FnOnce(&Row) -> String) -> Row {
        self.note = note(&self);
        self
    }

    fn p50(&self) -> Duration {
        percentile(&self.samples, 0.5)
    }
}

/// The `p` quantile (0.0 to 1.0) of `samples`, nearest rank; zero when
/// there are none.
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// MiB/s for `bytes` moved in `d`.
fn mib_per_s(d: Duration, bytes: u64) -> String {
    format!(
        "{:.0} MiB/s",
        bytes as f64 / MIB as f64 / d.as_secs_f64().max(1e-9)
    )
}

fn print_table(title: &str, rows: &[Row]) {
    println!("### {title}\n");
    println!("| what | p50 | p90 | min | n | note |");
    println!("|---|---:|---:|---:|---:|---|");
    for row in rows {
        if let Some(commands) = row.averaged_over {
            println!(
                "| {} | {} | – | – | {commands} | {} |",
                row.what,
                ms(row.p50()),
                row.note
            );
            continue;
        }
        let min = row.samples.iter().min().copied().unwrap_or_default();
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            row.what,
            ms(row.p50()),
            ms(percentile(&row.samples, 0.9)),
            ms(min),
            row.samples.len(),
            row.note
        );
    }
    println!();
}

/// The machine's load average (1, 5, 15 min): other builds share this
/// machine, and a figure means little without it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

fn argv(script: &str) -> Vec<String> {
    vec!["bash".to_string(), "-c".to_string(), script.to_string()]
}

impl Bench {
    /// A new run's container.
    async fn container(&self, run_id: &str) -> Result<Container> {
        Ok(self
            .engine
            .ensure_container(run_id, self.work.path(), &self.settings)
            .await?)
    }

    /// `script` through `Engine::exec` in `container`, its output written
    /// to log files as it comes (as the host side's is): how long it took,
    /// and the bytes it printed on stdout. An exit code other than 0 is an
    /// error.
    async fn in_container(&self, container: &str, script: &str) -> Result<(Duration, u64)> {
        let (mut out, mut err) = self.log_files()?;
        let argv = argv(script);
        let mut failed_write = None;
        let started = Instant::now();
        let outcome = self
            .engine
            .exec(
                container,
                Command::new(&argv),
                |stream, bytes| {
                    let log = if stream == Stream::Stdout {
                        &mut out
                    } else {
                        &mut err
                    };
                    if let Err(e) = log.write_all(bytes) {
                        failed_write = Some(e);
                    }
                },
                std::future::pending(),
            )
            .await?;
        let took = started.elapsed();
        if let Some(e) = failed_write {
            return Err(e.into());
        }
        if outcome.exit_code != Some(0) {
            return Err(format!(
                "`{script}` in the container exited {:?}: {}",
                outcome.exit_code, outcome.stderr
            )
            .into());
        }
        Ok((took, outcome.stdout_bytes))
    }

    /// Two fresh log files for one command.
    fn log_files(&self) -> Result<(std::fs::File, std::fs::File)> {
        Ok((
            std::fs::File::create(self.logs.path().join("exec.stdout"))?,
            std::fs::File::create(self.logs.path().join("exec.stderr"))?,
        ))
    }

    /// Removes the output logs, outside the timings: each command starts
    /// with none, as each stage has a directory of its own, and the pages
    /// of 16 MiB logs are dropped rather than written back to the disk
    /// while the next command is timed.
    fn clear_logs(&self) -> Result<()> {
        for name in ["exec.stdout", "exec.stderr", "host.stdout", "host.stderr"] {
            match std::fs::remove_file(self.logs.path().join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// `script` on the host as the local provider runs it.
    fn host_script(&self, script: &str) -> Script {
        Script {
            language: Language::Shell,
            source: script.to_string(),
            work_dir: self.work.path().to_path_buf(),
            env: Vec::new(),
            base_env: None,
            timeout: Duration::from_secs(600),
            group_record: None,
        }
    }

    /// `script` through `process::run` on the host: how long it took, and
    /// the bytes it printed on stdout.
    async fn on_host(&self, script: &str, logs: &Path) -> Result<(Duration, u64)> {
        host_run(self.host_script(script), logs.to_path_buf()).await
    }
}

/// `script` through `process::run`, its logs in `logs`; owned arguments,
/// so that it can run in a task of its own.
async fn host_run(script: Script, logs: PathBuf) -> Result<(Duration, u64)> {
    let started = Instant::now();
    let result = process::run(
        &script,
        &Cancel::new(),
        &logs.join("host.stdout"),
        &logs.join("host.stderr"),
        |_, _| {},
    )
    .await?;
    let took = started.elapsed();
    if result.exit_code != Some(0) {
        return Err(format!(
            "`{}` on the host exited {:?}: {}",
            script.source, result.exit_code, result.stderr
        )
        .into());
    }
    Ok((took, result.stdout_total))
}

fn start(b: &Bench) -> Result<Vec<Row>> {
    b.rt.block_on(async {
        // The service's first container also sets up the image's storage:
        // timed apart, as the first run after the engine started.
        let t = Instant::now();
        let first = b.container("bench-first").await?;
        let first_took = t.elapsed();
        b.engine.remove(&first.id).await?;
        let (mut starts, mut removes) = (Vec::new(), Vec::new());
        for i in 0..b.reps {
            let t = Instant::now();
            let made = b.container(&format!("bench-start-{i}")).await?;
            starts.push(t.elapsed());
            let t = Instant::now();
            b.engine.remove(&made.id).await?;
            removes.push(t.elapsed());
        }
        Ok(vec![
            Row::new(
                "new run: `ensure_container` (label lookup, create, start)",
                starts,
            )
            .note(format!("the service's first container: {}", ms(first_took))),
            Row::new("run ended: `remove` (force, container running)", removes),
        ])
    })
}

fn resume(b: &Bench) -> Result<Vec<Row>> {
    b.rt.block_on(async {
        let made = b.container("bench-resume").await?;
        let mut found = Vec::new();
        for _ in 0..b.reps {
            let t = Instant::now();
            let again = b.container("bench-resume").await?;
            found.push(t.elapsed());
            if again.id != made.id {
                return Err("ensure_container made a second container".into());
            }
        }
        let mut restarted = Vec::new();
        for _ in 0..b.reps {
            b.service.kill_container(&made.id);
            let deadline = Instant::now() + Duration::from_secs(60);
            while b
                .engine
                .containers_of_run("bench-resume")
                .await?
                .iter()
                .any(|c| c.running)
            {
                if Instant::now() > deadline {
                    return Err("the killed container still runs after 60 s".into());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let t = Instant::now();
            b.container("bench-resume").await?;
            restarted.push(t.elapsed());
        }
        b.engine.remove(&made.id).await?;
        Ok(vec![
            Row::new(
                "resume, container running: `ensure_container` (label lookup)",
                found,
            ),
            Row::new(
                "resume, container stopped: `ensure_container` (lookup, start)",
                restarted,
            )
            .note("after a kill of its processes, as after a reboot"),
        ])
    })
}

fn exec(b: &Bench) -> Result<Vec<Row>> {
    b.rt.block_on(async {
        let container = b.container("bench-exec").await?;
        let id = container.id.as_str();
        for _ in 0..3 {
            b.in_container(id, TRUE).await?;
            b.on_host(TRUE, b.logs.path()).await?;
        }
        // Alternated, so that the load's drift falls on both alike.
        let (mut sandboxed, mut local, mut spawned) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..b.reps {
            sandboxed.push(b.in_container(id, TRUE).await?.0);
            local.push(b.on_host(TRUE, b.logs.path()).await?.0);
            let t = Instant::now();
            let out = std::process::Command::new("bash")
                .args(["-c", TRUE])
                .current_dir(b.work.path())
                .output()?;
            spawned.push(t.elapsed());
            if !out.status.success() {
                return Err("bash -c true failed on the host".into());
            }
        }
        let mut pings = Vec::new();
        for _ in 0..b.reps {
            let t = Instant::now();
            b.engine.ping().await?;
            pings.push(t.elapsed());
        }
        let (creates, starts, inspects) = exec_calls(b, id)?;
        let runc = runc_execs(b, id)?;
        let runc_start = runc_starts(b)?;
        b.engine.remove(id).await?;
        let overhead = sandboxed
            .iter()
            .zip(&local)
            .map(|(s, l)| s.saturating_sub(*l))
            .collect();
        Ok(vec![
            Row::new("local: `process::run` of `bash -c true`", local),
            Row::new(
                "local: bare spawn of `bash -c true` (std::process)",
                spawned,
            )
            .note("the floor under `process::run`"),
            Row::new("docker: `Engine::exec` of `bash -c true`", sandboxed)
                .note("create, start + stream, inspect: 3 API calls"),
            Row::new("docker − local, per exec", overhead)
                .note("paired samples: what a sandboxed stage adds"),
            Row::new("of which: one API round trip (`_ping`)", pings),
            Row::new(
                "of which: exec create (`POST /containers/ID/exec`)",
                creates,
            ),
            Row::new(
                "of which: exec start, stream to its end (`POST /exec/ID/start`)",
                starts,
            )
            .note("Podman: conmon, `runc exec`, attach"),
            Row::new("of which: exec inspect (`GET /exec/ID/json`)", inspects)
                .note("the exit code"),
            Row::new("`runc exec ID bash -c true` alone", runc)
                .note("no Podman, no conmon: the runtime's floor"),
            Row::new("`runc --version`", runc_start)
                .note("starting the runc binary (Go); `runc exec` starts it twice"),
        ])
    })
}

/// An exec's three API calls, each timed apart, over raw HTTP (one
/// connection per call, as curl makes them).
fn exec_calls(b: &Bench, container: &str) -> Result<(Vec<Duration>, Vec<Duration>, Vec<Duration>)> {
    let body = serde_json::json!({
        "AttachStdout": true,
        "AttachStderr": true,
        "Tty": false,
        "Cmd": ["bash", "-c", TRUE],
        "WorkingDir": "/work",
    })
    .to_string();
    let (mut creates, mut starts, mut inspects) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..b.reps {
        let t = Instant::now();
        let (status, reply) = b.service.api(
            "POST",
            &format!("/v1.41/containers/{container}/exec"),
            Some(body.as_bytes()),
        )?;
        creates.push(t.elapsed());
        let created: serde_json::Value = serde_json::from_str(&reply)
            .map_err(|e| format!("exec create answered {status}: {e}: {reply}"))?;
        let exec_id = created["Id"]
            .as_str()
            .ok_or_else(|| format!("exec create answered {status}: {reply}"))?;
        let t = Instant::now();
        let (status, _) = b.service.api(
            "POST",
            &format!("/v1.41/exec/{exec_id}/start"),
            Some(br#"{"Detach":false,"Tty":false}"#),
        )?;
        starts.push(t.elapsed());
        if status != 200 {
            return Err(format!("exec start answered {status}").into());
        }
        let t = Instant::now();
        let (status, reply) = b
            .service
            .api("GET", &format!("/v1.41/exec/{exec_id}/json"), None)?;
        inspects.push(t.elapsed());
        let inspected: serde_json::Value = serde_json::from_str(&reply)
            .map_err(|e| format!("exec inspect answered {status}: {e}: {reply}"))?;
        if inspected["ExitCode"] != 0 {
            return Err(format!("the raw exec did not exit 0: {reply}").into());
        }
    }
    Ok((creates, starts, inspects))
}

/// `runc exec` straight into the container, from the host: the service's
/// runc keeps its state under its directory (tests/podman/service.sh).
fn runc_execs(b: &Bench, container: &str) -> Result<Vec<Duration>> {
    let root = b.service.dir().join("runc");
    let mut samples = Vec::new();
    for _ in 0..b.reps {
        let t = Instant::now();
        let out = std::process::Command::new("runc")
            .arg("--root")
            .arg(&root)
            .args(["exec", container, "bash", "-c", TRUE])
            .output()?;
        samples.push(t.elapsed());
        if !out.status.success() {
            return Err(format!(
                "runc exec failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
            .into());
        }
    }
    Ok(samples)
}

/// `runc --version`: what starting the runc binary costs.
fn runc_starts(b: &Bench) -> Result<Vec<Duration>> {
    let mut samples = Vec::new();
    for _ in 0..b.reps {
        let t = Instant::now();
        let out = std::process::Command::new("runc")
            .arg("--version")
            .output()?;
        samples.push(t.elapsed());
        if !out.status.success() {
            return Err("runc --version failed".into());
        }
    }
    Ok(samples)
}

fn output(b: &Bench) -> Result<Vec<Row>> {
    let shapes = [
        (TRUE, "`true`, no output (the baseline)", 0),
        (
            MIB_LARGE,
            "1 MiB in large writes (`head -c 1048576 /dev/zero`)",
            MIB,
        ),
        (
            MIB_LINES,
            "1 MiB in 16,384 lines of 64 B, a write each",
            MIB,
        ),
        (
            MIB16_LARGE,
            "16 MiB in large writes (`head -c 16777216 /dev/zero`)",
            16 * MIB,
        ),
    ];
    b.rt.block_on(async {
        let container = b.container("bench-output").await?;
        let id = container.id.as_str();
        let mut local = vec![Vec::new(); shapes.len()];
        let mut sandboxed = vec![Vec::new(); shapes.len()];
        // One warm-up round, then the shapes alternated in every round.
        for round in 0..=b.reps {
            for (i, (script, shape, size)) in shapes.iter().enumerate() {
                let (took, bytes) = b.in_container(id, script).await?;
                if bytes != *size {
                    return Err(format!("{shape}: the container printed {bytes} bytes").into());
                }
                if round > 0 {
                    sandboxed[i].push(took);
                }
                b.clear_logs()?;
                let (took, bytes) = b.on_host(script, b.logs.path()).await?;
                if bytes != *size {
                    return Err(format!("{shape}: the host printed {bytes} bytes").into());
                }
                if round > 0 {
                    local[i].push(took);
                }
                b.clear_logs()?;
            }
        }
        b.engine.remove(id).await?;
        let (local_base, sandboxed_base) =
            (percentile(&local[0], 0.5), percentile(&sandboxed[0], 0.5));
        // What moving the output adds to the same exec of `true`, and
        // the rate that makes; a difference below the noise says so.
        let over = |base: Duration, size: u64| {
            move |r: &Row| {
                let extra = r.p50().saturating_sub(base);
                if extra.is_zero() {
                    return "no slower than `true` (within the noise)".to_string();
                }
                format!("+{} over `true`: {}", ms(extra), mib_per_s(extra, size))
            }
        };
        let mut rows = Vec::new();
        for (i, ((_, shape, size), (local, sandboxed))) in shapes
            .iter()
            .zip(local.into_iter().zip(sandboxed))
            .enumerate()
        {
            let (local, sandboxed) = (
                Row::new(format!("local: {shape}"), local),
                Row::new(format!("docker: {shape}"), sandboxed),
            );
            if i == 0 {
                rows.extend([local, sandboxed]);
            } else {
                rows.extend([
                    local.note_from(over(local_base, *size)),
                    sandboxed.note_from(over(sandboxed_base, *size)),
                ]);
            }
        }
        Ok(rows)
    })
}

fn parallel(b: &Bench) -> Result<Vec<Row>> {
    let k = b.parallel;
    b.rt.block_on(async {
        let container = b.container("bench-parallel").await?;
        let (mut sandboxed, mut local) = (Vec::new(), Vec::new());
        for _ in 0..b.reps {
            let t = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..k {
                let engine = b.engine.clone();
                let id = container.id.clone();
                tasks.spawn(async move {
                    let argv = argv(TRUE);
                    engine
                        .exec(&id, Command::new(&argv), |_, _| {}, std::future::pending())
                        .await
                        .map(|o| o.exit_code)
                        .map_err(|e| e.to_string())
                });
            }
            while let Some(done) = tasks.join_next().await {
                let code = done??;
                if code != Some(0) {
                    return Err(format!("a parallel exec exited {code:?}").into());
                }
            }
            sandboxed.push(t.elapsed());

            let t = Instant::now();
            let mut tasks = tokio::task::JoinSet::new();
            for i in 0..k {
                let logs = b.logs.path().join(format!("parallel-{i}"));
                std::fs::create_dir_all(&logs)?;
                let script = b.host_script(TRUE);
                tasks.spawn(async move { host_run(script, logs).await.map_err(|e| e.to_string()) });
            }
            while let Some(done) = tasks.join_next().await {
                done??;
            }
            local.push(t.elapsed());
        }
        b.engine.remove(&container.id).await?;
        let per_exec = |row: &Row| {
            format!(
                "{} per command, {:.0} commands/s",
                ms(row.p50() / u32::try_from(k).unwrap_or(1)),
                k as f64 / row.p50().as_secs_f64().max(1e-9)
            )
        };
        Ok(vec![
            Row::new(
                format!("local: {k} × `bash -c true` at once, all done"),
                local,
            )
            .note_from(per_exec),
            Row::new(
                format!("docker: {k} × `bash -c true` at once in one container, all done"),
                sandboxed,
            )
            .note_from(per_exec),
        ])
    })
}

/// CPU time spent so far by the parts of an exec, each read where the
/// kernel accounts it.
#[derive(Clone, Copy)]
struct CpuSnapshot {
    /// This process and its reaped children: the client side (bollard),
    /// or the host commands.
    own: Duration,
    /// The Podman service (and its reaped children).
    service: Duration,
    /// Podman's `conmon` cgroup: the conmons, the `runc exec` each starts,
    /// and the exit command (`podman container cleanup`) each runs when
    /// its exec is forgotten.
    conmon: Duration,
    /// The container's cgroup: the command, and `runc init` once joined.
    container: Duration,
}

impl std::ops::Sub for CpuSnapshot {
    type Output = CpuSnapshot;
    fn sub(self, before: CpuSnapshot) -> CpuSnapshot {
        CpuSnapshot {
            own: self.own.saturating_sub(before.own),
            service: self.service.saturating_sub(before.service),
            conmon: self.conmon.saturating_sub(before.conmon),
            container: self.container.saturating_sub(before.container),
        }
    }
}

/// The cgroup v1 hierarchy where Podman (cgroupfs manager) puts conmon and
/// the containers.
const LIBPOD_CPUACCT: &str = "/sys/fs/cgroup/cpuacct/libpod_parent";

/// A cgroup's CPU time (`cpuacct.usage`, ns).
fn cgroup_cpu(path: &Path) -> Result<Duration> {
    let text = std::fs::read_to_string(path.join("cpuacct.usage")).map_err(|e| {
        format!(
            "{}: {e} (the cpu rows need cgroup v1's cpuacct)",
            path.display()
        )
    })?;
    Ok(Duration::from_nanos(text.trim().parse()?))
}

/// A process's CPU time, its reaped children's included (`utime`,
/// `stime`, `cutime`, `cstime` of /proc/PID/stat, in ticks of 10 ms).
fn process_cpu(pid: &str) -> Result<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces: fields count from after its ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| format!("unreadable /proc/{pid}/stat"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let mut ticks = 0u64;
    for i in 11..15 {
        ticks += fields
            .get(i)
            .ok_or_else(|| format!("short /proc/{pid}/stat"))?
            .parse::<u64>()?;
    }
    Ok(Duration::from_millis(ticks * 10))
}

impl Bench {
    fn cpu_snapshot(&self, container: &str) -> Result<CpuSnapshot> {
        let libpod = Path::new(LIBPOD_CPUACCT);
        Ok(CpuSnapshot {
            own: process_cpu("self")?,
            service: process_cpu(&self.service.pid().to_string())?,
            conmon: cgroup_cpu(&libpod.join("conmon"))?,
            container: cgroup_cpu(&libpod.join(format!("libpod-{container}")))?,
        })
    }

    /// How long after an exec ends conmon runs its exit command
    /// (`exit_command_delay` in the service's containers.conf).
    fn exit_command_delay(&self) -> Duration {
        std::fs::read_to_string(self.service.dir().join("containers.conf"))
            .ok()
            .and_then(|conf| {
                conf.lines().find_map(|l| {
                    let (key, value) = l.split_once('=')?;
                    (key.trim() == "exit_command_delay").then(|| value.trim().parse().ok())?
                })
            })
            .map_or(Duration::from_secs(300), Duration::from_secs)
    }

    /// Other containers in Podman's cgroups than this service's: other
    /// Podman users, whose conmons would count in the conmon row.
    fn foreign_containers(&self) -> usize {
        let ours = self.service.container_ids();
        std::fs::read_dir(LIBPOD_CPUACCT)
            .map(|dir| {
                dir.filter_map(std::result::Result::ok)
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_prefix("libpod-"))
                            .map(str::to_string)
                    })
                    .filter(|id| !ours.contains(id))
                    .count()
            })
            .unwrap_or(0)
    }
}

fn cpu(b: &Bench) -> Result<Vec<Row>> {
    let commands = b.reps.max(10);
    let delay = b.exit_command_delay();
    if std::fs::read_to_string(format!("/proc/{}/comm", b.service.pid()))
        .map_or(true, |c| c.trim() != "podman")
    {
        return Err("the service's process is not podman: cannot read its CPU time".into());
    }
    b.rt.block_on(async {
        let container = b.container("bench-cpu").await?;
        let id = container.id.as_str();
        b.in_container(id, TRUE).await?;
        // The exit commands of earlier execs (of this group and the ones
        // before) run `delay` after them: let them pass first.
        tokio::time::sleep(delay + Duration::from_secs(2)).await;
        let foreign = b.foreign_containers();
        let before = b.cpu_snapshot(id)?;
        let started = Instant::now();
        for _ in 0..commands {
            b.in_container(id, TRUE).await?;
        }
        let wall = started.elapsed();
        let during = b.cpu_snapshot(id)? - before;
        tokio::time::sleep(delay + Duration::from_secs(3)).await;
        let settled = b.cpu_snapshot(id)? - before;
        b.engine.remove(id).await?;

        let host_before = process_cpu("self")?;
        let started = Instant::now();
        for _ in 0..commands {
            b.on_host(TRUE, b.logs.path()).await?;
        }
        let host_wall = started.elapsed();
        let host = process_cpu("self")?.saturating_sub(host_before);

        let cleanup = settled.conmon.saturating_sub(during.conmon);
        let total = settled.own + settled.service + settled.conmon + settled.container;
        let row = |what: &str, cpu: Duration| Row::per_command(what, cpu, commands);
        let mut conmon = row(
            "docker: conmon + `runc exec` (conmon's cgroup)",
            during.conmon,
        );
        if foreign > 0 {
            conmon.note = format!(
                "{foreign} containers of other Podman users were there: their conmons count too"
            );
        }
        Ok(vec![
            row(
                "local: `process::run` of `bash -c true` (this process + children)",
                host,
            )
            .note(format!(
                "wall {} per command",
                ms(host_wall / u32::try_from(commands).unwrap_or(1))
            )),
            row("docker: the client, bollard (this process)", settled.own),
            row(
                "docker: the Podman service (API, exec bookkeeping)",
                settled.service,
            ),
            conmon,
            row(
                "docker: each exec's exit command (`podman container cleanup`)",
                cleanup,
            )
            .note(format!(
                "run by conmon {} s after the exec ended",
                delay.as_secs()
            )),
            row(
                "docker: in the container (bash; `runc init` once it joined)",
                settled.container,
            ),
            row("docker: all of it", total).note(format!(
                "wall {} per command",
                ms(wall / u32::try_from(commands).unwrap_or(1))
            )),
        ])
    })
}

/// The value after `flag` on the command line.
fn flag<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn versions(b: &Bench) -> String {
    let engine = b.rt.block_on(b.engine.describe()).map_or_else(
        |e| e.to_string(),
        |i| format!("{} {} (API {})", i.name, i.version, i.api_version),
    );
    let runc = std::process::Command::new("runc")
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("runc: no version")
                .to_string()
        })
        .unwrap_or_else(|e| format!("runc: {e}"));
    format!("{engine}; {runc}")
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let reps: usize = flag(&args, "--reps").map_or(Ok(20), str::parse)?.max(1);
    let parallel: usize = flag(&args, "--parallel").map_or(Ok(4), str::parse)?.max(1);
    let only: Option<Vec<&str>> = flag(&args, "--only").map(|o| o.split(',').collect());
    if let Some(only) = &only
        && let Some(unknown) = only.iter().find(|o| !GROUPS.iter().any(|(n, _)| n == *o))
    {
        let known: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "--only: no group {unknown:?}; the groups: {}",
            known.join(",")
        )
        .into());
    }

    println!("load average before: {}", load_average());
    let service_started = Instant::now();
    let service = PodmanService::start();
    let service_took = service_started.elapsed();
    let engine = Engine::connect_to(&service.docker_host())?;
    let mut settings = Settings::new(TEST_IMAGE);
    // Limits as a user's sandbox would set them; each is one more cgroup
    // file written at start.
    settings.cpus = Some(1.0);
    settings.memory_bytes = Some(512 * MIB);
    settings.pids = Some(256);
    let bench = Bench {
        service,
        engine,
        settings,
        work: tempfile::tempdir()?,
        logs: tempfile::tempdir()?,
        rt: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        reps,
        parallel,
    };
    println!("engine: {}", versions(&bench));
    println!(
        "service up and test image imported in {} (not a per-run cost)",
        ms(service_took)
    );
    // Each exec's exit command runs that long after it, ~50 ms of CPU
    // each: a group's would land in the next one's timings.
    let settle = bench.exit_command_delay() + Duration::from_secs(2);
    println!(
        "{reps} samples per row; {parallel} at once in the parallel rows; {} s between groups \
         (the exit commands of a group's execs run {} s after them)\n",
        settle.as_secs(),
        bench.exit_command_delay().as_secs()
    );
    let chosen: Vec<&(&str, Group)> = GROUPS
        .iter()
        .filter(|(name, _)| only.as_ref().is_none_or(|o| o.contains(name)))
        .collect();
    // A group that cannot run here (no cgroup v1 for the cpu rows) says
    // why; the others still run.
    let mut failed = Vec::new();
    for (i, (name, group)) in chosen.iter().enumerate() {
        if i > 0 {
            std::thread::sleep(settle);
        }
        match group(&bench) {
            Ok(rows) => print_table(name, &rows),
            Err(e) => {
                println!("### {name}\n\nnot measured: {e}\n");
                failed.push(*name);
            }
        }
    }
    println!("load average after: {}", load_average());
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("groups not measured: {}", failed.join(", ")).into())
    }
}
