//! `daemon.status`, `daemon.stop` and `notifications.pause`.

use std::sync::atomic::Ordering;

use super::{Handler, Session};
use crate::ipc::protocol::{
    DaemonInfo, DaemonStatus, DaemonStop, DaemonStopping, NotificationsPause, NotificationsState,
    PROTOCOL_VERSION, RpcError,
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
            notifications_paused: Some(daemon.notifications_paused.load(Ordering::Relaxed)),
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

impl Handler for NotificationsPause {
    /// Pauses or resumes desktop notifications; either way, reports the
    /// state.
    async fn handle(self, session: &mut Session) -> Result<NotificationsState, RpcError> {
        let paused = &session.daemon.notifications_paused;
        if let Some(pause) = self.paused {
            paused.store(pause, Ordering::Relaxed);
        }
        Ok(NotificationsState {
            paused: paused.load(Ordering::Relaxed),
        })
    }
}
