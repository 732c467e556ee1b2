//! A run's sandbox: its container, created the first time a stage needs
//! it, shared by every stage (and sub-workflow) of the run, and removed or
//! kept when the run ends. Commands given as [`Script`]s, the way local
//! ones are, run in it with the same logs, output limits, timeout and
//! cancellation as [`crate::exec::process::run`] gives them on the host.
//!
//! Host paths are translated on the way in: the work dir is [`WORK_DIR`],
//! the run's stage folders (where a command's status file and context go)
//! are [`RUN_FILES_DIR`]. The container is recorded in the run folder's
//! `sandbox.json` until it is removed, so that a daemon finding a run that
//! ended without removing it (a crash at the wrong moment) can.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::time::Instant;

use super::docker::{self, Command, Container, Engine, OutputSink, SandboxError};
use super::{Mount, RUN_FILES_DIR, Settings, WORK_DIR};
use crate::exec::cancel::{Cancel, CancelReason};
use crate::exec::process::{Capture, Ended, ProcessResult, Script};
use crate::model::Stream;
use crate::model::sandbox::Keep;

/// The file in a run folder naming the run's container while it exists.
pub const RECORD: &str = "sandbox.json";

/// The file in a stage folder naming the container its commands ran in
/// (`container`, `image`, `engine`).
pub const STAGE_RECORD: &str = "sandbox.json";

/// Largest `sandbox.json` read back.
const MAX_RECORD_BYTES: u64 = 16 * 1024;

/// Variables of the host's environment that describe the host (its
/// paths, user, terminal and sockets): wrong inside a container, whose
/// image sets its own. The rest of the run's environment (after the
/// secret rules of `[run.env]`) reaches commands as on the host.
const HOST_ONLY: [&str; 16] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "PWD",
    "OLDPWD",
    "TMPDIR",
    "HOSTNAME",
    "SHLVL",
    "_",
    "TERM",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "SSH_AUTH_SOCK",
    "DOCKER_HOST",
];

/// How a stage found the run's container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attach {
    /// This stage's need created it.
    Created,
    /// A container of the run left by an earlier process (a resume after
    /// a crash): its processes were killed and it was started again.
    Reused,
    /// It was already up for this run.
    Running,
}

impl Attach {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Attach::Created => "created",
            Attach::Reused => "reused",
            Attach::Running => "running",
        }
    }
}

/// Where a stage's commands run: what the events and the views show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// The container id, shortened as `docker ps` shows it.
    pub container: String,
    /// The whole id.
    pub id: String,
    pub image: String,
    /// The engine's address.
    pub engine: String,
    pub attach: Attach,
}

/// What happened to the container at the run's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// The run never needed one.
    None,
    Removed {
        container: String,
    },
    Kept {
        container: String,
    },
}

/// What `sandbox.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub engine: String,
    pub container: String,
    pub image: String,
    pub keep: Keep,
    /// Set when the run ended and kept the container on purpose.
    #[serde(default)]
    pub kept: bool,
}

/// The sandbox of one run; see the module docs.
#[derive(Debug)]
pub struct RunSandbox {
    engine: Engine,
    settings: Settings,
    run_id: String,
    work_dir: PathBuf,
    record: PathBuf,
    keep: Keep,
    /// Who commands run as.
    user: String,
    /// Host path prefixes and where they are inside, longest first.
    places: Vec<(PathBuf, &'static str)>,
    container: tokio::sync::Mutex<Option<Container>>,
    /// The memory limit's kills seen so far, to tell a new one.
    oom_kills: AtomicU64,
}

impl RunSandbox {
    /// Reaches the engine at `engine` and checks that it has the image,
    /// without creating anything: a run whose sandbox cannot work fails
    /// here, before its first stage.
    ///
    /// # Errors
    /// The engine is unreachable or does not have the image.
    pub async fn connect(
        engine: &str,
        settings: Settings,
        keep: Keep,
        user: Option<&str>,
        (run_id, work_dir, run_dir): (&str, &Path, &Path),
    ) -> Result<RunSandbox, SandboxError> {
        let engine = Engine::connect_to_async(engine).await?;
        engine.ping().await?;
        if !engine.has_image(&settings.image).await? {
            return Err(SandboxError::ImageMissing {
                image: settings.image.clone(),
                host: engine.host().to_string(),
            });
        }
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let work = canonical(work_dir);
        let nodes = canonical(&run_dir.join("nodes"));
        let mut places = vec![
            (work_dir.to_path_buf(), WORK_DIR),
            (work.clone(), WORK_DIR),
            (run_dir.join("nodes"), RUN_FILES_DIR),
            (nodes.clone(), RUN_FILES_DIR),
        ];
        places.sort_by_key(|(p, _)| std::cmp::Reverse(p.as_os_str().len()));
        places.dedup();
        let mut settings = settings;
        settings.mounts.push(Mount {
            host: nodes,
            container: RUN_FILES_DIR.to_string(),
            read_only: false,
        });
        let user = user.map_or_else(
            || {
                format!(
                    "{}:{}",
                    rustix::process::getuid().as_raw(),
                    rustix::process::getgid().as_raw()
                )
            },
            str::to_string,
        );
        Ok(RunSandbox {
            engine,
            settings,
            run_id: run_id.to_string(),
            work_dir: work,
            record: run_dir.join(RECORD),
            keep,
            user,
            places,
            container: tokio::sync::Mutex::new(None),
            oom_kills: AtomicU64::new(0),
        })
    }

    /// The image the run's container is made from.
    #[must_use]
    pub fn image(&self) -> &str {
        &self.settings.image
    }

    /// The engine's address.
    #[must_use]
    pub fn engine(&self) -> &str {
        self.engine.host()
    }

    /// The run's container, up: created at the first call of a run, or
    /// found again by its label (see [`Attach`]).
    ///
    /// # Errors
    /// The engine is unreachable or refuses the container.
    pub async fn ready(&self) -> Result<Ready, SandboxError> {
        let mut held = self.container.lock().await;
        let (container, attach) = match held.as_ref() {
            Some(container) => (container.clone(), Attach::Running),
            None => {
                let found = self
                    .engine
                    .containers_of_run(&self.run_id)
                    .await?
                    .into_iter()
                    .next();
                let (container, attach) = match found {
                    Some(found) => {
                        // Its processes are the dead executor's: a command
                        // of theirs must not run on beside its re-run.
                        self.engine.restart(&found.id).await?;
                        (found, Attach::Reused)
                    }
                    None => (
                        self.engine
                            .ensure_container(&self.run_id, &self.work_dir, &self.settings)
                            .await?,
                        Attach::Created,
                    ),
                };
                self.write_record(&container.id, false);
                if self.settings.memory_bytes.is_some()
                    && let Ok(Some(kills)) = self.engine.oom_kills(&container.id).await
                {
                    self.oom_kills.store(kills, Ordering::Relaxed);
                }
                *held = Some(container.clone());
                (container, attach)
            }
        };
        Ok(Ready {
            container: short(&container.id),
            id: container.id.clone(),
            image: self.settings.image.clone(),
            engine: self.engine.host().to_string(),
            attach,
        })
    }

    /// Runs `script` in the container as [`crate::exec::process::run`]
    /// runs it on the host: its output to the two logs (each made by its
    /// first output) and `on_output`, its timeout and `cancel` killing it
    /// and everything it started.
    ///
    /// # Errors
    /// The engine fails, the container cannot be made, the script's
    /// directory is outside the container's mounts, or a log cannot be
    /// written.
    pub async fn run_script(
        &self,
        script: &Script,
        cancel: &Cancel,
        stdout_log: &Path,
        stderr_log: &Path,
        on_output: impl FnMut(Stream, &str) + Send,
    ) -> std::io::Result<ProcessResult> {
        let mut capture = Capture::new(stdout_log, stderr_log, on_output);
        let started = Instant::now();
        if let Some(reason) = cancel.reason() {
            return capture.into_result(ended(None, false, Some(reason), started));
        }
        let workdir = self.inside(&script.work_dir).ok_or_else(|| {
            std::io::Error::other(format!(
                "{} is outside the sandbox: only the work dir ({}) is in the container",
                script.work_dir.display(),
                self.work_dir.display()
            ))
        })?;
        // The stage's folder may not be made yet: the script may write
        // its status file there.
        if let Some(dir) = script.group_record.as_deref().and_then(Path::parent) {
            let _ = crate::store::create_private_dir_all(dir);
        }
        let ready = self.ready().await.map_err(std::io::Error::other)?;
        let env = self.env(script);
        let argv = [
            script.language.program().to_string(),
            "-c".to_string(),
            script.source.clone(),
        ];
        let command = Command {
            argv: &argv,
            env: &env,
            workdir: Some(&workdir),
            user: Some(&self.user),
        };
        // Set by whichever stops the command: Some(reason) a cancel, None the
        // timeout.
        let stop = std::sync::Mutex::new(None);
        let stopper = async {
            tokio::select! {
                reason = cancel.cancelled() => *crate::util::lock::lock(&stop) = Some(Some(reason)),
                () = tokio::time::sleep(script.timeout) => *crate::util::lock::lock(&stop) = Some(None),
            }
        };
        let mut sink = CaptureSink(&mut capture);
        let mut outcome = self
            .engine
            .exec_into(&ready.id, command, &mut sink, stopper)
            .await;
        let stopped = crate::util::lock::lock(&stop).is_some();
        // Only an exec the engine would not create is tried again: one that
        // started may have done part of its work, and must not run twice.
        let not_created = matches!(
            &outcome,
            Err(SandboxError::Engine { action, .. }) if action == docker::CREATING_AN_EXEC
        );
        if not_created && !stopped {
            // The container may have been killed to stop a runaway command
            // (its pids exhausted): start it again, once.
            self.engine
                .ensure_container(&self.run_id, &self.work_dir, &self.settings)
                .await
                .map_err(std::io::Error::other)?;
            let stopper = async {
                tokio::select! {
                    reason = cancel.cancelled() => *crate::util::lock::lock(&stop) = Some(Some(reason)),
                    () = tokio::time::sleep(script.timeout.saturating_sub(started.elapsed())) => *crate::util::lock::lock(&stop) = Some(None),
                }
            };
            let mut sink = CaptureSink(&mut capture);
            outcome = self
                .engine
                .exec_into(&ready.id, command, &mut sink, stopper)
                .await;
        }
        let outcome = outcome.map_err(std::io::Error::other)?;
        let stopped = crate::util::lock::lock(&stop).take();
        let (timed_out, cancelled) = match stopped {
            Some(Some(reason)) => (false, Some(reason)),
            Some(None) => (true, None),
            None => (false, None),
        };
        let exit_code = outcome.exit_code.and_then(|c| i32::try_from(c).ok());
        let killed_by = if exit_code == Some(137) && cancelled.is_none() && !timed_out {
            self.memory_kill(&ready.id).await
        } else {
            None
        };
        let mut result = capture.into_result(ended(exit_code, timed_out, cancelled, started))?;
        result.killed_by = killed_by;
        Ok(result)
    }

    /// Says so when the memory limit killed something since last asked.
    async fn memory_kill(&self, container: &str) -> Option<String> {
        let limit = self.settings.memory_bytes?;
        let now = self.engine.oom_kills(container).await.ok()??;
        let before = self.oom_kills.swap(now, Ordering::Relaxed);
        (now > before).then(|| {
            format!(
                "the sandbox's memory limit ({})",
                crate::limits::human_bytes(limit)
            )
        })
    }

    /// Removes the container, or keeps it as the run's policy says, when
    /// the run has ended (`succeeded` or not).
    ///
    /// # Errors
    /// The engine is unreachable or refuses the removal; the record stays
    /// for the next daemon start to try again.
    pub async fn finish(&self, succeeded: bool) -> Result<Finished, SandboxError> {
        let held = self.container.lock().await.clone();
        let container = match held {
            Some(c) => Some(c),
            // A resumed run may have one it did not use this time.
            None => self
                .engine
                .containers_of_run(&self.run_id)
                .await?
                .into_iter()
                .next(),
        };
        let Some(container) = container else {
            return Ok(Finished::None);
        };
        if self.keep.keeps(succeeded) {
            self.write_record(&container.id, true);
            return Ok(Finished::Kept {
                container: short(&container.id),
            });
        }
        self.engine.remove(&container.id).await?;
        let _ = std::fs::remove_file(&self.record);
        Ok(Finished::Removed {
            container: short(&container.id),
        })
    }

    fn write_record(&self, container: &str, kept: bool) {
        let record = Record {
            engine: self.engine.host().to_string(),
            container: container.to_string(),
            image: self.settings.image.clone(),
            keep: self.keep,
            kept,
        };
        if let Ok(bytes) = serde_json::to_vec_pretty(&record) {
            // Best effort: the label finds the container too.
            let _ = crate::store::write_atomic(&self.record, &bytes);
        }
    }

    /// Where `host` is inside the container, if it is.
    fn inside(&self, host: &Path) -> Option<String> {
        self.places.iter().find_map(|(prefix, place)| {
            let rest = host.strip_prefix(prefix).ok()?.to_str()?;
            Some(if rest.is_empty() {
                (*place).to_string()
            } else {
                format!("{place}/{rest}")
            })
        })
    }

    /// The script's environment inside: the run's, without what describes
    /// the host, then the script's own variables, host paths translated.
    fn env(&self, script: &Script) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = script
            .base_env
            .iter()
            .flatten()
            .filter(|(k, _)| !HOST_ONLY.contains(&k.as_str()) && !k.starts_with("XDG_"))
            .cloned()
            .collect();
        for (k, v) in &script.env {
            let value = if v.starts_with('/') {
                self.inside(Path::new(v)).unwrap_or_else(|| v.clone())
            } else {
                v.clone()
            };
            env.retain(|(name, _)| name != k);
            env.push((k.clone(), value));
        }
        env
    }
}

/// Runs `script` in `sandbox` when there is one ([`RunSandbox::run_script`]),
/// else on the host ([`crate::exec::process::run`]): the one place where a
/// command stage and the agent's `shell` choose.
///
/// # Errors
/// As the one that runs it.
pub async fn run_script(
    sandbox: Option<&RunSandbox>,
    script: &Script,
    cancel: &Cancel,
    stdout_log: &Path,
    stderr_log: &Path,
    on_output: impl FnMut(Stream, &str) + Send,
) -> std::io::Result<ProcessResult> {
    match sandbox {
        // Boxed: a stage's future is on the stack once per sub-workflow
        // level, and the engine's requests make this one large.
        Some(sandbox) => {
            Box::pin(sandbox.run_script(script, cancel, stdout_log, stderr_log, on_output)).await
        }
        None => crate::exec::process::run(script, cancel, stdout_log, stderr_log, on_output).await,
    }
}

/// What a stage folder's [`STAGE_RECORD`] holds: where its commands ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RanIn {
    pub container: String,
    pub image: String,
    pub engine: String,
}

impl RanIn {
    /// The record in stage folder `folder`, if its commands ran in a
    /// container (a missing, oversized or malformed file is none).
    #[must_use]
    pub fn read(folder: &Path) -> Option<RanIn> {
        let bytes =
            crate::limits::read_capped(&folder.join(STAGE_RECORD), MAX_RECORD_BYTES).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

/// The record of a container an ended run left behind, unless the run
/// kept it on purpose: what a daemon removes at start (a crash between a
/// run's end and the removal, an engine that was down then). A missing,
/// oversized or unreadable record is none.
#[must_use]
pub fn leftover(run_dir: &Path) -> Option<Record> {
    let bytes = crate::limits::read_capped(&run_dir.join(RECORD), MAX_RECORD_BYTES).ok()?;
    serde_json::from_slice::<Record>(&bytes)
        .ok()
        .filter(|r| !r.kept)
}

/// Removes the containers of run `run_id` on the engine at `engine` (found
/// by their label, so a record can only ever name the run's own), then the
/// run folder's record; how many there were.
///
/// # Errors
/// The engine is unreachable or refuses.
pub async fn remove_leftover(
    engine: &str,
    run_id: &str,
    run_dir: &Path,
) -> Result<usize, SandboxError> {
    let engine = Engine::connect_to_async(engine).await?;
    let containers = engine.containers_of_run(run_id).await?;
    for container in &containers {
        engine.remove(&container.id).await?;
    }
    let _ = std::fs::remove_file(run_dir.join(RECORD));
    Ok(containers.len())
}

/// A container id as `docker ps` shows it.
#[must_use]
pub fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

fn ended(
    exit_code: Option<i32>,
    timed_out: bool,
    cancelled: Option<CancelReason>,
    started: Instant,
) -> Ended {
    Ended {
        exit_code,
        signal: None,
        timed_out,
        cancelled,
        duration: started.elapsed(),
    }
}

/// A [`Capture`] fed by an exec.
struct CaptureSink<'a, F>(&'a mut Capture<F>);

impl<F: FnMut(Stream, &str) + Send> OutputSink for CaptureSink<'_, F> {
    async fn take(&mut self, stream: Stream, bytes: &[u8]) -> std::io::Result<()> {
        self.0.take(stream, bytes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_id_is_twelve_characters() {
        assert_eq!(short("0123456789abcdef"), "0123456789ab");
        assert_eq!(short("abc"), "abc");
    }
}
