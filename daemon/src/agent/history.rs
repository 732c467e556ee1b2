//! The conversation of a session, with its size kept as it grows.
//!
//! Compaction asks after every tool round how big the conversation is.
//! Measuring the whole conversation each time would make every round cost
//! more than the one before (a tool call's arguments would be serialised
//! again on each round), so the size is added up once per message, when it
//! joins, and only compaction, which rebuilds the conversation, counts anew.

use crate::llm::{Message, Part, Role};

/// Messages in order, and the estimated size of all of them.
#[derive(Debug, Default)]
pub(crate) struct History {
    messages: Vec<Message>,
    bytes: usize,
}

impl History {
    /// A conversation that starts where `messages` left off (a thread
    /// shared with earlier stages).
    pub(crate) fn from_messages(messages: Vec<Message>) -> History {
        let bytes = messages.iter().map(message_bytes).sum();
        History { messages, bytes }
    }

    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub(crate) fn push(&mut self, message: Message) {
        self.bytes += message_bytes(&message);
        self.messages.push(message);
    }

    /// Adds `part` to the last message when it is the user's, else as a new
    /// user message (steering, added after the tool results).
    pub(crate) fn add_to_user_turn(&mut self, part: Part) {
        self.bytes += part_bytes(&part);
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.parts.push(part),
            _ => self.messages.push(Message {
                role: Role::User,
                parts: vec![part],
            }),
        }
    }

    /// Lends the messages to a request; [`History::give_back`] returns
    /// them. The size stays counted meanwhile.
    pub(crate) fn lend(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// Takes back messages lent by [`History::lend`], unchanged.
    pub(crate) fn give_back(&mut self, messages: Vec<Message>) {
        self.messages = messages;
    }

    /// Replaces the messages before `at` with `summary`.
    pub(crate) fn replace_before(&mut self, at: usize, summary: Message) {
        let kept = self.messages.split_off(at.min(self.messages.len()));
        self.messages = Vec::with_capacity(kept.len() + 1);
        self.messages.push(summary);
        self.messages.extend(kept);
        self.bytes = self.messages.iter().map(message_bytes).sum();
    }

    /// Estimated tokens of `system` and the conversation: a quarter of
    /// their size in bytes (non-ASCII text only makes the estimate err
    /// towards compacting early).
    pub(crate) fn estimate_tokens(&self, system: &str) -> u64 {
        u64::try_from((system.len() + self.bytes).div_ceil(4)).unwrap_or(u64::MAX)
    }
}

fn message_bytes(message: &Message) -> usize {
    message.parts.iter().map(part_bytes).sum()
}

fn part_bytes(part: &Part) -> usize {
    match part {
        Part::Text(text) => text.len(),
        Part::Reasoning(r) => r.text.len(),
        Part::ToolCall(call) => call.name.len() + call.arguments.to_string().len(),
        Part::ToolResult(result) => result.content.len(),
        // Providers count an image as roughly a thousand tokens.
        Part::Image(_) => 4_000,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::{ToolCall, ToolResult};

    fn call(n: usize) -> Message {
        Message {
            role: Role::Assistant,
            parts: vec![Part::ToolCall(ToolCall {
                id: format!("c{n}"),
                name: "read_file".into(),
                arguments: json!({"file_path": format!("f{n}.txt")}),
                signature: None,
            })],
        }
    }

    fn result(n: usize, content: &str) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult(ToolResult {
                call_id: format!("c{n}"),
                name: "read_file".into(),
                content: content.into(),
                is_error: false,
            })],
        }
    }

    /// The kept size is what measuring the whole conversation gives, after
    /// every kind of change.
    #[test]
    fn the_running_size_matches_a_full_count_after_every_change() {
        let full = |h: &History| h.messages().iter().map(message_bytes).sum::<usize>();
        let mut history = History::from_messages(vec![Message::user("fix the test")]);
        assert_eq!(history.bytes, full(&history));
        for n in 0..10 {
            history.push(call(n));
            history.push(result(n, &"x".repeat(n * 100)));
            assert_eq!(history.bytes, full(&history));
        }
        history.add_to_user_turn(Part::Text("[Steering] stop".into()));
        assert_eq!(history.messages().len(), 21, "added to the last result");
        assert_eq!(history.bytes, full(&history));
        let lent = history.lend();
        history.give_back(lent);
        assert_eq!(history.bytes, full(&history));
        history.replace_before(15, Message::user("[Context Summary] s"));
        assert_eq!(history.messages().len(), 7);
        assert_eq!(history.bytes, full(&history));
        assert_eq!(
            history.estimate_tokens("abcd"),
            (4 + full(&history)).div_ceil(4) as u64
        );
    }

    #[test]
    fn steering_after_an_assistant_turn_is_a_new_user_message() {
        let mut history = History::default();
        history.push(call(1));
        history.add_to_user_turn(Part::Text("[Steering] go".into()));
        assert_eq!(history.messages().len(), 2);
        assert_eq!(history.messages()[1].role, Role::User);
    }
}
