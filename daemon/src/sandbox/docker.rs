//! The container side of a sandbox, through the Docker Engine API: Docker
//! itself, or Podman's Docker-compatible service (`podman system service`).
//!
//! The engine is found through `DOCKER_HOST` (`unix:///path`,
//! `tcp://host:port`, or `ssh://[user@]host[/socket]` through a tunnel of
//! the system's ssh: [`super::ssh`]), as the `docker` command finds it;
//! without it, the usual socket `/var/run/docker.sock`. Every error names the engine's
//! address and says what to do about it.
//!
//! Podman answers at any API version, and asking the engine which one it
//! speaks costs ~300 ms on Podman (it runs conmon, runc and dpkg to report
//! its components), so the version is pinned to 1.41 (Docker 20.10,
//! Podman 4) rather than negotiated.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
use bollard::exec::{StartExecOptions, StartExecResults};
use bollard::models::{ContainerCreateBody, ContainerSummaryStateEnum, ExecConfig, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, KillContainerOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder,
};
use bollard::{ClientVersion, Docker};
use futures_util::StreamExt;

use super::ssh::{self, Tunnel};
use super::{Network, RUN_LABEL, SANDBOX_LABEL, Settings, WORK_DIR};
use crate::exec::process::OUTPUT_TAIL;
use crate::model::Stream;

/// Where the engine is when `DOCKER_HOST` is not set.
pub const DEFAULT_DOCKER_HOST: &str = "unix:///var/run/docker.sock";

/// The API version spoken to the engine (see the module docs).
const API_VERSION: ClientVersion = ClientVersion {
    major_version: 1,
    minor_version: 41,
};

/// How long one API request may take. An attached exec stream is not
/// cut by it (bollard applies it to the response head only).
const REQUEST_TIMEOUT_SECS: u64 = 120;

/// The environment variable that tags every process of one exec, so that a
/// cancelled exec can be found and killed from inside the container: the
/// API has no call that kills an exec, and closing its stream leaves it
/// running.
const EXEC_TAG: &str = "WEFT_EXEC";

/// How long a cancelled exec may take to end once its processes are
/// killed from inside, before its container is killed instead.
const KILL_GRACE: Duration = Duration::from_secs(10);

/// How long it may take to end once its container is killed.
const KILL_WAIT: Duration = Duration::from_secs(20);

/// Keeps the container alive between execs (68 years; `infinity` is not
/// understood by every `sleep`).
const KEEP_ALIVE: [&str; 2] = ["sleep", "2147483647"];

/// The action of a [`SandboxError::Engine`] the engine gave when it would
/// not create an exec: nothing of the command has run.
pub const CREATING_AN_EXEC: &str = "creating an exec";

/// What went wrong talking to the engine.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "no Docker engine at {host} (DOCKER_HOST): {reason}; start Docker or `podman system service`, or set DOCKER_HOST to where the engine listens"
    )]
    Unreachable { host: String, reason: String },
    #[error(
        "image {image} not found on the engine at {host} (DOCKER_HOST); build or pull it there first"
    )]
    ImageMissing { image: String, host: String },
    #[error("the Docker engine at {host} (DOCKER_HOST) refused {action}: {message}")]
    Engine {
        host: String,
        action: String,
        message: String,
    },
    #[error("sandbox settings: {0}")]
    Settings(String),
    #[error("cannot record a sandboxed command's output: {0}")]
    Output(String),
}

/// Where an exec's output goes as it arrives ([`Engine::exec_into`]).
pub trait OutputSink {
    /// Takes one piece of `stream`'s output, as the engine framed it.
    fn take(&mut self, stream: Stream, bytes: &[u8]) -> impl Future<Output = std::io::Result<()>>;
}

/// A callback as an [`OutputSink`] that never fails.
struct EachChunk<F>(F);

impl<F: FnMut(Stream, &[u8])> OutputSink for EachChunk<F> {
    async fn take(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        (self.0)(stream, bytes);
        Ok(())
    }
}

/// What an engine says it is ([`Engine::describe`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EngineInfo {
    pub name: String,
    pub version: String,
    pub api_version: String,
}

/// A run's container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub id: String,
    pub run_id: String,
    pub running: bool,
}

/// What an exec did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutcome {
    /// The exit code; 137 for a process killed by SIGKILL (the memory
    /// limit's kill included), 125 when the engine could not start it.
    /// None only when the engine did not say.
    pub exit_code: Option<i64>,
    /// The last [`OUTPUT_TAIL`] bytes of each stream (all of it went to
    /// the `on_output` callback as it came).
    pub stdout: String,
    pub stderr: String,
    /// Bytes each stream produced in all.
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// The exec was cancelled and its processes killed.
    pub cancelled: bool,
}

/// One exec's command.
#[derive(Debug, Clone, Copy)]
pub struct Command<'a> {
    pub argv: &'a [String],
    pub env: &'a [(String, String)],
    /// The working directory inside the container; [`WORK_DIR`] when none.
    pub workdir: Option<&'a str>,
    /// Who runs it (`UID:GID`, a user the image knows); none: the image's
    /// user.
    pub user: Option<&'a str>,
}

impl<'a> Command<'a> {
    /// `argv` in [`WORK_DIR`], as the image's user, with nothing added to
    /// its environment.
    #[must_use]
    pub fn new(argv: &'a [String]) -> Command<'a> {
        Command {
            argv,
            env: &[],
            workdir: None,
            user: None,
        }
    }
}

/// A connection to one engine.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
    host: String,
    /// The ssh tunnel of an `ssh://` engine: its `ssh` process lives as
    /// long as a clone of the engine does. After `docker`, so that it is
    /// dropped after the connections through it.
    #[expect(dead_code, reason = "held for its Drop, which stops ssh")]
    tunnel: Option<Arc<Tunnel>>,
}

impl Engine {
    /// The engine `DOCKER_HOST` names, or the usual socket.
    ///
    /// # Errors
    /// An address that is not `unix://`, `tcp://`/`http://` or `ssh://`, a
    /// socket that does not exist, or an ssh tunnel that could not be
    /// opened.
    pub fn connect() -> Result<Engine, SandboxError> {
        let host = std::env::var("DOCKER_HOST")
            .ok()
            .filter(|h| !h.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_DOCKER_HOST.to_string());
        Engine::connect_to(&host)
    }

    /// The engine at `host` (`unix:///path`, `tcp://host:port`,
    /// `ssh://[user@]host[:port][/remote/socket]`); an `ssh://` one
    /// through the ssh command of `WEFT_SSH_COMMAND` ([`ssh`](super::ssh)).
    ///
    /// `unix://` and `tcp://` connect lazily, at the first request. An
    /// `ssh://` engine is reached before this returns: it blocks while ssh
    /// logs in, at most [`OPEN_BOUND`](super::ssh::OPEN_BOUND).
    ///
    /// # Errors
    /// As [`Engine::connect`].
    pub fn connect_to(host: &str) -> Result<Engine, SandboxError> {
        Engine::connect_with_ssh(host, &ssh::command_from_env())
    }

    /// [`Engine::connect_to`] with the ssh program and its options given
    /// (as `WEFT_SSH_COMMAND`'s words) rather than read from the
    /// environment.
    ///
    /// # Errors
    /// As [`Engine::connect`].
    pub fn connect_with_ssh(host: &str, ssh_command: &[String]) -> Result<Engine, SandboxError> {
        let mut tunnel = None;
        let connected = if host.starts_with("unix://") {
            Docker::connect_with_unix(host, REQUEST_TIMEOUT_SECS, &API_VERSION)
        } else if host.starts_with("tcp://") || host.starts_with("http://") {
            Docker::connect_with_http(host, REQUEST_TIMEOUT_SECS, &API_VERSION)
        } else if host.starts_with("ssh://") {
            let opened =
                Tunnel::open(host, ssh_command).map_err(|reason| SandboxError::Unreachable {
                    host: host.to_string(),
                    reason,
                })?;
            let local = opened.docker_host();
            tunnel = Some(Arc::new(opened));
            Docker::connect_with_unix(&local, REQUEST_TIMEOUT_SECS, &API_VERSION)
        } else {
            return Err(SandboxError::Unreachable {
                host: host.to_string(),
                reason: "only unix://, tcp:// and ssh:// addresses are supported".to_string(),
            });
        };
        match connected {
            Ok(docker) => Ok(Engine {
                docker,
                host: host.to_string(),
                tunnel,
            }),
            Err(e) => Err(unreachable(host, &e)),
        }
    }

    /// [`Engine::connect_to`] off the async threads: opening an `ssh://`
    /// tunnel waits (up to 30 s) for ssh to log in, which must not stall
    /// the runtime that calls it (the daemon's own, for one).
    ///
    /// # Errors
    /// As [`Engine::connect_to`].
    pub async fn connect_to_async(host: &str) -> Result<Engine, SandboxError> {
        let host = host.to_string();
        let shown = host.clone();
        tokio::task::spawn_blocking(move || Engine::connect_to(&host))
            .await
            .unwrap_or_else(|e| {
                Err(SandboxError::Unreachable {
                    host: shown,
                    reason: format!("connecting stopped: {e}"),
                })
            })
    }

    /// The address this engine was reached at.
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Whether the engine answers.
    ///
    /// # Errors
    /// [`SandboxError::Unreachable`] when it does not.
    pub async fn ping(&self) -> Result<(), SandboxError> {
        self.docker
            .ping()
            .await
            .map(drop)
            .map_err(|e| self.error("ping", e))
    }

    /// What the engine says it is: its platform name (`Podman Engine`,
    /// `Docker Engine - Community`) or product version, and its API
    /// version. One request, slower than a ping on Podman (~300 ms): for
    /// `weft sandbox check`, not for every run.
    ///
    /// # Errors
    /// [`SandboxError::Unreachable`] when it does not answer.
    pub async fn describe(&self) -> Result<EngineInfo, SandboxError> {
        let v = self
            .docker
            .version()
            .await
            .map_err(|e| self.error("asking its version", e))?;
        Ok(EngineInfo {
            name: v
                .platform
                .map(|p| p.name)
                .filter(|n| !n.trim().is_empty())
                .unwrap_or_else(|| "Docker Engine API".to_string()),
            version: v.version.unwrap_or_default(),
            api_version: v.api_version.unwrap_or_default(),
        })
    }

    /// Whether the engine has `image` (by name or id), without pulling it.
    ///
    /// # Errors
    /// The engine is unreachable or refuses the question.
    pub async fn has_image(&self, image: &str) -> Result<bool, SandboxError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => Err(self.error("looking up the image", e)),
        }
    }

    /// The run's container, running: the one labelled with `run_id` if
    /// there is one (a daemon restarted after a crash finds the one it
    /// made), else a new one built from `settings` with `work_dir`
    /// mounted at [`WORK_DIR`]. A container found is used as it is: its
    /// settings are not compared with `settings`.
    ///
    /// # Errors
    /// The engine is unreachable, the image is missing, or the engine
    /// refuses the container (a limit the host cannot give, a bad mount).
    pub async fn ensure_container(
        &self,
        run_id: &str,
        work_dir: &Path,
        settings: &Settings,
    ) -> Result<Container, SandboxError> {
        if let Some(found) = self.containers_of_run(run_id).await?.into_iter().next() {
            if !found.running {
                self.docker
                    .start_container(&found.id, None)
                    .await
                    .map_err(|e| self.error("starting the run's container", e))?;
            }
            return Ok(Container {
                running: true,
                ..found
            });
        }
        let body = container_body(run_id, work_dir, settings)?;
        let name = format!("weft-run-{}", name_safe(run_id));
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = match self.docker.create_container(Some(options), body).await {
            Ok(created) => created,
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => {
                return Err(SandboxError::ImageMissing {
                    image: settings.image.clone(),
                    host: self.host.clone(),
                });
            }
            Err(e) => return Err(self.error("creating the run's container", e)),
        };
        if let Err(e) = self.docker.start_container(&created.id, None).await {
            // A container that cannot start is of no use to a later try.
            let _ = self.remove(&created.id).await;
            return Err(self.error("starting the run's container", e));
        }
        Ok(Container {
            id: created.id,
            run_id: run_id.to_string(),
            running: true,
        })
    }

    /// Runs `command` in the container, passing each piece of its output
    /// to `on_output` as it arrives, until it exits or `cancel` completes;
    /// then its processes are killed (all of them: the command's children
    /// too) before this returns.
    ///
    /// # Errors
    /// The engine is unreachable or refuses the exec (no such container).
    pub async fn exec(
        &self,
        container: &str,
        command: Command<'_>,
        on_output: impl FnMut(Stream, &[u8]),
        cancel: impl Future<Output = ()>,
    ) -> Result<ExecOutcome, SandboxError> {
        self.exec_into(container, command, &mut EachChunk(on_output), cancel)
            .await
    }

    /// [`Engine::exec`], the output going to `sink`, which may wait (write
    /// a log file) before the next piece is read. A sink that fails stops
    /// the exec as a cancel does, and its error is returned.
    ///
    /// # Errors
    /// As [`Engine::exec`], and [`SandboxError::Output`] when `sink` fails.
    pub async fn exec_into(
        &self,
        container: &str,
        command: Command<'_>,
        sink: &mut impl OutputSink,
        cancel: impl Future<Output = ()>,
    ) -> Result<ExecOutcome, SandboxError> {
        let tag = ulid::Ulid::generate().to_string();
        let mut env: Vec<String> = command
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        env.push(format!("{EXEC_TAG}={tag}"));
        let config = ExecConfig {
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            tty: Some(false),
            cmd: Some(command.argv.to_vec()),
            env: Some(env),
            working_dir: Some(command.workdir.unwrap_or(WORK_DIR).to_string()),
            user: command.user.map(str::to_string),
            ..Default::default()
        };
        let exec = self
            .docker
            .create_exec(container, config)
            .await
            .map_err(|e| self.error(CREATING_AN_EXEC, e))?;
        let started = self
            .docker
            .start_exec(
                &exec.id,
                Some(StartExecOptions {
                    detach: false,
                    tty: false,
                    output_capacity: None,
                }),
            )
            .await
            .map_err(|e| self.error("starting an exec", e))?;
        let StartExecResults::Attached { mut output, .. } = started else {
            return Err(SandboxError::Engine {
                host: self.host.clone(),
                action: "attaching to an exec".to_string(),
                message: "the engine started it detached".to_string(),
            });
        };
        let (mut stdout, mut stderr) = (Tail::default(), Tail::default());
        let mut cancelled = false;
        let mut sink_error = None;
        let cancel = std::pin::pin!(cancel);
        let mut cancel = cancel;
        loop {
            tokio::select! {
                item = output.next() => {
                    let (stream, message) = match item {
                        None => break,
                        Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message })) => {
                            stdout.push(&message);
                            (Stream::Stdout, message)
                        }
                        Some(Ok(LogOutput::StdErr { message })) => {
                            stderr.push(&message);
                            (Stream::Stderr, message)
                        }
                        Some(Ok(LogOutput::StdIn { .. })) => continue,
                        Some(Err(e)) => return Err(self.error("streaming an exec's output", e)),
                    };
                    if let Err(e) = sink.take(stream, &message).await {
                        sink_error = Some(e);
                        break;
                    }
                }
                () = &mut cancel => {
                    cancelled = true;
                    break;
                }
            }
        }
        drop(output);
        if cancelled || sink_error.is_some() {
            self.kill_exec(container, &exec.id, &tag).await?;
        }
        if let Some(e) = sink_error {
            return Err(SandboxError::Output(e.to_string()));
        }
        // Read now: Podman forgets an exec some seconds after it ends.
        let exit_code = self
            .docker
            .inspect_exec(&exec.id)
            .await
            .map_err(|e| self.error("reading an exec's exit code", e))?
            .exit_code;
        Ok(ExecOutcome {
            exit_code,
            stdout_bytes: stdout.total,
            stderr_bytes: stderr.total,
            stdout: stdout.into_text(),
            stderr: stderr.into_text(),
            cancelled,
        })
    }

    /// Kills every process of the exec tagged `tag` (children and
    /// processes that left its group included) from a second exec, and
    /// waits until the engine sees it end. When that does not end it (the
    /// container's process limit is exhausted, so no exec can start, which
    /// is when a runaway command most needs killing) the container itself
    /// is killed; [`Engine::ensure_container`] starts it again.
    async fn kill_exec(
        &self,
        container: &str,
        exec_id: &str,
        tag: &str,
    ) -> Result<(), SandboxError> {
        let script = format!(
            "for p in /proc/[0-9]*; do \
               if tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -qx '{EXEC_TAG}={tag}'; then \
                 kill -KILL ${{p#/proc/}} 2>/dev/null; \
               fi; \
             done"
        );
        let killer = ExecConfig {
            // Attached: an exec with nothing attached is reported done
            // before it has run.
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            cmd: Some(vec!["sh".to_string(), "-c".to_string(), script]),
            working_dir: Some("/".to_string()),
            ..Default::default()
        };
        if let Ok(killer) = self.docker.create_exec(container, killer).await
            && let Ok(StartExecResults::Attached { mut output, .. }) =
                self.docker.start_exec(&killer.id, None).await
        {
            while output.next().await.is_some() {}
        }
        if self.exec_ended_within(exec_id, KILL_GRACE).await? {
            return Ok(());
        }
        self.docker
            .kill_container(
                container,
                Some(
                    KillContainerOptionsBuilder::default()
                        .signal("KILL")
                        .build(),
                ),
            )
            .await
            .map_err(|e| self.error("killing the container of a cancelled exec", e))?;
        if self.exec_ended_within(exec_id, KILL_WAIT).await? {
            return Ok(());
        }
        Err(SandboxError::Engine {
            host: self.host.clone(),
            action: "killing a cancelled exec".to_string(),
            message: format!(
                "it still runs {}s after its container was killed",
                KILL_WAIT.as_secs()
            ),
        })
    }

    /// Whether the exec ends within `bound`, waiting for it.
    async fn exec_ended_within(
        &self,
        exec_id: &str,
        bound: Duration,
    ) -> Result<bool, SandboxError> {
        let deadline = Instant::now() + bound;
        loop {
            let inspect = self
                .docker
                .inspect_exec(exec_id)
                .await
                .map_err(|e| self.error("waiting for a killed exec", e))?;
            if inspect.running != Some(true) {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// How many times the container's memory limit has killed a process
    /// (the cgroup's `oom_kill` counter, read from inside). The API has no
    /// such flag: `OOMKilled` stays false on Podman, and exit code 137 is
    /// any SIGKILL. None when the counter cannot be read.
    ///
    /// # Errors
    /// The engine is unreachable.
    pub async fn oom_kills(&self, container: &str) -> Result<Option<u64>, SandboxError> {
        let argv = [
            "sh".to_string(),
            "-c".to_string(),
            // cgroup v1, then v2.
            "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null || cat /sys/fs/cgroup/memory.events".to_string(),
        ];
        let outcome = self
            .exec(
                container,
                Command {
                    workdir: Some("/"),
                    ..Command::new(&argv)
                },
                |_, _| {},
                std::future::pending(),
            )
            .await?;
        Ok(outcome.stdout.lines().find_map(|line| {
            line.strip_prefix("oom_kill ")
                .and_then(|n| n.trim().parse().ok())
        }))
    }

    /// Kills every process of the container and starts it again: what a
    /// resumed run does to the container its dead executor left, so that
    /// no command of the earlier attempt runs on beside the new one. The
    /// container's files are kept.
    ///
    /// # Errors
    /// The engine is unreachable or refuses.
    pub async fn restart(&self, container: &str) -> Result<(), SandboxError> {
        let kill = KillContainerOptionsBuilder::default()
            .signal("KILL")
            .build();
        match self.docker.kill_container(container, Some(kill)).await {
            // 409: it was not running.
            Ok(())
            | Err(BollardError::DockerResponseServerError {
                status_code: 409, ..
            }) => {}
            Err(e) => return Err(self.error("stopping the run's container", e)),
        }
        // The kill is asynchronous: start only once the engine has seen
        // the container stop, or the start is a no-op on a dying one.
        let deadline = Instant::now() + KILL_WAIT;
        loop {
            let state = self
                .docker
                .inspect_container(container, None)
                .await
                .map_err(|e| self.error("waiting for the run's container to stop", e))?
                .state;
            if state.and_then(|s| s.running) != Some(true) {
                break;
            }
            if Instant::now() >= deadline {
                return Err(SandboxError::Engine {
                    host: self.host.clone(),
                    action: "restarting the run's container".to_string(),
                    message: format!("it still runs {}s after a kill", KILL_WAIT.as_secs()),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.docker
            .start_container(container, None)
            .await
            .map_err(|e| self.error("starting the run's container again", e))
    }

    /// Removes the container and its processes; one already gone is fine.
    ///
    /// # Errors
    /// The engine is unreachable or refuses.
    pub async fn remove(&self, container: &str) -> Result<(), SandboxError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker.remove_container(container, Some(options)).await {
            Ok(())
            | Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(()),
            Err(e) => Err(self.error("removing a container", e)),
        }
    }

    /// The containers labelled with `run_id`, running or not.
    ///
    /// # Errors
    /// The engine is unreachable.
    pub async fn containers_of_run(&self, run_id: &str) -> Result<Vec<Container>, SandboxError> {
        self.list(&format!("{RUN_LABEL}={run_id}")).await
    }

    /// Weft's containers whose run is not among `live_runs`: what a daemon
    /// removes at start, after runs ended while it was down.
    ///
    /// # Errors
    /// The engine is unreachable.
    pub async fn containers_of_finished_runs(
        &self,
        live_runs: &[&str],
    ) -> Result<Vec<Container>, SandboxError> {
        let all = self.list(SANDBOX_LABEL).await?;
        Ok(all
            .into_iter()
            .filter(|c| !live_runs.contains(&c.run_id.as_str()))
            .collect())
    }

    async fn list(&self, label: &str) -> Result<Vec<Container>, SandboxError> {
        let filters = HashMap::from([("label", vec![label])]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let summaries = self
            .docker
            .list_containers(Some(options))
            .await
            .map_err(|e| self.error("listing containers", e))?;
        Ok(summaries
            .into_iter()
            .filter_map(|s| {
                let run_id = s.labels.as_ref()?.get(RUN_LABEL)?.clone();
                Some(Container {
                    id: s.id?,
                    run_id,
                    running: s.state == Some(ContainerSummaryStateEnum::RUNNING),
                })
            })
            .collect())
    }

    fn error(&self, action: &str, e: BollardError) -> SandboxError {
        match e {
            BollardError::DockerResponseServerError { message, .. } => SandboxError::Engine {
                host: self.host.clone(),
                action: action.to_string(),
                message,
            },
            BollardError::HyperLegacyError { .. }
            | BollardError::IOError { .. }
            | BollardError::HttpClientError { .. }
            | BollardError::SocketNotFoundError(_)
            | BollardError::RequestTimeoutError => unreachable(&self.host, &e),
            other => SandboxError::Engine {
                host: self.host.clone(),
                action: action.to_string(),
                message: other.to_string(),
            },
        }
    }
}

/// The engine cannot be reached: the cause in a few words
/// ("connection refused", "no socket at /path").
fn unreachable(host: &str, e: &BollardError) -> SandboxError {
    let reason = match e {
        BollardError::SocketNotFoundError(path) => format!("no socket at {path}"),
        BollardError::RequestTimeoutError => {
            format!("no answer within {REQUEST_TIMEOUT_SECS}s")
        }
        _ => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
            let mut io = None;
            while let Some(s) = source {
                if let Some(found) = s.downcast_ref::<std::io::Error>() {
                    io = Some(found);
                }
                source = s.source();
            }
            match io.map(std::io::Error::kind) {
                Some(std::io::ErrorKind::ConnectionRefused) => "connection refused".to_string(),
                Some(std::io::ErrorKind::NotFound) => "no such socket".to_string(),
                Some(std::io::ErrorKind::PermissionDenied) => "permission denied".to_string(),
                _ => io.map_or_else(|| e.to_string(), ToString::to_string),
            }
        }
    };
    SandboxError::Unreachable {
        host: host.to_string(),
        reason,
    }
}

/// The create request for a run's container.
fn container_body(
    run_id: &str,
    work_dir: &Path,
    settings: &Settings,
) -> Result<ContainerCreateBody, SandboxError> {
    let mut binds = vec![bind(work_dir, WORK_DIR, false)?];
    for mount in &settings.mounts {
        if !mount.container.starts_with('/') {
            return Err(SandboxError::Settings(format!(
                "mount target {:?} is not an absolute path",
                mount.container
            )));
        }
        binds.push(bind(&mount.host, &mount.container, mount.read_only)?);
    }
    let nano_cpus = match settings.cpus {
        None => None,
        Some(cpus) if cpus.is_finite() && cpus > 0.0 && cpus <= 4096.0 => {
            // In range by the guard: at most 4.1e12.
            #[expect(clippy::cast_possible_truncation, reason = "bounded above")]
            Some((cpus * 1e9).round() as i64)
        }
        Some(cpus) => {
            return Err(SandboxError::Settings(format!(
                "cpus = {cpus} is not a positive number of CPUs"
            )));
        }
    };
    let memory =
        match settings.memory_bytes {
            None => None,
            Some(bytes) => Some(i64::try_from(bytes).map_err(|_| {
                SandboxError::Settings(format!("memory = {bytes} bytes is too large"))
            })?),
        };
    let labels = HashMap::from([
        (RUN_LABEL.to_string(), run_id.to_string()),
        (SANDBOX_LABEL.to_string(), "1".to_string()),
    ]);
    Ok(ContainerCreateBody {
        image: Some(settings.image.clone()),
        entrypoint: Some(KEEP_ALIVE.iter().map(ToString::to_string).collect()),
        cmd: Some(Vec::new()),
        labels: Some(labels),
        working_dir: Some(WORK_DIR.to_string()),
        env: Some(
            settings
                .env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        ),
        host_config: Some(HostConfig {
            binds: Some(binds),
            memory,
            // Equal to the memory: the engine's default is twice it, which
            // lets a command use swap beyond the limit on hosts with swap.
            memory_swap: memory,
            nano_cpus,
            pids_limit: settings.pids,
            network_mode: Some(
                match settings.network {
                    Network::None => "none",
                    Network::Bridge => "bridge",
                }
                .to_string(),
            ),
            // An init as PID 1 reaps the orphans of commands; without it
            // zombies pile up until the process limit stops every exec.
            init: Some(true),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// A `Binds` entry; the API's `host:container:mode` syntax has no escape,
/// so a path with `:` or `,` cannot be mounted this way.
fn bind(host: &Path, container: &str, read_only: bool) -> Result<String, SandboxError> {
    let host_text = host.to_str().ok_or_else(|| {
        SandboxError::Settings(format!("mount source {} is not UTF-8", host.display()))
    })?;
    if !host.is_absolute() {
        return Err(SandboxError::Settings(format!(
            "mount source {host_text} is not an absolute path"
        )));
    }
    for path in [host_text, container] {
        if path.contains([':', ',']) {
            return Err(SandboxError::Settings(format!(
                "mount path {path} has a ':' or ',', which the Docker API cannot mount"
            )));
        }
    }
    Ok(format!(
        "{host_text}:{container}:{}",
        if read_only { "ro" } else { "rw" }
    ))
}

/// A run id as a container name: letters, digits, `_`, `.` and `-` kept,
/// anything else `-` (names are for people reading `docker ps`; the label
/// is what identifies the run).
fn name_safe(run_id: &str) -> String {
    run_id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The last [`OUTPUT_TAIL`] bytes of a stream, and its length.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    total: u64,
}

impl Tail {
    fn push(&mut self, piece: &[u8]) {
        self.total = self
            .total
            .saturating_add(u64::try_from(piece.len()).unwrap_or(u64::MAX));
        let piece = &piece[piece.len().saturating_sub(OUTPUT_TAIL)..];
        self.bytes.extend_from_slice(piece);
        // Cutting once it doubles keeps the copying linear.
        if self.bytes.len() > 2 * OUTPUT_TAIL {
            self.bytes.drain(..self.bytes.len() - OUTPUT_TAIL);
        }
    }

    fn into_text(mut self) -> String {
        if self.bytes.len() > OUTPUT_TAIL {
            self.bytes.drain(..self.bytes.len() - OUTPUT_TAIL);
        }
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_becomes_a_container_name_of_safe_characters() {
        assert_eq!(name_safe("01HX/ab c"), "01HX-ab-c");
    }

    #[test]
    fn a_mount_path_with_a_colon_is_refused_before_the_engine_sees_it() {
        let error = bind(Path::new("/tmp/a:b"), "/x", false).map(drop);
        assert!(matches!(error, Err(SandboxError::Settings(_))));
        assert_eq!(
            bind(Path::new("/tmp/ro"), "/ro", true).ok().as_deref(),
            Some("/tmp/ro:/ro:ro")
        );
    }

    #[test]
    fn the_memory_limit_includes_swap_and_the_network_is_none_by_default() {
        let mut settings = Settings::new("img");
        settings.memory_bytes = Some(64 << 20);
        let host = container_body("r1", Path::new("/tmp/w"), &settings)
            .ok()
            .and_then(|b| b.host_config);
        let host = host.unwrap_or_default();
        assert_eq!(host.memory, Some(64 << 20));
        assert_eq!(host.memory_swap, Some(64 << 20));
        assert_eq!(host.network_mode.as_deref(), Some("none"));
        assert_eq!(host.init, Some(true));
    }

    #[test]
    fn an_address_that_is_not_unix_tcp_or_ssh_is_refused_naming_it() {
        let error = Engine::connect_to("npipe:////./pipe/docker_engine").map(drop);
        let text = error.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("npipe:////./pipe/docker_engine"), "{text}");
        assert!(text.contains("unix://, tcp:// and ssh://"), "{text}");
    }

    #[test]
    fn a_malformed_ssh_address_is_refused_naming_it_and_why() {
        let error = Engine::connect_to("ssh://").map(drop);
        let text = error.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.starts_with("no Docker engine at ssh:// (DOCKER_HOST): ")
                && text.contains("names no host"),
            "{text}"
        );
    }

    #[test]
    fn the_tail_keeps_the_end_and_counts_everything() {
        let mut tail = Tail::default();
        tail.push(&vec![b'a'; OUTPUT_TAIL]);
        tail.push(b"end");
        assert_eq!(tail.total, u64::try_from(OUTPUT_TAIL + 3).unwrap_or(0));
        let text = tail.into_text();
        assert_eq!(text.len(), OUTPUT_TAIL);
        assert!(text.ends_with("aend"));
    }
}
