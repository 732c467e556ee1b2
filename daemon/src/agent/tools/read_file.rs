//! `read_file` (agents/tools.mdx): a file's lines with line numbers, from
//! `offset` (1-based), at most `limit` lines (default 2,000).
//!
//! The file is streamed, never loaded whole, so a page of a huge log costs
//! what the page costs; only asking for a huge file without `offset` or
//! `limit` is refused, with a message telling the model to page or grep.
//! This file also holds the whole-file readers the other file tools share
//! (`read_many_files`, `edit_file`, `apply_patch`) and the one wording of
//! read errors.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use super::{ToolOutput, Workspace, optional_u64, required_str};
use crate::limits::{MIB, ReadError, human_bytes};

/// Lines returned when `limit` is not given.
const DEFAULT_LIMIT: u64 = 2_000;
/// Files larger than this are not read whole: `read_file` wants `offset`
/// or `limit` for them, and the tools that load files whole refuse them.
pub(super) const MAX_FILE_BYTES: u64 = 10 * MIB;
/// A longer line is cut (minified code, one-line JSON): one line must not
/// fill the page.
const MAX_LINE_CHARS: usize = 2_000;
/// A page stops early when its text reaches this many characters, below the
/// tool's 50,000-character output limit, so the page is never cut in the
/// middle and its last line says where to go on.
const MAX_PAGE_CHARS: usize = 40_000;
/// How far into a file `read_file` reads, skipping to `offset` and counting
/// lines after the page: past this it stops and says so.
const MAX_SCAN_BYTES: u64 = 256 * MIB;
/// The first bytes looked at for a NUL, as `git` and `grep` do to tell a
/// binary file from text.
const SNIFF_BYTES: usize = 8192;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Read a text file. Returns its lines numbered like `  12 | text`. Use offset (1-based \
         line) and limit (default 2000 lines) for large files. Read a file before editing it.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "file_path": {"type": "string", "description": "Path to the file (absolute, or relative to the working directory)"},
                "offset": {"type": "integer", "description": "1-based line number to start from"},
                "limit": {"type": "integer", "description": "Number of lines to read (default 2000)"}
            },
            "required": ["file_path"]
        }),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match read(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn read(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let path = workspace.resolve(required_str(arguments, "file_path")?)?;
    let given_offset = optional_u64(arguments, "offset")?;
    let given_limit = optional_u64(arguments, "limit")?;
    let offset = given_offset.unwrap_or(1).max(1);
    let limit = given_limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let shown = workspace.relative(&path);
    let file = crate::limits::open_regular(&path).map_err(|e| read_error(&shown, e))?;
    let size = file
        .metadata()
        .map_err(|e| read_error(&shown, e.into()))?
        .len();
    if size > MAX_FILE_BYTES && given_offset.is_none() && given_limit.is_none() {
        return Err(ToolOutput::error(format!(
            "{shown} is {} (over {}): read it in pages with offset and limit \
             (for example offset=1, limit=200), or search it with grep",
            size_text(size),
            human_bytes(MAX_FILE_BYTES)
        )));
    }
    let page = read_page(file, offset - 1, limit).map_err(|e| match e {
        PageError::Binary => binary_error(&shown, size),
        PageError::Io(e) => read_error(&shown, e.into()),
    })?;
    workspace.mark_read(&path);
    Ok(ToolOutput::ok(page.render(offset, limit)))
}

/// One page of a file.
struct Page {
    /// Line number (1-based) and text of each line shown.
    lines: Vec<(u64, String)>,
    /// Lines in the file; `None` when counting stopped at
    /// [`MAX_SCAN_BYTES`].
    total: Option<u64>,
    /// The page stopped at [`MAX_PAGE_CHARS`] before `limit` lines.
    full: bool,
    /// Some line shown was not valid UTF-8.
    lossy: bool,
    /// Some line shown was longer than [`MAX_LINE_CHARS`].
    cut_lines: bool,
}

enum PageError {
    Binary,
    Io(std::io::Error),
}

impl From<std::io::Error> for PageError {
    fn from(e: std::io::Error) -> Self {
        PageError::Io(e)
    }
}

/// Reads lines `skip + 1 ..= skip + limit` of `file`, then counts the rest.
fn read_page(file: std::fs::File, skip: u64, limit: u64) -> Result<Page, PageError> {
    let mut reader = BufReader::with_capacity(64 * 1024, file.take(MAX_SCAN_BYTES));
    if reader.fill_buf()?.iter().take(SNIFF_BYTES).any(|b| *b == 0) {
        return Err(PageError::Binary);
    }
    let mut page = Page {
        lines: Vec::new(),
        total: None,
        full: false,
        lossy: false,
        cut_lines: false,
    };
    let mut chars = 0;
    let mut number = 0u64;
    let mut buf = Vec::new();
    // A line of up to MAX_LINE_CHARS characters is at most 4 bytes each.
    let keep = MAX_LINE_CHARS * 4;
    while let Some(length) = next_line(&mut reader, &mut buf, keep)? {
        number += 1;
        if number <= skip || page.full || number > skip.saturating_add(limit) {
            continue;
        }
        let mut text = String::from_utf8_lossy(&buf).into_owned();
        if std::str::from_utf8(&buf).is_err() {
            page.lossy = true;
        }
        if text.ends_with('\r') && length == buf.len() {
            text.pop();
        }
        if length > buf.len() || text.chars().nth(MAX_LINE_CHARS).is_some() {
            text = crate::util::text::truncate(&text, MAX_LINE_CHARS);
            let _ = write!(text, " [line cut: {length} bytes]");
            page.cut_lines = true;
        }
        chars += text.chars().count() + 10;
        page.lines.push((number, text));
        if chars >= MAX_PAGE_CHARS {
            page.full = true;
        }
    }
    if reader.into_inner().limit() > 0 {
        page.total = Some(number);
    }
    Ok(page)
}

/// Reads the next line of `reader` (without its `\n`) into `buf`, keeping
/// at most `keep` bytes of it, and returns its whole length in bytes;
/// `None` at the end. A line of any length costs `keep` bytes of memory.
fn next_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<Option<usize>> {
    buf.clear();
    let mut length = 0;
    let mut any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(any.then_some(length));
        }
        any = true;
        let (part, found) = match memchr::memchr(b'\n', available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        let room = keep.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        length += part.len();
        let used = found.unwrap_or(part.len());
        reader.consume(used);
        if found.is_some() {
            return Ok(Some(length));
        }
    }
}

impl Page {
    fn render(&self, offset: u64, limit: u64) -> String {
        let mut out = String::new();
        let width = self
            .lines
            .last()
            .map_or(0, |(n, _)| n.to_string().len())
            .max(3);
        for (number, line) in &self.lines {
            let _ = writeln!(out, "{number:>width$} | {line}");
        }
        let last_shown = self.lines.last().map(|(n, _)| *n);
        let total = self.total.map_or_else(
            || {
                format!(
                    "a file too long to count (over {})",
                    human_bytes(MAX_SCAN_BYTES)
                )
            },
            |t| t.to_string(),
        );
        match (last_shown, self.total) {
            (None, Some(0)) => out.push_str("(the file is empty)\n"),
            (None, Some(total)) => {
                let _ = writeln!(
                    out,
                    "(offset {offset} is past the end: the file has {total} lines)"
                );
            }
            (None, None) => {
                let _ = writeln!(
                    out,
                    "(offset {offset} is beyond the first {} of the file; search it with grep instead)",
                    human_bytes(MAX_SCAN_BYTES)
                );
            }
            (Some(last), _) => {
                let more = self.total.is_none_or(|t| last < t);
                if more {
                    let why = if self.full && last < offset.saturating_add(limit) - 1 {
                        format!(" (the page stopped at {MAX_PAGE_CHARS} characters)")
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        out,
                        "(lines {offset}-{last} of {total}{why}; use offset={} to read on)",
                        last + 1
                    );
                }
            }
        }
        if self.cut_lines {
            let _ = writeln!(
                out,
                "(lines longer than {MAX_LINE_CHARS} characters were cut; use grep or shell to see them whole)"
            );
        }
        if self.lossy {
            out.push_str(
                "(the file is not valid UTF-8: invalid bytes are shown as \u{FFFD}; \
                 edit_file and apply_patch cannot change it)\n",
            );
        }
        out
    }
}

/// A file's text as [`read_text`] loads it.
pub(super) struct Text {
    pub text: String,
    /// The file was not valid UTF-8: invalid bytes became U+FFFD.
    pub lossy: bool,
}

/// The text of a regular file in the workspace, loaded whole (at most
/// [`MAX_FILE_BYTES`]), or an error for the model (missing, not a regular
/// file, too large, binary). Invalid UTF-8 is replaced by U+FFFD.
pub(super) fn read_text(workspace: &Workspace, path: &Path) -> Result<Text, ToolOutput> {
    let bytes = read_bytes(workspace, path, MAX_FILE_BYTES)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => Text { text, lossy: false },
        Err(e) => Text {
            text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
            lossy: true,
        },
    })
}

/// [`read_text`] for tools that write the text back: invalid UTF-8 is an
/// error, since replacing it would corrupt the file.
pub(super) fn read_utf8(workspace: &Workspace, path: &Path) -> Result<String, ToolOutput> {
    let bytes = read_bytes(workspace, path, MAX_FILE_BYTES)?;
    String::from_utf8(bytes).map_err(|e| {
        ToolOutput::error(format!(
            "{} is not valid UTF-8 (at byte {}); it cannot be edited as text: \
             use write_file to replace it whole, or shell",
            workspace.relative(path),
            e.utf8_error().valid_up_to()
        ))
    })
}

fn read_bytes(workspace: &Workspace, path: &Path, cap: u64) -> Result<Vec<u8>, ToolOutput> {
    let shown = workspace.relative(path);
    let bytes = crate::limits::read_capped(path, cap).map_err(|e| match e {
        ReadError::TooLarge { .. } => ToolOutput::error(format!(
            "{shown} is larger than {}: read it in pages with read_file's offset and limit, \
             or search it with grep",
            human_bytes(cap)
        )),
        e => read_error(&shown, e),
    })?;
    if bytes.iter().take(SNIFF_BYTES).any(|b| *b == 0) {
        return Err(binary_error(&shown, bytes.len() as u64));
    }
    Ok(bytes)
}

/// The one wording of "cannot read this file" for every file tool, with
/// what to do instead.
pub(super) fn read_error(shown: &str, error: ReadError) -> ToolOutput {
    ToolOutput::error(match error {
        ReadError::NotFound => {
            format!("{shown} does not exist (use glob or list_dir to find files)")
        }
        ReadError::NotRegular {
            kind: "a directory",
        } => {
            format!(
                "{shown} is a directory, not a file (use list_dir or glob to see what it holds)"
            )
        }
        ReadError::NotRegular { kind } => {
            format!("{shown} is {kind}, not a regular file; the file tools read regular files only")
        }
        ReadError::TooLarge { cap } => format!(
            "{shown} is larger than {}: read it in pages with read_file's offset and limit, \
             or search it with grep",
            human_bytes(cap)
        ),
        ReadError::PermissionDenied => format!("cannot read {shown}: permission denied"),
        ReadError::Io(e) => format!("cannot read {shown}: {e}"),
    })
}

fn binary_error(shown: &str, size: u64) -> ToolOutput {
    ToolOutput::error(format!(
        "{shown} is a binary file ({}); it cannot be shown as text (use shell, e.g. `file` or `xxd | head`, to inspect it)",
        size_text(size)
    ))
}

/// `1234 bytes`, `3.4 MiB`: a file's size for messages.
fn size_text(bytes: u64) -> String {
    if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::cancel::Cancel;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    fn read(ws: &Workspace, arguments: Value) -> ToolOutput {
        run(ws, &arguments)
    }

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn lines_are_numbered_and_the_file_counts_as_read() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("a.rs"), "fn main() {\r\n}\n").expect("write");
        let out = read(&ws, json!({"file_path": "a.rs"}));
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "  1 | fn main() {\n  2 | }\n");
        assert!(ws.was_read(&ws.root().join("a.rs")));
        let absolute = ws.root().join("a.rs");
        let out = read(&ws, json!({"file_path": absolute.to_str().expect("utf-8")}));
        assert!(out.content.starts_with("  1 | fn main"), "{}", out.content);
    }

    #[test]
    fn offset_and_limit_page_through_the_file_and_say_where_to_go_on() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("f.txt"), numbered(10)).expect("write");
        let out = read(&ws, json!({"file_path": "f.txt", "offset": 3, "limit": 2}));
        assert_eq!(
            out.content,
            "  3 | line 3\n  4 | line 4\n(lines 3-4 of 10; use offset=5 to read on)\n"
        );
        let out = read(&ws, json!({"file_path": "f.txt", "offset": 9, "limit": 50}));
        assert_eq!(
            out.content, "  9 | line 9\n 10 | line 10\n",
            "the end needs no note"
        );
        let out = read(&ws, json!({"file_path": "f.txt", "offset": 0, "limit": 1}));
        assert!(
            out.content.starts_with("  1 | line 1\n"),
            "offset 0 is the first line: {}",
            out.content
        );
        let out = read(&ws, json!({"file_path": "f.txt", "offset": 11}));
        assert!(!out.is_error);
        assert!(
            out.content.contains("past the end: the file has 10 lines"),
            "{}",
            out.content
        );
        let out = read(
            &ws,
            json!({"file_path": "f.txt", "offset": u64::MAX, "limit": u64::MAX}),
        );
        assert!(out.content.contains("past the end"), "{}", out.content);
        let out = read(
            &ws,
            json!({"file_path": "f.txt", "offset": 1, "limit": u64::MAX}),
        );
        assert!(out.content.ends_with(" 10 | line 10\n"), "{}", out.content);
    }

    #[test]
    fn an_empty_file_says_so() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("e"), "").expect("write");
        assert_eq!(
            read(&ws, json!({"file_path": "e"})).content,
            "(the file is empty)\n"
        );
    }

    #[test]
    fn wrong_argument_types_are_errors_the_model_can_read() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("f"), "x\n").expect("write");
        let out = read(&ws, json!({"file_path": 7}));
        assert!(
            out.is_error && out.content.contains("`file_path` must be a string"),
            "{}",
            out.content
        );
        let out = read(&ws, json!({}));
        assert!(
            out.is_error && out.content.contains("missing required"),
            "{}",
            out.content
        );
        for offset in [json!(-1), json!(1.5), json!("ten"), json!([1])] {
            let out = read(&ws, json!({"file_path": "f", "offset": offset}));
            assert!(
                out.is_error && out.content.contains("non-negative integer"),
                "{}",
                out.content
            );
        }
        assert!(
            !ws.was_read(&ws.root().join("f")),
            "a refused call reads nothing"
        );
    }

    #[test]
    fn paths_outside_the_work_dir_are_refused() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::fs::write(outside.path().join("secret"), "s\n").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link"))
            .expect("link");
        for path in [
            "../secret".to_string(),
            outside.path().join("secret").to_string_lossy().into_owned(),
            "link".to_string(),
            "/etc/passwd".to_string(),
        ] {
            let out = read(&ws, json!({"file_path": path}));
            assert!(
                out.is_error && out.content.contains("outside the work directory"),
                "{path}: {}",
                out.content
            );
        }
    }

    #[test]
    fn a_huge_file_needs_paging_and_a_page_of_it_is_read_without_loading_it() {
        let (dir, ws) = workspace();
        let path = dir.path().join("big.log");
        let file = std::fs::File::create(&path).expect("create");
        file.set_len(MAX_FILE_BYTES + 1).expect("sparse file");
        drop(file);
        // The first lines are text: a sparse file is all NULs otherwise.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, numbered(2_000).as_bytes()))
            .expect("head");
        let out = read(&ws, json!({"file_path": "big.log"}));
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content.contains("offset and limit") && out.content.contains("grep"),
            "the model is told to page or grep: {}",
            out.content
        );
        let out = read(&ws, json!({"file_path": "big.log", "limit": 2}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.starts_with("  1 | line 1\n  2 | line 2\n("),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_file_too_long_to_scan_is_paged_without_a_total() {
        let (dir, ws) = workspace();
        let path = dir.path().join("huge.log");
        let file = std::fs::File::create(&path).expect("create");
        file.set_len(MAX_SCAN_BYTES + MIB).expect("sparse file");
        drop(file);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, numbered(2_000).as_bytes()))
            .expect("head");
        let out = read(
            &ws,
            json!({"file_path": "huge.log", "offset": 2, "limit": 1}),
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "  2 | line 2\n(lines 2-2 of a file too long to count (over 256 MiB); use offset=3 to read on)\n"
        );
        let out = read(&ws, json!({"file_path": "huge.log", "offset": u64::MAX}));
        assert!(
            out.content.contains("beyond the first 256 MiB") && out.content.contains("grep"),
            "{}",
            out.content
        );
    }

    #[test]
    fn very_long_lines_are_cut_and_a_page_stops_before_the_output_limit() {
        let (dir, ws) = workspace();
        let long = "x".repeat(1_000_000);
        std::fs::write(dir.path().join("min.js"), format!("{long}\nshort\n")).expect("write");
        let out = read(&ws, json!({"file_path": "min.js"}));
        assert!(out.content.len() < 10_000, "{} bytes", out.content.len());
        assert!(
            out.content.contains("[line cut: 1000000 bytes]"),
            "{}",
            &out.content[..200]
        );
        assert!(out.content.contains("  2 | short"));
        let wide: String = (0..200)
            .map(|_| format!("{}\n", "y".repeat(1_000)))
            .collect();
        std::fs::write(dir.path().join("wide.txt"), wide).expect("write");
        let out = read(&ws, json!({"file_path": "wide.txt"}));
        assert!(out.content.len() < 50_000, "{} bytes", out.content.len());
        assert!(
            out.content.contains("use offset="),
            "{}",
            &out.content[out.content.len() - 200..]
        );
        assert!(out.content.contains("stopped at 40000 characters"));
    }

    #[test]
    fn binary_files_are_refused_and_invalid_utf8_is_shown_with_a_note() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("a.bin"), b"\x7fELF\x00\x01\x02").expect("write");
        let out = read(&ws, json!({"file_path": "a.bin"}));
        assert!(
            out.is_error && out.content.contains("binary file"),
            "{}",
            out.content
        );
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").expect("write");
        let out = read(&ws, json!({"file_path": "latin1.txt"}));
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("caf\u{FFFD}") && out.content.contains("not valid UTF-8"),
            "{}",
            out.content
        );
    }

    #[test]
    fn directories_fifos_and_devices_are_refused_without_blocking() {
        let (dir, ws) = workspace();
        std::fs::create_dir(dir.path().join("sub")).expect("dir");
        let out = read(&ws, json!({"file_path": "."}));
        assert!(
            out.content.starts_with(". is a directory"),
            "{}",
            out.content
        );
        let out = read(&ws, json!({"file_path": "sub"}));
        assert!(
            out.is_error && out.content.contains("is a directory"),
            "{}",
            out.content
        );
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let out = read(&ws, json!({"file_path": "pipe"}));
        assert!(
            out.is_error && out.content.contains("a FIFO"),
            "{}",
            out.content
        );
        let dev = Workspace::new(
            dir.path(),
            &[std::path::PathBuf::from("/dev")],
            Cancel::new(),
        )
        .expect("ws");
        for device in ["/dev/zero", "/dev/null", "/dev/urandom"] {
            let out = read(&dev, json!({"file_path": device}));
            assert!(
                out.is_error && out.content.contains("not a regular file"),
                "{device}: {}",
                out.content
            );
        }
        let out = read(&ws, json!({"file_path": "missing.txt"}));
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
    }
}
