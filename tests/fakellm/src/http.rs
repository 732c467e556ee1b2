//! Just enough HTTP/1.1: one request per connection, answered with
//! `Connection: close`, either whole (`Content-Length`) or as a chunked
//! `text/event-stream` flushed event by event.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// Limits that keep a confused client from making the server allocate without bound.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// A parsed request. Header names are lowercased; `path` keeps the query.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first header with this (lowercase) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path without its query.
    pub fn route(&self) -> &str {
        self.path.split_once('?').map_or(&self.path, |(p, _)| p)
    }

    /// The percent-decoded value of a query parameter.
    pub fn query(&self, name: &str) -> Option<String> {
        let (_, query) = self.path.split_once('?')?;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k, true) == name).then(|| percent_decode(v, true))
        })
    }
}

/// `%XX` escapes decoded; `+` is a space only in a query.
pub(crate) fn percent_decode(s: &str, plus_is_space: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One accepted connection.
pub(crate) struct Conn {
    stream: BufReader<TcpStream>,
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

impl Conn {
    pub fn new(stream: TcpStream) -> Conn {
        Conn {
            stream: BufReader::new(stream),
        }
    }

    /// Read one request. `Ok(None)` when the client closed before sending one.
    pub async fn read_request(&mut self) -> io::Result<Option<Request>> {
        let mut head_bytes = 0;
        let Some(request_line) = self.read_line(&mut head_bytes).await? else {
            return Ok(None);
        };
        let mut parts = request_line.split_whitespace();
        let (Some(method), Some(path), Some(version)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad("malformed request line"));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(bad("only HTTP/1.x is spoken here"));
        }
        let (method, path) = (method.to_owned(), path.to_owned());

        let mut headers = Vec::new();
        loop {
            let line = self
                .read_line(&mut head_bytes)
                .await?
                .ok_or_else(|| bad("connection closed inside the headers"))?;
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| bad("header line without a colon"))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
        let mut request = Request {
            method,
            path,
            headers,
            body: Vec::new(),
        };

        if request
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            self.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if chunked {
            request.body = self.read_chunked_body().await?;
        } else if let Some(len) = request.header("content-length") {
            let len: usize = len.parse().map_err(|_| bad("bad Content-Length"))?;
            if len > MAX_BODY_BYTES {
                return Err(bad("body too large"));
            }
            let mut body = vec![0; len];
            self.stream.read_exact(&mut body).await?;
            request.body = body;
        }
        Ok(Some(request))
    }

    /// A line without its CRLF (a bare LF is tolerated); `None` at EOF before any byte.
    async fn read_line(&mut self, budget_used: &mut usize) -> io::Result<Option<String>> {
        let mut buf = Vec::new();
        let limit = (MAX_HEAD_BYTES.saturating_sub(*budget_used) + 1) as u64;
        let n = (&mut self.stream)
            .take(limit)
            .read_until(b'\n', &mut buf)
            .await?;
        *budget_used += n;
        if n == 0 {
            return Ok(None);
        }
        if *budget_used > MAX_HEAD_BYTES {
            return Err(bad("request head too large"));
        }
        if buf.last() != Some(&b'\n') {
            return Err(bad("connection closed inside a line"));
        }
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        String::from_utf8(buf)
            .map(Some)
            .map_err(|_| bad("request head is not UTF-8"))
    }

    async fn read_chunked_body(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        let mut budget = 0;
        loop {
            let line = self
                .read_line(&mut budget)
                .await?
                .ok_or_else(|| bad("connection closed inside a chunked body"))?;
            budget = 0;
            let size = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while let Some(line) = self.read_line(&mut budget).await? {
                    if line.is_empty() {
                        break;
                    }
                }
                return Ok(body);
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(bad("body too large"));
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.stream.read_exact(&mut body[start..]).await?;
            let mut crlf = [0; 2];
            self.stream.read_exact(&mut crlf).await?;
        }
    }

    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        let stream = self.stream.get_mut();
        stream.write_all(bytes).await?;
        stream.flush().await
    }

    /// A whole response: status line, headers, `Content-Length`, body, then close.
    pub async fn respond(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut head = status_line(status);
        push_headers(&mut head, headers, "application/json");
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.write_all(&bytes).await?;
        self.close().await
    }

    /// Headers announcing `Content-Length: declared_len`, then only `body`, then close.
    pub async fn respond_truncated(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
        declared_len: usize,
    ) -> io::Result<()> {
        let mut head = status_line(status);
        push_headers(&mut head, headers, "application/json");
        head.push_str(&format!(
            "Content-Length: {declared_len}\r\nConnection: close\r\n\r\n"
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.write_all(&bytes).await?;
        self.close().await
    }

    /// Start a chunked `text/event-stream` response.
    pub async fn start_stream(&mut self, status: u16) -> io::Result<()> {
        let mut head = status_line(status);
        head.push_str(
            "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        );
        self.write_all(head.as_bytes()).await
    }

    /// One chunk of a streamed body, flushed at once.
    pub async fn send_chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            // An empty chunk would end the body.
            return Ok(());
        }
        let mut bytes = format!("{:x}\r\n", data.len()).into_bytes();
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(b"\r\n");
        self.write_all(&bytes).await
    }

    /// End a streamed body properly and close.
    pub async fn end_stream(&mut self) -> io::Result<()> {
        self.write_all(b"0\r\n\r\n").await?;
        self.close().await
    }

    /// Close the write side (FIN) without ending any body in progress.
    pub async fn close(&mut self) -> io::Result<()> {
        self.stream.get_mut().shutdown().await
    }

    /// Wait until the client closes the connection (or it fails).
    pub async fn wait_for_close(&mut self) {
        let mut buf = [0; 1024];
        while let Ok(n) = self.stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    }
}

fn status_line(status: u16) -> String {
    format!("HTTP/1.1 {status} {}\r\n", reason(status))
}

fn push_headers(head: &mut String, headers: &[(String, String)], default_type: &str) {
    let has_type = headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
    if !has_type {
        head.push_str(&format!("Content-Type: {default_type}\r\n"));
    }
    for (name, value) in headers {
        // Framing is ours to decide.
        let framing = ["content-length", "transfer-encoding", "connection"]
            .iter()
            .any(|f| name.eq_ignore_ascii_case(f));
        if !framing {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        418 => "I'm a teapot",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_percent_decoded() {
        let request = Request {
            method: "POST".into(),
            path: "/v1beta/models/m:streamGenerateContent?alt=sse&key=a%2Fb+c".into(),
            headers: vec![],
            body: vec![],
        };
        assert_eq!(request.query("key").as_deref(), Some("a/b c"));
        assert_eq!(request.query("alt").as_deref(), Some("sse"));
        assert_eq!(request.query("nope"), None);
        assert_eq!(request.route(), "/v1beta/models/m:streamGenerateContent");
    }
}
