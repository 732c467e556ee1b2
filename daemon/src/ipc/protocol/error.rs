//! Errors on the wire: the numeric JSON-RPC codes ([`code`]), the `error`
//! member of a response ([`RpcError`]) with Weft's stable string code in
//! `data.code` ([`Code`]), and which number each code travels with.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::Code;
use crate::store::StoreError;

/// Numeric error codes. The JSON-RPC ones (-32700..-32603) are for protocol
/// problems; Weft's own live in the range JSON-RPC reserves for
/// implementation-defined server errors (-32000..-32099). Clients match on
/// the string code in `error.data.code`; the number only groups them.
pub mod code {
    /// Not JSON, or not UTF-8.
    pub(crate) const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC 2.0 request (or longer than the line limit).
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// A bug or an unexpected failure in the daemon.
    pub(crate) const INTERNAL_ERROR: i64 = -32603;
    /// The named run, question, stage or subscription does not exist.
    pub const NOT_FOUND: i64 = -32001;
    /// A run id prefix matches several runs.
    pub(crate) const AMBIGUOUS: i64 = -32002;
    /// The thing exists but is in the wrong state (resuming a finished run,
    /// answering a timed-out question, reusing a subscription id).
    pub(crate) const INVALID_STATE: i64 = -32003;
    /// The workflow cannot run: invalid, unreadable or misconfigured.
    pub const WORKFLOW: i64 = -32004;
    /// The run store failed (database or disk).
    pub(crate) const STORE: i64 = -32005;
    /// The daemon is shutting down and takes no new work.
    pub(crate) const SHUTTING_DOWN: i64 = -32006;
}

/// The number a code travels with: each code belongs to one group, so the
/// number never disagrees with the code (docs/protocol.md, "Errors").
#[must_use]
pub(crate) fn number_of(data_code: Code) -> i64 {
    match data_code {
        Code::RpcParseError => code::PARSE_ERROR,
        Code::RpcInvalidRequest | Code::RpcTooLong => code::INVALID_REQUEST,
        Code::RpcMethodNotFound => code::METHOD_NOT_FOUND,
        Code::RpcInvalidParams | Code::ArtifactInvalidPath | Code::QuestionNoSuchOption => {
            code::INVALID_PARAMS
        }
        Code::RunNotFound
        | Code::StageNotFound
        | Code::QuestionNotFound
        | Code::CheckpointNotFound
        | Code::ArtifactNotFound => code::NOT_FOUND,
        Code::RunAmbiguous => code::AMBIGUOUS,
        Code::RunNotResumable
        | Code::RunNotCancellable
        | Code::RunNotForkable
        | Code::QuestionClosed
        | Code::QuestionNotWaiting
        | Code::SubscriptionExists
        | Code::SubscriptionLimit
        | Code::AgentNotRunning
        | Code::AgentAmbiguous
        // A run or checkout that cannot take the run's result as it is;
        // `apply.failed` too: a run directory or repository that cannot be
        // read is a state of theirs, not a bug of the daemon's.
        | Code::ApplyNotCheckpointed
        | Code::ApplyRunNotEnded
        | Code::ApplyNeedsForce
        | Code::ApplyDirty
        | Code::ApplyConflicts
        | Code::ApplyPatchDoesNotApply
        | Code::ApplyNoTarget
        | Code::ApplyFailed => code::INVALID_STATE,
        Code::WorkflowInvalid
        | Code::WorkflowIo
        | Code::RunConfig
        | Code::ArtifactInvalidPattern => code::WORKFLOW,
        Code::StoreSqlite
        | Code::StoreIo
        | Code::StoreJson
        | Code::StoreSchemaTooNew
        | Code::StoreSchemaTooOld
        | Code::StoreWalMissing
        | Code::StoreNoHome
        | Code::BlobMissing => code::STORE,
        Code::DaemonShuttingDown => code::SHUTTING_DOWN,
        // Never sent by the daemon: the client's and the app's own, and
        // `rpc.error`, which stands for a number Weft does not define.
        Code::RpcInternal
        | Code::RpcError
        | Code::SpendingInvalidSince
        | Code::RunNoWorkflowPath
        | Code::LlmConfig
        | Code::DaemonNotRunning
        | Code::DaemonConnect
        | Code::DaemonStartFailed
        | Code::IpcProtocol
        | Code::IpcRequest
        | Code::IpcDisconnected
        | Code::AppInternal
        | Code::AppRevealFailed
        | Code::AppError => code::INTERNAL_ERROR,
    }
}

/// The `error` member of a response: a JSON-RPC code, a human message and
/// Weft's stable machine-readable code in `data.code` (`run.not_found`, ...).
///
/// Clients match on [`RpcError::data_code`], never on the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<ErrorData>,
}

/// The `data` member of an error: the stable code plus details that depend
/// on it (`matches` for `run.ambiguous`, `diagnostics` for
/// `workflow.invalid`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorData {
    pub code: String,
    #[serde(flatten, default)]
    pub details: Map<String, Value>,
}

impl RpcError {
    /// An error with stable code `data_code` (and the number it travels
    /// with, [`number_of`]) and `message`.
    #[must_use]
    pub fn new(data_code: Code, message: impl Into<String>) -> RpcError {
        RpcError {
            code: number_of(data_code),
            message: message.into(),
            data: Some(ErrorData {
                code: data_code.as_str().to_string(),
                details: Map::new(),
            }),
        }
    }

    /// Whether this error's stable code is `data_code`.
    #[must_use]
    pub fn is(&self, data_code: Code) -> bool {
        self.data_code() == data_code.as_str()
    }

    /// Adds a detail to `data` (a no-op on an error without data).
    #[must_use]
    pub(crate) fn with_detail(mut self, key: impl Into<String>, value: Value) -> RpcError {
        if let Some(data) = &mut self.data {
            data.details.insert(key.into(), value);
        }
        self
    }

    /// The stable code: `data.code`, or for an error from a peer that sent
    /// none, one derived from the numeric code (`rpc.parse_error`, ...,
    /// `rpc.error` for numbers Weft does not define).
    #[must_use]
    pub fn data_code(&self) -> &str {
        match &self.data {
            Some(data) => &data.code,
            None => match self.code {
                code::PARSE_ERROR => Code::RpcParseError.as_str(),
                code::INVALID_REQUEST => Code::RpcInvalidRequest.as_str(),
                code::METHOD_NOT_FOUND => Code::RpcMethodNotFound.as_str(),
                code::INVALID_PARAMS => Code::RpcInvalidParams.as_str(),
                code::INTERNAL_ERROR => Code::RpcInternal.as_str(),
                _ => Code::RpcError.as_str(),
            },
        }
    }

    /// `-32700 rpc.parse_error`: the line is not JSON (or not UTF-8).
    #[must_use]
    pub fn parse_error(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::RpcParseError, message)
    }

    /// `-32600 rpc.invalid_request`: JSON, but not a JSON-RPC request.
    #[must_use]
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::RpcInvalidRequest, message)
    }

    /// `-32600 rpc.too_long`: the line exceeded the limit and was discarded.
    #[must_use]
    pub fn too_long(limit: usize) -> RpcError {
        RpcError::new(
            Code::RpcTooLong,
            format!("the message exceeds the {limit}-byte limit and was discarded"),
        )
        .with_detail("limit", Value::from(limit))
    }

    /// `-32602 rpc.invalid_params`.
    #[must_use]
    pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::RpcInvalidParams, message)
    }

    /// `-32603 rpc.internal`.
    #[must_use]
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(Code::RpcInternal, message)
    }

    /// `-32006 daemon.shutting_down`.
    #[must_use]
    pub(crate) fn shutting_down() -> RpcError {
        RpcError::new(
            Code::DaemonShuttingDown,
            "the daemon is shutting down; start it again with `weft daemon start`",
        )
    }
}

impl From<&StoreError> for RpcError {
    /// Keeps the store's code (`run.not_found`, `store.sqlite`, ...) and
    /// message; `run.ambiguous` carries the matching ids in `matches`.
    fn from(e: &StoreError) -> RpcError {
        let error = RpcError::new(e.code(), e.to_string());
        match e {
            StoreError::AmbiguousRun { matches, .. } => {
                error.with_detail("matches", Value::from(matches.clone()))
            }
            _ => error,
        }
    }
}

impl From<StoreError> for RpcError {
    fn from(e: StoreError) -> RpcError {
        RpcError::from(&e)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn errors_from_a_peer_without_data_still_have_a_stable_code() {
        let error: RpcError =
            serde_json::from_value(json!({"code": -32601, "message": "nope"})).expect("reads");
        assert_eq!(error.data_code(), "rpc.method_not_found");
        let error: RpcError =
            serde_json::from_value(json!({"code": 17, "message": "custom"})).expect("reads");
        assert_eq!(error.data_code(), "rpc.error");
    }

    #[test]
    fn store_errors_keep_their_codes_and_details() {
        let ambiguous = RpcError::from(StoreError::AmbiguousRun {
            prefix: "01".into(),
            matches: vec!["01A".into(), "01B".into()],
        });
        assert_eq!(ambiguous.code, code::AMBIGUOUS);
        assert_eq!(ambiguous.data_code(), "run.ambiguous");
        let details = &ambiguous.data.as_ref().expect("data").details;
        assert_eq!(
            details["matches"],
            json!(["01A", "01B"]),
            "the UI can offer the choices"
        );
    }
}
