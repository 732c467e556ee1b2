//! `run.apply`: brings a checkpointed run's result into the user's
//! checkout ([`crate::engine::apply`], the rules `weft apply` follows too).
//! The git work runs on the blocking pool, so other clients are not kept
//! waiting while a large merge is computed.

use serde_json::Value;

use super::{Handler, Session};
use crate::engine::apply::{ApplyOptions, RunApplied, apply_run};
use crate::ipc::protocol::{RpcError, RunApply};

impl Handler for RunApply {
    async fn handle(self, session: &mut Session) -> Result<RunApplied, RpcError> {
        let record = session.daemon.store().find_run(&self.run)?;
        let options = ApplyOptions {
            to: self.to,
            patch: self.patch,
            force: self.force,
        };
        tokio::task::spawn_blocking(move || apply_run(&record, &options))
            .await
            .map_err(|e| RpcError::internal(format!("applying the run failed: {e}")))?
            .map_err(|e| {
                let paths = e.paths().iter().cloned().map(Value::String).collect();
                RpcError::new(e.code(), e.message).with_detail("paths", Value::Array(paths))
            })
    }
}
