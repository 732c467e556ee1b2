//! Between the wire and the engine: a `run.start` request becomes the
//! engine's [`RunRequest`], and an [`EngineError`] becomes the wire's
//! [`RpcError`], keeping its stable code. Neither side knows the other;
//! the daemon, which speaks both, translates.

use std::path::Path;

use serde_json::Value;

use crate::engine::{EngineError, RunRequest};
use crate::ipc::protocol::{RpcError, RunStart, WorkflowSource};
use crate::model::Code;

/// The engine request this asks for, reading the workflow file when it
/// is given by path. (`env` is not part of [`RunRequest`]; the daemon
/// passes it on separately.)
///
/// Errors: `rpc.invalid_params` for a relative path, `workflow.io` when
/// the file cannot be read, is not a regular file or is larger than
/// [`crate::limits::MAX_WORKFLOW_BYTES`].
///
/// Reads a file: call it off the daemon's event loop.
pub(crate) fn run_request(start: &RunStart) -> Result<RunRequest, RpcError> {
    require_absolute("work_dir", &start.work_dir)?;
    if let Some(base) = &start.base_dir {
        require_absolute("base_dir", base)?;
    }
    let (workflow_path, source) = match &start.workflow {
        WorkflowSource::Path(path) => {
            require_absolute("workflow.path", path)?;
            // A FIFO here would block the daemon, /dev/zero fill it.
            let source = crate::limits::read_text_capped(path, crate::limits::MAX_WORKFLOW_BYTES)
                .map_err(|e| {
                RpcError::new(
                    Code::WorkflowIo,
                    format!("cannot read the workflow {}: {e}", path.display()),
                )
            })?;
            (Some(path.clone()), source)
        }
        WorkflowSource::Source(text) => (None, text.clone()),
    };
    Ok(RunRequest {
        workflow_path,
        source,
        goal: start.goal.clone(),
        inputs: start.inputs.clone(),
        dry_run: start.dry_run,
        auto_approve: start.auto_approve,
        seed: start.seed,
        work_dir: start.work_dir.clone(),
        labels: start.labels.clone(),
        base_dir: start.base_dir.clone(),
        artifacts: start.artifacts.clone(),
        model: start.model.clone(),
        env_policy: start.env_policy.clone(),
        agent: start.agent.clone(),
        budget: start.budget,
        no_checkpoint: start.no_checkpoint,
        include_dirty: start.include_dirty,
        retro: start.retro,
        sandbox: start.sandbox.clone(),
        ..RunRequest::default()
    })
}

fn require_absolute(what: &str, path: &Path) -> Result<(), RpcError> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(RpcError::invalid_params(format!(
            "`{what}` must be an absolute path, not `{}`",
            path.display()
        )))
    }
}

impl From<&EngineError> for RpcError {
    /// Keeps the engine's code; `workflow.invalid` carries the diagnostics
    /// (rule, severity, message, span, hint) in `diagnostics`.
    fn from(e: &EngineError) -> RpcError {
        match e {
            EngineError::Store(store) => RpcError::from(store),
            EngineError::InvalidWorkflow(diagnostics) => RpcError::new(e.code(), e.to_string())
                .with_detail(
                    "diagnostics",
                    serde_json::to_value(diagnostics).unwrap_or(Value::Null),
                ),
            EngineError::NotResumable(_) | EngineError::Io(_) | EngineError::Config(_) => {
                RpcError::new(e.code(), e.to_string())
            }
        }
    }
}

impl From<EngineError> for RpcError {
    fn from(e: EngineError) -> RpcError {
        RpcError::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipc::protocol::code;

    #[test]
    fn run_start_refuses_a_fifo_or_a_device_as_the_workflow_without_blocking() {
        // Before, reading a FIFO path waited for a writer on the daemon's one
        // thread, and /dev/zero was read until memory ran out.
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("flow.fabro");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .expect("mkfifo");
        for (path, kind) in [
            (fifo, "a FIFO"),
            (std::path::PathBuf::from("/dev/zero"), "a character device"),
        ] {
            let start = RunStart::new(WorkflowSource::Path(path), dir.path());
            let error = run_request(&start).expect_err("refused");
            assert_eq!(error.data_code(), "workflow.io");
            assert!(
                error
                    .message
                    .contains(&format!("it is not a regular file (it is {kind})")),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn run_start_becomes_an_engine_request_reading_the_workflow_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("flow.fabro");
        std::fs::write(&file, "digraph flow { start -> exit }").expect("write");
        let mut start = RunStart::new(WorkflowSource::Path(file.clone()), dir.path());
        start.goal = Some("g".into());
        start.seed = Some(3);
        let request = run_request(&start).expect("valid");
        assert_eq!(request.workflow_path.as_deref(), Some(file.as_path()));
        assert_eq!(request.source, "digraph flow { start -> exit }");
        assert_eq!(request.work_dir, dir.path());
        assert_eq!(request.goal.as_deref(), Some("g"));
        assert_eq!(request.seed, Some(3));

        let missing = RunStart::new(
            WorkflowSource::Path(dir.path().join("gone.fabro")),
            dir.path(),
        );
        let error = run_request(&missing).expect_err("no such file");
        assert_eq!(error.data_code(), "workflow.io");

        let relative = RunStart::new(WorkflowSource::Source("digraph {}".into()), "work");
        let error = run_request(&relative).expect_err("relative work dir");
        assert_eq!(
            error.code,
            code::INVALID_PARAMS,
            "the daemon's cwd is not the caller's, so relative paths are refused"
        );
    }

    #[test]
    fn engine_errors_keep_their_code_on_the_wire() {
        let not_resumable = RpcError::from(EngineError::from(
            crate::engine::launch::NotResumable::NoStartNode,
        ));
        assert_eq!(not_resumable.code, code::INVALID_STATE);
        assert_eq!(not_resumable.data_code(), "run.not_resumable");

        let invalid = RpcError::from(EngineError::InvalidWorkflow(vec![
            crate::lang::diagnostic::Diagnostic::new(
                "start_node",
                crate::lang::diagnostic::Severity::Error,
                "no start node",
            ),
        ]));
        assert_eq!(invalid.code, code::WORKFLOW);
        assert_eq!(invalid.data_code(), "workflow.invalid");
        let details = &invalid.data.as_ref().expect("data").details;
        assert_eq!(details["diagnostics"][0]["rule"], "start_node");
    }
}
