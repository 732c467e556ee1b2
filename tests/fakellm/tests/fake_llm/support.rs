//! A tiny raw HTTP/1.1 client over `std::net::TcpStream`, an SSE splitter,
//! and request builders for the four providers.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};
use weft_fakellm::FakeLlm;

/// A response as read up to the server's close.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// De-chunked when the response was chunked.
    pub body: Vec<u8>,
    /// The body ended as its framing says (terminal chunk, or Content-Length reached).
    pub complete: bool,
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", self.text()))
    }

    /// The body split into server-sent events (CRLF or LF line endings).
    pub fn events(&self) -> Vec<Event> {
        assert_eq!(
            self.header("content-type"),
            Some("text/event-stream"),
            "a stream is served as text/event-stream"
        );
        let text = self.text().replace("\r\n", "\n");
        text.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut event = Event {
                    event: None,
                    data: String::new(),
                };
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event.event = Some(name.to_owned());
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        if !event.data.is_empty() {
                            event.data.push('\n');
                        }
                        event.data.push_str(data);
                    }
                }
                event
            })
            .collect()
    }
}

/// Send one request and read the response up to EOF.
pub fn try_send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    read_timeout: Duration,
) -> io::Result<Response> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(read_timeout))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let chunked = headers
        .iter()
        .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    if !chunked {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(parse_response(&raw))
}

pub fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    try_send(addr, method, path, headers, body, Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn parse_response(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let rest = &raw[split + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
        complete: false,
    };
    if response
        .header("transfer-encoding")
        .is_some_and(|v| v.contains("chunked"))
    {
        let (body, complete) = dechunk(rest);
        response.body = body;
        response.complete = complete;
    } else {
        let declared: Option<usize> = response
            .header("content-length")
            .and_then(|v| v.parse().ok());
        response.body = rest.to_vec();
        response.complete = declared.is_none_or(|n| n == rest.len());
    }
    response
}

/// The chunk payloads, and whether the terminating zero chunk arrived.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size = std::str::from_utf8(&raw[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok());
        let Some(size) = size else {
            return (body, false);
        };
        if size == 0 {
            return (body, true);
        }
        let data = &raw[eol + 2..];
        if data.len() < size + 2 {
            body.extend_from_slice(&data[..data.len().min(size)]);
            return (body, false);
        }
        body.extend_from_slice(&data[..size]);
        raw = &data[size + 2..];
    }
}

/// The four providers, as a client would call them.
#[derive(Debug, Clone, Copy)]
pub enum Provider {
    Anthropic,
    Responses,
    Chat,
    Gemini,
}

pub const ALL: [Provider; 4] = [
    Provider::Anthropic,
    Provider::Responses,
    Provider::Chat,
    Provider::Gemini,
];

pub const MODEL: &str = "fake-model-1";

impl Provider {
    /// A minimal request asking `prompt`, streamed or not.
    pub fn request(self, prompt: &str, stream: bool) -> Value {
        match self {
            Provider::Anthropic => json!({
                "model": MODEL, "max_tokens": 1024, "stream": stream,
                "system": "be brief",
                "messages": [{"role": "user", "content": prompt}],
            }),
            Provider::Responses => json!({
                "model": MODEL, "stream": stream, "instructions": "be brief",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}],
            }),
            Provider::Chat => json!({
                "model": MODEL, "stream": stream,
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": prompt},
                ],
            }),
            Provider::Gemini => json!({
                "systemInstruction": {"parts": [{"text": "be brief"}]},
                "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            }),
        }
    }

    pub fn path(self, stream: bool) -> String {
        match (self, stream) {
            (Provider::Anthropic, _) => "/v1/messages".into(),
            (Provider::Responses, _) => "/v1/responses".into(),
            (Provider::Chat, _) => "/v1/chat/completions".into(),
            (Provider::Gemini, false) => format!("/v1beta/models/{MODEL}:generateContent"),
            (Provider::Gemini, true) => {
                format!("/v1beta/models/{MODEL}:streamGenerateContent?alt=sse")
            }
        }
    }

    /// Send `body` with `key` where this provider's clients put it.
    pub fn send(self, server: &FakeLlm, key: &str, stream: bool, body: &Value) -> Response {
        let bearer = format!("Bearer {key}");
        let mut headers = vec![("Content-Type", "application/json")];
        match self {
            Provider::Anthropic => {
                headers.push(("x-api-key", key));
                headers.push(("anthropic-version", "2023-06-01"));
            }
            Provider::Responses | Provider::Chat => headers.push(("Authorization", &bearer)),
            Provider::Gemini => headers.push(("x-goog-api-key", key)),
        }
        send(
            server.addr(),
            "POST",
            &self.path(stream),
            &headers,
            body.to_string().as_bytes(),
        )
    }

    /// Ask `prompt`, streamed or not.
    pub fn ask(self, server: &FakeLlm, key: &str, prompt: &str, stream: bool) -> Response {
        self.send(server, key, stream, &self.request(prompt, stream))
    }

    /// The assistant text of a whole reply.
    pub fn text_of(self, reply: &Value) -> String {
        match self {
            Provider::Anthropic => join(reply["content"].as_array(), |b| {
                (b["type"] == "text").then(|| b["text"].as_str().unwrap_or_default().to_owned())
            }),
            Provider::Responses => join(reply["output"].as_array(), |item| {
                (item["type"] == "message").then(|| {
                    join(item["content"].as_array(), |c| {
                        c["text"].as_str().map(str::to_owned)
                    })
                })
            }),
            Provider::Chat => reply["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            Provider::Gemini => join(reply["candidates"][0]["content"]["parts"].as_array(), |p| {
                p["text"].as_str().map(str::to_owned)
            }),
        }
    }

    /// The assistant text of a streamed reply, from its deltas.
    pub fn streamed_text(self, events: &[Event]) -> String {
        events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .filter_map(|e| {
                let data = e.json();
                match self {
                    Provider::Anthropic => (data["delta"]["type"] == "text_delta")
                        .then(|| data["delta"]["text"].as_str().map(str::to_owned))
                        .flatten(),
                    Provider::Responses => (data["type"] == "response.output_text.delta")
                        .then(|| data["delta"].as_str().map(str::to_owned))
                        .flatten(),
                    Provider::Chat => data["choices"][0]["delta"]["content"]
                        .as_str()
                        .map(str::to_owned),
                    Provider::Gemini => Some(self.text_of(&data)),
                }
            })
            .collect()
    }
}

fn join(items: Option<&Vec<Value>>, f: impl Fn(&Value) -> Option<String>) -> String {
    items.into_iter().flatten().filter_map(f).collect()
}

/// A key no other test uses.
pub fn key(name: &str) -> String {
    format!("sk-test-{name}")
}
