//! `weft daemon start|stop|status`: manage the background daemon for
//! `WEFT_HOME`.

use std::time::{Duration, Instant};

use super::{DaemonAction, DaemonArgs, EXIT_OK, EXIT_USAGE};
use crate::ipc::client::Client;
use crate::ipc::protocol::DaemonStop;
use crate::store::Home;

/// Exit code: `status` found no daemon.
pub const EXIT_NOT_RUNNING: u8 = 3;

/// Exit code: `stop` asked, but the daemon had not exited in time.
pub const EXIT_STILL_RUNNING: u8 = 1;

/// How long `stop` waits for the daemon to exit (its runs checkpoint first).
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs one `weft daemon` action.
pub fn run(args: &DaemonArgs) -> u8 {
    let home = match super::home() {
        Ok(h) => h,
        Err(code) => return code,
    };
    super::with_runtime(|| async {
        match args.action {
            DaemonAction::Start => start(&home, args.json).await,
            DaemonAction::Stop => stop(&home, args.json).await,
            DaemonAction::Status => status(&home, args.json).await,
        }
    })
}

/// The `weftd` binary next to this `weft`.
pub fn weftd_path() -> std::path::PathBuf {
    let name = format!("weftd{}", std::env::consts::EXE_SUFFIX);
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| name.into())
}

async fn start(home: &Home, json: bool) -> u8 {
    super::report::warn_about_settings(home);
    match crate::server::detach::start_detached(home, &weftd_path()).await {
        Ok((info, started)) => {
            if json {
                println!("{}", serde_json::to_string(&info).unwrap_or_default());
            } else {
                let verb = if started {
                    "started"
                } else {
                    "is already running"
                };
                println!(
                    "weftd {verb} (pid {}, socket {})",
                    info.pid,
                    info.socket_path.display()
                );
            }
            EXIT_OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
    }
}

async fn stop(home: &Home, json: bool) -> u8 {
    let Ok(client) = Client::connect(home).await else {
        if json {
            println!("{{\"stopped\":false,\"running\":false}}");
        } else {
            println!("weftd is not running");
        }
        return EXIT_OK;
    };
    let stopping = match client.call(DaemonStop {}).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    drop(client);
    // Wait for the daemon to exit (its runs are checkpointed first): it
    // holds its lock until its process is gone, whether or not anyone reaps
    // it, which a check of the pid cannot tell from a zombie.
    let paths = crate::ipc::paths::DaemonPaths::for_home(home);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while !crate::server::lock_released(&paths) {
        if Instant::now() >= deadline {
            eprintln!(
                "error: weftd (pid {}) was asked to stop but has not exited after {}s; see {}",
                stopping.pid,
                STOP_TIMEOUT.as_secs(),
                paths.log.display()
            );
            return EXIT_STILL_RUNNING;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if json {
        println!(
            "{{\"stopped\":true,\"pid\":{},\"runs_interrupted\":{}}}",
            stopping.pid, stopping.runs_interrupted
        );
    } else {
        println!(
            "weftd stopped (pid {}; {} interrupted, resumed at its next start)",
            stopping.pid,
            super::report::count(stopping.runs_interrupted, "run", "runs")
        );
    }
    EXIT_OK
}

async fn status(home: &Home, json: bool) -> u8 {
    match crate::server::detach::status(home).await {
        Some(info) => {
            if json {
                println!("{}", serde_json::to_string(&info).unwrap_or_default());
            } else {
                println!(
                    "weftd {} running (pid {}, up {}s): {} running, {} queued\n  socket: {}\n  database: {}",
                    info.version,
                    info.pid,
                    info.uptime_ms / 1000,
                    super::report::count(info.runs_running, "run", "runs"),
                    info.runs_queued,
                    info.socket_path.display(),
                    info.db_path.display()
                );
            }
            EXIT_OK
        }
        None => {
            if json {
                println!("{{\"running\":false}}");
            } else {
                println!("weftd is not running (start it with `weft daemon start`)");
            }
            EXIT_NOT_RUNNING
        }
    }
}
