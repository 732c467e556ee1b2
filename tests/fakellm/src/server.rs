//! The server: accept connections, route each request, record it, and answer
//! it with the next scripted reply for its API key.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::http::{Conn, Request, percent_decode};
use crate::reply::Reply;
use crate::turn::{Ctx, SseEvent, Turn};
use crate::wire::{Framing, Wire};

/// A request the server received on a provider endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    pub method: String,
    /// The request target, query included.
    pub path: String,
    /// In the order received, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when it is not JSON.
    pub body: Value,
    /// Whose endpoint the path named.
    pub provider: Wire,
}

impl Recorded {
    /// The first header with this name (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server keeps per API key.
#[derive(Debug, Default)]
struct KeyState {
    replies: VecDeque<Reply>,
    /// Answers every request once `replies` is empty, instead of the
    /// default reply.
    forever: Option<Reply>,
    /// Chooses the reply from the request once `replies` is empty, before
    /// `forever`.
    respond: Option<Responder>,
    requests: Vec<Recorded>,
}

/// A test's function from a request to its reply ([`crate::FakeLlm::respond_with`]).
#[derive(Clone)]
pub(crate) struct Responder(pub(crate) Arc<dyn Fn(&Recorded) -> Reply + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder(..)")
    }
}

/// State shared by the server and the [`crate::FakeLlm`] handle.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    keys: Mutex<HashMap<String, KeyState>>,
    seq: AtomicU64,
}

impl Shared {
    fn keys(&self) -> MutexGuard<'_, HashMap<String, KeyState>> {
        // A panic while holding the lock leaves the maps consistent (every
        // update is a single push or pop), so a poisoned lock is still usable.
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn script(&self, api_key: &str, replies: impl IntoIterator<Item = Reply>) -> usize {
        let mut keys = self.keys();
        let state = keys.entry(api_key.to_owned()).or_default();
        state.replies.extend(replies);
        state.replies.len()
    }

    pub(crate) fn script_forever(&self, api_key: &str, reply: Reply) {
        self.keys().entry(api_key.to_owned()).or_default().forever = Some(reply);
    }

    pub(crate) fn respond_with(&self, api_key: &str, respond: Responder) {
        self.keys().entry(api_key.to_owned()).or_default().respond = Some(respond);
    }

    pub(crate) fn requests(&self, api_key: &str) -> Vec<Recorded> {
        self.keys()
            .get(api_key)
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }

    pub(crate) fn pending(&self, api_key: &str) -> usize {
        self.keys().get(api_key).map_or(0, |s| s.replies.len())
    }

    fn record(&self, api_key: &str, recorded: Recorded) {
        self.keys()
            .entry(api_key.to_owned())
            .or_default()
            .requests
            .push(recorded);
    }

    fn next_reply(&self, api_key: &str, request: &Recorded) -> Option<Reply> {
        let respond = {
            let mut keys = self.keys();
            let state = keys.get_mut(api_key)?;
            if let Some(reply) = state.replies.pop_front() {
                return Some(reply);
            }
            match &state.respond {
                Some(respond) => Arc::clone(&respond.0),
                None => return state.forever.clone(),
            }
        };
        // Called without the lock held: the function is the test's code.
        Some(respond(request))
    }

    fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Accept connections until `shutdown` fires (or its sender is dropped).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
                }
                // Out of file descriptors and the like: let it pass.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let mut conn = Conn::new(stream);
    let request = match conn.read_request().await {
        Ok(Some(request)) => request,
        Ok(None) => return,
        Err(e) => {
            let body =
                json!({"error": {"message": format!("bad request: {e}"), "type": "bad_request"}});
            let _ = conn.respond(400, &[], body.to_string().as_bytes()).await;
            return;
        }
    };
    // A client that went away mid-answer is the client's business.
    let _ = answer(&mut conn, &shared, request).await;
}

async fn answer(conn: &mut Conn, shared: &Shared, request: Request) -> std::io::Result<()> {
    // A reachability probe (Claude Code sends `HEAD /api/hello` at start
    // unless its nonessential traffic is off): the server is up. No body,
    // as HEAD asks.
    if request.method == "HEAD" {
        return conn.respond(200, &[], b"").await;
    }
    if let Some(control) = request.route().strip_prefix("/_fake/") {
        let (status, body) = control_endpoint(shared, &request, control);
        return conn.respond(status, &[], body.to_string().as_bytes()).await;
    }
    let Some(wire) = Wire::from_route(request.route()) else {
        let body = json!({"error": {
            "message": format!("the fake LLM server has no endpoint at {}", request.route()),
            "type": "not_found_error",
        }});
        return conn.respond(404, &[], body.to_string().as_bytes()).await;
    };

    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let api_key = wire.api_key(&request);
    let recorded = Recorded {
        method: request.method.clone(),
        path: request.path.clone(),
        headers: request.headers.clone(),
        body: body.clone(),
        provider: wire,
    };
    shared.record(api_key.as_deref().unwrap_or(""), recorded.clone());
    let refusal = if request.method != "POST" {
        Some((
            405,
            format!("{} is not allowed here; use POST", request.method),
        ))
    } else if api_key.is_none() {
        Some((401, "no API key was sent".to_owned()))
    } else {
        wire.reject(&request, &body)
    };
    if let Some((status, message)) = refusal {
        let body = wire.error(status, &message);
        return conn.respond(status, &[], body.to_string().as_bytes()).await;
    }
    let api_key = api_key.unwrap_or_default();

    let request_chars = String::from_utf8_lossy(&request.body).chars().count();
    let reply = shared.next_reply(&api_key, &recorded).unwrap_or_else(|| {
        let user_text = wire.last_user_text(&body).unwrap_or_default();
        Reply::Text(Turn::default_text(&user_text))
    });
    let ctx = Ctx {
        model: wire.model(&request, &body),
        seq: shared.next_seq(),
        include_usage: wire.include_usage(&body),
    };
    let framing = wire.framing(&request, &body);
    let resolve = |text, tool_calls, usage, finish| {
        Turn::resolve(text, tool_calls, usage, finish, request_chars, ctx.seq)
    };

    match reply {
        Reply::Text(text) => {
            let turn = resolve(Some(text), Vec::new(), None, None);
            send_turn(conn, wire, framing, &turn, &ctx).await
        }
        Reply::ToolCalls(calls) => {
            let turn = resolve(None, calls, None, None);
            send_turn(conn, wire, framing, &turn, &ctx).await
        }
        Reply::Turn {
            text,
            tool_calls,
            usage,
            finish,
        } => {
            let turn = resolve(text, tool_calls, usage, finish);
            send_turn(conn, wire, framing, &turn, &ctx).await
        }
        Reply::Error {
            status,
            retry_after,
            message,
        } => {
            let headers: Vec<(String, String)> = retry_after
                .map(|s| ("Retry-After".to_owned(), s.to_string()))
                .into_iter()
                .collect();
            let body = wire.error(status, &message);
            conn.respond(status, &headers, body.to_string().as_bytes())
                .await
        }
        Reply::Hang => {
            conn.wait_for_close().await;
            Ok(())
        }
        Reply::BreakStream { after_events, text } => {
            let turn = resolve(Some(text), Vec::new(), None, None);
            match framing {
                Framing::Sse => {
                    let events = wire.events(&turn, &ctx);
                    let sent = after_events.min(events.len().saturating_sub(1));
                    conn.start_stream(200).await?;
                    for event in &events[..sent] {
                        send_event(conn, wire, event).await?;
                    }
                    conn.close().await
                }
                Framing::Whole | Framing::JsonArray => {
                    let body = whole_body(wire, framing, &turn, &ctx);
                    let half = &body.as_bytes()[..body.len() / 2];
                    conn.respond_truncated(200, &[], half, body.len()).await
                }
            }
        }
        Reply::BreakInToolCall { tool_calls } => {
            let first_name = tool_calls.first().map(|c| c.name.clone());
            let turn = resolve(None, tool_calls, None, None);
            match framing {
                Framing::Sse => {
                    let events = wire.events(&turn, &ctx);
                    let named = first_name
                        .map(|name| format!("\"name\":{}", Value::String(name)))
                        .and_then(|needle| events.iter().position(|e| e.data.contains(&needle)))
                        .unwrap_or(0);
                    let sent = (named + 2).min(events.len().saturating_sub(1));
                    conn.start_stream(200).await?;
                    for event in &events[..sent] {
                        send_event(conn, wire, event).await?;
                    }
                    conn.close().await
                }
                Framing::Whole | Framing::JsonArray => {
                    let body = whole_body(wire, framing, &turn, &ctx);
                    let half = &body.as_bytes()[..body.len() / 2];
                    conn.respond_truncated(200, &[], half, body.len()).await
                }
            }
        }
        Reply::MalformedSse => match framing {
            Framing::Sse => {
                conn.start_stream(200).await?;
                for event in MALFORMED_EVENTS {
                    conn.send_chunk(event.as_bytes()).await?;
                }
                conn.end_stream().await
            }
            Framing::Whole | Framing::JsonArray => {
                conn.respond(200, &[], b"{\"id\": \"truncated\", \"content\": [")
                    .await
            }
        },
        Reply::RawStatus {
            status,
            body,
            headers,
        } => conn.respond(status, &headers, body.as_bytes()).await,
    }
}

/// What [`Reply::MalformedSse`] streams: JSON cut short, a line that is no
/// SSE field, and an event whose data is not JSON at all.
const MALFORMED_EVENTS: [&str; 3] = [
    "event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"id\": \n\n",
    "this line is not server-sent events\n\n",
    "data: <html>502 Bad Gateway</html>\n\n",
];

/// A non-streaming body, or for [`Framing::JsonArray`] the chunks as one array.
fn whole_body(wire: Wire, framing: Framing, turn: &Turn, ctx: &Ctx) -> String {
    match framing {
        Framing::JsonArray => {
            let chunks: Vec<String> = wire.events(turn, ctx).into_iter().map(|e| e.data).collect();
            format!("[{}]", chunks.join(",\n"))
        }
        Framing::Whole | Framing::Sse => wire.body(turn, ctx).to_string(),
    }
}

async fn send_turn(
    conn: &mut Conn,
    wire: Wire,
    framing: Framing,
    turn: &Turn,
    ctx: &Ctx,
) -> std::io::Result<()> {
    match framing {
        Framing::Sse => {
            conn.start_stream(200).await?;
            for event in wire.events(turn, ctx) {
                send_event(conn, wire, &event).await?;
            }
            conn.end_stream().await
        }
        Framing::Whole | Framing::JsonArray => {
            let body = whole_body(wire, framing, turn, ctx);
            conn.respond(200, &[], body.as_bytes()).await
        }
    }
}

async fn send_event(conn: &mut Conn, wire: Wire, event: &SseEvent) -> std::io::Result<()> {
    conn.send_chunk(event.encode(wire.line_end()).as_bytes())
        .await
}

/// `POST /_fake/script/{key}` and `GET /_fake/requests/{key}`: `(status, body)`.
fn control_endpoint(shared: &Shared, request: &Request, control: &str) -> (u16, Value) {
    let (what, key) = control.split_once('/').unwrap_or((control, ""));
    let key = percent_decode(key, false);
    match (request.method.as_str(), what) {
        ("POST", "script") => {
            let parsed = serde_json::from_slice::<Vec<Reply>>(&request.body)
                .or_else(|_| serde_json::from_slice::<Reply>(&request.body).map(|r| vec![r]));
            match parsed {
                Ok(replies) => {
                    let queued = replies.len();
                    let pending = shared.script(&key, replies);
                    (200, json!({"queued": queued, "pending": pending}))
                }
                Err(e) => (
                    400,
                    json!({"error": {"message": format!("not a reply or a list of replies: {e}")}}),
                ),
            }
        }
        ("POST", "forever") => match serde_json::from_slice::<Reply>(&request.body) {
            Ok(reply) => {
                shared.script_forever(&key, reply);
                (200, json!({"forever": true}))
            }
            Err(e) => (
                400,
                json!({"error": {"message": format!("not a reply: {e}")}}),
            ),
        },
        ("GET", "requests") => (200, json!(shared.requests(&key))),
        ("GET", "pending") => (200, json!({"pending": shared.pending(&key)})),
        _ => (
            404,
            json!({"error": {"message": "use POST /_fake/script/{key}, POST /_fake/forever/{key}, GET /_fake/requests/{key} or GET /_fake/pending/{key}"}}),
        ),
    }
}
