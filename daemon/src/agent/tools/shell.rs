//! `shell` (agents/tools.mdx): one command through `bash -c` in the work
//! dir (in the run's container when it has one: [`crate::sandbox::run`]),
//! run the way a command stage's script is ([`crate::exec::process`]):
//! in a process group of its own that the reaper kills if weft dies,
//! stdin closed, the workspace's environment (secrets withheld) and no
//! other, the whole group killed on timeout or cancellation.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{ToolOutput, Workspace, optional_u64, required_str};
use crate::exec::process::{Language, ProcessResult, Script};

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Run a shell command with /bin/bash -c in the working directory (stdin is empty). Returns \
         the exit code, stdout and stderr. Default timeout 120 seconds, at most 600; on timeout \
         the command and everything it started are killed and the output so far is returned.",
        serde_json::json!({"type":"object","properties":{"command":{"type":"string","description":"The shell command to execute"},"timeout_ms":{"type":"integer","description":"Timeout in milliseconds"},"description":{"type":"string","description":"What the command does"}},"required":["command"]}),
    )
}

pub(super) async fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match execute(workspace, arguments).await {
        Ok(output) | Err(output) => output,
    }
}

async fn execute(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let command = required_str(arguments, "command")?;
    if command.trim().is_empty() {
        return Err(ToolOutput::error("the command is empty"));
    }
    let timeout = match optional_u64(arguments, "timeout_ms")? {
        Some(ms) => Duration::from_millis(ms.max(1)).min(workspace.shell_max_timeout),
        None => workspace
            .shell_default_timeout
            .min(workspace.shell_max_timeout),
    };
    let script = Script {
        language: Language::Shell,
        source: command.to_string(),
        work_dir: workspace.root().to_path_buf(),
        env: Vec::new(),
        base_env: Some(workspace.env.clone()),
        timeout,
        group_record: None,
    };
    let logs = Logs::new(workspace)
        .map_err(|e| ToolOutput::error(format!("cannot create the shell's log files: {e}")))?;
    let result = crate::sandbox::run::run_script(
        workspace.sandbox.as_deref(),
        &script,
        &workspace.cancel,
        &logs.stdout,
        &logs.stderr,
        |_, _| {},
    )
    .await;
    let output = match result {
        Ok(result) => report(&result, timeout, &logs),
        Err(e) => ToolOutput::error(format!("cannot run the command: {e}")),
    };
    logs.finish();
    Ok(output)
}

/// What the model reads: how the command ended, then its output.
fn report(result: &ProcessResult, timeout: Duration, logs: &Logs) -> ToolOutput {
    let mut out = String::new();
    let mut is_error = false;
    if let Some(reason) = &result.cancelled {
        is_error = true;
        let _ = writeln!(
            out,
            "Command cancelled ({reason}); it and everything it started were stopped."
        );
    } else if result.timed_out {
        is_error = true;
        let _ = writeln!(
            out,
            "Command timed out after {}; it and everything it started were killed. Output so far:",
            human(timeout)
        );
    } else if let (Some(code), Some(limit)) = (result.exit_code, &result.killed_by) {
        is_error = true;
        let _ = writeln!(out, "Exit code: {code} (killed by {limit})");
    } else if let Some(code) = result.exit_code {
        let _ = writeln!(out, "Exit code: {code}");
    } else if let Some(signal) = result.signal {
        let _ = writeln!(out, "Killed by signal {signal}");
    }
    for (name, text, total) in [
        ("stdout", &result.stdout, result.stdout_total),
        ("stderr", &result.stderr, result.stderr_total),
    ] {
        if text.is_empty() {
            continue;
        }
        let _ = writeln!(out, "--- {name} ---");
        let dropped = total.saturating_sub(text.len() as u64);
        if dropped > 0 {
            let kept = if logs.kept {
                format!("; all of it is in {}", logs.path(name).display())
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "[... the first {dropped} bytes of {total} were dropped{kept} ...]"
            );
        }
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    if result.stdout.is_empty() && result.stderr.is_empty() {
        out.push_str("(no output)\n");
    }
    ToolOutput {
        content: out,
        is_error,
        touched: Vec::new(),
    }
}

/// `d` as the model would write it: `2s`, `1500ms`.
fn human(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Where one call's full stdout and stderr go: the workspace's scratch dir
/// (kept, named after the call), else a temporary directory removed after
/// the call.
struct Logs {
    stdout: PathBuf,
    stderr: PathBuf,
    /// The files stay after the call.
    kept: bool,
    /// The temporary directory to remove.
    temporary: Option<PathBuf>,
}

impl Logs {
    fn new(workspace: &Workspace) -> std::io::Result<Logs> {
        let id = ulid::Ulid::generate().to_string().to_ascii_lowercase();
        let (dir, temporary) = match &workspace.scratch_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                let dir = std::env::temp_dir().join(format!("weft-shell-{id}"));
                (dir.clone(), Some(dir))
            }
        };
        std::fs::create_dir_all(&dir)?;
        Ok(Logs {
            stdout: dir.join(format!("shell-{id}.stdout.log")),
            stderr: dir.join(format!("shell-{id}.stderr.log")),
            kept: temporary.is_none(),
            temporary,
        })
    }

    fn path(&self, name: &str) -> &PathBuf {
        if name == "stdout" {
            &self.stdout
        } else {
            &self.stderr
        }
    }

    fn finish(self) {
        if let Some(dir) = self.temporary {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::cancel::{Cancel, CancelReason};
    use crate::os::process::is_alive;
    use serde_json::json;
    use std::path::Path;
    use std::time::Instant;

    /// A workspace whose shell sees `PATH` and `VISIBLE` only.
    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp");
        let mut ws = Workspace::new(dir.path(), &[], Cancel::new()).expect("workspace");
        ws.env = vec![
            (
                "PATH".into(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
            ),
            ("VISIBLE".into(), "yes".into()),
        ];
        (dir, ws)
    }

    async fn shell(ws: &Workspace, arguments: Value) -> ToolOutput {
        run(ws, &arguments).await
    }

    /// Waits (up to a generous bound, for a busy machine) until `pid` is gone.
    async fn gone(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if !is_alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    fn read_pid(path: &Path) -> u32 {
        std::fs::read_to_string(path)
            .expect("pid file")
            .trim()
            .parse()
            .expect("a pid")
    }

    #[tokio::test]
    async fn exit_code_stdout_and_stderr_are_reported() {
        let (dir, ws) = workspace();
        let out = shell(&ws, json!({"command": "pwd; echo oops >&2; exit 3"})).await;
        assert!(
            !out.is_error,
            "a failing command is a result: {}",
            out.content
        );
        let root = dir.path().canonicalize().expect("canonical");
        assert_eq!(
            out.content,
            format!(
                "Exit code: 3\n--- stdout ---\n{}\n--- stderr ---\noops\n",
                root.display()
            )
        );
        let out = shell(&ws, json!({"command": "true"})).await;
        assert_eq!(out.content, "Exit code: 0\n(no output)\n");
    }

    #[tokio::test]
    async fn stdin_is_empty() {
        let (_dir, ws) = workspace();
        let out = shell(&ws, json!({"command": "cat; echo done"})).await;
        assert_eq!(out.content, "Exit code: 0\n--- stdout ---\ndone\n");
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_group_and_keeps_the_output_so_far() {
        let (dir, ws) = workspace();
        let pid_file = dir.path().join("bg.pid");
        // Long enough for bash to start and print on a busy machine: the
        // output so far must hold what it printed before the timeout.
        let out = shell(
            &ws,
            json!({"command": "sleep 300 & echo $! > bg.pid; echo started; sleep 300", "timeout_ms": 2000}),
        )
        .await;
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content.starts_with("Command timed out after 2s")
                && out.content.contains("started"),
            "{}",
            out.content
        );
        assert!(
            gone(read_pid(&pid_file)).await,
            "the backgrounded sleep outlived the timeout"
        );
    }

    #[tokio::test]
    async fn timeouts_are_capped_at_the_workspace_maximum() {
        let (_dir, mut ws) = workspace();
        ws.shell_max_timeout = Duration::from_millis(200);
        let out = shell(
            &ws,
            json!({"command": "sleep 300", "timeout_ms": 9_000_000}),
        )
        .await;
        assert!(
            out.content.starts_with("Command timed out after 200ms"),
            "{}",
            out.content
        );
        ws.shell_default_timeout = Duration::from_millis(100);
        ws.shell_max_timeout = Duration::from_secs(600);
        let out = shell(&ws, json!({"command": "sleep 300"})).await;
        assert!(
            out.content.starts_with("Command timed out after 100ms"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn cancelling_stops_the_command_and_everything_it_started() {
        let (dir, ws) = workspace();
        let ws = std::sync::Arc::new(ws);
        let pid_file = dir.path().join("bg.pid");
        let running = {
            let ws = ws.clone();
            tokio::spawn(async move {
                run(&ws, &json!({"command": "sleep 300 & echo $! > bg.pid.tmp; mv bg.pid.tmp bg.pid; wait"}))
                    .await
            })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pid_file.exists() {
            assert!(Instant::now() < deadline, "the command never started");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let pid = read_pid(&pid_file);
        assert!(is_alive(pid));
        ws.cancel.cancel(CancelReason::User("stop".into()));
        let out = running.await.expect("joined");
        assert!(
            out.is_error && out.content.starts_with("Command cancelled (stop)"),
            "{}",
            out.content
        );
        assert!(
            gone(pid).await,
            "the backgrounded sleep outlived the cancel"
        );

        // Once cancelled, nothing more starts.
        let out = shell(&ws, json!({"command": "touch started"})).await;
        assert!(
            out.is_error && !dir.path().join("started").exists(),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn only_the_workspace_environment_is_visible() {
        let (_dir, ws) = workspace();
        assert!(
            std::env::vars().any(|(name, _)| name.starts_with("CARGO")),
            "the test process has variables to hide"
        );
        let out = shell(
            &ws,
            json!({"command": "env -0 | tr '\\0' '\\n' | cut -d= -f1 | sort"}),
        )
        .await;
        let names: Vec<&str> = out.content.lines().skip(2).collect();
        // Besides the workspace's, only what bash sets itself.
        assert_eq!(
            names,
            ["PATH", "PWD", "SHLVL", "VISIBLE", "_"],
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn huge_output_is_bounded_and_keeps_its_end() {
        let (dir, mut ws) = workspace();
        ws.scratch_dir = Some(dir.path().join("tools"));
        let out = shell(
            &ws,
            json!({"command": "head -c 5000000 /dev/zero | tr '\\0' x; echo END"}),
        )
        .await;
        assert!(
            out.content.len() < crate::exec::process::OUTPUT_TAIL + 1_000,
            "{}",
            out.content.len()
        );
        assert!(out.content.trim_end().ends_with("xEND"), "the end is kept");
        assert!(
            out.content.contains("were dropped; all of it is in"),
            "{}",
            &out.content[..300]
        );
        let logs: Vec<_> = std::fs::read_dir(dir.path().join("tools"))
            .expect("logs")
            .collect();
        assert_eq!(
            logs.len(),
            1,
            "the stdout log is kept in the scratch dir (stderr printed nothing)"
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_errors_the_model_can_read() {
        let (_dir, ws) = workspace();
        for (arguments, expected) in [
            (json!({}), "command"),
            (json!({"command": 42}), "command"),
            (json!({"command": "  "}), "empty"),
            (
                json!({"command": "true", "timeout_ms": "soon"}),
                "non-negative integer",
            ),
            (
                json!({"command": "true", "timeout_ms": -5}),
                "non-negative integer",
            ),
        ] {
            let out = shell(&ws, arguments.clone()).await;
            assert!(
                out.is_error && out.content.contains(expected),
                "{arguments}: {}",
                out.content
            );
        }
    }
}
