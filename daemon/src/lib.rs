//! Weft: a local engine for AI coding-agent workflows written in Fabro's
//! workflow language (Graphviz DOT with agent extensions).
//!
//! Layers, bottom to top; each uses only the ones before it in this list
//! (`architecture` tests hold the code to it, and find import cycles
//! between files):
//! 1. [`util`]: how durations are written, how text is cut to a width,
//!    how a mutex is locked; nothing else in the crate.
//! 2. [`limits`]: bounded, regular-file-only reads.
//! 3. [`os`]: processes by pid (alive or not, which process it is) and
//!    signals to process groups.
//! 4. [`secrets`]: what counts as a secret, redaction, keeping keys out of
//!    reach of commands.
//! 5. [`model`]: the records every layer shares (events, outcomes, a run's
//!    status and listing, spend).
//! 6. [`lang`]: the workflow language (lexer, parser, graph model,
//!    stylesheet, conditions, templates, validation rules).
//! 7. [`config`]: the TOML configuration files, read with those limits.
//! 8. [`store`]: the durable run store (SQLite, blobs, run directories).
//! 9. [`exec`]: stage processes (process groups, the start gate, the
//!    reaper), cancellation, and the environment commands inherit.
//! 10. [`sandbox`]: sandboxes: a run's commands in a container, through
//!     the Docker Engine API (Docker or Podman).
//! 11. [`git`]: git checkpoints: the repository a run starts from, its
//!     branch and worktree, a commit and patch per stage.
//! 12. [`llm`]: language-model providers (Anthropic, OpenAI, Gemini,
//!     OpenAI-compatible servers), the model catalog, retries and failover.
//! 13. [`agent`]: Weft's own coding agent: the tool loop, its tools and
//!     guardrails.
//! 14. [`engine`]: executes runs: the run loop, routing, handlers.
//! 15. [`ipc`]: the wire protocol, its framing and socket, and the client.
//! 16. [`server`]: `weftd`, the daemon: the engine behind the socket.
//! 17. [`views`]: the desktop app's read models over the store.
//! 18. [`cli`]: the `weft` command.

pub mod agent;
#[cfg(test)]
mod architecture;
pub mod cli;
pub mod config;
pub mod engine;
pub mod exec;
pub mod git;
pub mod ipc;
pub mod lang;
pub mod limits;
pub mod llm;
pub mod model;
pub mod os;
pub mod sandbox;
pub mod secrets;
pub mod server;
pub mod store;
pub mod util;
pub mod views;
