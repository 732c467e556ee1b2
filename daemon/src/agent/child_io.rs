//! Reading an external agent's output, shared by the ACP backend
//! ([`super::acp`]) and the headless CLI backend ([`super::cli`]): its
//! stdout a line at a time with a cap, its stderr into a log in the stage
//! directory and a tail kept for error messages.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};

use tokio::io::{
    AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, AsyncWriteExt as _, BufReader,
};

use crate::util::lock::lock;

/// How much of the agent's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// How much of the agent's stderr is logged in the stage directory.
const STDERR_LOG_BYTES: u64 = 1024 * 1024;

/// The agent's stderr log in the stage directory.
pub const STDERR_FILE: &str = "agent-stderr.log";

/// Reads the agent's stdout line by line.
pub struct Lines<R> {
    reader: BufReader<R>,
    buffer: Vec<u8>,
    max_line: usize,
}

impl<R> std::fmt::Debug for Lines<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines").finish_non_exhaustive()
    }
}

/// Why reading stopped.
#[derive(Debug)]
pub enum ReadError {
    /// The agent closed its stdout (it exited, most likely).
    Closed,
    /// A line longer than the reader's cap.
    TooLong,
    Io(std::io::Error),
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// A reader refusing lines longer than `max_line` bytes.
    pub fn new(reader: R, max_line: usize) -> Lines<R> {
        Lines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            buffer: Vec::new(),
            max_line,
        }
    }

    /// The next line, without its line ending; blank lines are skipped.
    ///
    /// Cancel-safe: it is raced against timers and other work, so the only
    /// await is the buffer's refill, and what was taken from the buffer
    /// before it (the start of a long line) stays in `self.buffer` for the
    /// next call.
    pub async fn next(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            let available = self.reader.fill_buf().await.map_err(ReadError::Io)?;
            if available.is_empty() {
                // The last line, without its newline.
                let mut line = std::mem::take(&mut self.buffer);
                trim_line(&mut line);
                if line.is_empty() {
                    return Err(ReadError::Closed);
                }
                return Ok(line);
            }
            let (take, done) = match memchr::memchr(b'\n', available) {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if self.buffer.len() + take > self.max_line + 1 {
                return Err(ReadError::TooLong);
            }
            self.buffer.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if !done {
                continue;
            }
            let mut line = std::mem::take(&mut self.buffer);
            trim_line(&mut line);
            if line.is_empty() {
                continue;
            }
            return Ok(line);
        }
    }
}

fn trim_line(bytes: &mut Vec<u8>) {
    while matches!(bytes.last(), Some(b'\n' | b'\r')) {
        bytes.pop();
    }
}

/// The end of an agent's stderr, kept while a task reads it to its end.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<String>>);

impl StderrTail {
    /// Reads `stderr` to its end from a task of its own: the first MiB
    /// into `log`, the last few KB kept here. Reading it all keeps the
    /// agent from blocking on a full pipe.
    pub fn collect(stderr: tokio::process::ChildStderr, log: Option<PathBuf>) -> StderrTail {
        let tail = StderrTail::default();
        tokio::spawn(read_stderr(stderr, Arc::clone(&tail.0), log));
        tail
    }

    /// "; its stderr ends: …", or nothing when it said nothing.
    #[must_use]
    pub fn hint(&self) -> String {
        let tail = lock(&self.0).trim().to_string();
        if tail.is_empty() {
            String::new()
        } else {
            format!(
                "; its stderr ends: {}",
                crate::util::text::truncate_start(&tail, 600)
            )
        }
    }
}

/// " (exit code N)" or " (killed by signal N)", or nothing while it runs.
#[must_use]
pub fn exit_hint(status: Option<ExitStatus>) -> String {
    let Some(status) = status else {
        return String::new();
    };
    match (
        status.code(),
        std::os::unix::process::ExitStatusExt::signal(&status),
    ) {
        (Some(code), _) => format!(" (exit code {code})"),
        (None, Some(signal)) => format!(" (killed by signal {signal})"),
        _ => String::new(),
    }
}

/// Sleeps until `at`, or forever without one (a `select!` branch that is
/// off).
pub async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn read_stderr(
    mut stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<String>>,
    log: Option<PathBuf>,
) {
    let mut file = match log {
        Some(path) => tokio::fs::File::create(path).await.ok(),
        None => None,
    };
    let mut logged = 0u64;
    let mut buffer = [0u8; 8192];
    while let Ok(n) = stderr.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        if let Some(file) = file.as_mut()
            && logged < STDERR_LOG_BYTES
        {
            let _ = file.write_all(&buffer[..n]).await;
            logged += n as u64;
        }
        let mut kept = lock(&tail);
        kept.push_str(&String::from_utf8_lossy(&buffer[..n]));
        if kept.len() > STDERR_TAIL_BYTES * 2 {
            let mut cut = kept.len() - STDERR_TAIL_BYTES;
            while !kept.is_char_boundary(cut) {
                cut += 1;
            }
            kept.drain(..cut);
        }
    }
}
