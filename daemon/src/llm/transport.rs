//! One HTTP attempt: send the provider's request, classify an error status,
//! read the reply whole or as a stream of server-sent events, all under
//! timeouts. Retries and failover live in `client.rs`, not here.

use std::sync::Once;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::error::LlmError;
use super::providers::{HttpCall, Wire};
use super::sse::SseParser;
use super::types::{Response, StreamEvent};

/// How long a call may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// From sending the request to the whole reply (non-streaming) or to the
    /// reply's headers (streaming).
    pub request: Duration,
    /// The longest a stream may stay silent between chunks.
    pub stream_idle: Duration,
}

impl Default for Timeouts {
    /// Ten minutes per request; five minutes of stream silence (a model may
    /// think for long before its first token).
    fn default() -> Timeouts {
        Timeouts {
            request: Duration::from_secs(600),
            stream_idle: Duration::from_secs(300),
        }
    }
}

/// The HTTP client (one connection pool per [`super::LlmClient`]).
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    http: reqwest::Client,
    pub timeouts: Timeouts,
}

impl Transport {
    pub(crate) fn new(timeouts: Timeouts) -> Result<Transport, LlmError> {
        static CRYPTO: Once = Once::new();
        CRYPTO.call_once(|| {
            // Fails only when another provider was installed first, which
            // serves as well.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
        let http = reqwest::Client::builder()
            .user_agent(concat!("weft/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Transport { http, timeouts })
    }

    /// Sends `call` once and reads the reply, reporting stream deltas to
    /// `on_delta`. `api_key` is only used to scrub error messages.
    pub(crate) async fn send<D: FnMut(StreamEvent)>(
        &self,
        provider: &str,
        wire: Wire,
        call: &HttpCall,
        stream: bool,
        api_key: Option<&str>,
        on_delta: D,
    ) -> Result<Response, LlmError> {
        self.send_inner(provider, wire, call, stream, on_delta)
            .await
            .map_err(|e| redact_error(e, api_key))
    }

    async fn send_inner<D: FnMut(StreamEvent)>(
        &self,
        provider: &str,
        wire: Wire,
        call: &HttpCall,
        stream: bool,
        mut on_delta: D,
    ) -> Result<Response, LlmError> {
        let mut builder = self
            .http
            .post(&call.url)
            .header("content-type", "application/json")
            .header(
                "accept",
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        for (name, value) in &call.headers {
            builder = builder.header(*name, value);
        }
        // The body was encoded once when the call was built; each attempt
        // sends a copy of those bytes (one allocation, whatever the size).
        let request = builder.body(call.body.clone());

        let started = Instant::now();
        let limit = self.timeouts.request;
        let timeout = || LlmError::Timeout {
            provider: provider.to_string(),
            after: limit,
        };
        let mut response = tokio::time::timeout(limit, request.send())
            .await
            .map_err(|_| timeout())?
            .map_err(|e| request_error(provider, &e, limit))?;

        let status = response.status().as_u16();
        if !response.status().is_success() {
            let retry_after = retry_after(response.headers());
            let left = limit.saturating_sub(started.elapsed());
            // The error body is only for the message: a slow one is skipped.
            let body = match tokio::time::timeout(left, response.bytes()).await {
                Ok(Ok(body)) => body.to_vec(),
                _ => Vec::new(),
            };
            return Err(status_error(provider, status, retry_after, &body));
        }

        if !stream {
            let left = limit.saturating_sub(started.elapsed());
            let body = tokio::time::timeout(left, response.bytes())
                .await
                .map_err(|_| timeout())?
                .map_err(|e| LlmError::Network {
                    provider: provider.to_string(),
                    message: format!("reading the reply: {}", error_chain(&e)),
                })?;
            let json: Value =
                serde_json::from_slice(&body).map_err(|e| LlmError::InvalidResponse {
                    provider: provider.to_string(),
                    message: format!("the reply is not JSON ({e}): {}", snippet(&body)),
                })?;
            return wire.parse(provider, &json);
        }

        let mut parser = SseParser::new();
        let mut decoder = wire.decoder(provider);
        let idle = self.timeouts.stream_idle;
        loop {
            let chunk = tokio::time::timeout(idle, response.chunk())
                .await
                .map_err(|_| LlmError::Timeout {
                    provider: provider.to_string(),
                    after: idle,
                })?
                .map_err(|e| LlmError::BrokenStream {
                    provider: provider.to_string(),
                    message: error_chain(&e),
                })?;
            let Some(chunk) = chunk else { break };
            for event in parser.feed(&chunk) {
                for delta in decoder.event(&event)? {
                    on_delta(delta);
                }
            }
        }
        if let Some(event) = parser.finish() {
            for delta in decoder.event(&event)? {
                on_delta(delta);
            }
        }
        decoder.finish()
    }
}

/// A failure to send, before any status arrived.
fn request_error(provider: &str, e: &reqwest::Error, limit: Duration) -> LlmError {
    if e.is_builder() {
        return LlmError::Config(format!(
            "bad request URL for provider `{provider}`: {}",
            error_chain(e)
        ));
    }
    if e.is_timeout() {
        return LlmError::Timeout {
            provider: provider.to_string(),
            after: limit,
        };
    }
    LlmError::Network {
        provider: provider.to_string(),
        message: error_chain(e),
    }
}

/// An error with its causes ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// The error for an HTTP error status (failures.mdx's classification).
pub(crate) fn status_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> LlmError {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let message = json
        .as_ref()
        .and_then(Wire::error_message)
        .unwrap_or_else(|| snippet(body));
    let haystack = format!(
        "{} {}",
        message.to_ascii_lowercase(),
        String::from_utf8_lossy(body).to_ascii_lowercase()
    );
    let retry_after = retry_after.or_else(|| json.as_ref().and_then(body_retry_delay));
    let provider = provider.to_string();
    match status {
        401 | 403 => LlmError::Auth {
            provider,
            status,
            message,
        },
        404 => LlmError::NotFound { provider, message },
        413 => LlmError::ContextLength { provider, message },
        402 => LlmError::QuotaExceeded { provider, message },
        429 if is_quota(&haystack) => LlmError::QuotaExceeded { provider, message },
        429 => LlmError::RateLimited {
            provider,
            retry_after,
            message,
        },
        408 | 500..=599 => LlmError::Server {
            provider,
            status,
            message,
        },
        _ if is_context_length(&haystack) => LlmError::ContextLength { provider, message },
        400..=499 => LlmError::BadRequest {
            provider,
            status,
            message,
        },
        _ => LlmError::InvalidResponse {
            provider,
            message: format!("unexpected HTTP {status}: {message}"),
        },
    }
}

fn is_quota(text: &str) -> bool {
    ["insufficient_quota", "billing", "credit balance"]
        .iter()
        .any(|m| text.contains(m))
}

fn is_context_length(text: &str) -> bool {
    [
        "context_length",
        "context length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "exceeds the maximum number of tokens",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// The start of a body, for messages.
fn snippet(body: &[u8]) -> String {
    const MAX: usize = 500;
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty body)".to_string();
    }
    // The first MAX characters, then the `…` that marks a cut.
    crate::util::text::truncate(text, MAX + 1)
}

/// `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.trim().parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    parse_retry_after(header("retry-after")?, SystemTime::now())
}

/// A `Retry-After` value: seconds, or an HTTP date (measured from `now`).
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form servers send.
fn parse_http_date(value: &str) -> Option<SystemTime> {
    let fields: Vec<&str> = value.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = fields.as_slice() else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let year: i64 = year.parse().ok()?;
    let mut hms = time.split(':').map(|n| n.parse::<i64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Gemini's `RetryInfo` detail (`"retryDelay": "30s"`) in an error body.
fn body_retry_delay(json: &Value) -> Option<Duration> {
    let details = json.get("error")?.get("details")?.as_array()?;
    details.iter().find_map(|d| {
        let delay = d.get("retryDelay")?.as_str()?;
        humantime::parse_duration(delay).ok()
    })
}

/// `error` with every occurrence of `key` replaced, so a provider echoing a
/// key back never puts it in an event, a log or the database.
pub(crate) fn redact_error(mut error: LlmError, key: Option<&str>) -> LlmError {
    let Some(key) = key.filter(|k| k.len() >= 4) else {
        return error;
    };
    match &mut error {
        LlmError::RateLimited { message, .. }
        | LlmError::QuotaExceeded { message, .. }
        | LlmError::Server { message, .. }
        | LlmError::Network { message, .. }
        | LlmError::BrokenStream { message, .. }
        | LlmError::Auth { message, .. }
        | LlmError::BadRequest { message, .. }
        | LlmError::ContextLength { message, .. }
        | LlmError::NotFound { message, .. }
        | LlmError::InvalidResponse { message, .. }
        | LlmError::Config(message) => {
            if message.contains(key) {
                *message = message.replace(key, "[redacted]");
            }
        }
        LlmError::MissingKey { .. }
        | LlmError::UnknownProvider { .. }
        | LlmError::Timeout { .. } => {}
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_like_the_reference() {
        let e = |status, body: &str| status_error("p", status, None, body.as_bytes()).code();
        assert_eq!(e(401, "{}"), "llm.auth");
        assert_eq!(e(403, ""), "llm.auth");
        assert_eq!(e(404, ""), "llm.not_found");
        assert_eq!(
            e(429, r#"{"error":{"message":"slow down"}}"#),
            "llm.rate_limited"
        );
        assert_eq!(
            e(
                429,
                r#"{"error":{"code":"insufficient_quota","message":"You exceeded your current quota"}}"#
            ),
            "llm.quota_exceeded"
        );
        assert_eq!(e(500, ""), "llm.server");
        assert_eq!(
            e(
                529,
                r#"{"type":"error","error":{"type":"overloaded_error"}}"#
            ),
            "llm.server"
        );
        assert_eq!(e(400, r#"{"error":{"message":"bad"}}"#), "llm.bad_request");
        assert_eq!(
            e(
                400,
                r#"{"error":{"message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#
            ),
            "llm.context_length"
        );
        assert_eq!(e(413, ""), "llm.context_length");
    }

    #[test]
    fn error_messages_come_from_the_body() {
        let err = status_error(
            "openai",
            400,
            None,
            br#"{"error":{"message":"bad tool schema"}}"#,
        );
        assert_eq!(
            err.to_string(),
            "openai rejected the request (HTTP 400): bad tool schema"
        );
        let err = status_error("p", 502, None, b"<html>Bad gateway</html>");
        assert!(err.to_string().contains("Bad gateway"));
    }

    #[test]
    fn retry_after_in_seconds_dates_and_gemini_bodies() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:47 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        let body = br#"{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}"#;
        assert_eq!(
            status_error("gemini", 429, None, body).retry_after(),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn keys_echoed_by_a_provider_are_redacted() {
        let err = status_error(
            "openai",
            401,
            None,
            br#"{"error":{"message":"Incorrect API key provided: sk-secret-123"}}"#,
        );
        let err = redact_error(err, Some("sk-secret-123"));
        assert!(!err.to_string().contains("sk-secret-123"), "{err}");
        assert!(err.to_string().contains("[redacted]"));
    }
}
