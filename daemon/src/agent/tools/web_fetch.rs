//! `web_fetch` (agents/tools.mdx): one http(s) page, HTML as Markdown,
//! other text as is, binary refused. The reference's `prompt` (summarise
//! with a second model) is not done: the page itself is returned, and the
//! model asking reads it.

pub(super) mod markdown;

use std::sync::Once;
use std::time::Duration;

use serde_json::Value;

use super::{ToolOutput, Workspace, optional_u64, required_str};

/// `timeout_ms` when not given.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// No fetch takes longer, whatever `timeout_ms` asks.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes of a body read at most; the rest is not downloaded.
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// Characters of text returned at most (after the HTML conversion).
const MAX_OUTPUT_CHARS: usize = 100_000;
/// Redirects followed at most.
const MAX_REDIRECTS: usize = 5;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Fetch an http:// or https:// URL and return its content: HTML converted to Markdown \
         (scripts and styles dropped), other text as is; binary content is refused. Output is \
         capped at 100,000 characters. The page is returned whole: `prompt` is not used to \
         summarise it, so read what you need from the result.",
        serde_json::json!({"type":"object","properties":{"url":{"type":"string","description":"URL to fetch (http:// or https://)"},"prompt":{"type":"string","description":"What you are looking for (not used: the whole page is returned)"},"timeout_ms":{"type":"integer","description":"Timeout in milliseconds (default 30000, at most 60000)"}},"required":["url"]}),
    )
}

pub(super) async fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match fetch(workspace, arguments).await {
        Ok(output) | Err(output) => output,
    }
}

async fn fetch(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let given = required_str(arguments, "url")?;
    let url = reqwest::Url::parse(given.trim())
        .map_err(|e| ToolOutput::error(format!("`{given}` is not a valid URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolOutput::error(format!(
            "only http:// and https:// URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ToolOutput::error(format!("`{given}` has no host")));
    }
    let timeout = optional_u64(arguments, "timeout_ms")?
        .map_or(DEFAULT_TIMEOUT, |ms| Duration::from_millis(ms.max(1)))
        .min(MAX_TIMEOUT);
    let client = http_client()?;
    let request = async {
        let mut response = client
            .get(url.clone())
            .header(
                "accept",
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| ToolOutput::error(format!("cannot fetch {url}: {}", describe(&e))))?;
        let body = read_capped(&mut response, MAX_BODY_BYTES)
            .await
            .map_err(|e| {
                ToolOutput::error(format!(
                    "cannot read the reply from {url}: {}",
                    describe(&e)
                ))
            })?;
        Ok::<_, ToolOutput>((response, body))
    };
    let (response, (body, complete)) = tokio::select! {
        result = tokio::time::timeout(timeout, request) => result.map_err(|_| {
            ToolOutput::error(format!("fetching {url} timed out after {} ms", timeout.as_millis()))
        })??,
        reason = workspace.cancel.cancelled() => {
            return Err(ToolOutput::error(format!("the fetch was cancelled ({reason})")));
        }
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let kind = Kind::of(&content_type, &body);
    if kind == Kind::Binary {
        return Err(ToolOutput::error(format!(
            "{} is not text (Content-Type: {}); web_fetch returns text pages only",
            response.url(),
            if content_type.is_empty() {
                "none"
            } else {
                &content_type
            }
        )));
    }
    let text = String::from_utf8_lossy(&body);
    let mut out = format!("URL: {}\n", response.url());
    if !content_type.is_empty() {
        out.push_str(&format!("Content-Type: {content_type}\n"));
    }
    let content = if kind == Kind::Html {
        let page = markdown::to_markdown(&text);
        if !page.title.is_empty() {
            out.push_str(&format!("Title: {}\n", page.title));
        }
        page.markdown
    } else {
        text.into_owned()
    };
    out.push('\n');
    let total = content.chars().count();
    match content.char_indices().nth(MAX_OUTPUT_CHARS) {
        Some((end, _)) => {
            out.push_str(&content[..end]);
            out.push_str(&format!(
                "\n[... cut at {MAX_OUTPUT_CHARS} of {total} characters ...]\n"
            ));
        }
        None => out.push_str(&content),
    }
    if !complete {
        out.push_str(&format!(
            "\n[... only the first {MAX_BODY_BYTES} bytes of the body were read ...]\n"
        ));
    }
    if status.is_success() {
        Ok(ToolOutput::ok(out))
    } else {
        Err(ToolOutput::error(format!(
            "HTTP {status} from {}\n{out}",
            response.url()
        )))
    }
}

/// How a body is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
}

impl Kind {
    /// From the Content-Type, else from the bytes (a NUL means binary; a
    /// leading `<!doctype html` or `<html` means HTML).
    fn of(content_type: &str, body: &[u8]) -> Kind {
        let mime = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match mime.as_str() {
            "text/html" | "application/xhtml+xml" => Kind::Html,
            "" => {
                if body.iter().take(8192).any(|b| *b == 0) {
                    Kind::Binary
                } else {
                    let head =
                        String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
                    let head = head.trim_start();
                    if head.starts_with("<!doctype html") || head.starts_with("<html") {
                        Kind::Html
                    } else {
                        Kind::Text
                    }
                }
            }
            m if m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/json"
                        | "application/xml"
                        | "application/javascript"
                        | "application/ecmascript"
                        | "application/x-javascript"
                        | "application/toml"
                        | "application/yaml"
                        | "application/x-yaml"
                        | "application/x-sh"
                        | "application/sql"
                        | "application/graphql"
                        | "application/x-ndjson"
                ) =>
            {
                Kind::Text
            }
            _ => Kind::Binary,
        }
    }
}

/// Reads at most `cap` bytes of the body; `true` when that was all of it.
pub(super) async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// The client of the web tools: rustls (ring), bounded redirects, weft's
/// user agent.
pub(super) fn http_client() -> Result<reqwest::Client, ToolOutput> {
    static CRYPTO: Once = Once::new();
    CRYPTO.call_once(|| {
        // Fails only when a provider is installed already (the LLM
        // transport installs the same), which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
        .build()
        .map_err(|e| ToolOutput::error(format!("cannot set up the HTTP client: {e}")))
}

/// A reqwest error with its causes, which say what actually failed
/// (connection refused, too many redirects, a TLS error).
pub(super) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::exec::cancel::CancelReason;
    use serde_json::json;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};

    /// One canned reply of [`serve`]: the path it answers, then status
    /// line, headers and body.
    pub(crate) struct Reply {
        pub path: &'static str,
        pub status: &'static str,
        pub headers: Vec<(&'static str, String)>,
        pub body: Vec<u8>,
    }

    pub(crate) fn reply(path: &'static str, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            path,
            status: "200 OK",
            headers: vec![("Content-Type", content_type.to_string())],
            body: body.into(),
        }
    }

    /// A tiny HTTP/1.1 server on 127.0.0.1 (port 0) answering each request
    /// by its path from `replies` (404 otherwise), one connection at a
    /// time, until the test ends. Returns its base URL and the request
    /// heads it saw.
    pub(crate) fn serve(replies: Vec<Reply>) -> (String, Arc<Mutex<Vec<String>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let target = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                log.lock().expect("log").push(head);
                let found = replies
                    .iter()
                    .find(|r| target == r.path || target.split('?').next() == Some(r.path));
                let (status, headers, body) = match found {
                    Some(r) => (r.status, r.headers.clone(), r.body.clone()),
                    None => (
                        "404 Not Found",
                        vec![("Content-Type", "text/plain".into())],
                        b"no such page".to_vec(),
                    ),
                };
                let mut out = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    out.push_str(&format!("{name}: {value}\r\n"));
                }
                out.push_str("\r\n");
                let _ = stream.write_all(out.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        (base, seen)
    }

    use crate::agent::tools::workspace::scratch as workspace;

    #[tokio::test]
    async fn html_comes_back_as_markdown_and_text_as_is() {
        let (base, _) = serve(vec![
            reply(
                "/page",
                "text/html; charset=utf-8",
                "<html><head><title>Docs</title><script>alert(1)</script></head>\
                 <body><h2>Install</h2><p>Run <code>make</code>.</p><style>p{}</style></body></html>",
            ),
            reply("/data.json", "application/json", r#"{"a": "<b>"}"#),
            reply("/plain", "", "just text"),
        ]);
        let (_dir, ws) = workspace();
        let out = run(
            &ws,
            &json!({"url": format!("{base}/page"), "prompt": "ignored"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            format!(
                "URL: {base}/page\nContent-Type: text/html; charset=utf-8\nTitle: Docs\n\n## Install\n\nRun `make`.\n"
            )
        );
        let out = run(&ws, &json!({"url": format!("{base}/data.json")})).await;
        assert!(
            out.content.ends_with("\n\n{\"a\": \"<b>\"}"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"url": format!("{base}/plain")})).await;
        assert!(out.content.ends_with("\n\njust text"), "{}", out.content);
    }

    #[tokio::test]
    async fn binary_content_is_refused() {
        let (base, _) = serve(vec![
            reply("/logo.png", "image/png", b"\x89PNG\r\n\x1a\n\0\0".to_vec()),
            reply("/blob", "", b"abc\0def".to_vec()),
        ]);
        let (_dir, ws) = workspace();
        for path in ["/logo.png", "/blob"] {
            let out = run(&ws, &json!({"url": format!("{base}{path}")})).await;
            assert!(
                out.is_error && out.content.contains("is not text"),
                "{path}: {}",
                out.content
            );
        }
    }

    #[tokio::test]
    async fn large_bodies_are_capped() {
        let (base, _) = serve(vec![reply(
            "/big",
            "text/plain",
            "x".repeat(3 * 1024 * 1024),
        )]);
        let (_dir, ws) = workspace();
        let out = run(&ws, &json!({"url": format!("{base}/big")})).await;
        assert!(!out.is_error, "{}", &out.content[..200]);
        assert!(
            out.content.len() < MAX_OUTPUT_CHARS + 1_000,
            "{}",
            out.content.len()
        );
        assert!(
            out.content.contains("cut at 100000 of 2097152 characters"),
            "the read stopped at 2 MB"
        );
        assert!(out.content.contains("only the first 2097152 bytes"));
    }

    #[tokio::test]
    async fn redirects_are_followed_a_bounded_number_of_times() {
        let redirect = |from: &'static str, to: &str| Reply {
            path: from,
            status: "302 Found",
            headers: vec![("Location", to.to_string())],
            body: Vec::new(),
        };
        let (base, _) = serve(vec![
            redirect("/old", "/new"),
            reply("/new", "text/plain", "arrived"),
            redirect("/loop", "/loop"),
        ]);
        let (_dir, ws) = workspace();
        let out = run(&ws, &json!({"url": format!("{base}/old")})).await;
        assert_eq!(
            out.content,
            format!("URL: {base}/new\nContent-Type: text/plain\n\narrived")
        );
        let out = run(&ws, &json!({"url": format!("{base}/loop")})).await;
        assert!(
            out.is_error && out.content.contains("redirect"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn http_errors_are_errors_with_the_status() {
        let (base, _) = serve(vec![]);
        let (_dir, ws) = workspace();
        let out = run(&ws, &json!({"url": format!("{base}/missing")})).await;
        assert!(
            out.is_error && out.content.starts_with("HTTP 404 Not Found"),
            "{}",
            out.content
        );
        assert!(out.content.contains("no such page"), "{}", out.content);
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        // Accepts (in the kernel's backlog) and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        let (_dir, ws) = workspace();
        let out = run(&ws, &json!({"url": url, "timeout_ms": 200})).await;
        assert!(
            out.is_error && out.content.contains("timed out after 200 ms"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn a_cancel_stops_a_fetch_in_flight() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/", listener.local_addr().expect("addr"));
        let (_dir, ws) = workspace();
        let ws = Arc::new(ws);
        let fetching = {
            let ws = ws.clone();
            tokio::spawn(async move { run(&ws, &json!({"url": url})).await })
        };
        // The request is on the wire (and would wait 30 s for an answer).
        let connection = tokio::task::spawn_blocking(move || listener.accept())
            .await
            .expect("joined")
            .expect("accepted");
        ws.cancel.cancel(CancelReason::User("stop".into()));
        let out = fetching.await.expect("joined");
        assert!(
            out.is_error && out.content.contains("cancelled (stop)"),
            "{}",
            out.content
        );
        drop(connection);
    }

    #[tokio::test]
    async fn bad_urls_and_arguments_are_errors_the_model_can_read() {
        let (_dir, ws) = workspace();
        for (arguments, expected) in [
            (json!({}), "url"),
            (json!({"url": 5}), "url"),
            (
                json!({"url": "file:///etc/passwd"}),
                "only http:// and https://",
            ),
            (
                json!({"url": "ftp://example.org/x"}),
                "only http:// and https://",
            ),
            (
                json!({"url": "javascript:alert(1)"}),
                "only http:// and https://",
            ),
            (json!({"url": "not a url"}), "not a valid URL"),
            (json!({"url": "http://"}), "not a valid URL"),
            (
                json!({"url": "http://127.0.0.1:1/", "timeout_ms": "fast"}),
                "non-negative integer",
            ),
        ] {
            let out = run(&ws, &arguments).await;
            assert!(
                out.is_error && out.content.contains(expected),
                "{arguments}: {}",
                out.content
            );
        }
        // Nothing listens on port 1: the connection error is reported.
        let out = run(&ws, &json!({"url": "http://127.0.0.1:1/"})).await;
        assert!(
            out.is_error && out.content.starts_with("cannot fetch"),
            "{}",
            out.content
        );
    }
}
