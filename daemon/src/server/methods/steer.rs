//! `run.steer`: queues a message for a running agent stage of a run this
//! daemon executes ([`crate::engine::steering`]).

use serde_json::Value;

use super::{Handler, Session};
use crate::engine::steering::SteerError;
use crate::ipc::protocol::{RpcError, RunSteer, SteerQueued};
use crate::model::{Code, RunStatus};

impl Handler for RunSteer {
    async fn handle(self, session: &mut Session) -> Result<SteerQueued, RpcError> {
        let daemon = &session.daemon;
        let record = daemon.store().find_run(&self.run)?;
        if !daemon.is_active(&record.id) {
            let why = if matches!(record.status, RunStatus::Running | RunStatus::Blocked) {
                format!(
                    "run {} is executed by another process{} (a `weft run --no-daemon` run?), \
                     not by weftd: only runs the daemon executes can be steered",
                    record.id,
                    record
                        .pid
                        .map(|p| format!(" (pid {p})"))
                        .unwrap_or_default()
                )
            } else {
                format!(
                    "run {} is {}: it has no agent stage running",
                    record.id,
                    record.status.as_str()
                )
            };
            return Err(RpcError::new(Code::AgentNotRunning, why)
                .with_detail("running", Value::Array(Vec::new())));
        }
        daemon
            .agents
            .steer(&record.id, self.node.as_deref(), &self.text)
            .map(|steered| SteerQueued {
                run_id: steered.run_id,
                node_id: steered.node_id,
                visit: steered.visit,
            })
            .map_err(|e| refusal(&e))
    }
}

/// The wire error for a message that could not be queued.
fn refusal(e: &SteerError) -> RpcError {
    let listed =
        |running: &[String]| Value::Array(running.iter().cloned().map(Value::String).collect());
    match e {
        SteerError::NoneRunning { .. } => {
            RpcError::new(Code::AgentNotRunning, e.to_string()).with_detail("running", listed(&[]))
        }
        SteerError::NotRunning { running, .. } => {
            RpcError::new(Code::AgentNotRunning, e.to_string())
                .with_detail("running", listed(running))
        }
        SteerError::Ambiguous { running, .. } => RpcError::new(Code::AgentAmbiguous, e.to_string())
            .with_detail("running", listed(running)),
        SteerError::Empty | SteerError::TooLong(_) | SteerError::TooMany { .. } => {
            RpcError::invalid_params(e.to_string())
        }
    }
}
