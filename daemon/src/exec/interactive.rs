//! A program Weft talks to while it runs (an external coding agent speaking
//! the Agent Client Protocol on its stdin and stdout): started like a
//! command stage's script, in a process group of its own behind the start
//! gate and watched by the reaper, so it cannot outlive the executor; but
//! its stdin stays open for the conversation.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal};
use tokio::io::AsyncWriteExt as _;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use super::process::{Group, check_work_dir, child_env};

/// The program to start and its conditions.
#[derive(Debug, Clone)]
pub struct Program {
    /// A name looked up on the child's `PATH`, or a path.
    pub program: String,
    pub args: Vec<String>,
    /// The child's working directory; it must exist.
    pub work_dir: PathBuf,
    /// The environment to inherit, already filtered by the run's policy.
    pub base_env: Vec<(String, String)>,
    /// Variables set on top (a provider key for this agent only, say).
    pub env: Vec<(String, String)>,
    /// Where to record the process group once it is spawned (see
    /// [`super::process::reap_recorded_group`]); `None` records nothing.
    pub group_record: Option<PathBuf>,
}

/// The gate of [`super::process`]'s scripts, with stdin handed on to the
/// program instead of closed: `sh` reads a pipe a byte at a time, so it
/// takes the gate's line and nothing after it.
const GATE: &str = "IFS= read -r _ || exit 125; exec \"$0\" \"$@\"";

/// A started program and its pipes (taken by whoever reads or writes
/// them). Dropping it kills its process group.
pub struct Interactive {
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    pub stderr: Option<ChildStderr>,
    group: Group,
}

impl std::fmt::Debug for Interactive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interactive")
            .field("pgid", &self.group.raw_pgid())
            .finish_non_exhaustive()
    }
}

impl Interactive {
    /// Starts `program`.
    ///
    /// # Errors
    /// The work directory is missing, the program is not on the child's
    /// `PATH` (or not executable), or it cannot be spawned; the message
    /// names the program.
    pub async fn spawn(program: &Program) -> io::Result<Interactive> {
        check_work_dir(&program.work_dir).await?;
        let env = child_env(
            program
                .base_env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
            &program.env,
        );
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let resolved = resolve(&program.program, &path_var, &program.work_dir)?;
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(GATE)
            .arg(&resolved)
            .args(&program.args)
            .current_dir(&program.work_dir)
            .env_clear()
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|e| {
            io::Error::new(e.kind(), format!("cannot start `{}`: {e}", program.program))
        })?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        let (Some(pid), Some(mut stdin), Some(stdout), Some(stderr)) = (
            pid,
            child.stdin.take(),
            child.stdout.take(),
            child.stderr.take(),
        ) else {
            let _ = child.start_kill();
            let _ = child.wait().await;
            return Err(io::Error::other(format!(
                "`{}` started without a pid or pipes",
                program.program
            )));
        };
        let group = Group {
            child: Some(child),
            pgid: pid,
        };
        super::reaper::watch(group.raw_pgid());
        if let Some(record) = &program.group_record {
            write_group_record(group.raw_pgid(), record);
        }
        // The reaper watches the group: the program may start.
        let _ = stdin.write_all(b"\n").await;
        Ok(Interactive {
            stdin: Some(stdin),
            stdout: Some(stdout),
            stderr: Some(stderr),
            group,
        })
    }

    /// Records the process group at `record` too (a later stage using
    /// the same program), so a resume after a crash can kill it.
    pub fn record_group(&self, record: &Path) {
        write_group_record(self.group.raw_pgid(), record);
    }

    /// How the program ended, if it has.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.group
            .child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    /// Waits for the program to exit by itself.
    ///
    /// # Errors
    /// It was reaped already.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self.group.child.as_mut() {
            Some(child) => child.wait().await,
            None => Err(io::Error::other("the program was already reaped")),
        }
    }

    /// Asks the whole group to stop (SIGTERM), gives it `grace`, then kills
    /// it (SIGKILL) and reaps the program. Nothing of the group runs after.
    pub async fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.group.signal(Signal::TERM);
        if let Some(child) = self.group.child.as_mut() {
            let _ = tokio::time::timeout(grace, child.wait()).await;
        }
        self.group.kill_and_reap().await.ok()
    }
}

/// `program` as a path: itself when it has a `/` (relative to `work_dir`),
/// else the first executable of that name on `path_var`.
fn resolve(program: &str, path_var: &OsString, work_dir: &Path) -> io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = work_dir.join(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{program}` is not an executable file"),
            ))
        };
    }
    std::env::split_paths(path_var)
        .map(|dir| dir.join(program))
        .find(|path| executable(path))
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{program}` is not on PATH (install it, or give its full path)"),
            )
        })
}

/// The group's id and its leader's start time, which a later process reads
/// to kill the group without hitting a reused pid.
fn write_group_record(pgid: u32, record: &Path) {
    if let Some(start) = crate::os::process::start_time(pgid) {
        let _ = crate::store::write_atomic(record, format!("{pgid} {start}\n").as_bytes());
    }
}
