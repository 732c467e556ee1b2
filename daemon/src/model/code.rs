//! Every error code a client may branch on: the daemon's (`error.data.code`
//! in a reply), the client's for failures that never reach the daemon, and
//! the desktop app's. One enum, exported to TypeScript (ts-rs), so the CLI
//! and the UI match on a type, never on a hand-written string; the wire
//! carries the same dotted strings as always (`run.not_found`).
//!
//! It lives at the bottom layer because the store, the engine, the daemon
//! and the app all produce codes. A code, once published, keeps its text:
//! clients in the field match on it.

use serde::{Deserialize, Serialize};

/// Declares [`Code`] with its wire text once per code: the serde names,
/// [`Code::as_str`], [`Code::parse`] and [`Code::ALL`] all come from it.
macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $text:literal, )*) => {
        /// A stable, machine-readable error code (see the module docs).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
        pub enum Code {
            $( $(#[$doc])* #[serde(rename = $text)] $variant, )*
        }

        impl Code {
            /// Every code, in declaration order.
            pub const ALL: &'static [Code] = &[$(Code::$variant),*];

            /// The code as it travels (`run.not_found`).
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( Code::$variant => $text, )*
                }
            }

            /// The code with this text; `None` for a code this build does
            /// not know (a newer peer's).
            #[must_use]
            pub fn parse(text: &str) -> Option<Code> {
                match text {
                    $( $text => Some(Code::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

codes! {
    // ----- the protocol itself (JSON-RPC) -----
    /// A line that is not JSON (or not UTF-8).
    RpcParseError = "rpc.parse_error",
    /// JSON, but not a JSON-RPC 2.0 request.
    RpcInvalidRequest = "rpc.invalid_request",
    /// A line over the message limit (discarded).
    RpcTooLong = "rpc.too_long",
    RpcMethodNotFound = "rpc.method_not_found",
    /// Params that do not fit the method.
    RpcInvalidParams = "rpc.invalid_params",
    /// A bug or an unexpected failure in the daemon.
    RpcInternal = "rpc.internal",
    /// An error from a peer with a numeric code Weft does not define and no
    /// string code.
    RpcError = "rpc.error",

    // ----- runs -----
    RunNotFound = "run.not_found",
    /// A run id prefix that matches several runs (`data.matches`).
    RunAmbiguous = "run.ambiguous",
    /// A run that ended, or that a live process still executes.
    RunNotResumable = "run.not_resumable",
    /// A run that is not queued or running.
    RunNotCancellable = "run.not_cancellable",
    /// A run that cannot be forked or rewound now: a live process runs it,
    /// or (rewind) it has not ended or is archived.
    RunNotForkable = "run.not_forkable",
    /// A fork or rewind target (`node`, `node@visit`, `@N`) that is not on
    /// the run's timeline.
    CheckpointNotFound = "checkpoint.not_found",
    /// A run's configuration (run.toml, settings) cannot be used.
    RunConfig = "run.config",
    /// settings.toml's language-model part (providers, models) cannot be
    /// read (the app's model list).
    LlmConfig = "llm.config",
    /// A run without a workflow file to start again (the app).
    RunNoWorkflowPath = "run.no_workflow_path",
    StageNotFound = "stage.not_found",

    // ----- applying a run's result to the user's checkout (`run.apply`) -----
    /// The run has no run branch (no repository, or `--no-checkpoint`).
    ApplyNotCheckpointed = "apply.not_checkpointed",
    /// The run is queued, running or waiting at a gate.
    ApplyRunNotEnded = "apply.run_not_ended",
    /// The run failed, was cancelled or interrupted: `force` applies it.
    ApplyNeedsForce = "apply.needs_force",
    /// The checkout has uncommitted changes (`data.paths`, the first few).
    ApplyDirty = "apply.dirty",
    /// Merging conflicts (`data.paths`, the first few); nothing changed.
    ApplyConflicts = "apply.conflicts",
    /// final.patch does not apply to the working tree (or cannot be read).
    ApplyPatchDoesNotApply = "apply.patch_does_not_apply",
    /// No branch to apply to: HEAD detached, a Weft branch or a missing one
    /// named, the branch checked out in another worktree, the run branch
    /// gone, or a merge/rebase under way.
    ApplyNoTarget = "apply.no_target",
    /// The run directory or the repository could not be read or written.
    ApplyFailed = "apply.failed",

    // ----- workflows -----
    /// A workflow with errors (`data.diagnostics`).
    WorkflowInvalid = "workflow.invalid",
    /// A workflow file that cannot be read.
    WorkflowIo = "workflow.io",

    // ----- questions (human gates) -----
    QuestionNotFound = "question.not_found",
    /// Answered otherwise, timed out or closed unanswered (`data.question`).
    QuestionClosed = "question.closed",
    /// A pending question whose run is not in the daemon.
    QuestionNotWaiting = "question.not_waiting",
    /// An answer that names none of the options.
    QuestionNoSuchOption = "question.no_such_option",

    // ----- agents -----
    /// No agent stage of the run is running now, or not the one named
    /// (`data.running` lists those that are).
    AgentNotRunning = "agent.not_running",
    /// Several agent stages of the run are running and none was named
    /// (`data.running`).
    AgentAmbiguous = "agent.ambiguous",

    // ----- subscriptions -----
    /// A subscription id already live on the connection.
    SubscriptionExists = "subscription.exists",
    /// The connection holds the most subscriptions it may.
    SubscriptionLimit = "subscription.limit",

    // ----- artifacts and blobs -----
    ArtifactNotFound = "artifact.not_found",
    /// An artifact path outside the run's artifacts.
    ArtifactInvalidPath = "artifact.invalid_path",
    /// An artifact pattern that cannot be used.
    ArtifactInvalidPattern = "artifact.invalid_pattern",
    /// A recorded blob missing from the blob store.
    BlobMissing = "blob.missing",

    // ----- spending -----
    /// A spending window start (`--since`) that cannot be read.
    SpendingInvalidSince = "spending.invalid_since",

    // ----- the run store -----
    StoreSqlite = "store.sqlite",
    StoreIo = "store.io",
    StoreJson = "store.json",
    /// A database written by a newer Weft.
    StoreSchemaTooNew = "store.schema_too_new",
    /// A database too old to upgrade.
    StoreSchemaTooOld = "store.schema_too_old",
    /// A database whose write-ahead log went missing.
    StoreWalMissing = "store.wal_missing",
    /// No home directory to keep the store in.
    StoreNoHome = "store.no_home",

    // ----- the daemon, as its clients see it -----
    /// The daemon takes no new work.
    DaemonShuttingDown = "daemon.shutting_down",
    /// Nothing listens on the socket: start the daemon.
    DaemonNotRunning = "daemon.not_running",
    /// The socket exists but cannot be connected to.
    DaemonConnect = "daemon.connect",
    /// The app could not start the daemon.
    DaemonStartFailed = "daemon.start_failed",
    /// The daemon sent something that is not the protocol.
    IpcProtocol = "ipc.protocol",
    /// A request that cannot be sent.
    IpcRequest = "ipc.request",
    /// The connection closed before the reply.
    IpcDisconnected = "ipc.disconnected",

    // ----- the desktop app -----
    /// A failure inside the app itself.
    AppInternal = "app.internal",
    /// No file manager could show a file.
    AppRevealFailed = "app.reveal_failed",
    /// Something thrown in the UI that is not an error of the backend.
    AppError = "app.error",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<Code> for String {
    fn from(code: Code) -> String {
        code.as_str().to_string()
    }
}

/// Compares with the wire text, so `assert_eq!(e.code(), "run.not_found")`
/// reads as the wire does.
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_code_travels_as_its_text_and_reads_back() {
        for &code in Code::ALL {
            let json = serde_json::to_value(code).expect("a code serialises");
            assert_eq!(json, serde_json::Value::from(code.as_str()), "{code:?}");
            let back: Code = serde_json::from_value(json).expect("and reads back");
            assert_eq!(back, code);
            assert_eq!(Code::parse(code.as_str()), Some(code));
        }
        assert_eq!(
            Code::parse("run.something_new"),
            None,
            "a newer peer's code"
        );
    }

    #[test]
    fn codes_are_distinct_dotted_names() {
        let texts: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(texts.len(), Code::ALL.len(), "no two codes share a text");
        for text in texts {
            let (area, name) = text.split_once('.').expect("area.name");
            assert!(
                !area.is_empty()
                    && !name.is_empty()
                    && text
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'),
                "`{text}` is a dotted lower-case code"
            );
        }
    }
}
