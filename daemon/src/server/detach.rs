//! Starting the daemon in the background and waiting until it answers.

use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::ipc::client::Client;
use crate::ipc::paths::DaemonPaths;
use crate::ipc::protocol::{DaemonInfo, DaemonStatus};
use crate::store::Home;

/// How long a starting daemon may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// Starts `weftd --foreground` for `home` as a background process (its own
/// process group, output appended to `run/weftd.log`) and waits until it
/// answers `daemon.status`. A daemon already running is reused.
pub async fn start_detached(home: &Home, weftd: &Path) -> Result<(DaemonInfo, bool), String> {
    if let Some(info) = status(home).await {
        return Ok((info, false));
    }
    let paths = DaemonPaths::for_home(home);
    paths.ensure().map_err(|e| e.to_string())?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(crate::store::PRIVATE_FILE_MODE)
        .open(&paths.log)
        .map_err(|e| format!("cannot open {}: {e}", paths.log.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|e| format!("cannot open {}: {e}", paths.log.display()))?;
    // No secrets in the daemon's environment, where its commands could read
    // them (/proc/PID/environ): each run brings its caller's keys, which
    // the daemon holds in memory only.
    let mut child = Command::new(weftd)
        .arg("--foreground")
        .env_clear()
        .envs(crate::secrets::scrubbed_env())
        .env("WEFT_HOME", home.root())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        // Its own process group: a Ctrl-C in the caller's terminal does
        // not reach the daemon.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", weftd.display()))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(info) = status(home).await {
            reap(child);
            return Ok((info, true));
        }
        // Our weftd may have exited because another client started one at
        // the same moment (it lost the lock): wait for that one to answer.
        if let Ok(Some(exit)) = child.try_wait() {
            // The end of the log is what says why; the log may be long.
            let tail = crate::limits::read_tail(&paths.log, 64 * 1024)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            let last: Vec<&str> = tail.lines().rev().take(5).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            let lost_the_race = last.iter().any(|l| l.contains("already running"));
            if lost_the_race && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
            return Err(format!(
                "weftd exited ({exit}) before it answered; its log says:\n{}",
                last.join("\n")
            ));
        }
        if Instant::now() > deadline {
            reap(child);
            return Err(format!(
                "weftd did not answer within {}s; see {}",
                START_TIMEOUT.as_secs(),
                paths.log.display()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for the daemon we started on a thread of its own, so that when it
/// exits while this process still runs (a `weft run` following its run, the
/// desktop app) it is reaped at once rather than left a zombie, which would
/// pass for a live daemon holding its runs.
fn reap(mut child: std::process::Child) {
    std::thread::spawn(move || {
        let _ = child.wait();
    });
}

/// The daemon's status, or `None` when none answers.
pub async fn status(home: &Home) -> Option<DaemonInfo> {
    let client = Client::connect(home).await.ok()?;
    client.call(DaemonStatus {}).await.ok()
}
