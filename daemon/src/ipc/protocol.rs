//! The wire protocol between `weftd` and its clients (the CLI and the
//! desktop app): JSON-RPC 2.0, one JSON object per line (see
//! docs/protocol.md and [`super::codec`] for the framing).
//!
//! Every method is one params struct implementing [`Method`], which names
//! the method and its result type; [`Call`] gathers them for the server's
//! dispatch. Both come from one table (the `methods!` macro), so the list
//! of methods exists exactly once. Results reuse the store and engine types
//! ([`RunRecord`], [`StageRecord`], [`QuestionRecord`], [`Event`]) instead of
//! redefining them.
//!
//! Compatibility rules: unknown fields in params and results are ignored
//! (an older daemon accepts a newer client's extra options); optional params
//! may be omitted; `id`s are strings, numbers or `null`, echoed as given.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::model::{EnvPolicy, Event, ModelChoice, RunStatus, RunSummary};
use crate::store::{QuestionRecord, RunFilter, RunRecord, StageRecord, StoreError};

/// The protocol's own version, reported by `daemon.status`. Bumped when a
/// change would break an existing client (a removed method or field).
pub const PROTOCOL_VERSION: u32 = 1;

// ----- envelopes -----------------------------------------------------------

/// The `"jsonrpc": "2.0"` member: serialises as that string and refuses any
/// other value, so a message from a different protocol is an invalid request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Version;

impl Version {
    /// The only version spoken.
    pub const TEXT: &'static str = "2.0";
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Version::TEXT)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Version, D::Error> {
        let text = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        if text == Version::TEXT {
            Ok(Version)
        } else {
            Err(serde::de::Error::custom(format!(
                "unsupported jsonrpc version `{text}`; expected \"2.0\""
            )))
        }
    }
}

/// A request id, as JSON-RPC 2.0 allows it: a string, a number (of any
/// sign, whole or not) or `null`. Weft's client sends whole numbers,
/// counting up from 1 per connection; other clients may send anything the
/// specification allows. The server echoes the id back exactly as given and
/// never interprets it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    String(String),
    /// `"id": null`: allowed (though discouraged) by JSON-RPC 2.0; the reply
    /// carries `null` too. Not the same as a request without `id`, which is
    /// a notification.
    Null,
}

impl Id {
    /// The id as a whole number, when it is one (the ids Weft's client
    /// sends).
    #[must_use]
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            Id::String(_) | Id::Null => None,
        }
    }
}

impl From<u64> for Id {
    fn from(n: u64) -> Id {
        Id::Number(n.into())
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
            Id::Null => write!(f, "null"),
        }
    }
}

/// Reads a present `id` member, `null` included, as `Some`: only an absent
/// `id` makes a request a notification.
fn present_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Id>, D::Error> {
    Id::deserialize(deserializer).map(Some)
}

/// A request as it travels, with untyped params; [`Request::call`] types it.
///
/// A request without `id` is a JSON-RPC notification: the server carries it
/// out but sends no reply, not even an error. (`"id": null` is an id: the
/// reply carries `null`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub jsonrpc: Version,
    #[serde(
        default,
        deserialize_with = "present_id",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<Id>,
    pub method: String,
    /// Omitted for methods without params; `null` and `{}` mean the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    /// The request calling method `M` with `params` under `id`.
    ///
    /// Fails only if `params` cannot be serialised (a map with non-string
    /// keys, which no params type here has).
    pub fn new<M: Method>(id: impl Into<Id>, params: &M) -> Result<Request, serde_json::Error> {
        let params = serde_json::to_value(params)?;
        Ok(Request {
            jsonrpc: Version,
            id: Some(id.into()),
            method: M::NAME.to_string(),
            params: Some(params),
        })
    }

    /// The typed call: [`RpcError::method_not_found`] for an unknown
    /// method, [`RpcError::invalid_params`] when the params do not fit.
    pub fn call(&self) -> Result<Call, RpcError> {
        Call::parse(&self.method, self.params.clone())
    }
}

/// A request line the server cannot carry out, with the id to answer under
/// (`None` when the id itself could not be read: the reply's id is `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub id: Option<Id>,
    pub error: RpcError,
}

/// Reads one request line's JSON value (already parsed by the codec) into
/// its id and typed call, or the error to reply with: `-32600` for anything
/// that is not a single JSON-RPC 2.0 request object (batches are not
/// supported), `-32601` for an unknown method, `-32602` for bad params.
///
/// The id is recovered whenever it is a valid id (a string, a number or
/// `null`), so even an invalid request gets its error under its own id.
pub fn decode_request(value: Value) -> Result<(Option<Id>, Call), Rejection> {
    let id = match &value {
        Value::Object(map) => map.get("id").and_then(|id| Id::deserialize(id).ok()),
        _ => None,
    };
    if value.is_array() {
        return Err(Rejection {
            id,
            error: RpcError::invalid_request(
                "batch requests are not supported; send one request per line",
            ),
        });
    }
    let request: Request = serde_json::from_value(value).map_err(|e| Rejection {
        id: id.clone(),
        error: RpcError::invalid_request(format!("not a JSON-RPC 2.0 request: {e}")),
    })?;
    match request.call() {
        Ok(call) => Ok((request.id, call)),
        Err(error) => Err(Rejection {
            id: request.id,
            error,
        }),
    }
}

/// A reply to a request: its id and either a result or an error.
///
/// `id` is `null` only when the request's id could not be read (a parse
/// error or an invalid request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub jsonrpc: Version,
    pub id: Option<Id>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The `result` or the `error` member of a [`Response`]; exactly one is
/// present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Outcome {
    #[serde(rename = "result")]
    Result(Value),
    #[serde(rename = "error")]
    Error(RpcError),
}

impl Response {
    /// A successful reply carrying `result`. A result that cannot be
    /// serialised becomes an `rpc.internal` error reply instead.
    pub fn success<T: Serialize>(id: Option<Id>, result: &T) -> Response {
        let outcome = match serde_json::to_value(result) {
            Ok(value) => Outcome::Result(value),
            Err(e) => Outcome::Error(RpcError::internal(format!("cannot encode the result: {e}"))),
        };
        Response {
            jsonrpc: Version,
            id,
            outcome,
        }
    }

    /// An error reply.
    #[must_use]
    pub fn failure(id: Option<Id>, error: RpcError) -> Response {
        Response {
            jsonrpc: Version,
            id,
            outcome: Outcome::Error(error),
        }
    }

    /// The error reply for a request the server rejected.
    #[must_use]
    pub fn rejected(rejection: Rejection) -> Response {
        Response::failure(rejection.id, rejection.error)
    }
}

/// A message from the server that is not a reply: live events of a
/// subscription, or the notice that one fell behind. Serialises as
/// `{"jsonrpc":"2.0","method":"event","params":{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub jsonrpc: Version,
    #[serde(flatten)]
    pub body: NotificationBody,
}

/// What a [`Notification`] says, by method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", content = "params")]
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every notification is an event; `ServerMessage` boxes the whole notification"
)]
pub enum NotificationBody {
    /// One event of a subscribed run, delivered in `seq` order per run.
    #[serde(rename = "event")]
    Event(EventNotification),
    /// The subscription fell too far behind (its client did not read fast
    /// enough) and has ended; nothing more is sent for it. Subscribing again
    /// with `after_seq: last_seq` continues without a gap.
    #[serde(rename = "lagged")]
    Lagged(LaggedNotification),
}

/// The params of a `lagged` notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaggedNotification {
    /// The id the client chose in `subscribe`; it is free for reuse.
    pub subscription: String,
    /// For one run's subscription, the `seq` of the last event sent on it
    /// (its `after_seq` when none was); absent for an all-runs one, whose
    /// missed events are not replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seq: Option<u64>,
}

/// The params of an `event` notification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventNotification {
    /// The id the client chose in `subscribe`.
    pub subscription: String,
    pub event: Event,
}

impl Notification {
    /// The notice that `subscription` fell behind and ended after `last_seq`.
    #[must_use]
    pub fn lagged(subscription: impl Into<String>, last_seq: Option<u64>) -> Notification {
        Notification {
            jsonrpc: Version,
            body: NotificationBody::Lagged(LaggedNotification {
                subscription: subscription.into(),
                last_seq,
            }),
        }
    }

    /// The notification carrying `event` to `subscription`.
    #[must_use]
    pub fn event(subscription: impl Into<String>, event: Event) -> Notification {
        Notification {
            jsonrpc: Version,
            body: NotificationBody::Event(EventNotification {
                subscription: subscription.into(),
                event,
            }),
        }
    }
}

/// Anything the server writes: a reply or a notification. The server can
/// queue both on one writer; the client tells them apart with
/// [`ServerMessage::from_value`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ServerMessage {
    Response(Response),
    /// Boxed: events make notifications much larger than replies.
    Notification(Box<Notification>),
}

impl From<Response> for ServerMessage {
    fn from(r: Response) -> ServerMessage {
        ServerMessage::Response(r)
    }
}

impl From<Notification> for ServerMessage {
    fn from(n: Notification) -> ServerMessage {
        ServerMessage::Notification(Box::new(n))
    }
}

impl ServerMessage {
    /// Reads a message from the server: an object with a `method` member is
    /// a notification, anything else must be a response.
    pub fn from_value(value: Value) -> Result<ServerMessage, serde_json::Error> {
        if value.get("method").is_some() {
            serde_json::from_value(value).map(|n| ServerMessage::Notification(Box::new(n)))
        } else {
            serde_json::from_value(value).map(ServerMessage::Response)
        }
    }
}

// ----- errors --------------------------------------------------------------

/// Numeric error codes. The JSON-RPC ones (-32700..-32603) are for protocol
/// problems; Weft's own live in the range JSON-RPC reserves for
/// implementation-defined server errors (-32000..-32099). Clients match on
/// the string code in `error.data.code`; the number only groups them.
pub mod code {
    /// Not JSON, or not UTF-8.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC 2.0 request (or longer than the line limit).
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    /// A bug or an unexpected failure in the daemon.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The named run, question, stage or subscription does not exist.
    pub const NOT_FOUND: i64 = -32001;
    /// A run id prefix matches several runs.
    pub const AMBIGUOUS: i64 = -32002;
    /// The thing exists but is in the wrong state (resuming a finished run,
    /// answering a timed-out question, reusing a subscription id).
    pub const INVALID_STATE: i64 = -32003;
    /// The workflow cannot run: invalid, unreadable or misconfigured.
    pub const WORKFLOW: i64 = -32004;
    /// The run store failed (database or disk).
    pub const STORE: i64 = -32005;
    /// The daemon is shutting down and takes no new work.
    pub const SHUTTING_DOWN: i64 = -32006;
}

/// The `error` member of a response: a JSON-RPC code, a human message and
/// Weft's stable machine-readable code in `data.code` (`run.not_found`, ...).
///
/// Clients match on [`RpcError::data_code`], never on the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<ErrorData>,
}

/// The `data` member of an error: the stable code plus details that depend
/// on it (`matches` for `run.ambiguous`, `diagnostics` for
/// `workflow.invalid`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorData {
    pub code: String,
    #[serde(flatten, default)]
    pub details: Map<String, Value>,
}

impl RpcError {
    /// An error with numeric `code`, stable `data_code` and `message`.
    #[must_use]
    pub fn new(code: i64, data_code: impl Into<String>, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: Some(ErrorData {
                code: data_code.into(),
                details: Map::new(),
            }),
        }
    }

    /// Adds a detail to `data` (a no-op on an error without data).
    #[must_use]
    pub fn with_detail(mut self, key: impl Into<String>, value: Value) -> RpcError {
        if let Some(data) = &mut self.data {
            data.details.insert(key.into(), value);
        }
        self
    }

    /// The stable code: `data.code`, or for an error from a peer that sent
    /// none, one derived from the numeric code (`rpc.parse_error`, ...,
    /// `rpc.error` for numbers Weft does not define).
    #[must_use]
    pub fn data_code(&self) -> &str {
        match &self.data {
            Some(data) => &data.code,
            None => match self.code {
                code::PARSE_ERROR => "rpc.parse_error",
                code::INVALID_REQUEST => "rpc.invalid_request",
                code::METHOD_NOT_FOUND => "rpc.method_not_found",
                code::INVALID_PARAMS => "rpc.invalid_params",
                code::INTERNAL_ERROR => "rpc.internal",
                _ => "rpc.error",
            },
        }
    }

    /// `-32700 rpc.parse_error`: the line is not JSON (or not UTF-8).
    #[must_use]
    pub fn parse_error(message: impl Into<String>) -> RpcError {
        RpcError::new(code::PARSE_ERROR, "rpc.parse_error", message)
    }

    /// `-32600 rpc.invalid_request`: JSON, but not a JSON-RPC request.
    #[must_use]
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_REQUEST, "rpc.invalid_request", message)
    }

    /// `-32600 rpc.too_long`: the line exceeded the limit and was discarded.
    #[must_use]
    pub fn too_long(limit: usize) -> RpcError {
        RpcError::new(
            code::INVALID_REQUEST,
            "rpc.too_long",
            format!("the message exceeds the {limit}-byte limit and was discarded"),
        )
        .with_detail("limit", Value::from(limit))
    }

    /// `-32601 rpc.method_not_found`, listing the methods there are.
    #[must_use]
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            code::METHOD_NOT_FOUND,
            "rpc.method_not_found",
            format!(
                "no method `{method}`; the methods are {}",
                Call::METHODS.join(", ")
            ),
        )
    }

    /// `-32602 rpc.invalid_params`.
    #[must_use]
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, "rpc.invalid_params", message)
    }

    /// `-32603 rpc.internal`.
    #[must_use]
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INTERNAL_ERROR, "rpc.internal", message)
    }

    /// `-32006 daemon.shutting_down`.
    #[must_use]
    pub fn shutting_down() -> RpcError {
        RpcError::new(
            code::SHUTTING_DOWN,
            "daemon.shutting_down",
            "the daemon is shutting down; start it again with `weft daemon start`",
        )
    }
}

impl From<&StoreError> for RpcError {
    /// Keeps the store's code (`run.not_found`, `store.sqlite`, ...) and
    /// message; `run.ambiguous` carries the matching ids in `matches`.
    fn from(e: &StoreError) -> RpcError {
        let number = match e {
            StoreError::RunNotFound(_)
            | StoreError::StageNotFound(_)
            | StoreError::QuestionNotFound(_)
            | StoreError::ArtifactNotFound { .. } => code::NOT_FOUND,
            StoreError::AmbiguousRun { .. } => code::AMBIGUOUS,
            StoreError::InvalidArtifactPath(_) => code::INVALID_PARAMS,
            _ => code::STORE,
        };
        let error = RpcError::new(number, e.code(), e.to_string());
        match e {
            StoreError::AmbiguousRun { matches, .. } => {
                error.with_detail("matches", Value::from(matches.clone()))
            }
            _ => error,
        }
    }
}

impl From<StoreError> for RpcError {
    fn from(e: StoreError) -> RpcError {
        RpcError::from(&e)
    }
}

// ----- methods -------------------------------------------------------------

/// One method of the protocol: the params type names the method and the
/// type of its result, so `Client::call(RunGet { .. })` returns a
/// [`RunDetail`].
pub trait Method: Serialize + DeserializeOwned + Into<Call> {
    /// The method name on the wire (`run.start`).
    const NAME: &'static str;
    /// What a successful call returns.
    type Output: Serialize + DeserializeOwned;
}

/// The one table of methods: generates [`Call`], its parser and the
/// [`Method`] impls, so no method can be in one and missing from another.
macro_rules! methods {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($params:ident) -> $output:ty; )*) => {
        /// A typed request: one variant per method, holding its params.
        // One per request, parsed and moved once and never stored in bulk:
        // boxing `run.start`'s params would buy nothing.
        #[allow(clippy::large_enum_variant)]
        #[derive(Debug, Clone, PartialEq)]
        pub enum Call {
            $( $(#[$doc])* $variant($params), )*
        }

        impl Call {
            /// Every method name, in the order of the protocol doc.
            pub const METHODS: &'static [&'static str] = &[$($name),*];

            /// Types a request: `params` absent or `null` means `{}`.
            /// Unknown method → `rpc.method_not_found`; params that do not
            /// fit the method → `rpc.invalid_params`.
            pub fn parse(method: &str, params: Option<Value>) -> Result<Call, RpcError> {
                let params = match params {
                    None | Some(Value::Null) => Value::Object(Map::new()),
                    Some(params) => params,
                };
                match method {
                    $( $name => serde_json::from_value(params)
                        .map(Call::$variant)
                        .map_err(|e| RpcError::invalid_params(format!("invalid params for `{method}`: {e}"))), )*
                    _ => Err(RpcError::method_not_found(method)),
                }
            }

            /// The method name on the wire.
            #[must_use]
            pub fn name(&self) -> &'static str {
                match self {
                    $( Call::$variant(_) => $name, )*
                }
            }
        }

        $(
            impl Method for $params {
                const NAME: &'static str = $name;
                type Output = $output;
            }

            impl From<$params> for Call {
                fn from(params: $params) -> Call {
                    Call::$variant(params)
                }
            }
        )*
    };
}

methods! {
    /// Start a run; returns at once with its id (it runs in the background).
    "run.start" => RunStart(RunStart) -> RunStarted;
    /// List runs, newest first.
    "run.list" => RunList(RunList) -> Vec<RunSummary>;
    /// One run (by id or unique prefix) with its stages.
    "run.get" => RunGet(RunGet) -> RunDetail;
    /// Archive or unarchive a run (the app's list hides archived runs).
    "run.archive" => RunArchive(RunArchive) -> RunSummary;
    /// Ask a queued, running or blocked run to stop.
    "run.cancel" => RunCancel(RunCancel) -> CancelRequested;
    /// Continue an interrupted or cancelled run from its checkpoint.
    "run.resume" => RunResume(RunResume) -> RunStarted;
    /// A page of a run's recorded events.
    "run.events" => RunEvents(RunEvents) -> EventPage;
    /// Receive live events as `event` notifications.
    "subscribe" => Subscribe(Subscribe) -> Subscribed;
    /// Stop a subscription.
    "unsubscribe" => Unsubscribe(Unsubscribe) -> Unsubscribed;
    /// Human-gate questions.
    "question.list" => QuestionList(QuestionList) -> Vec<QuestionRecord>;
    /// Answer a question (idempotent).
    "question.answer" => QuestionAnswer(QuestionAnswer) -> QuestionRecord;
    /// The daemon's version, load and paths.
    "daemon.status" => DaemonStatus(DaemonStatus) -> DaemonInfo;
    /// Shut the daemon down gracefully (running runs are interrupted).
    "daemon.stop" => DaemonStop(DaemonStop) -> DaemonStopping;
}

// ----- run.start / run.resume ----------------------------------------------

/// Where the workflow of a new run comes from. On the wire:
/// `{"path": "/abs/flow.fabro"}` or `{"source": "digraph { … }"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowSource {
    /// An absolute path; the daemon reads the file (it runs as the same
    /// user as its clients).
    Path(PathBuf),
    /// The workflow text itself; `@file` references resolve against
    /// `base_dir` (or `work_dir`).
    Source(String),
}

/// The caller's environment: `[["NAME", "value"], …]`. A run started from
/// the CLI runs with the caller's environment, as a script run from their
/// shell would (secrets are still filtered from child processes by the
/// engine). Variables whose name or value is not UTF-8 are not sent.
///
/// Its `Debug` shows names only, so logging a request never leaks a secret.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CallerEnv(pub Vec<(String, String)>);

impl CallerEnv {
    /// This process's environment (skipping non-UTF-8 variables), with
    /// the keys it holds in memory ([`crate::secrets::process_env`]).
    #[must_use]
    pub fn current() -> CallerEnv {
        CallerEnv(crate::secrets::process_env())
    }

    /// True when nothing was sent (the daemon then uses its own environment).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for CallerEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}=…")))
            .finish()
    }
}

/// `run.start` params. Paths must be absolute: the daemon's working
/// directory is not the caller's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunStart {
    pub workflow: WorkflowSource,
    /// Where commands run (the caller's working directory for `weft run`).
    pub work_dir: PathBuf,
    /// Where `@file` references of inline source resolve; defaults to the
    /// workflow file's directory, else `work_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_dir: Option<PathBuf>,
    /// Replaces the graph's `goal` attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// Template inputs (`--input NAME=VALUE`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    #[serde(default)]
    pub dry_run: bool,
    #[serde(default)]
    pub auto_approve: bool,
    /// Seeds random edge selection and retry jitter; random when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Artifact globs (`[run.artifacts] include`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The run-wide model: `{"model": "sonnet", "provider": "anthropic",
    /// "fallbacks": ["openai"]}`, every field optional.
    #[serde(default, skip_serializing_if = "ModelChoice::is_empty")]
    pub model: ModelChoice,
    /// `[run.env]`: `{"pass": ["GH_TOKEN"], "deny": ["FOO_*"]}`, both
    /// optional; which variables commands get despite the secret rules.
    #[serde(default, skip_serializing_if = "EnvPolicy::is_empty")]
    pub env_policy: EnvPolicy,
    /// The caller's environment; empty means the daemon's own.
    #[serde(default, skip_serializing_if = "CallerEnv::is_empty")]
    #[ts(as = "Option<Vec<(String, String)>>", optional)]
    pub env: CallerEnv,
}

impl RunStart {
    /// A request to run `workflow` in `work_dir` with every option at its
    /// default and no caller environment.
    #[must_use]
    pub fn new(workflow: WorkflowSource, work_dir: impl Into<PathBuf>) -> RunStart {
        RunStart {
            workflow,
            work_dir: work_dir.into(),
            base_dir: None,
            goal: None,
            inputs: BTreeMap::new(),
            dry_run: false,
            auto_approve: false,
            seed: None,
            labels: Vec::new(),
            artifacts: Vec::new(),
            model: ModelChoice::default(),
            env_policy: EnvPolicy::default(),
            env: CallerEnv::default(),
        }
    }
}

/// The result of `run.start` and `run.resume`, sent as soon as the run is
/// recorded (before it executes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunStarted {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// `queued` when the concurrency limit is reached, else `running`.
    pub status: RunStatus,
}

/// `run.resume` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunResume {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// Approve every gate from now on (also when the run was started
    /// without it).
    #[serde(default)]
    pub auto_approve: bool,
    /// The caller's environment; empty means the daemon's own.
    #[serde(default, skip_serializing_if = "CallerEnv::is_empty")]
    #[ts(as = "Option<Vec<(String, String)>>", optional)]
    pub env: CallerEnv,
}

// ----- run.list / run.get / run.cancel / run.events ------------------------

/// `run.list` params; absent filters match everything, filters combine with
/// AND.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RunStatus>,
    /// The workflow's name, exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// Runs carrying this label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Substring of goal, workflow name or run id, ignoring ASCII case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Skip this many of the newest matching runs (paging).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    /// Only archived (`true`) or only unarchived (`false`) runs; absent for
    /// both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
}

impl RunList {
    /// The store filter for these params: every filter, label and archived
    /// included, is applied in SQL before `limit`/`offset`.
    #[must_use]
    pub fn filter(&self) -> RunFilter {
        RunFilter {
            status: self.status,
            workflow: self.workflow.clone(),
            label: self.label.clone(),
            text: self.text.clone(),
            archived: self.archived,
            limit: self.limit,
            offset: self.offset,
        }
    }
}

/// `run.get` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunGet {
    /// A run id or a unique prefix of one.
    pub run: String,
}

/// The result of `run.get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    pub run: RunRecord,
    /// In execution order (`rank`).
    pub stages: Vec<StageRecord>,
}

/// `run.cancel` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCancel {
    /// A run id or a unique prefix of one.
    pub run: String,
}

/// The result of `run.cancel`: the run's status when the daemon replied.
/// A queued run is `cancelled` at once; a running one stays `running` until
/// its stage stops, and its subscribers then see `run.cancelled`. Cancelling
/// a run that already ended changes nothing and returns its final status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct CancelRequested {
    pub run_id: String,
    pub status: RunStatus,
}

/// `run.events` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvents {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// Only events with a larger `seq` (0: from the first).
    #[serde(default)]
    pub after_seq: u64,
    /// At most this many events (the daemon caps it at
    /// [`crate::store::EVENTS_PAGE_MAX`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// About how many bytes of events one `run.events` page (or one backlog
/// read of a subscription) holds: half the message limit, so a page of
/// large events still fits in one message with room to spare.
pub const EVENTS_PAGE_BYTES: usize = super::codec::MAX_FRAME_BYTES / 2;

/// The result of `run.events`: events in `seq` order. A page holds at most
/// `limit` events, at most [`crate::store::EVENTS_PAGE_MAX`], and
/// stops early once it holds [`EVENTS_PAGE_BYTES`] of events, so it always
/// fits in a message; read on from the last `seq` until a page comes back
/// empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPage {
    /// The full run id (the request may have used a prefix).
    pub run_id: String,
    pub events: Vec<Event>,
}

// ----- subscribe / unsubscribe ---------------------------------------------

/// `subscribe` params. The client picks the subscription id, so it can
/// route `event` notifications that arrive before the reply.
///
/// For one run, the daemon first sends every recorded event with
/// `seq > after_seq`, then live ones: each event exactly once, in `seq`
/// order, with no gap. Subscribing after `run.start` with `after_seq: 0`
/// therefore misses nothing. For all runs (`run` absent) only events
/// recorded after the subscription are sent and `after_seq` is ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribe {
    /// Unique among this connection's live subscriptions.
    pub subscription: String,
    /// A run id or a unique prefix of one; absent for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default)]
    pub after_seq: u64,
}

/// The result of `subscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subscribed {
    pub subscription: String,
    /// The full id of the subscribed run; `None` for all runs.
    pub run_id: Option<String>,
}

/// `unsubscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsubscribe {
    pub subscription: String,
}

/// The result of `unsubscribe`. No `event` for it is sent after this reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unsubscribed {
    /// False when there was no such subscription (unsubscribing twice is
    /// not an error).
    pub existed: bool,
}

// ----- questions -----------------------------------------------------------

/// `question.list` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionList {
    /// A run id or a unique prefix of one; absent for every run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Only questions still waiting for an answer (the default).
    #[serde(default = "yes")]
    pub pending_only: bool,
}

impl Default for QuestionList {
    fn default() -> QuestionList {
        QuestionList {
            run: None,
            pending_only: true,
        }
    }
}

fn yes() -> bool {
    true
}

/// How a question is answered. On the wire: `{"key": "A"}`,
/// `{"label": "Approve"}` or `{"text": "ship it, but …"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum AnswerBy {
    /// An option's accelerator key (`A` of `[A] Approve`), ignoring case.
    Key(String),
    /// An option's label, with or without its accelerator.
    Label(String),
    /// Free text: matched against the options like typed input, else the
    /// gate's freeform answer.
    Text(String),
}

/// `question.answer` params. Answering a question that was already
/// answered with the same choice (or text) returns the recorded answer
/// unchanged; another choice, or a question that timed out or was
/// interrupted, is `question.closed` with the record in `data.question`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct QuestionAnswer {
    /// The question id (from `question.list` or an `interview.started`
    /// event).
    pub question: String,
    pub answer: AnswerBy,
}

// ----- daemon --------------------------------------------------------------

/// `daemon.status` params (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {}

/// The result of `daemon.status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct DaemonInfo {
    /// The weftd crate version.
    pub version: String,
    /// [`PROTOCOL_VERSION`] of the daemon.
    pub protocol: u32,
    pub pid: u32,
    pub uptime_ms: u64,
    pub runs_running: u32,
    pub runs_queued: u32,
    pub home: PathBuf,
    pub db_path: PathBuf,
    pub socket_path: PathBuf,
}

/// `run.archive` params. Archiving changes nothing about the run itself:
/// it only hides it from the app's list unless archived runs are asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct RunArchive {
    /// A run id or a unique prefix of one.
    pub run: String,
    /// True to archive, false to bring it back.
    pub archived: bool,
}

/// `daemon.stop` params (none).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStop {}

/// The result of `daemon.stop`, sent before the daemon shuts down.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStopping {
    /// The daemon's pid, so the caller can wait for it to exit.
    pub pid: u32,
    /// Runs that will be checkpointed as interrupted.
    pub runs_interrupted: u32,
}

#[cfg(test)]
mod tests;
