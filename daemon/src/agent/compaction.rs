//! Context compaction (execution/context.mdx, "Context compaction"): when
//! the conversation nears the model's context window, older turns are
//! summarised by the model and replaced by the summary, and the session
//! goes on.

use std::fmt::Write as _;

use crate::llm::{Message, Part, Role};

/// Compaction starts above this share of the context window.
pub(crate) const THRESHOLD_PERCENT: u64 = 80;
/// The most recent assistant turns kept word for word.
pub(crate) const PRESERVED_TURNS: usize = 6;
/// The context window assumed for a model the catalog does not size.
pub(crate) const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Tool arguments and results are cut to this many characters in the text
/// the summariser reads.
const RENDERED_PART_CHARS: usize = 500;
/// The most characters of old conversation sent to the summariser (its own
/// context window is the same as the agent's; the newest text is kept).
const MAX_RENDERED_CHARS: usize = 400_000;

/// The prefix of the summary message that replaces the old turns.
pub(crate) const SUMMARY_PREFIX: &str = "[Context Summary]";

/// The instructions of the summarising call.
pub(crate) const SUMMARY_SYSTEM: &str = "You condense the history of a coding agent's \
session so that the agent can continue its work from the summary alone. Write Markdown \
with these sections: ## Goal (what the user asked for), ## Progress (what was done, with \
file paths and the results of checks), ## Key Decisions (choices made and why), ## Failed \
Approaches (what was tried and did not work, so it is not tried again), ## Open Issues \
(known problems, loose ends), ## Next Steps (what the agent should do next). Be specific \
and brief; keep exact names of files, functions and commands. Reply with the summary only.";

/// Whether `estimated` tokens are over the threshold of `context_window`.
pub(crate) fn needed(estimated: u64, context_window: u64) -> bool {
    estimated.saturating_mul(100) > context_window.saturating_mul(THRESHOLD_PERCENT)
}

/// Where the kept part of `history` starts: at the assistant message that
/// begins the last [`PRESERVED_TURNS`] turns, so that a tool call and its
/// results stay together. `None` when there is nothing older to compact.
pub(crate) fn split_point(history: &[Message]) -> Option<usize> {
    let assistants: Vec<usize> = history
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    if assistants.len() <= PRESERVED_TURNS {
        return None;
    }
    let at = assistants[assistants.len() - PRESERVED_TURNS];
    (at > 0).then_some(at)
}

/// How many assistant turns a slice holds.
pub(crate) fn turns(history: &[Message]) -> u32 {
    let n = history.iter().filter(|m| m.role == Role::Assistant).count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The old turns as text for the summariser, tool arguments and results cut
/// to [`RENDERED_PART_CHARS`].
pub(crate) fn render(history: &[Message], files_touched: &[String]) -> String {
    let cut = |text: &str| crate::util::text::truncate(text, RENDERED_PART_CHARS);
    let mut out = String::new();
    for message in history {
        let who = match message.role {
            Role::User => "USER",
            Role::Assistant => "ASSISTANT",
        };
        for part in &message.parts {
            let _ = match part {
                Part::Text(text) => writeln!(out, "[{who}] {text}"),
                Part::Reasoning(_) | Part::Image(_) => Ok(()),
                Part::ToolCall(call) => writeln!(
                    out,
                    "[TOOL CALL {}] {}",
                    call.name,
                    cut(&call.arguments.to_string())
                ),
                Part::ToolResult(result) => writeln!(
                    out,
                    "[TOOL RESULT {}{}] {}",
                    result.name,
                    if result.is_error { ", error" } else { "" },
                    cut(&result.content)
                ),
            };
        }
    }
    let mut out = crate::util::text::truncate_start(&out, MAX_RENDERED_CHARS);
    if !files_touched.is_empty() {
        out.push_str("\nFiles written so far: ");
        out.push_str(&files_touched.join(", "));
        out.push('\n');
    }
    out
}

/// The message that replaces the old turns.
pub(crate) fn summary_message(summary: &str, files_touched: &[String]) -> Message {
    let mut text = format!(
        "{SUMMARY_PREFIX} Earlier turns of this session were condensed to fit the context \
         window:\n\n{}",
        summary.trim()
    );
    if !files_touched.is_empty() {
        text.push_str("\n\n## File Operations\nFiles written so far: ");
        text.push_str(&files_touched.join(", "));
    }
    Message::user(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ToolCall, ToolResult};

    fn tool_turn(i: usize) -> [Message; 2] {
        let call = ToolCall {
            id: format!("c{i}"),
            name: "read_file".into(),
            arguments: serde_json::json!({"file_path": format!("f{i}")}),
            signature: None,
        };
        [
            Message {
                role: Role::Assistant,
                parts: vec![Part::ToolCall(call)],
            },
            Message::tool_results([ToolResult {
                call_id: format!("c{i}"),
                name: "read_file".into(),
                content: "x".repeat(1000),
                is_error: false,
            }]),
        ]
    }

    #[test]
    fn the_kept_part_starts_at_an_assistant_turn_with_its_results_after_it() {
        let mut history = vec![Message::user("task")];
        for i in 0..4 {
            history.extend(tool_turn(i));
        }
        assert_eq!(
            split_point(&history),
            None,
            "four turns: nothing to compact"
        );
        for i in 4..10 {
            history.extend(tool_turn(i));
        }
        let at = split_point(&history).expect("ten turns");
        assert_eq!(history[at].role, Role::Assistant);
        assert_eq!(turns(&history[at..]), 6);
        assert_eq!(turns(&history[..at]), 4);
    }

    #[test]
    fn rendering_cuts_tool_results_and_the_estimate_counts_them() {
        let history: Vec<Message> = tool_turn(1).into();
        let text = render(&history, &["src/a.rs".into()]);
        assert!(text.contains("[TOOL CALL read_file]"), "{text}");
        assert!(
            text.len() < 700,
            "the 1000-character result is cut: {}",
            text.len()
        );
        assert!(text.contains("src/a.rs"));
        assert!(super::super::history::History::from_messages(history).estimate_tokens("") >= 250);
        assert!(needed(81, 100) && !needed(80, 100));
    }
}
