//! A fake LLM provider server for tests.
//!
//! [`FakeLlm::start`] binds `127.0.0.1:0` and serves real HTTP/1.1 on its own
//! thread, speaking four providers' wire formats, whole or streamed as
//! server-sent events:
//!
//! | Provider | Endpoint | API key from |
//! |---|---|---|
//! | Anthropic Messages | `POST /v1/messages` | `x-api-key` (and `anthropic-version` is required) |
//! | OpenAI Responses | `POST /v1/responses` | `Authorization: Bearer …` |
//! | OpenAI Chat Completions | `POST /v1/chat/completions` | `Authorization: Bearer …` |
//! | Gemini | `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent[?alt=sse]` | `x-goog-api-key` or `?key=` |
//!
//! Any prefix before these paths is accepted (`/openai/v1/chat/completions`),
//! and so is any query after them (Claude Code calls `/v1/messages?beta=true`).
//! `HEAD` on any path is a reachability probe (Claude Code's
//! `HEAD /api/hello`) and gets an empty 200, unrecorded.
//! Anthropic and OpenAI stream when the body has `"stream": true`; Gemini
//! when the method is `streamGenerateContent` (as SSE with `alt=sse`, else as
//! one JSON array of the chunks). Gemini's SSE lines end in CRLF, the others'
//! in LF. Other paths get a 404 with a JSON error body.
//!
//! # Scripting
//!
//! Replies are queued per API key ([`FakeLlm::script`]), so parallel tests
//! share one server by each using its own key; every request on a provider
//! endpoint is recorded under its key ([`FakeLlm::requests`]). A request is
//! refused, without consuming a reply, when it has no key (401, recorded
//! under the empty key), is not a POST (405), is an Anthropic request
//! without `anthropic-version` (400), or its body is not a JSON object (400),
//! each in the provider's error format.
//!
//! # The default reply
//!
//! When a key has no reply queued, the answer is what its
//! [`FakeLlm::respond_with`] function returns for the request when it has
//! one, else its [`FakeLlm::script_forever`] reply when it has one, else the text
//! `fake reply to: ` followed by the first 200 characters of the *last user
//! text* of the request: the last message with role `user` that has any text
//! (Anthropic `messages`, Chat `messages`, Responses `input` items — or
//! `input` itself when it is a string — and Gemini `contents`, where a
//! missing role means user), its text parts joined by `\n`. Text parts are a
//! string content, or parts of type `text` (Anthropic, Chat), `input_text`
//! (Responses), or with a `text` field and not `thought: true` (Gemini). Tool
//! results are not text, so after a tool call the default reply quotes the
//! user's last prompt again. With no user text it is just `fake reply to: `.
//!
//! # Usage
//!
//! Unless a [`Reply::Turn`] gives one, usage is derived from sizes: `input` is
//! the number of characters of the request body divided by 4 and rounded up,
//! `output` the same for the reply's text plus each tool call's name and
//! argument JSON (both at least 1); reasoning and cache counts are 0.
//! [`Usage`] is provider-neutral (`input` includes the cached tokens, `output`
//! includes reasoning) and maps onto each format as:
//!
//! | [`Usage`] | Anthropic | Responses | Chat | Gemini |
//! |---|---|---|---|---|
//! | `input` | `input_tokens` + `cache_read_input_tokens` + `cache_creation_input_tokens` | `input_tokens` | `prompt_tokens` | `promptTokenCount` |
//! | `cache_read` | `cache_read_input_tokens` | `input_tokens_details.cached_tokens` | `prompt_tokens_details.cached_tokens` | `cachedContentTokenCount` |
//! | `cache_write` | `cache_creation_input_tokens` | — | — | — |
//! | `output` | `output_tokens` | `output_tokens` | `completion_tokens` | `candidatesTokenCount` + `thoughtsTokenCount` |
//! | `reasoning` | — | `output_tokens_details.reasoning_tokens` | `completion_tokens_details.reasoning_tokens` | `thoughtsTokenCount` |
//!
//! Gemini leaves out `thoughtsTokenCount` and `cachedContentTokenCount` when
//! they are 0; a Responses reply with reasoning tokens starts with a
//! `reasoning` output item.
//!
//! # Streaming
//!
//! Text streams one word (with the whitespace after it) per delta; tool-call
//! arguments stream in fragments of at most 16 characters (Gemini sends each
//! call whole). Every event is flushed as its own HTTP chunk. The responses
//! are sent with `Connection: close`.
//!
//! # From another process
//!
//! The `weft-fakellm` binary prints `listening on http://127.0.0.1:PORT` and
//! serves until stdin closes (or it is killed). `POST /_fake/script/{key}`
//! takes a JSON array of replies (or one reply) in the form of [`Reply`]'s
//! serde representation, `POST /_fake/forever/{key}` takes one reply for
//! [`FakeLlm::script_forever`], `GET /_fake/requests/{key}` returns the recorded
//! requests as JSON and `GET /_fake/pending/{key}` the number of replies not
//! yet consumed.

mod http;
mod reply;
mod server;
mod turn;
mod wire;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

pub use reply::{Finish, Reply, ToolCall, Usage};
pub use server::Recorded;
pub use wire::Wire;

use server::Shared;
use tokio::sync::oneshot;

/// A running fake server. Dropping it stops the server and closes every
/// connection, hanging ones included.
#[derive(Debug)]
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Start a server on `127.0.0.1` on a free port, on a thread of its own
    /// with its own runtime, so it serves sync and async tests alike.
    ///
    /// # Panics
    ///
    /// When the port cannot be bound or the thread cannot start; see
    /// [`FakeLlm::try_start`].
    pub fn start() -> FakeLlm {
        match FakeLlm::try_start() {
            Ok(server) => server,
            Err(e) => panic!("the fake LLM server cannot start: {e}"),
        }
    }

    /// Like [`FakeLlm::start`], returning the error instead of panicking.
    pub fn try_start() -> io::Result<FakeLlm> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared::default());
        let (shutdown, shutdown_rx) = oneshot::channel();
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name(format!("fakellm-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(server::accept_loop(listener, serving, shutdown_rx));
                // Dropping the runtime here drops every connection task.
            })?;
        Ok(FakeLlm {
            addr,
            shared,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queue replies for requests made with this API key, after any already
    /// queued. Each request takes the next one; when none is left, the
    /// default reply (see the crate docs) answers.
    pub fn script(&self, api_key: &str, replies: impl IntoIterator<Item = Reply>) {
        self.shared.script(api_key, replies);
    }

    /// Answer every request with this key that finds no scripted reply
    /// queued with `reply`, for ever, instead of the default reply: a model
    /// that never stops (a tool call) or that loops. Replaces any earlier
    /// one.
    pub fn script_forever(&self, api_key: &str, reply: Reply) {
        self.shared.script_forever(api_key, reply);
    }

    /// Answer every request with this key that finds no scripted reply
    /// queued with what `respond` returns for it (the request as
    /// [`FakeLlm::requests`] records it), before any
    /// [`FakeLlm::script_forever`] reply: a model whose answer depends on
    /// the conversation, e.g. one tool call in each agent session and then
    /// text. `respond` runs on the server's thread, one request at a time
    /// per connection; it must not block. Replaces any earlier one.
    pub fn respond_with(
        &self,
        api_key: &str,
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) {
        self.shared
            .respond_with(api_key, server::Responder(Arc::new(respond)));
    }

    /// Every request received with this API key, in order (requests without a
    /// key are under `""`).
    pub fn requests(&self, api_key: &str) -> Vec<Recorded> {
        self.shared.requests(api_key)
    }

    /// How many scripted replies for this key are still unconsumed.
    pub fn pending(&self, api_key: &str) -> usize {
        self.shared.pending(api_key)
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
