//! `read_many_files` (agents/tools.mdx, Gemini profile): several files in
//! one call, each after a `=== path ===` line and each marked read.
//!
//! A file that cannot be read is an error line in its place, not a failed
//! call (unless every file fails). The call returns at most
//! [`MAX_TOTAL_CHARS`] characters of file text, so the session never cuts
//! the result in the middle: files past that are listed as not read, and
//! are not marked read.

use std::fmt::Write as _;

use serde_json::Value;

use super::read_file::{Text, read_text};
use super::{ToolOutput, Workspace, json_kind};

/// Paths one call may name.
const MAX_PATHS: usize = 100;
/// Characters of file text one call returns: under the tool's 50,000
/// character output limit (`Tool::output_limit`) with room for the headers
/// and notes, so that every file the model is told it read, it saw.
const MAX_TOTAL_CHARS: usize = 45_000;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Read several files in one call. Each file is returned prefixed with === path ===.",
        serde_json::json!({"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"},"description":"Paths of the files to read"}},"required":["paths"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    let paths: Vec<&Value> = match arguments.get("paths") {
        Some(Value::Array(paths)) => paths.iter().collect(),
        // One path given as a string: some models do.
        Some(one @ Value::String(_)) => vec![one],
        None | Some(Value::Null) => {
            return ToolOutput::error("missing required argument `paths` (an array of file paths)");
        }
        Some(other) => {
            return ToolOutput::error(format!(
                "`paths` must be an array of file paths, not {}",
                json_kind(other)
            ));
        }
    };
    if paths.is_empty() {
        return ToolOutput::error("`paths` is empty: name at least one file");
    }
    if paths.len() > MAX_PATHS {
        return ToolOutput::error(format!(
            "`paths` names {} files; one call reads at most {MAX_PATHS}: split it into several calls",
            paths.len()
        ));
    }
    let mut out = String::new();
    let mut seen = std::collections::HashSet::new();
    let mut budget = MAX_TOTAL_CHARS;
    let mut skipped = Vec::new();
    let (mut read, mut failed) = (0, 0);
    for (i, value) in paths.into_iter().enumerate() {
        let Some(given) = value.as_str() else {
            let _ = writeln!(
                out,
                "=== entry {} ===\n[error: it is {}, not a path]",
                i + 1,
                json_kind(value)
            );
            failed += 1;
            continue;
        };
        let path = match workspace.resolve(given) {
            Ok(path) => path,
            Err(e) => {
                let _ = writeln!(out, "=== {given} ===\n[error: {}]", e.content);
                failed += 1;
                continue;
            }
        };
        if !seen.insert(path.clone()) {
            continue;
        }
        let shown = workspace.relative(&path);
        // Bytes are at least characters/4: a file surely over the budget is
        // not loaded to find out.
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        if size / 4 > budget as u64 {
            skipped.push(format!("{shown} ({size} bytes)"));
            continue;
        }
        let Text { text, lossy } = match read_text(workspace, &path) {
            Ok(text) => text,
            Err(e) => {
                let _ = writeln!(out, "=== {shown} ===\n[error: {}]", e.content);
                failed += 1;
                continue;
            }
        };
        let chars = text.chars().count();
        if chars > budget {
            skipped.push(format!("{shown} ({chars} characters)"));
            continue;
        }
        budget -= chars;
        workspace.mark_read(&path);
        read += 1;
        let _ = writeln!(out, "=== {shown} ===");
        out.push_str(&text);
        if !text.is_empty() && !text.ends_with('\n') {
            out.push('\n');
        }
        if lossy {
            out.push_str("[note: not valid UTF-8; invalid bytes are shown as \u{FFFD}]\n");
        }
    }
    if !skipped.is_empty() {
        let _ = writeln!(
            out,
            "[not read: one call returns at most {MAX_TOTAL_CHARS} characters of file text; \
             read these with read_file (offset and limit page through a large file): {}]",
            skipped.join(", ")
        );
    }
    ToolOutput {
        content: out,
        is_error: read == 0 && skipped.is_empty() && failed > 0,
        touched: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::Tool;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    #[test]
    fn each_file_follows_its_header_and_is_marked_read() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("src")).expect("dir");
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}\n").expect("write");
        std::fs::write(dir.path().join("b.txt"), "no newline").expect("write");
        let out = run(&ws, &json!({"paths": ["src/a.rs", "b.txt", "./src/a.rs"]}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "=== src/a.rs ===\nfn a() {}\n=== b.txt ===\nno newline\n"
        );
        assert!(ws.was_read(&ws.root().join("src/a.rs")) && ws.was_read(&ws.root().join("b.txt")));
    }

    #[test]
    fn a_file_that_fails_is_an_error_in_its_place_and_only_all_failing_fails_the_call() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("ok.txt"), "ok\n").expect("write");
        std::fs::write(dir.path().join("b.bin"), b"\0\x01").expect("write");
        std::fs::create_dir(dir.path().join("d")).expect("dir");
        let out = run(
            &ws,
            &json!({"paths": ["missing.txt", "ok.txt", "../x", "/etc/passwd", "b.bin", "d", 7]}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains("=== missing.txt ===\n[error: missing.txt does not exist"),
            "{}",
            out.content
        );
        assert!(out.content.contains("=== ok.txt ===\nok\n"));
        assert!(
            out.content
                .contains("=== ../x ===\n[error: `../x` is outside the work directory")
        );
        assert!(
            out.content
                .contains("=== /etc/passwd ===\n[error: `/etc/passwd` is outside")
        );
        assert!(
            out.content
                .contains("=== b.bin ===\n[error: b.bin is a binary file")
        );
        assert!(out.content.contains("=== d ===\n[error: d is a directory"));
        assert!(
            out.content
                .contains("=== entry 7 ===\n[error: it is a number, not a path]")
        );
        std::fs::write(dir.path().join("l.txt"), b"caf\xe9\n").expect("write");
        let out = run(&ws, &json!({"paths": ["l.txt"]}));
        assert!(
            out.content.contains("caf\u{FFFD}\n[note: not valid UTF-8"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"paths": ["missing.txt", "../x"]}));
        assert!(out.is_error, "every file failed: {}", out.content);
    }

    #[test]
    fn files_past_the_per_call_cap_are_listed_and_not_marked_read() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("big.txt"), "x".repeat(MAX_TOTAL_CHARS + 1)).expect("write");
        std::fs::write(
            dir.path().join("half1.txt"),
            "y".repeat(MAX_TOTAL_CHARS / 2),
        )
        .expect("write");
        std::fs::write(
            dir.path().join("half2.txt"),
            "z".repeat(MAX_TOTAL_CHARS / 2 + 10),
        )
        .expect("write");
        std::fs::write(dir.path().join("small.txt"), "s\n").expect("write");
        let huge = dir.path().join("huge.log");
        std::fs::File::create(&huge)
            .and_then(|f| f.set_len(1 << 30))
            .expect("sparse");
        let out = run(
            &ws,
            &json!({"paths": ["big.txt", "half1.txt", "half2.txt", "small.txt", "huge.log"]}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("=== half1.txt ===")
                && out.content.contains("=== small.txt ===\ns\n")
        );
        let note = out.content.lines().last().expect("a note");
        assert!(
            note.starts_with("[not read")
                && note.contains("big.txt")
                && note.contains("half2.txt")
                && note.contains("huge.log"),
            "{note}"
        );
        assert!(note.contains("read_file"), "{note}");
        assert!(
            !ws.was_read(&ws.root().join("big.txt")) && !ws.was_read(&ws.root().join("half2.txt"))
        );
        let (limit, _) = Tool::ReadManyFiles.output_limit();
        assert!(
            out.content.chars().count() <= limit,
            "the session never cuts the result"
        );
    }

    #[test]
    fn wrong_argument_shapes_are_errors() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("a"), "a\n").expect("write");
        assert!(run(&ws, &json!({})).content.contains("missing required"));
        assert!(run(&ws, &json!({"paths": []})).content.contains("is empty"));
        assert!(
            run(&ws, &json!({"paths": {"a": 1}}))
                .content
                .contains("not an object")
        );
        let many: Vec<String> = (0..=MAX_PATHS).map(|i| format!("f{i}")).collect();
        let out = run(&ws, &json!({"paths": many}));
        assert!(
            out.is_error && out.content.contains("at most 100"),
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"paths": "a"}));
        assert_eq!(
            out.content, "=== a ===\na\n",
            "one path as a string is accepted"
        );
    }
}
