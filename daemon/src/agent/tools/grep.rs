//! `grep` (agents/tools.mdx): lines matching a regular expression, with
//! ripgrep's own matcher, searcher and walk (`grep-regex`,
//! `grep-searcher`, `ignore`), as `path:line:content`.
//!
//! A file with a hit counts as read (read-before-write): the model has
//! seen the lines it is about to change.

use std::io;
use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::OverrideBuilder;
use serde_json::Value;

use super::glob::{search_path, shown_dir, walk};
use super::{ToolOutput, Workspace, optional_u64, required_str};

/// Matching lines returned when `max_results` is not given.
const DEFAULT_MAX_RESULTS: u64 = 200;
/// The most matching lines a call may ask for.
const MAX_RESULTS_CEILING: u64 = 2_000;
/// Characters of a matching line shown; a minified bundle has lines of
/// megabytes.
const MAX_LINE_CHARS: usize = 500;
/// Larger files are not searched (generated data, databases, dumps).
const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Bytes the compiled regex may take: a pattern like `(a{1000}){1000}`
/// is refused instead of eating memory.
const REGEX_SIZE_LIMIT: usize = 10 * 1024 * 1024;
/// Memory the searcher may use for one line's buffer.
const SEARCH_HEAP_LIMIT: usize = 16 * 1024 * 1024;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Search file contents with a regular expression (ripgrep syntax), honouring .gitignore and \
         .ignore and skipping hidden and binary files and files over 10 MB. Returns \
         `path:line:content` lines, paths relative to the working directory, lines cut at 500 \
         characters. Files with a match count as read for write_file and edit_file.",
        serde_json::json!({"type":"object","properties":{"pattern":{"type":"string","description":"Regex pattern to search for"},"path":{"type":"string","description":"File or directory to search (default: the working directory)"},"glob_filter":{"type":"string","description":"Only search files matching this glob, e.g. *.rs"},"case_insensitive":{"type":"boolean","description":"Case-insensitive search (default false)"},"max_results":{"type":"integer","description":"Most matching lines to return (default 200, at most 2000)"}},"required":["pattern"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match search(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

fn search(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let pattern = required_str(arguments, "pattern")?;
    let start = search_path(workspace, arguments)?;
    let case_insensitive = match arguments.get("case_insensitive") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(yes)) => *yes,
        Some(_) => {
            return Err(ToolOutput::error(
                "`case_insensitive` must be true or false",
            ));
        }
    };
    let max_results = optional_u64(arguments, "max_results")?
        .unwrap_or(DEFAULT_MAX_RESULTS)
        .clamp(1, MAX_RESULTS_CEILING);
    let max_results = usize::try_from(max_results).unwrap_or(usize::MAX);
    let overrides = match arguments.get("glob_filter") {
        None | Some(Value::Null) => None,
        Some(Value::String(glob)) if glob.trim().is_empty() => None,
        Some(Value::String(glob)) => Some(glob_filter(&start, glob)?),
        Some(_) => return Err(ToolOutput::error("`glob_filter` must be a string")),
    };
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            ToolOutput::error(format!(
                "invalid regex `{pattern}`: {e}\nThe pattern uses Rust regex syntax (as ripgrep); \
                 escape special characters such as ( [ {{ . * + ? with a backslash for a literal match."
            ))
        })?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        // Binary files are skipped, as rg does: the first NUL byte ends the
        // file's search and its lines are dropped (see `FileHits`).
        .binary_detection(BinaryDetection::quit(0))
        .memory_map(MmapChoice::never())
        .heap_limit(Some(SEARCH_HEAP_LIMIT))
        .build();

    let mut out = String::new();
    let mut count = 0usize;
    let mut capped = false;
    let mut search_one = |path: &Path| -> bool {
        if path.metadata().map_or(true, |m| m.len() > MAX_FILE_BYTES) {
            return true;
        }
        let mut hits = FileHits::new(max_results - count);
        // An unreadable file or one over the heap limit is skipped.
        if searcher.search_path(&matcher, path, &mut hits).is_err() || hits.binary {
            return true;
        }
        if hits.lines.is_empty() {
            return true;
        }
        workspace.mark_read(path);
        let shown = workspace.relative(path);
        for (number, text) in &hits.lines {
            out.push_str(&format!("{shown}:{number}:{text}\n"));
        }
        count += hits.lines.len();
        if hits.full {
            capped = true;
            return false;
        }
        true
    };
    let walked = if start.is_file() {
        // `glob_filter` narrows a walk; a file named outright is searched.
        search_one(&start);
        super::glob::Walked::default()
    } else {
        walk(workspace, &start, overrides, search_one)
    };
    if count == 0 {
        out.push_str(&format!(
            "No matches for `{pattern}` in {}.\n",
            shown_dir(workspace, &start)
        ));
    }
    if capped {
        out.push_str(&format!(
            "[Results capped at {max_results} matching lines; more matches exist. Narrow the pattern, path or glob_filter, or raise max_results.]\n"
        ));
    }
    out.push_str(&walked.note());
    Ok(ToolOutput::ok(out))
}

/// `glob` as a whitelist for the walk under `start`, with ripgrep's `-g`
/// meaning: a pattern without `/` matches file names at any depth.
fn glob_filter(start: &Path, glob: &str) -> Result<ignore::overrides::Override, ToolOutput> {
    let invalid =
        |e: ignore::Error| ToolOutput::error(format!("invalid glob_filter `{glob}`: {e}"));
    let mut builder = OverrideBuilder::new(start);
    builder.add(glob).map_err(invalid)?;
    builder.build().map_err(invalid)
}

/// The matching lines of one file, kept until the file is known not to be
/// binary.
struct FileHits {
    lines: Vec<(u64, String)>,
    room: usize,
    /// `room` lines were taken and the search stopped.
    full: bool,
    binary: bool,
}

impl FileHits {
    fn new(room: usize) -> FileHits {
        FileHits {
            lines: Vec::new(),
            room,
            full: false,
            binary: false,
        }
    }
}

impl Sink for FileHits {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.lines.len() >= self.room {
            // One match past the room: more exist than are shown.
            self.full = true;
            return Ok(false);
        }
        let line = String::from_utf8_lossy(mat.bytes());
        let line = line.trim_end_matches(['\n', '\r']);
        self.lines
            .push((mat.line_number().unwrap_or(0), cut_line(line)));
        Ok(true)
    }

    fn binary_data(&mut self, _searcher: &Searcher, _offset: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// `line` cut to [`MAX_LINE_CHARS`] characters, with a marker.
fn cut_line(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.to_string(),
        Some((end, _)) => format!(
            "{} [... line cut, {} characters]",
            &line[..end],
            line.chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    use crate::agent::tools::workspace::scratch as workspace;

    fn canonical(ws: &Workspace, path: &str) -> std::path::PathBuf {
        ws.resolve(path).expect("resolve")
    }

    fn grep(ws: &Workspace, arguments: Value) -> ToolOutput {
        let out = run(ws, &arguments);
        assert!(!out.is_error, "{arguments}: {}", out.content);
        out
    }

    #[test]
    fn hits_are_path_line_content_relative_to_the_work_dir() {
        let (dir, ws) = workspace();
        fs::create_dir_all(dir.path().join("src")).expect("dir");
        fs::write(
            dir.path().join("src/lib.rs"),
            "fn main() {}\nlet x = 1;\nfn helper() {}\n",
        )
        .expect("write");
        fs::write(dir.path().join("notes.md"), "no functions here\n").expect("write");
        let out = grep(&ws, json!({"pattern": r"fn \w+\("}));
        assert_eq!(
            out.content,
            "src/lib.rs:1:fn main() {}\nsrc/lib.rs:3:fn helper() {}\n"
        );
    }

    #[test]
    fn case_glob_filter_and_path_narrow_the_search() {
        let (dir, ws) = workspace();
        fs::create_dir_all(dir.path().join("a")).expect("dir");
        fs::write(dir.path().join("a/one.rs"), "TODO: one\n").expect("write");
        fs::write(dir.path().join("a/two.txt"), "todo: two\n").expect("write");
        fs::write(dir.path().join("three.rs"), "todo: three\n").expect("write");
        let out = grep(&ws, json!({"pattern": "todo"}));
        assert_eq!(
            out.content,
            "a/two.txt:1:todo: two\nthree.rs:1:todo: three\n"
        );
        let out = grep(
            &ws,
            json!({"pattern": "todo", "case_insensitive": true, "glob_filter": "*.rs"}),
        );
        assert_eq!(
            out.content,
            "a/one.rs:1:TODO: one\nthree.rs:1:todo: three\n"
        );
        let out = grep(
            &ws,
            json!({"pattern": "todo", "case_insensitive": true, "path": "a"}),
        );
        assert_eq!(out.content, "a/one.rs:1:TODO: one\na/two.txt:1:todo: two\n");
        let out = grep(&ws, json!({"pattern": "t.d", "path": "three.rs"}));
        assert_eq!(out.content, "three.rs:1:todo: three\n");
    }

    #[test]
    fn files_with_hits_count_as_read_and_others_do_not() {
        let (dir, ws) = workspace();
        fs::write(dir.path().join("hit.txt"), "needle\n").expect("write");
        fs::write(dir.path().join("miss.txt"), "hay\n").expect("write");
        grep(&ws, json!({"pattern": "needle"}));
        assert!(ws.was_read(&canonical(&ws, "hit.txt")));
        assert!(!ws.was_read(&canonical(&ws, "miss.txt")));
        ws.check_write(&canonical(&ws, "hit.txt"))
            .expect("a grep hit is a read");
    }

    #[test]
    fn ignored_hidden_binary_and_huge_files_are_skipped() {
        let (dir, ws) = workspace();
        fs::create_dir_all(dir.path().join("target")).expect("dir");
        fs::create_dir_all(dir.path().join(".git")).expect("dir");
        fs::write(dir.path().join(".gitignore"), "target/\n").expect("write");
        fs::write(dir.path().join("target/gen.rs"), "needle\n").expect("write");
        fs::write(dir.path().join(".git/HEAD"), "needle\n").expect("write");
        fs::write(dir.path().join(".env"), "needle\n").expect("write");
        fs::write(dir.path().join("blob.bin"), b"needle\n\0\x01\x02").expect("write");
        // The NUL comes far after the match, past the searcher's first
        // buffer: the file is dropped all the same.
        let mut late = b"needle\n".to_vec();
        late.extend(b"text\n".repeat(100_000));
        late.push(0);
        fs::write(dir.path().join("late.bin"), late).expect("write");
        let mut huge = vec![b'x'; (MAX_FILE_BYTES + 1) as usize];
        huge[..7].copy_from_slice(b"needle\n");
        fs::write(dir.path().join("huge.txt"), huge).expect("write");
        fs::write(dir.path().join("ok.txt"), "needle\n").expect("write");
        let out = grep(&ws, json!({"pattern": "needle"}));
        assert_eq!(out.content, "ok.txt:1:needle\n");
        assert!(!ws.was_read(&canonical(&ws, "late.bin")));
    }

    #[test]
    fn results_are_capped_with_a_note_and_long_lines_cut() {
        let (dir, ws) = workspace();
        let text: String = (0..50).map(|i| format!("match {i}\n")).collect();
        fs::write(dir.path().join("many.txt"), text).expect("write");
        let out = grep(&ws, json!({"pattern": "match", "max_results": 10}));
        assert_eq!(
            out.content
                .lines()
                .filter(|l| l.starts_with("many.txt:"))
                .count(),
            10
        );
        assert!(
            out.content.contains("Results capped at 10"),
            "{}",
            out.content
        );
        let exactly = grep(&ws, json!({"pattern": "match", "max_results": 50}));
        assert!(!exactly.content.contains("capped"), "{}", exactly.content);

        fs::write(
            dir.path().join("long.txt"),
            format!("{}\n", "é".repeat(5_000)),
        )
        .expect("write");
        let out = grep(&ws, json!({"pattern": "é", "path": "long.txt"}));
        assert!(out.content.len() < 1_200, "{}", out.content.len());
        assert!(
            out.content.contains("line cut, 5000 characters"),
            "{}",
            out.content
        );
    }

    #[test]
    fn paths_and_links_out_of_the_work_dir_are_refused() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        fs::write(outside.path().join("secret.txt"), "needle\n").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("dirlink")).expect("link");
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("filelink"),
        )
        .expect("link");
        for path in [
            "..",
            "/etc",
            "dirlink",
            "filelink",
            outside.path().to_str().expect("utf-8"),
        ] {
            let out = run(&ws, &json!({"pattern": "needle", "path": path}));
            assert!(
                out.is_error && out.content.contains("outside"),
                "{path}: {}",
                out.content
            );
        }
        let out = grep(&ws, json!({"pattern": "needle"}));
        assert!(
            out.content.starts_with("No matches"),
            "links are not followed: {}",
            out.content
        );
    }

    #[test]
    fn bad_arguments_are_errors_the_model_can_read() {
        let (_dir, ws) = workspace();
        let cases = [
            (json!({}), "pattern"),
            (json!({"pattern": ["a"]}), "pattern"),
            (json!({"pattern": "fn("}), "invalid regex"),
            (json!({"pattern": "(a{1000}){1000}"}), "invalid regex"),
            (
                json!({"pattern": "a", "case_insensitive": "yes"}),
                "true or false",
            ),
            (
                json!({"pattern": "a", "max_results": -1}),
                "non-negative integer",
            ),
            (
                json!({"pattern": "a", "max_results": "ten"}),
                "non-negative integer",
            ),
            (
                json!({"pattern": "a", "glob_filter": "a{"}),
                "invalid glob_filter",
            ),
            (
                json!({"pattern": "a", "glob_filter": 5}),
                "must be a string",
            ),
            (json!({"pattern": "a", "path": "missing"}), "does not exist"),
        ];
        for (arguments, expected) in cases {
            let out = run(&ws, &arguments);
            assert!(
                out.is_error && out.content.contains(expected),
                "{arguments}: {}",
                out.content
            );
        }
    }
}
