//! Weft: a local engine for AI coding-agent workflows written in Fabro's
//! workflow language (Graphviz DOT with agent extensions).
//!
//! Layers, each depending only on the ones below it:
//! - [`lang`]: the workflow language (lexer, parser, graph model, stylesheet,
//!   conditions, templates, validation rules).
//! - [`store`]: the durable run store (SQLite, blobs, run directories).
//! - [`llm`]: language-model providers (Anthropic, OpenAI, Gemini,
//!   OpenAI-compatible servers), the model catalog, retries and failover.
//! - [`engine`]: executes runs: the run loop, routing, handlers.
//!
//! Shared by all of them: [`util`] (one home for how durations are written,
//! how text is cut to a width and how a mutex is locked), [`limits`]
//! (bounded, regular-file-only reads),
//! [`config`] (the TOML configuration files, read with those limits) and
//! [`secrets`] (what counts as a secret, redaction, and keeping keys out of
//! reach of commands).

pub mod cli;
pub mod config;
pub mod engine;
pub mod ipc;
pub mod lang;
pub mod limits;
pub mod llm;
pub mod secrets;
pub mod server;
pub mod store;
pub mod util;
