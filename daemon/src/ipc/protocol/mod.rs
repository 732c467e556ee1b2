//! The wire protocol between `weftd` and its clients (the CLI and the
//! desktop app): JSON-RPC 2.0, one JSON object per line (see
//! docs/protocol.md and [`super::codec`] for the framing).
//!
//! - [`envelope`]: requests, responses and notifications as they travel
//!   (the `jsonrpc` version, ids), whatever the method.
//! - [`error`]: the error member of a response, its numeric and stable
//!   string codes.
//! - [`methods`]: the method table: every method's params and result types,
//!   and typing a request into a [`Call`].
//!
//! Every item is re-exported here, so `crate::ipc::protocol::RunStart`
//! names it wherever it lives.
//!
//! Compatibility rules: unknown fields in params and results are ignored
//! (an older daemon accepts a newer client's extra options); optional params
//! may be omitted; `id`s are strings, numbers or `null`, echoed as given.

pub mod envelope;
pub mod error;
pub mod methods;

pub use envelope::*;
pub use error::*;
pub use methods::*;

#[cfg(test)]
mod tests;
