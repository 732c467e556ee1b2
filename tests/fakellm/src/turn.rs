//! A scripted reply with every default filled in, ready for any wire format.

use crate::reply::{Finish, ToolCall, Usage};

/// How many characters of the user's text the default reply quotes.
pub(crate) const DEFAULT_REPLY_QUOTE_CHARS: usize = 200;

/// The assistant turn to render: text first, then tool calls.
#[derive(Debug, Clone)]
pub(crate) struct Turn {
    /// Never `Some("")`: empty text is no text.
    pub text: Option<String>,
    /// Every id is non-empty.
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub finish: Finish,
}

/// What every wire format needs besides the turn itself.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The model the request named (from the body, or the path for Gemini).
    pub model: String,
    /// A number unique within the server, for response and item ids.
    pub seq: u64,
    /// Chat Completions only: `stream_options.include_usage` was true.
    pub include_usage: bool,
}

impl Turn {
    /// Fill in the defaults: ids for tool calls without one, usage derived
    /// from the sizes of the request and the reply, and the finish reason.
    pub fn resolve(
        text: Option<String>,
        mut tool_calls: Vec<ToolCall>,
        usage: Option<Usage>,
        finish: Option<Finish>,
        request_chars: usize,
        seq: u64,
    ) -> Turn {
        let text = text.filter(|t| !t.is_empty());
        for (i, call) in tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_fake_{seq}_{i}");
            }
        }
        let usage = usage.unwrap_or_else(|| {
            let reply_chars = text.as_deref().map_or(0, |t| t.chars().count())
                + tool_calls
                    .iter()
                    .map(|c| c.name.chars().count() + c.arguments.to_string().chars().count())
                    .sum::<usize>();
            Usage {
                input: tokens(request_chars),
                output: tokens(reply_chars),
                ..Usage::default()
            }
        });
        let finish = finish.unwrap_or(if tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolUse
        });
        Turn {
            text,
            tool_calls,
            usage,
            finish,
        }
    }

    /// The default reply when nothing is scripted.
    pub fn default_text(user_text: &str) -> String {
        let quoted: String = user_text.chars().take(DEFAULT_REPLY_QUOTE_CHARS).collect();
        format!("fake reply to: {quoted}")
    }
}

/// The default token count for this many characters: a quarter, rounded up,
/// and at least 1.
fn tokens(chars: usize) -> u64 {
    (chars.div_ceil(4) as u64).max(1)
}

/// Text split into streaming deltas: each word with the whitespace after it.
pub(crate) fn text_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let (mut prev_space, mut has_word) = (false, false);
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if prev_space && !space && has_word {
            pieces.push(&text[start..i]);
            start = i;
        }
        has_word |= !space;
        prev_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// Tool-call argument JSON split into fragments of at most 16 characters, as
/// providers stream it (fragments need not be valid JSON on their own).
pub(crate) fn json_pieces(json: &str) -> Vec<&str> {
    const MAX: usize = 16;
    let mut pieces = Vec::new();
    let mut start = 0;
    for (count, (i, _)) in json.char_indices().enumerate() {
        if count > 0 && count % MAX == 0 {
            pieces.push(&json[start..i]);
            start = i;
        }
    }
    if start < json.len() {
        pieces.push(&json[start..]);
    }
    pieces
}

/// One server-sent event; `data` is a single line.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub event: Option<&'static str>,
    pub data: String,
}

impl SseEvent {
    pub fn named(event: &'static str, data: &serde_json::Value) -> SseEvent {
        SseEvent {
            event: Some(event),
            data: data.to_string(),
        }
    }

    pub fn data(data: &serde_json::Value) -> SseEvent {
        SseEvent {
            event: None,
            data: data.to_string(),
        }
    }

    /// The event on the wire, lines ended with `line_end`.
    pub fn encode(&self, line_end: &str) -> String {
        match self.event {
            Some(event) => format!(
                "event: {event}{line_end}data: {}{line_end}{line_end}",
                self.data
            ),
            None => format!("data: {}{line_end}{line_end}", self.data),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_into_words_with_their_trailing_space() {
        assert_eq!(
            text_pieces("Hello, wide  world!\n"),
            vec!["Hello, ", "wide  ", "world!\n"]
        );
        assert_eq!(text_pieces(" lead"), vec![" lead"]);
        assert!(text_pieces("").is_empty());
        assert_eq!(text_pieces("é à").concat(), "é à");
    }

    #[test]
    fn argument_json_splits_into_short_fragments_that_rejoin() {
        let json = r#"{"path":"src/main.rs","line":12,"note":"héllo"}"#;
        let pieces = json_pieces(json);
        assert!(pieces.len() > 2, "long arguments arrive in several deltas");
        assert!(pieces.iter().all(|p| p.chars().count() <= 16));
        assert_eq!(pieces.concat(), json);
    }

    #[test]
    fn default_usage_is_a_quarter_of_the_characters_rounded_up() {
        let turn = Turn::resolve(Some("12345".into()), vec![], None, None, 9, 1);
        assert_eq!(turn.usage.input, 3);
        assert_eq!(turn.usage.output, 2);
        assert_eq!(turn.finish, Finish::Stop);
    }

    #[test]
    fn default_reply_quotes_at_most_200_characters() {
        let long = "x".repeat(300);
        let reply = Turn::default_text(&long);
        assert_eq!(reply.len(), "fake reply to: ".len() + 200);
    }
}
