//! Weft's own coding agent (Fabro's `backend="api"`): a session with a
//! language model that calls tools until its task is done. See
//! docs/agents.md.
//!
//! The agent knows nothing of runs, stages or the daemon: the engine's
//! agent handler builds a [`Session`] for a stage, sends it the prompt,
//! turns the [`AgentEvent`]s it reports into run events, and reads the
//! reply (routing, `output_schema` repairs) as for prompt nodes.
//!
//! - [`session`]: the loop (model turn → tool calls → results → model
//!   turn), limits, loop detection, compaction, steering.
//! - [`profile`]: per provider: the system prompt, the tool set, project
//!   instruction files.
//! - [`tools`]: one file per tool, the [`tools::Workspace`] they work in
//!   (path confinement, read-before-write) and output truncation.
//! - [`transcript`]: the stage's `transcript.jsonl`.
//! - [`event`]: what a session reports while it works.
//! - [`external`], [`acp`], [`cli`]: other programs as agents (Claude
//!   Code, Codex, Gemini CLI, any ACP agent): who they are, and the two
//!   ways Weft drives them.

pub mod acp;
pub mod child_io;
pub mod cli;
mod compaction;
pub mod config;
pub mod event;
pub mod external;
mod history;
mod instructions;
mod loop_detection;
pub mod profile;
mod record;
pub mod session;
mod system_prompt;
pub mod tools;
pub mod transcript;
pub(crate) mod turn;

pub use config::{Limits, Permissions, SessionConfig};
pub use event::AgentEvent;
pub use profile::Profile;
pub use session::{CallGate, Reply, Session, SessionError, SessionErrorKind, Steering};
