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
        // The registry holds this daemon's agents, those of child runs of
        // sub-workflow stages included.
        match daemon
            .agents
            .steer(&record.id, self.node.as_deref(), &self.text)
        {
            Ok(steered) => Ok(SteerQueued {
                run_id: steered.run_id,
                node_id: steered.node_id,
                visit: steered.visit,
            }),
            Err(SteerError::NoneRunning { .. }) if elsewhere(daemon, &record) => {
                Err(RpcError::new(
                    Code::AgentNotRunning,
                    format!(
                        "run {} is executed by another process{} (a `weft run --no-daemon` \
                         run?), not by weftd: only runs the daemon executes can be steered",
                        record.id,
                        record
                            .pid
                            .map(|p| format!(" (pid {p})"))
                            .unwrap_or_default()
                    ),
                )
                .with_detail("running", Value::Array(Vec::new())))
            }
            Err(SteerError::NoneRunning { .. })
                if !matches!(record.status, RunStatus::Running | RunStatus::Blocked) =>
            {
                Err(RpcError::new(
                    Code::AgentNotRunning,
                    format!(
                        "run {} is {}: it has no agent stage running",
                        record.id,
                        record.status.as_str()
                    ),
                )
                .with_detail("running", Value::Array(Vec::new())))
            }
            Err(e) => Err(refusal(&e)),
        }
    }
}

/// Whether `record` is a top-level run that is running, but not in this
/// daemon (a `--no-daemon` run).
fn elsewhere(daemon: &crate::server::Daemon, record: &crate::store::RunRecord) -> bool {
    let child = record.options.get("parent").is_some_and(|p| !p.is_null());
    matches!(record.status, RunStatus::Running | RunStatus::Blocked)
        && !child
        && !daemon.is_active(&record.id)
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
