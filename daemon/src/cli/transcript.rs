//! An agent stage's `transcript.jsonl`, printed for people (`weft logs RUN
//! NODE`): the prompt, what the model said each turn with its tokens, each
//! tool call as `→ tool summary` and its result as `← tool ok|error`,
//! steering, compaction, loop warnings and how the session ended.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::agent::tools::Tool;
use crate::agent::transcript::Entry;
use crate::util::duration::elapsed;

/// A transcript line longer than this is not read (a tool's arguments are
/// in it, and an agent may write a large file): it is reported and skipped.
const MAX_LINE_BYTES: u64 = 4 * 1024 * 1024;

/// A user message (the prompt with its preamble) is shown up to this many
/// characters; the whole is in `prompt.md`.
const USER_CHARS: usize = 4_000;

/// A tool result is shown as its first line, up to this many characters.
const RESULT_CHARS: usize = 200;

/// Prints the transcript at `path` under `title`; false (and nothing
/// printed) when the stage has none.
pub(super) fn write(out: &mut impl Write, path: &Path, title: &str) -> std::io::Result<bool> {
    let Ok(file) = crate::limits::open_regular(path) else {
        return Ok(false);
    };
    writeln!(out, "{title}")?;
    let mut lines = BufReader::new(file);
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        number += 1;
        let read = lines
            .by_ref()
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && read as u64 > MAX_LINE_BYTES {
            writeln!(out, "(line {number} is longer than 4 MiB and is skipped)")?;
            // Skip the rest of the long line.
            let mut rest = Vec::new();
            loop {
                rest.clear();
                let n =
                    std::io::Read::take(lines.by_ref(), 64 * 1024).read_until(b'\n', &mut rest)?;
                if n == 0 || rest.last() == Some(&b'\n') {
                    break;
                }
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Entry>(text.trim_end()) {
            Ok(entry) => write_entry(out, &entry)?,
            // The last line of a session a crash cut short may be partial.
            Err(_) => writeln!(out, "(line {number} cannot be read)")?,
        }
    }
    Ok(true)
}

fn write_entry(out: &mut impl Write, entry: &Entry) -> std::io::Result<()> {
    match entry {
        Entry::Session {
            provider,
            model,
            profile,
            tools,
            permissions,
        } => writeln!(
            out,
            "agent: {model} ({provider}, {profile} profile), permissions {permissions}, tools: {}",
            tools.join(", ")
        ),
        Entry::System { text } => {
            writeln!(out, "(system prompt: {} characters)", text.chars().count())
        }
        Entry::User { text } => {
            writeln!(out, "user:")?;
            indented(out, &shorten(text, USER_CHARS))
        }
        Entry::Assistant {
            turn,
            text,
            tool_calls,
            usage,
            cost,
            duration_ms,
            ..
        } => {
            writeln!(
                out,
                "assistant (turn {turn}, {}, {}):",
                crate::model::spend::describe(usage, *cost),
                elapsed(Duration::from_millis(*duration_ms))
            )?;
            if !text.trim().is_empty() {
                indented(out, text)?;
            }
            for call in tool_calls {
                let summary = Tool::from_name(&call.name)
                    .map(|t| t.summarize(&call.arguments))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "  → {} {}",
                    call.name,
                    one_line(&summary, RESULT_CHARS)
                )?;
            }
            Ok(())
        }
        Entry::Tool {
            tool,
            is_error,
            duration_ms,
            summary,
            touched,
            ..
        } => {
            let verdict = if *is_error { "error" } else { "ok" };
            let wrote = if touched.is_empty() {
                String::new()
            } else {
                format!(" (wrote {})", touched.join(", "))
            };
            writeln!(
                out,
                "  ← {tool} {verdict} in {}{wrote}: {}",
                elapsed(Duration::from_millis(*duration_ms)),
                one_line(summary, RESULT_CHARS)
            )
        }
        Entry::Steering { text } => {
            writeln!(out, "steering:")?;
            indented(out, text)
        }
        Entry::Compaction {
            original_turns,
            preserved_turns,
            ..
        } => writeln!(
            out,
            "compaction: {original_turns} turns summarised, the last {preserved_turns} kept"
        ),
        Entry::LoopDetected { message } => {
            writeln!(out, "loop detected: {}", one_line(message, RESULT_CHARS))
        }
        Entry::End { reason } => writeln!(out, "end: {reason}"),
    }
}

/// `text` with every line indented by two spaces.
fn indented(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    for line in text.trim_end().lines() {
        if line.trim().is_empty() {
            writeln!(out)?;
        } else {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// The first `max` characters of `text`, saying how many more there are.
fn shorten(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n… [{} more characters]", count - max)
}

/// The first line of `text`, at most `max` characters, marked when cut.
fn one_line(text: &str, max: usize) -> String {
    let first = text.trim().lines().next().unwrap_or_default();
    let more = text.trim().lines().nth(1).is_some();
    let mut shown: String = first.chars().take(max).collect();
    if more || first.chars().count() > max {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::transcript::Call;
    use crate::llm::Usage;

    fn lines(entries: &[Entry]) -> String {
        let dir = tempfile::tempdir().expect("temp");
        let path = dir.path().join("transcript.jsonl");
        let mut text = String::new();
        for e in entries {
            text.push_str(&serde_json::to_string(e).expect("json"));
            text.push('\n');
        }
        text.push_str("{\"type\":\"assist"); // cut short by a crash
        std::fs::write(&path, text).expect("write");
        let mut out = Vec::new();
        assert!(write(&mut out, &path, "-- transcript --").expect("writes"));
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn a_transcript_reads_as_turns_tool_calls_and_results() {
        let shown = lines(&[
            Entry::User {
                text: "Fix the bug".into(),
            },
            Entry::Assistant {
                turn: 1,
                text: "Reading it.".into(),
                reasoning: String::new(),
                tool_calls: vec![Call {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: serde_json::json!({"file_path": "src/lib.rs"}),
                }],
                usage: Usage {
                    input: 1200,
                    output: 30,
                    ..Usage::default()
                },
                cost: None,
                duration_ms: 1500,
            },
            Entry::Tool {
                call_id: "c1".into(),
                tool: "read_file".into(),
                is_error: true,
                duration_ms: 3,
                summary: "no such file: src/lib.rs\nmore".into(),
                output_bytes: 30,
                output_file: None,
                touched: Vec::new(),
            },
            Entry::End {
                reason: "completed".into(),
            },
        ]);
        assert!(
            shown.starts_with("-- transcript --\nuser:\n  Fix the bug\n"),
            "{shown}"
        );
        assert!(shown.contains("assistant (turn 1, "), "{shown}");
        assert!(shown.contains("  Reading it.\n"), "{shown}");
        assert!(shown.contains("  → read_file "), "{shown}");
        assert!(
            shown.contains("  ← read_file error in ")
                && shown.contains(": no such file: src/lib.rs…"),
            "{shown}"
        );
        assert!(shown.contains("end: completed\n"), "{shown}");
        assert!(
            shown.contains("cannot be read"),
            "a partial last line is reported: {shown}"
        );
    }

    #[test]
    fn a_stage_without_a_transcript_prints_nothing() {
        let dir = tempfile::tempdir().expect("temp");
        let mut out = Vec::new();
        assert!(!write(&mut out, &dir.path().join("transcript.jsonl"), "x").expect("ok"));
        assert!(out.is_empty());
    }
}
