//! The agent loop. Not built yet: see the agent issue.

use std::sync::{Arc, Mutex};

use super::config::SessionConfig;
use super::event::AgentEvent;
use super::tools::Workspace;
use crate::llm::{LlmClient, LlmError, Usage};

/// Messages for a running session, delivered before its next model call
/// (human-tools/steering.mdx). Cheap to clone; the engine hands one to
/// whoever may steer (the daemon's `run.steer`).
#[derive(Debug, Clone, Default)]
pub struct Steering(Arc<Mutex<Vec<String>>>);

impl Steering {
    /// Queues `text` for the model's next turn.
    pub fn send(&self, text: impl Into<String>) {
        crate::util::lock::lock(&self.0).push(text.into());
    }

    /// Everything queued so far, oldest first.
    #[must_use]
    pub fn drain(&self) -> Vec<String> {
        std::mem::take(&mut *crate::util::lock::lock(&self.0))
    }
}

/// What a finished exchange gave: the model's final text.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
}

/// Why a session stopped before the model finished.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionError {
    pub kind: SessionErrorKind,
    /// For the stage's failure reason: names the limit, the error.
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SessionErrorKind {
    /// `max_turns`, `max_tool_rounds`, `max_stage_tokens` or the timeout.
    Limit,
    /// The model kept looping after it was warned.
    Loop,
    /// A model call failed for good (after retries and failovers).
    Llm(LlmError),
    /// The run was cancelled.
    Cancelled,
}

/// One agent session: a conversation with tools. Built per stage attempt.
pub struct Session<'a> {
    pub(crate) config: SessionConfig,
    pub(crate) client: &'a LlmClient,
    pub(crate) workspace: Workspace,
    pub(crate) steering: Steering,
}

impl<'a> Session<'a> {
    #[must_use]
    pub fn new(config: SessionConfig, client: &'a LlmClient, workspace: Workspace) -> Session<'a> {
        Session {
            config,
            client,
            workspace,
            steering: Steering::default(),
        }
    }

    /// The handle that steers this session.
    #[must_use]
    pub fn steering(&self) -> Steering {
        self.steering.clone()
    }

    /// Sends `text` as a user message and runs the loop until the model
    /// ends a turn without tool calls; the first call sends the system
    /// prompt too. Called again (an `output_schema` repair), it continues
    /// the same conversation.
    ///
    /// # Errors
    /// When a limit is reached, the model loops, a call fails or the run is
    /// cancelled.
    pub async fn send(
        &mut self,
        _text: &str,
        _on_event: &mut (dyn FnMut(AgentEvent) + Send),
    ) -> Result<Reply, SessionError> {
        Err(SessionError {
            kind: SessionErrorKind::Limit,
            message: "the agent loop is not built yet".into(),
        })
    }

    /// Paths written by successful calls, relative to the work dir, sorted
    /// and deduplicated (`files_touched`).
    #[must_use]
    pub fn files_touched(&self) -> Vec<String> {
        Vec::new()
    }

    /// Tokens spent so far, over every call.
    #[must_use]
    pub fn usage(&self) -> Usage {
        Usage::default()
    }
}
