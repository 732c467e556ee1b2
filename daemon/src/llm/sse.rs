//! An incremental parser for server-sent events (the WHATWG `text/event-stream`
//! format), fed whatever chunks the network delivers. A chunk may end
//! anywhere: inside a line, between `\r` and `\n`, inside a UTF-8 sequence.
//!
//! Handled: `event:` and `data:` fields (several `data:` lines join with
//! `\n`), one optional space after the colon, comment lines (`:`), `\n`,
//! `\r\n` and `\r` line ends, a leading byte-order mark. `id:` and `retry:`
//! are ignored (a model reply is never resumed from an event id).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Parser state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// Bytes of the line not yet terminated.
    line: Vec<u8>,
    /// The last byte seen was `\r`: a following `\n` belongs to it.
    after_cr: bool,
    /// Still at the start of the stream (a BOM may follow).
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    #[must_use]
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds the next chunk; returns the events it completed, in order.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in chunk {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// The stream ended. An event whose lines were all terminated but which
    /// lacked the final blank line is dispatched; a half-received line is
    /// dropped (the stream broke inside it).
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            self.line.clear();
            self.reset_event();
            return None;
        }
        self.dispatch()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            out.extend(self.dispatch());
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        if !self.has_data {
            self.reset_event();
            return None;
        }
        let event = SseEvent {
            event: self.event.take().filter(|e| !e.is_empty()),
            data: std::mem::take(&mut self.data),
        };
        self.has_data = false;
        Some(event)
    }

    fn reset_event(&mut self) {
        self.event = None;
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c));
        }
        out.extend(p.finish());
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_string),
            data: data.to_string(),
        }
    }

    const STREAM: &str = "\u{feff}: keep-alive comment\r\n\
        event: message_start\r\n\
        data: {\"a\":1}\r\n\
        \r\n\
        data: first line\n\
        data:second line é\n\
        id: 7\n\
        retry: 100\n\
        \n\
        event: ping\n\
        \n\
        event: done\rdata: [DONE]\r\r\
        data: tail without blank line\n";

    #[test]
    fn fields_comments_and_line_endings() {
        let events = parse_all(&[STREAM.as_bytes()]);
        assert_eq!(
            events,
            vec![
                ev(Some("message_start"), "{\"a\":1}"),
                ev(None, "first line\nsecond line é"),
                // `event: ping` with no data dispatches nothing.
                ev(Some("done"), "[DONE]"),
                ev(None, "tail without blank line"),
            ]
        );
    }

    #[test]
    fn splitting_at_every_byte_gives_the_same_events() {
        let bytes = STREAM.as_bytes();
        let whole = parse_all(&[bytes]);
        for i in 0..=bytes.len() {
            let (a, b) = bytes.split_at(i);
            assert_eq!(parse_all(&[a, b]), whole, "split at byte {i}");
        }
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(parse_all(&singles), whole, "one byte per chunk");
    }

    #[test]
    fn a_half_received_line_at_the_end_is_dropped() {
        let events = parse_all(&[b"data: {\"complete\":true}\n\ndata: {\"trunc"]);
        assert_eq!(events, vec![ev(None, "{\"complete\":true}")]);
    }

    #[test]
    fn empty_data_line_makes_an_empty_event() {
        assert_eq!(parse_all(&[b"data\n\n"]), vec![ev(None, "")]);
    }
}
