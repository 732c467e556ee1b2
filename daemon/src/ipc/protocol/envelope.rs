//! The JSON-RPC 2.0 envelope: the `jsonrpc` version, request ids,
//! requests, responses and notifications as they travel, and what a server
//! writes ([`ServerMessage`]). Nothing here knows the methods: typing a
//! request's params is [`super::methods`]' job.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::error::RpcError;
use crate::model::Event;

/// The `"jsonrpc": "2.0"` member: serialises as that string and refuses any
/// other value, so a message from a different protocol is an invalid request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Version;

impl Version {
    /// The only version spoken.
    pub(crate) const TEXT: &'static str = "2.0";
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

/// A request as it travels, with untyped params; `Request::call` types it.
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

/// A request line the server cannot carry out, with the id to answer under
/// (`None` when the id itself could not be read: the reply's id is `null`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub id: Option<Id>,
    pub error: RpcError,
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
pub(crate) struct Notification {
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
pub(crate) enum NotificationBody {
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
pub(crate) struct LaggedNotification {
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
pub(crate) struct EventNotification {
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
pub(crate) enum ServerMessage {
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
