//! External coding agents over the Agent Client Protocol (ACP: JSON-RPC
//! 2.0 on the agent's stdin and stdout, protocol version 1), with Weft as
//! the client: it starts the agent in the work dir, prompts it, records
//! what it reports as the same events and transcript as Weft's own agent,
//! and serves what it asks for: files inside the work dir, terminals, and
//! permission (decided by the engine through [`Host`]). See docs/agents.md.
//!
//! Written by hand over serde_json rather than with the official crate,
//! whose dependencies (an MCP implementation, schema derivation) would
//! weigh more than this whole module.
//!
//! - [`wire`]: messages and lines.
//! - [`connection`]: the agent process and its session.
//! - [`updates`]: `session/update` into events and transcript.
//! - [`terminal`]: the `terminal/*` methods.

pub mod connection;
mod terminal;
mod updates;
pub mod wire;

pub use connection::{
    AcpAgent, AcpConfig, AcpError, AcpErrorKind, Host, PermissionAnswer, PermissionOption,
    PermissionRequest, PromptResult, Setting,
};
