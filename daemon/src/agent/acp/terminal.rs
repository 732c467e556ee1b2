//! The `terminal/*` methods: commands an ACP agent asks Weft to run for it.
//! Each runs like the agent itself (its own process group, watched by the
//! reaper), in the work dir, with the run's filtered environment; its
//! output is kept up to a limit (the end, as the protocol asks), and it is
//! killed when released, when the session ends, or when the run is
//! cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tokio::sync::{Notify, watch};

use super::wire::RpcError;
use crate::exec::interactive::{Interactive, Program};
use crate::util::lock::lock;

/// Output kept per terminal when the agent sets no `outputByteLimit`, and
/// the most it may set.
pub const MAX_OUTPUT_BYTES: usize = 1024 * 1024;

/// Terminals one session may have open at once.
pub const MAX_TERMINALS: usize = 32;

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

impl Exit {
    fn json(&self) -> Value {
        json!({"exitCode": self.code, "signal": self.signal})
    }
}

/// The end of a terminal's output, at most `limit` bytes.
#[derive(Debug, Default)]
struct Output {
    bytes: Vec<u8>,
    limit: usize,
    truncated: bool,
}

impl Output {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            let cut = self.bytes.len() - self.limit;
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }

    /// The kept output as text, starting at a character boundary.
    fn text(&self) -> String {
        let mut start = 0;
        // A cut may have split a UTF-8 sequence: skip its continuation bytes.
        while start < self.bytes.len() && start < 4 && (self.bytes[start] & 0xC0) == 0x80 {
            start += 1;
        }
        String::from_utf8_lossy(&self.bytes[start..]).into_owned()
    }
}

struct Terminal {
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<Exit>>,
    kill: Arc<Notify>,
}

/// A session's terminals.
#[derive(Default)]
pub struct Terminals {
    open: HashMap<String, Terminal>,
    next: u32,
}

impl std::fmt::Debug for Terminals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Terminals")
            .field("open", &self.open.len())
            .finish()
    }
}

impl Terminals {
    /// Starts `program` and returns its terminal id.
    pub async fn create(
        &mut self,
        program: Program,
        output_limit: usize,
    ) -> Result<String, RpcError> {
        if self.open.len() >= MAX_TERMINALS {
            return Err(RpcError::new(
                RpcError::INTERNAL,
                format!("at most {MAX_TERMINALS} terminals may be open at once; release one first"),
            ));
        }
        let mut process = Interactive::spawn(&program)
            .await
            .map_err(|e| RpcError::new(RpcError::INTERNAL, e.to_string()))?;
        self.next += 1;
        let id = format!("term-{}", self.next);
        let output = Arc::new(Mutex::new(Output {
            limit: output_limit.clamp(1, MAX_OUTPUT_BYTES),
            ..Output::default()
        }));
        let (exit_tx, exit) = watch::channel(None);
        let kill = Arc::new(Notify::new());
        // The command reads nothing: its stdin ends at once.
        drop(process.stdin.take());
        let (Some(mut stdout), Some(mut stderr)) = (process.stdout.take(), process.stderr.take())
        else {
            return Err(RpcError::new(
                RpcError::INTERNAL,
                "the command has no output pipes",
            ));
        };
        let out = Arc::clone(&output);
        let readers = async move {
            let mut a = [0u8; 8192];
            let mut b = [0u8; 8192];
            let (mut a_open, mut b_open) = (true, true);
            while a_open || b_open {
                tokio::select! {
                    n = stdout.read(&mut a), if a_open => match n {
                        Ok(n) if n > 0 => lock(&out).push(&a[..n]),
                        _ => a_open = false,
                    },
                    n = stderr.read(&mut b), if b_open => match n {
                        Ok(n) if n > 0 => lock(&out).push(&b[..n]),
                        _ => b_open = false,
                    },
                }
            }
        };
        let killed = Arc::clone(&kill);
        tokio::spawn(async move {
            let status = tokio::select! {
                status = async {
                    readers.await;
                    process.wait().await.ok()
                } => {
                    // Whatever the command left behind in its group goes too.
                    let _ = process.stop(Duration::ZERO).await;
                    status
                }
                () = killed.notified() => process.stop(Duration::from_millis(200)).await,
            };
            let exit = match status {
                Some(status) => {
                    use std::os::unix::process::ExitStatusExt as _;
                    Exit {
                        code: status.code(),
                        signal: status.signal().map(signal_name),
                    }
                }
                None => Exit {
                    code: None,
                    signal: Some("SIGKILL".to_string()),
                },
            };
            let _ = exit_tx.send(Some(exit));
        });
        self.open
            .insert(id.clone(), Terminal { output, exit, kill });
        Ok(id)
    }

    fn get(&self, id: &str) -> Result<&Terminal, RpcError> {
        self.open
            .get(id)
            .ok_or_else(|| RpcError::new(RpcError::NOT_FOUND, format!("no terminal `{id}`")))
    }

    /// `terminal/output`.
    pub fn output(&self, id: &str) -> Result<Value, RpcError> {
        let terminal = self.get(id)?;
        let output = lock(&terminal.output);
        let mut result = json!({"output": output.text(), "truncated": output.truncated});
        if let Some(exit) = terminal.exit.borrow().as_ref() {
            result["exitStatus"] = exit.json();
        }
        Ok(result)
    }

    /// A future for `terminal/wait_for_exit` (it holds no borrow of the
    /// terminals, so other requests are served meanwhile).
    pub fn waiter(
        &self,
        id: &str,
    ) -> Result<impl std::future::Future<Output = Value> + use<>, RpcError> {
        let mut exit = self.get(id)?.exit.clone();
        Ok(async move {
            let _ = exit.wait_for(Option::is_some).await;
            let value = exit.borrow().as_ref().map(Exit::json);
            value.unwrap_or_else(|| json!({"exitCode": null, "signal": "SIGKILL"}))
        })
    }

    /// `terminal/kill`: the terminal stays readable.
    pub fn kill(&self, id: &str) -> Result<Value, RpcError> {
        self.get(id)?.kill.notify_one();
        Ok(json!({}))
    }

    /// `terminal/release`: killed if still running, then forgotten.
    pub fn release(&mut self, id: &str) -> Result<Value, RpcError> {
        let terminal = self
            .open
            .remove(id)
            .ok_or_else(|| RpcError::new(RpcError::NOT_FOUND, format!("no terminal `{id}`")))?;
        terminal.kill.notify_one();
        Ok(json!({}))
    }

    /// Kills every terminal (the session is ending).
    pub fn kill_all(&mut self) {
        for (_, terminal) in self.open.drain() {
            terminal.kill.notify_one();
        }
    }
}

impl Drop for Terminals {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        9 => "SIGKILL".into(),
        15 => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}
