//! Runs a command node's script as a child process: streams its output to
//! log files and a callback as it arrives, enforces the timeout, honours
//! cancellation, and never leaves anything of the script running behind.
//!
//! The script runs in a process group of its own, so that everything it
//! starts can be signalled at once. The shell (the group leader) is not
//! reaped until the group has been swept with SIGKILL: while it is an
//! unreaped zombie its pid, and so the group id, cannot be reused, which
//! makes every group signal sent here race-free.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::time::Instant;

use super::cancel::{Cancel, CancelReason};
use crate::model::Stream;

/// How long the group may take to exit after SIGTERM before it gets SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// How long to keep reading the pipes once the whole group has been sent
/// SIGKILL. Only a process that left the group (`setsid`, a daemon) can
/// still hold them open then, and its output is not worth hanging for.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Bytes read from a pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

/// How much of each stream (and of the two merged) [`run`] keeps in memory
/// for its result: the last 1 MiB. The whole output is in the log files;
/// keeping all of it made 200 MB of output cost 820 MB of memory.
pub(crate) const OUTPUT_TAIL: usize = 1024 * 1024;

/// The language a script is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Run by `bash -c`.
    Shell,
    /// Run by `python3 -c`.
    Python,
}

impl Language {
    /// Reads a language name, ignoring ASCII case: `shell`, `bash` and `sh`
    /// are [`Language::Shell`]; `python` and `python3` are
    /// [`Language::Python`]. Anything else is `None`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Language> {
        match name.trim().to_ascii_lowercase().as_str() {
            "shell" | "bash" | "sh" => Some(Language::Shell),
            "python" | "python3" => Some(Language::Python),
            _ => None,
        }
    }

    /// The canonical name, which [`Language::parse`] reads back.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Shell => "shell",
            Language::Python => "python",
        }
    }

    /// The interpreter that runs a script given with `-c`.
    pub(crate) fn program(self) -> &'static str {
        match self {
            Language::Shell => "bash",
            Language::Python => "python3",
        }
    }
}

/// A script to run and the conditions to run it under.
#[derive(Debug, Clone)]
pub struct Script {
    pub language: Language,
    pub source: String,
    /// The child's working directory; it must exist.
    pub work_dir: PathBuf,
    /// Variables set for the child on top of the inherited environment
    /// (see [`child_env`]); they win over inherited ones.
    pub env: Vec<(String, String)>,
    /// The environment to inherit, already filtered by the run's policy
    /// (the engine passes the run's: see [`crate::exec::environment`]).
    /// `None`: this process's, with secrets withheld by the default policy.
    pub base_env: Option<Vec<(String, String)>>,
    /// How long the script may run before its process group is killed.
    pub timeout: Duration,
    /// Where to record the script's process group once it is spawned (see
    /// [`reap_recorded_group`]); `None` records nothing.
    pub group_record: Option<PathBuf>,
}

/// The file, in a command stage's directory, recording its process group:
/// `PGID START`, START being the group leader's start time.
pub(crate) const GROUP_RECORD: &str = "process_group";

/// Kills the process group recorded at `record` if its leader is still the
/// process that was recorded (same pid, same start time, not a zombie), and
/// returns its id. A resume calls this for the stages a crashed executor
/// left in flight: the executor's reaper (see [`super::reaper`]) kills it
/// when the executor dies, and this is the fallback for when the reaper
/// itself was killed. After `kill(-pgid, SIGKILL)` returns, no process of the group
/// runs another instruction, so the stage cannot overlap its re-run. A
/// missing or malformed record, or a recycled pid, kills nothing.
#[must_use]
pub(crate) fn reap_recorded_group(record: &Path) -> Option<u32> {
    let text = crate::limits::read_text_capped(record, 64).ok()?;
    let mut fields = text.split_whitespace();
    let pgid: u32 = fields.next()?.parse().ok()?;
    let start: u64 = fields.next()?.parse().ok()?;
    if !crate::os::process::kill_group_led_by(pgid, start) {
        return None;
    }
    // Killed processes run no further instruction, but they keep their
    // files, ports and locks until the kernel has torn them down: wait for
    // that (briefly) before the stage runs again beside them.
    let deadline = std::time::Instant::now() + GROUP_TEARDOWN;
    while crate::os::process::is_alive(pgid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Some(pgid)
}

/// How long [`reap_recorded_group`] waits for a killed group's leader to be
/// gone; a kill takes far less, unless the machine is swamped.
const GROUP_TEARDOWN: std::time::Duration = std::time::Duration::from_secs(5);

/// How a script ended and everything it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessResult {
    /// The exit code; `None` when the shell was killed by a signal or never
    /// started (already cancelled).
    pub exit_code: Option<i32>,
    /// The signal that killed the shell, if one did.
    pub signal: Option<i32>,
    /// The timeout elapsed and the process group was killed.
    pub timed_out: bool,
    /// Cancellation stopped the script (or kept it from starting).
    pub cancelled: Option<CancelReason>,
    /// What killed it, when a limit outside it did and says so: a
    /// sandbox's memory limit ("the sandbox's memory limit (64 MiB)").
    pub killed_by: Option<String>,
    /// From just before the spawn until the shell was reaped.
    pub duration: Duration,
    /// The end of stdout, decoded as lossy UTF-8: all of it up to
    /// [`OUTPUT_TAIL`] bytes, else the last `OUTPUT_TAIL` bytes (cut at a
    /// character boundary). The log file has all of it.
    pub stdout: String,
    /// The end of stderr, as for `stdout`.
    pub stderr: String,
    /// The end of stdout and stderr interleaved in the order their chunks
    /// were read, for parsing output that a script writes to either stream;
    /// at most `OUTPUT_TAIL` bytes.
    pub merged: String,
    /// How many bytes of decoded stdout were produced in all; more than
    /// `stdout.len()` when the front was cut.
    pub stdout_total: u64,
    /// How many bytes of decoded stderr were produced in all.
    pub stderr_total: u64,
}

/// The environment a script's process starts with: `base` (already
/// filtered: see [`crate::exec::environment`]), then `extra` on top
/// (replacing inherited variables of the same name).
///
/// `extra` is not filtered: a workflow that names a variable for a node
/// means the node to have it, key or not. The result is sorted by name.
pub(crate) fn child_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    extra: &[(String, String)],
) -> Vec<(OsString, OsString)> {
    let mut env: BTreeMap<OsString, OsString> = base.into_iter().collect();
    for (name, value) in extra {
        env.insert(name.into(), value.into());
    }
    env.into_iter().collect()
}

/// Runs `script` to the end, or until its timeout or `cancel`, and reports
/// how it ended.
///
/// The script runs in `script.work_dir` with stdin closed, in a process
/// group of its own. Each chunk of output is appended to `stdout_log` or
/// `stderr_log` (created, or truncated, when the first output reaches it: a
/// stream that prints nothing leaves no file, and empties the file an
/// earlier attempt left) and then passed to `on_output` as text. Chunks are split where
/// the pipe reads split them, except that a UTF-8 character is never split
/// across two calls; invalid bytes become U+FFFD.
///
/// When the timeout elapses or `cancel` fires, the whole group gets SIGTERM
/// and, once the shell has exited and the pipes have closed or after a
/// grace of 2 s at most, SIGKILL. When the shell exits by itself, anything
/// it left running in its group (`sleep 100 &`) is killed with SIGKILL, so
/// no orphans remain and a background process holding the pipes cannot make
/// this call hang. Processes that moved to another group or session
/// (`setsid`) escape; their output is read for at most 1 s more. The shell
/// is always reaped before this returns. If `cancel` has already fired, the
/// script is not started at all.
///
/// Dropping the returned future kills the group with SIGKILL; tokio reaps
/// the shell in the background then.
///
/// # Errors
/// Only when a log file cannot be created or written, the work directory is
/// missing, or the interpreter cannot be started (e.g. `python3` is not
/// installed). A failed log write kills the group (and reaps the shell)
/// before returning. A script that fails, times out or is cancelled is an
/// `Ok`.
pub async fn run(
    script: &Script,
    cancel: &Cancel,
    stdout_log: &Path,
    stderr_log: &Path,
    on_output: impl FnMut(Stream, &str) + Send,
) -> io::Result<ProcessResult> {
    let mut capture = Capture::new(stdout_log, stderr_log, on_output);
    let started = Instant::now();
    if let Some(reason) = cancel.reason() {
        return Ok(ProcessResult {
            exit_code: None,
            signal: None,
            timed_out: false,
            cancelled: Some(reason),
            killed_by: None,
            duration: started.elapsed(),
            stdout: String::new(),
            stderr: String::new(),
            merged: String::new(),
            stdout_total: 0,
            stderr_total: 0,
        });
    }
    check_work_dir(&script.work_dir).await?;

    // Listen before spawning, so that the exit of a script that ends at once
    // still wakes the supervisor.
    let mut sigchld = signal(SignalKind::child())?;
    let mut child = command(script)?.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot start `{}` for a {} script: {e}",
                script.language.program(),
                script.language.as_str()
            ),
        )
    })?;
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw);
    let (Some(pid), Some(stdout), Some(stderr)) = (pid, child.stdout.take(), child.stderr.take())
    else {
        // Cannot happen with piped output on a fresh child; clean up anyway.
        let _ = child.start_kill();
        let _ = child.wait().await;
        return Err(io::Error::other(
            "the spawned script has no pid or no output pipes",
        ));
    };
    let mut group = Group {
        child: Some(child),
        pgid: pid,
    };
    // From here the group dies with this process, however it dies; only
    // now may the script start.
    super::reaper::watch(group.raw_pgid());
    // The stage's directory may not exist yet: made here, while the shell
    // starts, and before the gate opens, so that the script finds it (it
    // may write its status file there, WEFT_STATUS_FILE).
    if let Some(dir) = script.group_record.as_deref().and_then(Path::parent) {
        let _ = crate::store::create_private_dir_all(dir);
    }
    open_gate(&mut group).await;
    if let Some(record) = &script.group_record {
        // Best effort: the reaper does not need it, only the fallback does.
        let raw = pid.as_raw_nonzero().get().unsigned_abs();
        if let Some(start) = crate::os::process::start_time(raw) {
            // Private like everything in the run directory; atomic, so the
            // fallback never reads half a record.
            let _ = crate::store::write_atomic(record, format!("{raw} {start}\n").as_bytes());
        }
    }

    let deadline = started.checked_add(script.timeout);
    let supervised = supervise(
        &group,
        &mut sigchld,
        deadline,
        cancel,
        stdout,
        stderr,
        &mut capture,
    )
    .await;
    let status = group.kill_and_reap().await;
    let stop = supervised?;
    let status = status?;
    capture.into_result(Ended {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out: matches!(stop, Some(Stop::Timeout)),
        cancelled: match stop {
            Some(Stop::Cancel(reason)) => Some(reason),
            _ => None,
        },
        duration: started.elapsed(),
    })
}

/// How a script ended, for [`Capture::into_result`].
pub(crate) struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: Option<CancelReason>,
    pub duration: Duration,
}

/// Why the supervisor stopped the script early.
enum Stop {
    Timeout,
    Cancel(CancelReason),
}

/// Where the supervisor is in ending the script.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Running until it exits, times out or is cancelled.
    Running,
    /// The group got SIGTERM; waiting out the grace period.
    Terminating,
    /// The group got SIGKILL; draining the pipes.
    Killed,
}

/// Reads both pipes until the shell has exited and both reach EOF (or the
/// drain limit passes), and stops the group on timeout or cancellation.
/// Returns why it stopped the script early, if it did.
///
/// Both pipes are read in one loop, so neither can fill up and block the
/// child, and `merged` gets the chunks in the order they were read.
async fn supervise(
    group: &Group,
    sigchld: &mut tokio::signal::unix::Signal,
    deadline: Option<Instant>,
    cancel: &Cancel,
    mut stdout: impl AsyncRead + Unpin,
    mut stderr: impl AsyncRead + Unpin,
    capture: &mut Capture<impl FnMut(Stream, &str) + Send>,
) -> io::Result<Option<Stop>> {
    let mut stdout_buf = vec![0; READ_CHUNK];
    let mut stderr_buf = vec![0; READ_CHUNK];
    let (mut stdout_open, mut stderr_open) = (true, true);
    let mut exited = false;
    let mut phase = Phase::Running;
    let mut stop = None;

    let leader_exit = wait_for_exit(group.pgid, sigchld);
    tokio::pin!(leader_exit);
    let cancelled = cancel.cancelled();
    tokio::pin!(cancelled);
    // A timeout too large to represent is no timeout.
    let timer = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now));
    tokio::pin!(timer);
    let mut timer_armed = deadline.is_some();

    while !(exited && !stdout_open && !stderr_open) {
        tokio::select! {
            read = stdout.read(&mut stdout_buf), if stdout_open => match read {
                Ok(n) if n > 0 => capture.take(Stream::Stdout, &stdout_buf[..n]).await?,
                // A read error on a pipe means it is unusable: treat it as EOF.
                _ => {
                    stdout_open = false;
                    capture.finish(Stream::Stdout);
                }
            },
            read = stderr.read(&mut stderr_buf), if stderr_open => match read {
                Ok(n) if n > 0 => capture.take(Stream::Stderr, &stderr_buf[..n]).await?,
                _ => {
                    stderr_open = false;
                    capture.finish(Stream::Stderr);
                }
            },
            () = &mut leader_exit, if !exited => {
                exited = true;
                if phase == Phase::Running {
                    // The script ended by itself: kill what it left behind
                    // so that the pipes reach EOF.
                    group.signal(Signal::KILL);
                    phase = Phase::Killed;
                    timer.as_mut().reset(Instant::now() + DRAIN_LIMIT);
                    timer_armed = true;
                }
            },
            reason = &mut cancelled, if phase == Phase::Running => {
                stop = Some(Stop::Cancel(reason));
                group.signal(Signal::TERM);
                phase = Phase::Terminating;
                timer.as_mut().reset(Instant::now() + TERM_GRACE);
                timer_armed = true;
            },
            () = &mut timer, if timer_armed => match phase {
                Phase::Running => {
                    stop = Some(Stop::Timeout);
                    group.signal(Signal::TERM);
                    phase = Phase::Terminating;
                    timer.as_mut().reset(Instant::now() + TERM_GRACE);
                }
                Phase::Terminating => {
                    group.signal(Signal::KILL);
                    phase = Phase::Killed;
                    timer.as_mut().reset(Instant::now() + DRAIN_LIMIT);
                }
                // Only processes outside the group can hold the pipes now.
                Phase::Killed => break,
            },
        }
    }
    Ok(stop)
}

/// Waits until the process `pid` (a child of ours) has exited, without
/// reaping it, so that its pid stays reserved for the group signals that
/// follow.
async fn wait_for_exit(pid: Pid, sigchld: &mut tokio::signal::unix::Signal) {
    loop {
        match rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
        ) {
            Ok(Some(_)) => return,
            Ok(None) => {}
            Err(rustix::io::Errno::INTR) => continue,
            // ECHILD: not ours to wait for any more, so it has gone.
            Err(_) => return,
        }
        // SIGCHLD arrives after every child exit; the listener was created
        // before the spawn, so an exit between the check and here still wakes
        // this. If the listener is gone, polling keeps this correct.
        if sigchld.recv().await.is_none() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The script's process group, owning the shell that leads it. Dropping it
/// before [`Group::kill_and_reap`] kills the group.
pub(super) struct Group {
    /// `None` once reaped.
    pub(super) child: Option<Child>,
    /// The shell's pid, which is also the group id.
    pub(super) pgid: Pid,
}

impl Group {
    pub(super) fn raw_pgid(&self) -> u32 {
        self.pgid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Sends `sig` to every process in the group.
    pub(super) fn signal(&self, sig: Signal) {
        if self.child.is_some() {
            // ESRCH (all gone) is the only expected failure, and needs nothing.
            let _ = crate::os::process::signal_group(self.raw_pgid(), sig);
        }
    }

    /// Sends SIGKILL to the whole group, then reaps the shell. Until then
    /// the unreaped shell keeps the group id from being reused.
    pub(super) async fn kill_and_reap(&mut self) -> io::Result<ExitStatus> {
        self.signal(Signal::KILL);
        let status = match self.child.as_mut() {
            Some(child) => child.wait().await,
            None => Err(io::Error::other("the script was already reaped")),
        };
        if self.child.take().is_some() {
            super::reaper::forget(self.raw_pgid());
        }
        status
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // Only reached with a live child when `run` was abandoned mid-way;
        // tokio reaps the dropped `Child` in the background.
        self.signal(Signal::KILL);
        if self.child.is_some() {
            super::reaper::forget(self.raw_pgid());
        }
    }
}

/// A log file, created when the first output reaches it: a command that
/// prints nothing (most stages of a run) costs the file system no file on
/// its way (the engine adds the empty log after the stage, off the run's
/// critical path).
struct Log {
    path: PathBuf,
    file: Option<tokio::fs::File>,
}

impl Log {
    fn new(path: &Path) -> Log {
        Log {
            path: path.to_path_buf(),
            file: None,
        }
    }

    /// Appends `bytes`, creating (or truncating) the file first.
    async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                // The stage's directory may not exist yet (see the engine's
                // command stages): made with the first output.
                if let Some(dir) = self.path.parent() {
                    let _ = crate::store::create_private_dir_all(dir);
                }
                self.file.insert(create_log(&self.path).await?)
            }
        };
        // Flushed per chunk so that the log is on disk before the callback
        // announces the chunk, and a write error surfaces here.
        file.write_all(bytes).await?;
        file.flush().await
    }

    /// At the end: a log that got no output holds none from an earlier
    /// attempt either.
    fn finish(&self) -> io::Result<()> {
        if self.file.is_none() && self.path.exists() {
            std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&self.path)?;
        }
        Ok(())
    }
}

/// Where output goes: the log files, the callback and the result texts.
/// A sandbox's exec feeds one too, so that output from a container is
/// logged, cut and passed on exactly as a local command's.
pub(crate) struct Capture<F> {
    stdout_log: Log,
    stderr_log: Log,
    stdout_decoder: Utf8Decoder,
    stderr_decoder: Utf8Decoder,
    stdout: Tail,
    stderr: Tail,
    merged: Tail,
    on_output: F,
}

impl<F: FnMut(Stream, &str) + Send> Capture<F> {
    /// Output to `stdout_log` and `stderr_log` (each created by its first
    /// output, see [`Log`]) and `on_output`.
    pub(crate) fn new(stdout_log: &Path, stderr_log: &Path, on_output: F) -> Capture<F> {
        Capture {
            stdout_log: Log::new(stdout_log),
            stderr_log: Log::new(stderr_log),
            stdout_decoder: Utf8Decoder::default(),
            stderr_decoder: Utf8Decoder::default(),
            stdout: Tail::default(),
            stderr: Tail::default(),
            merged: Tail::default(),
            on_output,
        }
    }

    /// The result of a script whose output all went here. Streams not
    /// yet finished (their end seen) are finished first.
    ///
    /// # Errors
    /// A log file that cannot be emptied.
    pub(crate) fn into_result(mut self, ended: Ended) -> io::Result<ProcessResult> {
        for stream in [Stream::Stdout, Stream::Stderr] {
            self.finish(stream);
        }
        self.stdout_log.finish()?;
        self.stderr_log.finish()?;
        Ok(ProcessResult {
            exit_code: ended.exit_code,
            signal: ended.signal,
            timed_out: ended.timed_out,
            cancelled: ended.cancelled,
            killed_by: None,
            duration: ended.duration,
            stdout_total: self.stdout.total,
            stderr_total: self.stderr.total,
            stdout: self.stdout.into_text(),
            stderr: self.stderr.into_text(),
            merged: self.merged.into_text(),
        })
    }

    /// Logs a chunk read from `stream` and passes on its complete characters.
    pub(crate) async fn take(&mut self, stream: Stream, bytes: &[u8]) -> io::Result<()> {
        let (log, decoder) = match stream {
            Stream::Stdout => (&mut self.stdout_log, &mut self.stdout_decoder),
            Stream::Stderr => (&mut self.stderr_log, &mut self.stderr_decoder),
        };
        log.write(bytes).await?;
        let text = decoder.decode(bytes);
        self.emit(stream, &text);
        Ok(())
    }

    /// Passes on what is left of `stream` at EOF: an incomplete character
    /// becomes U+FFFD.
    fn finish(&mut self, stream: Stream) {
        let text = match stream {
            Stream::Stdout => self.stdout_decoder.finish(),
            Stream::Stderr => self.stderr_decoder.finish(),
        };
        self.emit(stream, &text);
    }

    fn emit(&mut self, stream: Stream, text: &str) {
        if text.is_empty() {
            return;
        }
        match stream {
            Stream::Stdout => self.stdout.push_str(text),
            Stream::Stderr => self.stderr.push_str(text),
        }
        self.merged.push_str(text);
        (self.on_output)(stream, text);
    }
}

/// The last [`OUTPUT_TAIL`] bytes of a text that arrives in pieces, in at
/// most twice that much memory, and how long the whole text was.
#[derive(Default)]
struct Tail {
    text: String,
    /// Bytes pushed in all.
    total: u64,
}

impl Tail {
    fn push_str(&mut self, piece: &str) {
        self.total = self
            .total
            .saturating_add(u64::try_from(piece.len()).unwrap_or(u64::MAX));
        // Only the end of a piece longer than the tail can be kept.
        let piece = &piece[next_char_boundary(piece, piece.len().saturating_sub(OUTPUT_TAIL))..];
        self.text.push_str(piece);
        // Cutting only once the text has doubled keeps the copying linear.
        if self.text.len() > 2 * OUTPUT_TAIL {
            self.cut_to_tail();
        }
    }

    fn cut_to_tail(&mut self) {
        let cut = next_char_boundary(&self.text, self.text.len().saturating_sub(OUTPUT_TAIL));
        self.text.drain(..cut);
    }

    fn into_text(mut self) -> String {
        if self.text.len() > OUTPUT_TAIL {
            self.cut_to_tail();
        }
        self.text
    }
}

/// The first character boundary of `text` at or after byte `at`: cutting
/// there keeps at most `text.len() - at` bytes and never splits a character.
fn next_char_boundary(text: &str, at: usize) -> usize {
    (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

/// Decodes a byte stream chunk by chunk as lossy UTF-8, holding back an
/// incomplete character at the end of a chunk until the next one arrives.
/// The concatenated output equals `String::from_utf8_lossy` of the whole
/// stream.
#[derive(Default)]
struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    fn decode(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut text = String::with_capacity(self.pending.len());
        let mut carry = Vec::new();
        let mut chunks = self.pending.utf8_chunks().peekable();
        while let Some(chunk) = chunks.next() {
            text.push_str(chunk.valid());
            let invalid = chunk.invalid();
            if invalid.is_empty() {
                continue;
            }
            let at_end = chunks.peek().is_none();
            let incomplete = std::str::from_utf8(invalid).is_err_and(|e| e.error_len().is_none());
            if at_end && incomplete {
                carry = invalid.to_vec();
            } else {
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
        self.pending = carry;
        text
    }

    fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

/// The interpreter's absolute path, looked up in the child's `PATH`: the
/// script's own `PATH` when it sets one, else this process's (looked up
/// once). Naming the program by path matters for speed: the child's
/// environment is set explicitly, and when it sets `PATH` and the program is
/// a bare name, std cannot use `posix_spawn` and falls back to `fork`, which
/// copies this process's page tables for every command. When the
/// interpreter is not found, the bare name is used and spawning fails with a
/// message naming it.
fn interpreter(script: &Script, language: Language) -> std::ffi::OsString {
    // Found once per PATH value: the search stats every directory of PATH,
    // which cost more than the rest of a short stage's bookkeeping. A
    // handful of PATHs is all a daemon sees; the cache starts over past 16.
    static FOUND: std::sync::Mutex<Vec<(&str, std::ffi::OsString, std::ffi::OsString)>> =
        std::sync::Mutex::new(Vec::new());
    let name = language.program();
    let path = script
        .env
        .iter()
        .rev()
        .chain(script.base_env.iter().flatten().rev())
        .find(|(k, _)| k == "PATH")
        .map_or_else(
            || std::env::var_os("PATH").unwrap_or_default(),
            |(_, p)| p.into(),
        );
    let mut found = crate::util::lock::lock(&FOUND);
    if let Some((_, _, program)) = found.iter().find(|(n, p, _)| *n == name && *p == path) {
        return program.clone();
    }
    let program = std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .map_or_else(|| name.into(), std::path::PathBuf::into_os_string);
    if found.len() >= 16 {
        found.clear();
    }
    found.push((name, path, program.clone()));
    program
}

/// What a script runs first: it waits for the line [`open_gate`] writes
/// once the reaper watches its process group, and gives up (exit 125,
/// having run nothing) when the pipe closes without one, because the
/// executor died in between. Then stdin is `/dev/null`, as scripts expect.
/// Without it, a script could start work in the moment between the spawn
/// and the reaper hearing of its group, and outlive a killed executor.
const GATE: &str = "IFS= read -r _ || exit 125; exec </dev/null; ";

fn command(script: &Script) -> io::Result<Command> {
    let shell = interpreter(script, Language::Shell);
    let mut command = Command::new(&shell);
    match script.language {
        // On the script's first line, so its line numbers stay as written.
        Language::Shell => command.arg("-c").arg(format!("{GATE}{}", script.source)),
        // Python cannot take a prefix on its first line (`from __future__`
        // must come first), so bash opens the gate and execs python.
        Language::Python => command
            .arg("-c")
            .arg(format!("{GATE}exec \"$0\" \"$@\""))
            .arg(interpreter(script, Language::Python))
            .arg("-c")
            .arg(&script.source),
    };
    command
        .current_dir(&script.work_dir)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Group id = the shell's pid, so the whole tree can be signalled.
        .process_group(0);
    let mut extra = Vec::new();
    if script.language == Language::Python {
        // Python block-buffers a piped stdout, which would hold output back
        // until exit; the script's own `env` can still override this.
        extra.push(("PYTHONUNBUFFERED".to_owned(), "1".to_owned()));
    }
    extra.extend(script.env.iter().cloned());
    let default_base;
    let base = match &script.base_env {
        Some(base) => base,
        None => {
            default_base = super::environment::stage_env(
                &crate::secrets::process_env(),
                &crate::model::EnvPolicy::default(),
            )
            .vars;
            &default_base
        }
    };
    command.envs(child_env(
        base.iter().map(|(k, v)| (k.into(), v.into())),
        &extra,
    ));
    Ok(command)
}

/// Lets the script past its [`GATE`]. A script that already ended (a
/// syntax error on its first line) closed the pipe: nothing to do.
pub(super) async fn open_gate(group: &mut Group) {
    use tokio::io::AsyncWriteExt;
    if let Some(mut gate) = group.child.as_mut().and_then(|c| c.stdin.take()) {
        let _ = gate.write_all(b"\n").await;
    }
}

pub(super) async fn check_work_dir(dir: &Path) -> io::Result<()> {
    // One stat, on this thread: a trip through the blocking pool cost more
    // than the call itself, once per command.
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("work directory {} is not a directory", dir.display()),
        )),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("work directory {}: {e}", dir.display()),
        )),
    }
}

async fn create_log(path: &Path) -> io::Result<tokio::fs::File> {
    // Private like every file under WEFT_HOME.
    tokio::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(crate::store::PRIVATE_FILE_MODE)
        .open(path)
        .await
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create log {}: {e}", path.display()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::prelude::*;

    fn shell(source: &str, dir: &Path) -> Script {
        Script {
            group_record: None,
            base_env: None,
            language: Language::Shell,
            source: source.to_owned(),
            work_dir: dir.to_owned(),
            env: Vec::new(),
            timeout: Duration::from_secs(20),
        }
    }

    /// Runs `script` with logs in `dir`, collecting the callback's chunks.
    async fn run_collecting(
        script: &Script,
        cancel: &Cancel,
        dir: &Path,
    ) -> (io::Result<ProcessResult>, Vec<(Instant, Stream, String)>) {
        let mut chunks = Vec::new();
        let result = run(
            script,
            cancel,
            &dir.join("stdout.log"),
            &dir.join("stderr.log"),
            |stream, text| chunks.push((Instant::now(), stream, text.to_owned())),
        )
        .await;
        (result, chunks)
    }

    /// A script whose executor dies between spawning it and telling the
    /// reaper (the gate's pipe closes unopened) runs nothing: before the
    /// gate, it could already have started a child that outlived everyone.
    #[tokio::test]
    async fn a_script_whose_gate_never_opens_runs_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        for language in [Language::Shell, Language::Python] {
            let source = match language {
                Language::Shell => "echo ran > side.txt",
                Language::Python => "open('side.txt', 'w').write('ran')",
            };
            let script = Script {
                language,
                ..shell(source, dir.path())
            };
            let mut child = command(&script).expect("command").spawn().expect("spawn");
            drop(child.stdin.take());
            let status = child.wait().await.expect("wait");
            assert_eq!(status.code(), Some(125), "{language:?}");
            assert!(!dir.path().join("side.txt").exists(), "{language:?} ran");

            let mut child = command(&script).expect("command").spawn().expect("spawn");
            let mut group = Group {
                pgid: Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"))
                    .expect("pid"),
                child: None,
            };
            group.child = Some(child);
            open_gate(&mut group).await;
            child = group.child.take().expect("child");
            assert!(child.wait().await.expect("wait").success(), "{language:?}");
            assert!(
                dir.path().join("side.txt").exists(),
                "{language:?} ran once let in"
            );
            std::fs::remove_file(dir.path().join("side.txt")).expect("remove");
        }
    }

    fn read_pid(path: &Path) -> i32 {
        let text = std::fs::read_to_string(path).expect("the script wrote its pid file");
        text.trim().parse().expect("the pid file holds a pid")
    }

    /// Whether `pid` is a live process. A zombie is not: killed processes
    /// whose parent died are reaped by init, which in a container may never
    /// happen, and a zombie runs nothing.
    fn is_running(pid: i32) -> bool {
        u32::try_from(pid).is_ok_and(crate::os::process::is_alive)
    }

    /// SIGKILL is delivered asynchronously, so a process that was killed but
    /// held no pipe may need a moment to die after `run` returns.
    async fn dies_soon(pid: i32) -> bool {
        for _ in 0..100 {
            if !is_running(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    #[test]
    fn language_names_parse_and_round_trip() {
        for name in ["shell", "bash", "sh", "Bash"] {
            assert_eq!(Language::parse(name), Some(Language::Shell), "{name}");
        }
        for name in ["python", "python3"] {
            assert_eq!(Language::parse(name), Some(Language::Python), "{name}");
        }
        assert_eq!(
            Language::parse("ruby"),
            None,
            "unknown languages are rejected"
        );
        for language in [Language::Shell, Language::Python] {
            assert_eq!(Language::parse(language.as_str()), Some(language));
        }
    }

    #[tokio::test]
    async fn exit_codes_and_both_streams_are_reported_and_logged() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell("echo out; echo err >&2; exit 3", dir.path());
        let (result, chunks) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        assert_eq!(
            result.exit_code,
            Some(3),
            "a failing script is an Ok result"
        );
        assert_eq!(result.signal, None);
        assert!(!result.timed_out);
        assert_eq!(result.cancelled, None);
        assert_eq!(result.stdout, "out\n");
        assert_eq!(result.stderr, "err\n");
        assert!(
            result.merged.contains("out\n") && result.merged.contains("err\n"),
            "merged holds both streams: {:?}",
            result.merged
        );
        assert_eq!(result.merged.len(), 8, "merged holds nothing else");
        let logged = |name: &str| std::fs::read_to_string(dir.path().join(name)).expect("log");
        assert_eq!(logged("stdout.log"), "out\n");
        assert_eq!(logged("stderr.log"), "err\n");
        let streamed: String = chunks
            .iter()
            .filter(|(_, stream, _)| *stream == Stream::Stdout)
            .map(|(_, _, text)| text.as_str())
            .collect();
        assert_eq!(streamed, "out\n", "the callback saw stdout");

        let script = shell("true", dir.path());
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        assert_eq!(result.exit_code, Some(0));
        assert_eq!(result.merged, "");
        assert_eq!(
            logged("stdout.log"),
            "",
            "logs are truncated and exist even when empty"
        );
        assert_eq!(logged("stderr.log"), "");
    }

    #[tokio::test]
    async fn output_is_streamed_before_the_process_ends() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell("echo first; sleep 0.3; echo second", dir.path());
        let (result, chunks) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let ended = Instant::now();
        assert_eq!(result.expect("runs").stdout, "first\nsecond\n");
        let (first_at, _, first) = chunks.first().expect("a chunk arrived");
        assert_eq!(first, "first\n", "the chunk before the sleep comes alone");
        assert!(
            ended.duration_since(*first_at) >= Duration::from_millis(250),
            "the first chunk arrived while the script was still sleeping"
        );
    }

    #[tokio::test]
    async fn a_multibyte_character_split_across_writes_arrives_intact() {
        let dir = tempfile::tempdir().expect("temp dir");
        // The euro sign is E2 82 AC; the sleep makes the halves separate reads.
        let script = shell(r"printf '\xe2\x82'; sleep 0.2; printf '\xac\n'", dir.path());
        let (result, chunks) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        assert_eq!(result.expect("runs").stdout, "€\n");
        let texts: Vec<&str> = chunks.iter().map(|(_, _, text)| text.as_str()).collect();
        assert_eq!(texts, ["€\n"], "no callback saw half a character");
    }

    proptest! {
        #[test]
        fn decoding_in_chunks_equals_decoding_the_whole(
            bytes in proptest::collection::vec(
                prop_oneof![any::<u8>(), Just(0xE2u8), Just(0x82u8), Just(0xACu8)],
                0..64,
            ),
            cuts in proptest::collection::vec(0usize..64, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut decoder = Utf8Decoder::default();
            let mut text = String::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                text.push_str(&decoder.decode(&bytes[from..cut]));
                from = cut;
            }
            text.push_str(&decoder.finish());
            prop_assert_eq!(text, String::from_utf8_lossy(&bytes).into_owned());
        }
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut script = shell("sleep 30 & echo $! > pidfile; sleep 30", dir.path());
        script.timeout = Duration::from_millis(300);
        let begun = Instant::now();
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        assert!(result.timed_out, "the timeout is reported");
        assert_eq!(result.cancelled, None);
        assert_eq!(result.exit_code, None, "the shell was killed by a signal");
        assert_eq!(result.signal, Some(Signal::TERM.as_raw()));
        assert!(
            begun.elapsed() < Duration::from_secs(5),
            "SIGTERM ended it well before the sleeps would have"
        );
        let grandchild = read_pid(&dir.path().join("pidfile"));
        assert!(
            dies_soon(grandchild).await,
            "the background grandchild was killed with the group"
        );
    }

    #[tokio::test]
    async fn processes_ignoring_sigterm_get_sigkill_after_the_grace() {
        let dir = tempfile::tempdir().expect("temp dir");
        // The ignored disposition is inherited by the shell's children.
        let mut script = shell(
            "trap '' TERM; sleep 30 & echo $! > pidfile; sleep 30",
            dir.path(),
        );
        script.timeout = Duration::from_millis(200);
        let begun = Instant::now();
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        let took = begun.elapsed();
        assert!(result.timed_out);
        assert_eq!(result.signal, Some(Signal::KILL.as_raw()));
        assert!(
            took >= TERM_GRACE && took < TERM_GRACE + Duration::from_secs(3),
            "SIGKILL came after the grace, took {took:?}"
        );
        let grandchild = read_pid(&dir.path().join("pidfile"));
        assert!(
            dies_soon(grandchild).await,
            "the grandchild got SIGKILL too"
        );
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_process_group_and_reports_the_reason() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell("sleep 30 & echo $! > pidfile; sleep 30", dir.path());
        let cancel = Cancel::new();
        let canceller = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                cancel.cancel(CancelReason::User("ctrl-c".into()));
            }
        });
        let begun = Instant::now();
        let (result, _) = run_collecting(&script, &cancel, dir.path()).await;
        let result = result.expect("runs");
        assert_eq!(result.cancelled, Some(CancelReason::User("ctrl-c".into())));
        assert!(!result.timed_out);
        assert!(begun.elapsed() < Duration::from_secs(5), "cancel ended it");
        let grandchild = read_pid(&dir.path().join("pidfile"));
        assert!(dies_soon(grandchild).await, "the grandchild was killed too");
        canceller.await.expect("the canceller finished");
    }

    #[tokio::test]
    async fn a_script_is_not_started_once_cancelled() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell("touch started", dir.path());
        let cancel = Cancel::new();
        cancel.cancel(CancelReason::Stalled(5));
        let (result, _) = run_collecting(&script, &cancel, dir.path()).await;
        let result = result.expect("an early cancel is not an error");
        assert_eq!(result.cancelled, Some(CancelReason::Stalled(5)));
        assert_eq!(result.exit_code, None);
        assert!(!dir.path().join("started").exists(), "the script never ran");
        assert!(
            !dir.path().join("stdout.log").exists(),
            "nothing was printed, so no log was made"
        );
    }

    #[tokio::test]
    async fn background_processes_left_by_a_finished_script_are_killed() {
        let dir = tempfile::tempdir().expect("temp dir");
        // One keeps the pipes open (it would hang a reader waiting for EOF),
        // the other does not (nothing but the group kill would stop it).
        let script = shell(
            "sleep 30 & echo $! > holds_pipes; \
             sleep 30 >/dev/null 2>&1 & echo $! > detached; \
             echo done",
            dir.path(),
        );
        let begun = Instant::now();
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        assert!(
            begun.elapsed() < Duration::from_secs(5),
            "run did not wait for the background sleeps"
        );
        assert_eq!(result.exit_code, Some(0));
        assert_eq!(result.stdout, "done\n");
        assert!(!result.timed_out);
        for name in ["holds_pipes", "detached"] {
            let pid = read_pid(&dir.path().join(name));
            assert!(
                dies_soon(pid).await,
                "the {name} background process is gone"
            );
        }
    }

    #[tokio::test]
    async fn python_scripts_run() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = Script {
            base_env: None,
            language: Language::Python,
            ..shell("print('hi')", dir.path())
        };
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("python3 is installed");
        assert_eq!(result.exit_code, Some(0));
        assert_eq!(result.stdout, "hi\n");
    }

    #[tokio::test]
    async fn a_missing_work_dir_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("no-such-dir");
        let script = shell("true", &missing);
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let err = result.expect_err("a missing work dir cannot run");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains("no-such-dir"),
            "the message names the directory: {err}"
        );
    }

    #[tokio::test]
    async fn a_silent_stream_makes_no_log_and_empties_an_earlier_attempt_s() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("stderr.log"), "from attempt 1\n").expect("old log");
        let script = shell("echo out", dir.path());
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        assert_eq!(result.expect("runs").exit_code, Some(0));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("stdout.log")).expect("stdout"),
            "out\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("stderr.log")).expect("stderr"),
            "",
            "nothing of the earlier attempt is left"
        );
        let quiet = tempfile::tempdir().expect("temp dir");
        let (result, _) =
            run_collecting(&shell("true", quiet.path()), &Cancel::new(), quiet.path()).await;
        assert_eq!(result.expect("runs").exit_code, Some(0));
        assert!(!quiet.path().join("stdout.log").exists());
        assert!(!quiet.path().join("stderr.log").exists());
    }

    #[tokio::test]
    async fn an_unwritable_log_is_an_error() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell("echo out", dir.path());
        // A file where the log's directory should be.
        std::fs::write(dir.path().join("blocked"), "").expect("file");
        let err = run(
            &script,
            &Cancel::new(),
            &dir.path().join("blocked/stdout.log"),
            &dir.path().join("stderr.log"),
            |_, _| {},
        )
        .await
        .expect_err("the log cannot be created");
        assert!(
            err.to_string().contains("stdout.log"),
            "names the log: {err}"
        );
    }

    #[test]
    fn child_env_adds_script_variables_over_inherited_ones() {
        let parent = [("PATH", "/bin"), ("MODE", "parent")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let extra = [
            ("MODE".to_owned(), "script".to_owned()),
            ("WEFT_NODE".to_owned(), "build".to_owned()),
        ];
        let env = child_env(parent, &extra);
        let expected = [("MODE", "script"), ("PATH", "/bin"), ("WEFT_NODE", "build")]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        assert_eq!(env, expected, "script variables win over inherited ones");
    }

    #[tokio::test]
    async fn the_child_sees_script_variables_and_no_secrets() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut script = shell("echo \"value=$WEFT_TEST_VALUE\"; compgen -e", dir.path());
        script.env = vec![("WEFT_TEST_VALUE".into(), "hello".into())];
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let stdout = result.expect("runs").stdout;
        let mut lines = stdout.lines();
        assert_eq!(lines.next(), Some("value=hello"), "Script.env is passed");
        // Whatever secrets this test process holds (in CI, often some), none
        // reached the child.
        for name in lines {
            assert!(
                !crate::secrets::is_secret_name(name),
                "{name} leaked into the child"
            );
        }
    }

    #[tokio::test]
    async fn large_output_is_logged_completely_and_kept_in_memory_only_as_a_tail() {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = shell(
            "head -c 4000000 /dev/zero | tr '\\0' x; echo END; head -c 1000000 /dev/zero | tr '\\0' y >&2",
            dir.path(),
        );
        let (result, chunks) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let result = result.expect("runs");
        assert_eq!(result.stdout_total, 4_000_004, "every byte was counted");
        assert_eq!(result.stdout.len(), OUTPUT_TAIL, "only the tail is kept");
        assert!(result.stdout.ends_with("xxEND\n"), "the tail is the end");
        assert_eq!(result.stderr_total, 1_000_000);
        assert_eq!(
            result.stderr.len(),
            1_000_000,
            "a short stream is kept whole"
        );
        assert_eq!(result.merged.len(), OUTPUT_TAIL);
        let logged = std::fs::metadata(dir.path().join("stdout.log")).expect("log");
        assert_eq!(logged.len(), 4_000_004, "the log is complete");
        let streamed: usize = chunks.iter().map(|(_, _, text)| text.len()).sum();
        assert_eq!(streamed, 5_000_004, "the callback saw every byte");
    }

    #[test]
    fn a_tail_never_splits_a_character() {
        let mut tail = Tail::default();
        let euro = "€".repeat(OUTPUT_TAIL); // 3 bytes each
        tail.push_str(&euro);
        tail.push_str("ab");
        let text = tail.into_text();
        assert!(text.len() <= OUTPUT_TAIL && text.len() > OUTPUT_TAIL - 4);
        assert!(text.ends_with("€ab"));
        assert!(text.starts_with('€'), "cut at a character boundary");
    }

    #[tokio::test]
    async fn the_scripts_group_is_led_by_the_interpreter_and_holds_only_the_script() {
        let dir = tempfile::tempdir().expect("temp dir");
        // The leader is the script's own shell ($$ is the group id); the
        // reaper watches from outside the group.
        let script = shell(
            "echo leader=$$; ps -o pgid= -p $$ | tr -d ' '; \
             ps -o pid=,pgid= -e | awk -v g=$$ '$2 == g' | wc -l",
            dir.path(),
        );
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let stdout = result.expect("runs").stdout;
        let lines: Vec<&str> = stdout.lines().collect();
        let leader = lines[0].trim_start_matches("leader=");
        assert_eq!(lines[1], leader, "the script leads its group");
        // The leader and the pipeline's ps, awk and wc.
        assert_eq!(lines[2].trim(), "4", "{stdout}");
    }

    #[tokio::test]
    async fn a_missing_interpreter_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        // The child's PATH is also where the interpreter is looked up.
        let script = Script {
            base_env: None,
            language: Language::Python,
            env: vec![("PATH".into(), dir.path().display().to_string())],
            ..shell("print('hi')", dir.path())
        };
        let (result, _) = run_collecting(&script, &Cancel::new(), dir.path()).await;
        let err = result.expect_err("python3 cannot be found");
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(
            err.to_string().contains("python3"),
            "names the program: {err}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_runs_each_see_their_own_exit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let dir = dir.path().join(format!("run{i}"));
                tokio::spawn(async move {
                    std::fs::create_dir(&dir).expect("run dir");
                    let script = shell(&format!("sleep 0.{i}; exit {i}"), &dir);
                    let (result, _) = run_collecting(&script, &Cancel::new(), &dir).await;
                    result.expect("runs").exit_code
                })
            })
            .collect();
        let mut codes = Vec::new();
        for handle in handles {
            codes.push(handle.await.expect("task finished"));
        }
        assert_eq!(codes, [Some(0), Some(1), Some(2), Some(3)]);
    }
}
