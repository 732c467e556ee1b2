//! The local IPC layer between `weftd` and its clients (the CLI and the
//! desktop app): JSON-RPC 2.0, one JSON object per line, over a private
//! Unix domain socket (see docs/protocol.md).
//!
//! - [`protocol`]: every message, method, params and result type, defined
//!   once with serde; error codes (`envelope`, `error` and `methods`).
//! - [`codec`]: line framing with a size limit over any async stream.
//! - [`paths`]: where a home's daemon keeps its socket, lock and pid files.
//! - [`socket`]: connecting and binding the socket (`interprocess`).
//! - [`client`]: the client: calls matched by id, subscriptions.
//!
//! The server (accept loop, dispatch of [`protocol::Call`], subscriptions
//! fan-out) lives with the daemon and builds on these pieces.

pub mod client;
pub(crate) mod codec;
pub mod paths;
pub mod protocol;
pub mod socket;

pub use client::{Client, ClientError, Subscription};
pub use codec::{FrameError, FrameWriter, MAX_FRAME_BYTES};
pub use paths::{DaemonPaths, PathsError};
pub use protocol::{Call, Method, Request, Response, RpcError};
