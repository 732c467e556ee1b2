//! `edit_file` (agents/tools.mdx, Anthropic and Gemini profiles): replaces
//! an exact string in an existing file. The tool reads the file itself,
//! so it satisfies the read-before-write guardrail.

use std::fmt::Write as _;

use serde_json::Value;

use super::read_file::read_utf8;
use super::write_file::write_regular;
use super::{ToolOutput, Workspace, optional_bool, required_str};

/// Lines of context shown around the first change in the confirmation.
const SNIPPET_CONTEXT: usize = 2;
/// The confirmation's snippet stops after this many lines.
const SNIPPET_MAX_LINES: usize = 20;
/// Lines named in a "did you mean" hint.
const HINT_MAX_LINES: usize = 5;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Replace an exact string in an existing file. old_string must match the file exactly and be unique unless replace_all is true. Reads the file itself, so no read_file is needed first.",
        serde_json::json!({"type":"object","properties":{"file_path":{"type":"string","description":"Path to the file (absolute, or relative to the working directory)"},"old_string":{"type":"string","description":"The exact text to find"},"new_string":{"type":"string","description":"The replacement text"},"replace_all":{"type":"boolean","description":"Replace every occurrence (default false)"}},"required":["file_path","old_string","new_string"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match edit(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn edit(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let path = workspace.resolve(required_str(arguments, "file_path")?)?;
    let old = required_str(arguments, "old_string")?;
    let new = required_str(arguments, "new_string")?;
    let replace_all = optional_bool(arguments, "replace_all")?.unwrap_or(false);
    let shown = workspace.relative(&path);
    if old.is_empty() {
        return Err(ToolOutput::error(
            "old_string is empty: give the exact text to replace (to create a file or replace \
             it whole, use write_file)",
        ));
    }
    if old == new {
        return Err(ToolOutput::error(
            "old_string and new_string are the same: there is nothing to change",
        ));
    }
    if !path.exists() {
        return Err(ToolOutput::error(format!(
            "{shown} does not exist; edit_file changes existing files (use write_file to create one)"
        )));
    }
    let text = read_utf8(workspace, &path)?;
    // The tool has read the file: that satisfies the guardrail even when
    // the edit below is refused, and the model saw nothing stale.
    workspace.mark_read(&path);
    let (old, new) = line_endings_of(&text, old, new);
    let count = text.matches(old.as_str()).count();
    if count == 0 {
        return Err(not_found(&shown, &text, &old));
    }
    if count > 1 && !replace_all {
        let lines = match_lines(&text, &old);
        return Err(ToolOutput::error(format!(
            "old_string occurs {count} times in {shown} (at lines {}); include more surrounding \
             lines in old_string to make it unique, or set replace_all to true to change every one",
            list_lines(&lines)
        )));
    }
    let first = text.find(old.as_str()).unwrap_or(0);
    let updated = if replace_all {
        text.replace(old.as_str(), &new)
    } else {
        text.replacen(old.as_str(), &new, 1)
    };
    write_regular(workspace, &path, updated.as_bytes())?;
    let noun = if count == 1 {
        "replacement"
    } else {
        "replacements"
    };
    let mut content = format!("Edited {shown}: {count} {noun}.\n");
    content.push_str(&snippet(&updated, first, new.len()));
    Ok(ToolOutput {
        content,
        is_error: false,
        touched: vec![shown],
    })
}

/// `old` and `new` with `\n` made `\r\n` when the file uses CRLF line ends
/// and the model's text (as models write it) has bare `\n`.
fn line_endings_of(text: &str, old: &str, new: &str) -> (String, String) {
    let crlf = text.contains("\r\n") && !old.contains('\r') && old.contains('\n');
    if crlf && !text.contains(old) {
        (old.replace('\n', "\r\n"), new.replace('\n', "\r\n"))
    } else {
        (old.to_string(), new.to_string())
    }
}

/// The not-found error, with a hint when the first line of `old` occurs
/// in the file with other indentation or trailing spaces.
fn not_found(shown: &str, text: &str, old: &str) -> ToolOutput {
    let mut message = format!(
        "old_string was not found in {shown}. It must match the file exactly, including \
         whitespace and indentation; read the file again (read_file) and copy the text from it."
    );
    if let Some(first) = old.lines().map(str::trim).find(|l| !l.is_empty()) {
        let near: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.trim() == first)
            .map(|(i, _)| i + 1)
            .take(HINT_MAX_LINES + 1)
            .collect();
        if !near.is_empty() {
            let _ = write!(
                message,
                " Its first line appears, with different whitespace or followed by different \
                 lines, at line {}.",
                list_lines(&near)
            );
        }
    }
    ToolOutput::error(message)
}

/// 1-based line numbers where `needle` starts, at most a few.
fn match_lines(text: &str, needle: &str) -> Vec<usize> {
    text.match_indices(needle)
        .take(HINT_MAX_LINES + 1)
        .map(|(at, _)| text[..at].matches('\n').count() + 1)
        .collect()
}

fn list_lines(lines: &[usize]) -> String {
    let mut listed: Vec<String> = lines
        .iter()
        .take(HINT_MAX_LINES)
        .map(usize::to_string)
        .collect();
    if lines.len() > HINT_MAX_LINES {
        listed.push("…".to_string());
    }
    listed.join(", ")
}

/// The lines around the first replacement (starting at byte `at`,
/// `len` bytes long in `text`), numbered as read_file numbers them.
fn snippet(text: &str, at: usize, len: usize) -> String {
    let first_line = text[..at].matches('\n').count();
    let end = (at + len).min(text.len());
    let last_line = first_line + text[at..end].matches('\n').count();
    let from = first_line.saturating_sub(SNIPPET_CONTEXT);
    let to = last_line + SNIPPET_CONTEXT;
    let mut out = String::new();
    let shown: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .skip(from)
        .take(to - from + 1)
        .collect();
    for (i, (number, line)) in shown.iter().enumerate() {
        if i == SNIPPET_MAX_LINES {
            let _ = writeln!(out, "     | …");
            break;
        }
        let line = crate::util::text::truncate(line.trim_end_matches('\r'), 200);
        let _ = writeln!(out, "{:>4} | {line}", number + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    fn edit(ws: &Workspace, arguments: Value) -> ToolOutput {
        run(ws, &arguments)
    }

    fn file(dir: &tempfile::TempDir, name: &str) -> String {
        std::fs::read_to_string(dir.path().join(name)).expect("read")
    }

    #[test]
    fn a_unique_match_is_replaced_without_a_prior_read() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("a.rs"), "fn a() {\n    1\n}\nfn b() {}\n").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "a.rs", "old_string": "    1\n", "new_string": "    2\n"}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "a.rs"), "fn a() {\n    2\n}\nfn b() {}\n");
        assert_eq!(out.touched, vec!["a.rs".to_string()]);
        assert!(
            out.content.starts_with("Edited a.rs: 1 replacement."),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("   2 |     2"),
            "the snippet shows the change: {}",
            out.content
        );
        assert!(
            ws.was_read(&ws.root().join("a.rs")),
            "the edit counts as a read"
        );
    }

    #[test]
    fn a_string_that_is_not_unique_is_refused_unless_replace_all() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("f"), "x = 1\ny = 2\nx = 1\n").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "x = 1", "new_string": "x = 3"}),
        );
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content.contains("occurs 2 times") && out.content.contains("lines 1, 3"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("more surrounding lines") && out.content.contains("replace_all")
        );
        assert_eq!(file(&dir, "f"), "x = 1\ny = 2\nx = 1\n", "nothing changed");
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
        );
        assert!(
            !out.is_error && out.content.contains("2 replacements"),
            "{}",
            out.content
        );
        assert_eq!(file(&dir, "f"), "x = 3\ny = 2\nx = 3\n");
    }

    #[test]
    fn not_found_empty_and_unchanged_strings_are_errors() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("f"), "    let a = 1;\n").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "let a = 2;", "new_string": "b"}),
        );
        assert!(
            out.is_error && out.content.contains("was not found"),
            "{}",
            out.content
        );
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "  let a = 1;  \n", "new_string": "b"}),
        );
        assert!(
            out.content.contains("different whitespace") && out.content.contains("line 1"),
            "{}",
            out.content
        );
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "", "new_string": "b"}),
        );
        assert!(
            out.is_error && out.content.contains("old_string is empty"),
            "{}",
            out.content
        );
        let out = edit(
            &ws,
            json!({"file_path": "f", "old_string": "a", "new_string": "a"}),
        );
        assert!(
            out.is_error && out.content.contains("the same"),
            "{}",
            out.content
        );
        let out = edit(
            &ws,
            json!({"file_path": "nope.rs", "old_string": "a", "new_string": "b"}),
        );
        assert!(
            out.is_error
                && out.content.contains("does not exist")
                && out.content.contains("write_file")
        );
        assert!(out.touched.is_empty());
        assert_eq!(file(&dir, "f"), "    let a = 1;\n");
    }

    #[test]
    fn crlf_files_are_matched_with_bare_newlines_and_keep_their_line_ends() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("w.txt"), "one\r\ntwo\r\nthree\r\n").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "w.txt"), "1\r\n2\r\nthree\r\n");
    }

    #[test]
    fn hostile_paths_binary_and_invalid_utf8_files_are_refused_untouched() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::fs::write(outside.path().join("o.txt"), "secret").expect("write");
        std::os::unix::fs::symlink(outside.path().join("o.txt"), dir.path().join("link"))
            .expect("link");
        for path in [
            "../o.txt".to_string(),
            outside.path().join("o.txt").to_string_lossy().into_owned(),
            "link".to_string(),
        ] {
            let out = edit(
                &ws,
                json!({"file_path": path, "old_string": "secret", "new_string": "x"}),
            );
            assert!(
                out.is_error && out.content.contains("outside"),
                "{path}: {}",
                out.content
            );
        }
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.txt")).expect("read"),
            "secret"
        );
        std::fs::write(dir.path().join("b.bin"), b"ab\x00cd").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "b.bin", "old_string": "ab", "new_string": "x"}),
        );
        assert!(
            out.is_error && out.content.contains("binary"),
            "{}",
            out.content
        );
        std::fs::write(dir.path().join("l.txt"), b"caf\xe9 ab\n").expect("write");
        let out = edit(
            &ws,
            json!({"file_path": "l.txt", "old_string": "ab", "new_string": "x"}),
        );
        assert!(
            out.is_error && out.content.contains("not valid UTF-8"),
            "{}",
            out.content
        );
        assert_eq!(
            std::fs::read(dir.path().join("l.txt")).expect("read"),
            b"caf\xe9 ab\n"
        );
        std::fs::create_dir(dir.path().join("d")).expect("dir");
        let out = edit(
            &ws,
            json!({"file_path": "d", "old_string": "a", "new_string": "b"}),
        );
        assert!(
            out.is_error && out.content.contains("directory"),
            "{}",
            out.content
        );
        let out = edit(
            &ws,
            json!({"file_path": "l.txt", "old_string": "ab", "new_string": "x", "replace_all": 3}),
        );
        assert!(
            out.is_error && out.content.contains("replace_all"),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_huge_file_is_refused() {
        let (dir, ws) = workspace();
        let path = dir.path().join("big.txt");
        std::fs::File::create(&path)
            .and_then(|f| f.set_len(super::super::read_file::MAX_FILE_BYTES + 1))
            .expect("sparse");
        let out = edit(
            &ws,
            json!({"file_path": "big.txt", "old_string": "a", "new_string": "b"}),
        );
        assert!(
            out.is_error && out.content.contains("larger than 10 MiB"),
            "{}",
            out.content
        );
    }
}
