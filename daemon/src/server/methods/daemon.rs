//! `daemon.status` and `daemon.stop`.

use super::{Handler, Session};
use crate::ipc::protocol::{
    DaemonInfo, DaemonStatus, DaemonStop, DaemonStopping, PROTOCOL_VERSION, RpcError,
};

impl Handler for DaemonStatus {
    async fn handle(self, session: &mut Session) -> Result<DaemonInfo, RpcError> {
        let daemon = &session.daemon;
        let (running, queued) = daemon.load();
        Ok(DaemonInfo {
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol: PROTOCOL_VERSION,
            pid: std::process::id(),
            uptime_ms: u64::try_from(daemon.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            runs_running: running,
            runs_queued: queued,
            home: daemon.home.root().to_path_buf(),
            db_path: daemon.home.db_path(),
            socket_path: daemon.paths.socket.clone(),
        })
    }
}

impl Handler for DaemonStop {
    /// Asks the daemon to shut down; the reply is queued before it does.
    async fn handle(self, session: &mut Session) -> Result<DaemonStopping, RpcError> {
        let (running, _) = session.daemon.load();
        session.daemon.stop_requested.notify_one();
        Ok(DaemonStopping {
            pid: std::process::id(),
            runs_interrupted: running,
        })
    }
}
