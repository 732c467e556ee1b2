//! `weft daemon start|stop|status`: manage the background daemon for
//! `WEFT_HOME`.

use std::time::{Duration, Instant};

use super::exit::{self, CliError, CliResult, EXIT_NOT_RUNNING, EXIT_OK};
use super::{DaemonAction, DaemonArgs};
use crate::ipc::client::{Client, ClientError};
use crate::ipc::protocol::DaemonStop;
use crate::store::Home;

/// How long `stop` waits for the daemon to exit (its runs checkpoint first).
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs one `weft daemon` action.
pub fn run(args: &DaemonArgs) -> CliResult {
    let home = super::home()?;
    super::block_on(async {
        match args.action {
            DaemonAction::Start => start(&home, args.json).await,
            DaemonAction::Stop => stop(&home, args.json).await,
            DaemonAction::Status => status(&home, args.json).await,
        }
    })
}

/// Connects to the daemon, starting it first when it is not running (and
/// saying so on stderr). Every command that goes through the daemon
/// connects here.
pub(crate) async fn connect(home: &Home) -> Result<Client, String> {
    match Client::connect(home).await {
        Ok(client) => Ok(client),
        Err(ClientError::DaemonNotRunning { .. }) => {
            let (info, _) = crate::server::detach::start_detached(home, &weftd_path()).await?;
            eprintln!(
                "started weftd (pid {}, socket {})",
                info.pid,
                info.socket_path.display()
            );
            Client::connect(home).await.map_err(|e| e.to_string())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// What the daemon said when it refused a request (its message without the
/// code), or why it could not be asked.
pub(crate) fn message(e: &ClientError) -> String {
    match e {
        ClientError::Rpc(rpc) => rpc.message.clone(),
        other => other.to_string(),
    }
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

async fn start(home: &Home, json: bool) -> CliResult {
    super::report::warn_about_settings(home);
    let (info, started) = crate::server::detach::start_detached(home, &weftd_path())
        .await
        .map_err(CliError::Usage)?;
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
    exit::code(EXIT_OK)
}

async fn stop(home: &Home, json: bool) -> CliResult {
    let Ok(client) = Client::connect(home).await else {
        if json {
            println!("{{\"stopped\":false,\"running\":false}}");
        } else {
            println!("weftd is not running");
        }
        return exit::code(EXIT_OK);
    };
    let stopping = client
        .call(DaemonStop {})
        .await
        .map_err(|e| CliError::Usage(e.to_string()))?;
    drop(client);
    // Wait for the daemon to exit (its runs are checkpointed first): it
    // holds its lock until its process is gone, whether or not anyone reaps
    // it, which a check of the pid cannot tell from a zombie.
    let paths = crate::ipc::paths::DaemonPaths::for_home(home);
    let deadline = Instant::now() + STOP_TIMEOUT;
    while !crate::server::lock_released(&paths) {
        if Instant::now() >= deadline {
            return Err(CliError::StillRunning(format!(
                "weftd (pid {}) was asked to stop but has not exited after {}; see {}",
                stopping.pid,
                crate::util::duration::setting(STOP_TIMEOUT),
                paths.log.display()
            )));
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
    exit::code(EXIT_OK)
}

async fn status(home: &Home, json: bool) -> CliResult {
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
            exit::code(EXIT_OK)
        }
        None => {
            if json {
                println!("{{\"running\":false}}");
            } else {
                println!("weftd is not running (start it with `weft daemon start`)");
            }
            exit::code(EXIT_NOT_RUNNING)
        }
    }
}
