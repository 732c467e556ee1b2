//! Language-model providers: one request/response model, one client per
//! provider API speaking its native HTTP (streaming and not), a model catalog,
//! retries and failover in one place. See docs/llm.md.
//!
//! - `types.rs` — [`Request`], [`Message`], [`Part`], [`Response`],
//!   [`Usage`], [`StreamEvent`]: provider-neutral.
//! - `providers/` — one file per API (Anthropic Messages, OpenAI Responses,
//!   Gemini generateContent, OpenAI-compatible Chat Completions); pure JSON
//!   translation.
//! - `transport.rs` — one HTTP attempt under timeouts; `sse.rs` — the
//!   server-sent-events parser.
//! - `retry.rs` — backoff and `Retry-After` (execution/failures.mdx).
//! - `catalog.rs` + `catalog.toml` — models, aliases, prices, defaults;
//!   `settings.rs` — the `[llm]`, `[providers.*]` and `[[models]]` sections of
//!   settings.toml.
//! - `client.rs` — [`LlmClient`]: resolution, retries, failover, cost;
//!   `cost.rs` — [`Spend`], usage and cost summed per stage.
//!
//! API keys are read from the environment map a client is built with, or
//! from settings.toml, and are only ever sent in request headers: they are
//! not in `Debug` output, and error messages are scrubbed of them.

pub mod catalog;
pub mod client;
pub mod error;
pub mod providers;
pub mod retry;
pub mod settings;
pub mod sse;
pub(crate) mod transport;
pub mod types;

pub use catalog::{Catalog, ModelInfo, Prices, ProviderEntry};
pub use client::{Attempt, CallEvent, Completion, LlmClient, Target};
pub use error::{FailureClass, LlmError};
pub use providers::Wire;
pub use retry::{RetryPolicy, Sleeper};
pub use settings::{LlmSettings, LlmTuning};
pub use transport::Timeouts;
pub use types::{
    FinishReason, Image, Message, Part, Reasoning, ReasoningEffort, Request, Response, Role, Speed,
    StreamEvent, ToolCall, ToolChoice, ToolResult, ToolSpec, Usage,
};
