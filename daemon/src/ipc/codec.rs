//! Line framing: one JSON message per line, `\n`-terminated, UTF-8, at most
//! [`MAX_FRAME_BYTES`] bytes (without the newline).
//!
//! A bad line never ends the connection by itself: a line that is too long
//! is read and discarded up to its newline, and a line that is not UTF-8 or
//! not JSON is consumed whole; each is reported as a recoverable
//! [`FrameError`], so the server can answer with an error and read the next
//! line. Only I/O errors and a connection closed mid-line are final.

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::protocol::error::RpcError;

/// The longest message accepted or sent, in bytes without the newline:
/// 8 MiB. Large data (command output, artifacts) lives in the store and is
/// paged (`run.events` with `limit`), so real messages stay far below it.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// Why a message could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The line exceeded the limit; it was read and discarded (or, when
    /// writing, nothing was written).
    #[error("the message exceeds the {limit}-byte limit")]
    TooLong { limit: usize },
    /// The line was not UTF-8; it was consumed.
    #[error("the message is not valid UTF-8")]
    InvalidUtf8,
    /// The line was not JSON, or not JSON of the expected shape; it was
    /// consumed.
    #[error("the message is not valid JSON: {0}")]
    InvalidJson(#[source] serde_json::Error),
    /// A message to send could not be serialised (nothing was written).
    #[error("cannot encode the message: {0}")]
    Encode(#[source] serde_json::Error),
    /// The peer closed the connection in the middle of a line.
    #[error("the connection closed in the middle of a message ({bytes} bytes unread)")]
    Truncated { bytes: usize },
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
}

impl FrameError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            FrameError::TooLong { .. } => "frame.too_long",
            FrameError::InvalidUtf8 => "frame.invalid_utf8",
            FrameError::InvalidJson(_) => "frame.invalid_json",
            FrameError::Encode(_) => "frame.encode",
            FrameError::Truncated { .. } => "frame.truncated",
            FrameError::Io(_) => "frame.io",
        }
    }

    /// True when the stream is still positioned at the start of the next
    /// line, so reading (or writing) may go on.
    #[must_use]
    pub(crate) fn is_recoverable(&self) -> bool {
        matches!(
            self,
            FrameError::TooLong { .. }
                | FrameError::InvalidUtf8
                | FrameError::InvalidJson(_)
                | FrameError::Encode(_)
        )
    }

    /// The reply a server sends for a request line it could not read:
    /// `-32700 rpc.parse_error` for bytes that are not JSON, `-32600
    /// rpc.too_long` for an oversized line, `-32603 rpc.internal` otherwise.
    #[must_use]
    pub(crate) fn to_rpc_error(&self) -> RpcError {
        match self {
            FrameError::TooLong { limit } => RpcError::too_long(*limit),
            FrameError::InvalidUtf8 | FrameError::InvalidJson(_) => {
                RpcError::parse_error(self.to_string())
            }
            _ => RpcError::internal(self.to_string()),
        }
    }
}

/// Reads `\n`-terminated JSON messages from a buffered byte stream.
///
/// [`FrameReader::read`] is cancel-safe: the partial line lives in the
/// reader, so dropping a pending read (say, in a `select!`) loses nothing.
#[derive(Debug)]
pub(crate) struct FrameReader<R> {
    inner: R,
    limit: usize,
    /// The current line so far.
    line: Vec<u8>,
    /// True while discarding the rest of a line that exceeded the limit.
    discarding: bool,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader with the [`MAX_FRAME_BYTES`] limit.
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader::with_limit(inner, MAX_FRAME_BYTES)
    }

    /// A reader refusing lines longer than `limit` bytes.
    pub(crate) fn with_limit(inner: R, limit: usize) -> FrameReader<R> {
        FrameReader {
            inner,
            limit,
            line: Vec::new(),
            discarding: false,
        }
    }

    /// The next message, or `None` at a clean end of stream (between
    /// lines). Blank lines are skipped.
    ///
    /// Errors: [`FrameError::TooLong`], [`FrameError::InvalidUtf8`] and
    /// [`FrameError::InvalidJson`] consumed the bad line and reading may go
    /// on; [`FrameError::Truncated`] and [`FrameError::Io`] end the stream.
    pub async fn read<T: DeserializeOwned>(&mut self) -> Result<Option<T>, FrameError> {
        match self.read_frame().await? {
            Some(line) => parse(&line).map(Some),
            None => Ok(None),
        }
    }

    /// The next message's bytes, unparsed (see [`parse`]), or `None` at a
    /// clean end of stream. Blank lines are skipped; errors as for
    /// [`FrameReader::read`], which this is the first half of (so a large
    /// message can be parsed elsewhere, say off an event loop).
    pub(crate) async fn read_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        loop {
            let Some(line) = self.read_line().await? else {
                return Ok(None);
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Ok(Some(line));
        }
    }

    /// The next line without its newline, or `None` at a clean end of
    /// stream.
    async fn read_line(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        loop {
            // Every state change below happens after `fill_buf` returned, in
            // synchronous code: that is what makes `read` cancel-safe.
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                let unread = self.line.len();
                let discarding = std::mem::take(&mut self.discarding);
                self.line.clear();
                return if unread == 0 && !discarding {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated { bytes: unread })
                };
            }
            let newline = memchr::memchr(b'\n', available);
            let take = newline.unwrap_or(available.len());
            let fits = !self.discarding && self.line.len() + take <= self.limit;
            if fits {
                self.line.extend_from_slice(&available[..take]);
            } else {
                // Too long: drop what we have and skip to the newline,
                // keeping memory bounded whatever the peer sends.
                self.discarding = true;
                self.line = Vec::new();
            }
            let consumed = newline.map_or(take, |at| at + 1);
            self.inner.consume(consumed);
            if newline.is_some() {
                if std::mem::take(&mut self.discarding) {
                    return Err(FrameError::TooLong { limit: self.limit });
                }
                return Ok(Some(std::mem::take(&mut self.line)));
            }
        }
    }
}

/// Parses one message read by [`FrameReader::read_frame`]:
/// [`FrameError::InvalidUtf8`] or [`FrameError::InvalidJson`] when it is not
/// UTF-8 JSON of the expected shape.
pub fn parse<T: DeserializeOwned>(line: &[u8]) -> Result<T, FrameError> {
    let text = std::str::from_utf8(line).map_err(|_| FrameError::InvalidUtf8)?;
    serde_json::from_str(text).map_err(FrameError::InvalidJson)
}

/// Writes JSON messages, one per line, flushing after each.
///
/// [`FrameWriter::write`] is not cancel-safe (a dropped write may leave half
/// a line): write from one task that owns the writer, fed by a channel.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
    limit: usize,
}

impl<W: AsyncWrite + Unpin> FrameWriter<W> {
    /// A writer with the [`MAX_FRAME_BYTES`] limit.
    pub fn new(inner: W) -> FrameWriter<W> {
        FrameWriter::with_limit(inner, MAX_FRAME_BYTES)
    }

    /// A writer refusing messages longer than `limit` bytes.
    pub(crate) fn with_limit(inner: W, limit: usize) -> FrameWriter<W> {
        FrameWriter { inner, limit }
    }

    /// Writes `message` and a newline, then flushes.
    ///
    /// A message longer than the limit is not written at all
    /// ([`FrameError::TooLong`]) so the peer never receives a line it must
    /// refuse; the server then answers the request with an error instead.
    pub async fn write<T: Serialize + ?Sized>(&mut self, message: &T) -> Result<(), FrameError> {
        let mut line = encode(message)?;
        if line.len() > self.limit {
            return Err(FrameError::TooLong { limit: self.limit });
        }
        line.push(b'\n');
        self.inner.write_all(&line).await?;
        self.inner.flush().await?;
        Ok(())
    }

    /// The underlying stream.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }
}

/// `message` as one line of compact JSON, without the newline. Compact JSON
/// escapes newlines inside strings, so the result never contains `\n`.
pub fn encode<T: Serialize + ?Sized>(message: &T) -> Result<Vec<u8>, FrameError> {
    serde_json::to_vec(message).map_err(FrameError::Encode)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncWriteExt, BufReader};

    use super::*;

    /// A reader over `bytes` written by a separate task through a small
    /// pipe, so lines arrive in many pieces as they would over a socket.
    fn reader_of(bytes: Vec<u8>, limit: usize) -> FrameReader<BufReader<tokio::io::DuplexStream>> {
        let (mut tx, rx) = tokio::io::duplex(4096);
        tokio::spawn(async move {
            let _ = tx.write_all(&bytes).await;
        });
        FrameReader::with_limit(BufReader::new(rx), limit)
    }

    #[tokio::test]
    async fn a_ten_megabyte_line_is_too_long_and_the_next_line_still_parses() {
        let mut bytes = vec![b'x'; 10 * 1024 * 1024];
        bytes.extend_from_slice(b"\n{\"ok\":true}\n");
        let mut reader = reader_of(bytes, MAX_FRAME_BYTES);
        let error = reader
            .read::<Value>()
            .await
            .expect_err("10 MB is over the limit");
        assert!(
            matches!(error, FrameError::TooLong { limit } if limit == MAX_FRAME_BYTES),
            "{error:?}"
        );
        assert!(error.is_recoverable(), "the connection stays usable");
        assert_eq!(error.to_rpc_error().data_code(), "rpc.too_long");
        let next = reader.read::<Value>().await.expect("the next line reads");
        assert_eq!(next, Some(json!({"ok": true})));
        assert_eq!(reader.read::<Value>().await.expect("clean end"), None);
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_accepted_and_one_byte_more_is_not() {
        let fits = format!("\"{}\"\n", "a".repeat(8));
        let too_long = format!("\"{}\"\n", "a".repeat(9));
        let mut reader = reader_of(format!("{fits}{too_long}{fits}").into_bytes(), 10);
        assert_eq!(
            reader.read::<String>().await.expect("10 bytes fit"),
            Some("a".repeat(8))
        );
        assert!(matches!(
            reader.read::<String>().await,
            Err(FrameError::TooLong { limit: 10 })
        ));
        assert_eq!(
            reader.read::<String>().await.expect("reading goes on"),
            Some("a".repeat(8))
        );
    }

    #[tokio::test]
    async fn malformed_json_is_reported_and_reading_goes_on() {
        let mut reader = reader_of(b"{\"a\": \n[1,2]\n".to_vec(), MAX_FRAME_BYTES);
        let error = reader.read::<Value>().await.expect_err("not JSON");
        assert!(matches!(error, FrameError::InvalidJson(_)), "{error:?}");
        assert_eq!(error.to_rpc_error().data_code(), "rpc.parse_error");
        assert_eq!(
            reader.read::<Value>().await.expect("next"),
            Some(json!([1, 2]))
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_and_reading_goes_on() {
        let mut reader = reader_of(b"\"\xff\xfe\"\n\"ok\"\n".to_vec(), MAX_FRAME_BYTES);
        let error = reader.read::<Value>().await.expect_err("not UTF-8");
        assert!(matches!(error, FrameError::InvalidUtf8), "{error:?}");
        assert!(error.is_recoverable());
        assert_eq!(
            reader.read::<Value>().await.expect("next"),
            Some(json!("ok"))
        );
    }

    #[tokio::test]
    async fn eof_in_the_middle_of_a_line_is_truncated_not_a_message() {
        let mut reader = reader_of(b"{\"a\":1}\n{\"b\":".to_vec(), MAX_FRAME_BYTES);
        assert_eq!(
            reader.read::<Value>().await.expect("first"),
            Some(json!({"a": 1}))
        );
        let error = reader.read::<Value>().await.expect_err("cut off");
        assert!(
            matches!(error, FrameError::Truncated { bytes: 5 }),
            "{error:?}"
        );
        assert!(!error.is_recoverable());
    }

    #[tokio::test]
    async fn eof_while_discarding_a_long_line_is_truncated() {
        let mut reader = reader_of(vec![b'x'; 100], 10);
        let error = reader.read::<Value>().await.expect_err("cut off");
        assert!(matches!(error, FrameError::Truncated { .. }), "{error:?}");
    }

    #[tokio::test]
    async fn blank_lines_and_crlf_endings_are_tolerated() {
        let mut reader = reader_of(b"\n  \r\n{\"a\":1}\r\n".to_vec(), MAX_FRAME_BYTES);
        assert_eq!(
            reader.read::<Value>().await.expect("read"),
            Some(json!({"a": 1}))
        );
        assert_eq!(reader.read::<Value>().await.expect("end"), None);
    }

    #[tokio::test]
    async fn a_pending_read_can_be_dropped_without_losing_the_partial_line() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(BufReader::new(rx));
        tx.write_all(b"{\"a\":").await.expect("write");
        let pending =
            tokio::time::timeout(std::time::Duration::from_millis(20), reader.read::<Value>())
                .await;
        assert!(pending.is_err(), "no full line yet");
        tx.write_all(b"1}\n").await.expect("write");
        assert_eq!(
            reader.read::<Value>().await.expect("read"),
            Some(json!({"a": 1})),
            "the first half of the line was kept"
        );
    }

    #[tokio::test]
    async fn the_writer_sends_one_line_per_message_and_refuses_oversized_ones() {
        let (tx, rx) = tokio::io::duplex(1 << 16);
        let mut writer = FrameWriter::with_limit(tx, 32);
        writer
            .write(&json!({"text": "two\nlines"}))
            .await
            .expect("write");
        let error = writer
            .write(&json!({"text": "x".repeat(64)}))
            .await
            .expect_err("over the limit");
        assert!(matches!(error, FrameError::TooLong { limit: 32 }));
        writer.write(&json!(3)).await.expect("write goes on");
        drop(writer);
        let mut reader = FrameReader::new(BufReader::new(rx));
        assert_eq!(
            reader.read::<Value>().await.expect("read"),
            Some(json!({"text": "two\nlines"})),
            "a newline inside a string is escaped, not a line break"
        );
        assert_eq!(
            reader.read::<Value>().await.expect("read"),
            Some(json!(3)),
            "nothing of the refused message reached the stream"
        );
        assert_eq!(reader.read::<Value>().await.expect("end"), None);
    }
}
