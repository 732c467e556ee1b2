//! `apply_patch` (agents/tools.mdx, OpenAI profile): applies a patch in
//! the v4a format OpenAI's models are trained to write:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path          then the new file's lines, each after `+`
//! *** Delete File: path
//! *** Update File: path
//! *** Move to: new/path       (optional: a rename)
//! @@ a line to find first     (optional: an anchor; `@@` alone is allowed)
//!  context line               (` `: kept; `-`: removed; `+`: added)
//! *** End of File             (optional: the hunk ends at the file's end)
//! *** End Patch
//! ```
//!
//! The whole patch is checked and every file's new content computed before
//! anything is written: a patch that does not apply changes nothing. Hunks
//! are found in order, each after the previous one, matching lines exactly
//! first and then with trailing whitespace ignored.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::read_file::{MAX_FILE_BYTES, read_error};
use super::write_file::write_regular;
use super::{ToolOutput, Workspace, required_str};
use crate::limits::{MIB, human_bytes};

/// The longest patch accepted: far beyond any one model turn.
const MAX_PATCH_BYTES: usize = 4 * MIB as usize;
/// Lines of a failed hunk quoted back in the error.
const QUOTED_LINES: usize = 8;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Apply a patch in the v4a format: *** Begin Patch / *** End Patch around *** Add File:, *** Update File: (with context hunks, optionally *** Move to:) and *** Delete File: sections.",
        serde_json::json!({"type":"object","properties":{"patch":{"type":"string","description":"The patch, in v4a format"}},"required":["patch"]}),
    )
}

pub(super) fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match apply(workspace, arguments) {
        Ok(output) | Err(output) => output,
    }
}

/// `Add a.rs, Update b.rs`: the files a patch names.
pub(super) fn summarize(patch: &str) -> String {
    patch
        .lines()
        .filter_map(|line| {
            ["*** Add File: ", "*** Update File: ", "*** Delete File: "]
                .iter()
                .find_map(|p| line.strip_prefix(p).map(|rest| (p, rest)))
        })
        .map(|(p, rest)| format!("{} {}", p[4..].split(' ').next().unwrap_or(""), rest.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One file operation of a patch.
#[derive(Debug, PartialEq, Eq)]
enum Op {
    Add {
        path: String,
        lines: Vec<String>,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        hunks: Vec<Hunk>,
    },
}

/// One `@@` section of an update.
#[derive(Debug, Default, PartialEq, Eq)]
struct Hunk {
    /// The text after `@@`: a line to find before the hunk's lines.
    anchor: Option<String>,
    /// Its lines in order: ` ` context, `-` removed, `+` added.
    lines: Vec<(char, String)>,
    /// `*** End of File` followed: the lines end the file.
    at_end: bool,
    /// The patch line the hunk starts on (1-based), for errors.
    line: usize,
}

fn apply(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let patch = required_str(arguments, "patch")?;
    if patch.len() > MAX_PATCH_BYTES {
        return Err(ToolOutput::error(format!(
            "the patch is {} bytes, over the limit of {}; split it into several apply_patch calls",
            patch.len(),
            human_bytes(MAX_PATCH_BYTES as u64)
        )));
    }
    let ops = parse(patch).map_err(|e| {
        ToolOutput::error(format!(
            "the patch is not valid v4a: {e}. Nothing was written. The format is `*** Begin Patch`, \
             then `*** Add File: path` (lines starting with +), `*** Delete File: path` or \
             `*** Update File: path` (hunks starting with @@, lines starting with space, - or +), \
             then `*** End Patch`."
        ))
    })?;
    let mut plan = Plan::new(workspace);
    for op in &ops {
        plan.add(op)
            .map_err(|e| ToolOutput::error(format!("{e}\nNothing was written.")))?;
    }
    plan.write()
}

/// Parses the text of a patch into its operations.
fn parse(patch: &str) -> Result<Vec<Op>, String> {
    let lines = unwrap_heredoc(patch);
    let (first, last) = match (lines.first(), lines.last()) {
        (Some(first), Some(last)) if lines.len() >= 2 => (first.1.trim(), last.1.trim()),
        _ => {
            return Err("it must start with `*** Begin Patch` and end with `*** End Patch`".into());
        }
    };
    if first != "*** Begin Patch" {
        return Err(format!(
            "it must start with `*** Begin Patch`, not `{}`",
            quote(first)
        ));
    }
    if last != "*** End Patch" {
        return Err(format!(
            "it must end with `*** End Patch`, not `{}`",
            quote(last)
        ));
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let (number, line) = body[i];
        i += 1;
        if let Some(path) = line.strip_prefix("*** Add File:") {
            let path = path_of(path, number)?;
            let mut added = Vec::new();
            while let Some(&(_, next)) = body.get(i) {
                if let Some(text) = next.strip_prefix('+') {
                    added.push(text.to_string());
                } else if next.is_empty() && more_added_lines(&body[i..]) {
                    // An empty line whose `+` was lost, inside the content.
                    added.push(String::new());
                } else {
                    break;
                }
                i += 1;
            }
            ops.push(Op::Add { path, lines: added });
        } else if let Some(path) = line.strip_prefix("*** Delete File:") {
            ops.push(Op::Delete {
                path: path_of(path, number)?,
            });
        } else if let Some(path) = line.strip_prefix("*** Update File:") {
            let path = path_of(path, number)?;
            let mut move_to = None;
            if let Some((n, to)) = body
                .get(i)
                .and_then(|(n, l)| l.strip_prefix("*** Move to:").map(|t| (*n, t)))
            {
                move_to = Some(path_of(to, n)?);
                i += 1;
            }
            let hunks = parse_hunks(body, &mut i)?;
            if hunks.is_empty() && move_to.is_none() {
                return Err(format!(
                    "line {number}: `*** Update File: {path}` has no hunks"
                ));
            }
            ops.push(Op::Update {
                path,
                move_to,
                hunks,
            });
        } else if line.trim().is_empty() {
            // Blank lines between file sections.
        } else if matches!(ops.last(), Some(Op::Add { .. })) && !line.starts_with("***") {
            return Err(format!(
                "line {number}: every line of an added file starts with '+', found `{}`",
                quote(line)
            ));
        } else {
            return Err(format!(
                "line {number}: expected `*** Add File:`, `*** Update File:` or `*** Delete File:`, found `{}`",
                quote(line)
            ));
        }
    }
    if ops.is_empty() {
        return Err("it changes no files".into());
    }
    Ok(ops)
}

/// The hunks of one `*** Update File` section, from `body[*i]` up to the
/// next file section.
fn parse_hunks(body: &[(usize, &str)], i: &mut usize) -> Result<Vec<Hunk>, String> {
    let mut hunks = Vec::new();
    while let Some(&(number, line)) = body.get(*i) {
        if is_section(line) {
            break;
        }
        let mut hunk = Hunk {
            line: number,
            ..Hunk::default()
        };
        if let Some(anchor) = line.strip_prefix("@@") {
            let anchor = anchor.trim();
            hunk.anchor = (!anchor.is_empty()).then(|| anchor.to_string());
            *i += 1;
        } else if !hunks.is_empty() {
            return Err(format!(
                "line {number}: expected `@@` to start the next hunk, found `{}`",
                quote(line)
            ));
        }
        // The first hunk may leave out its `@@` line.
        while let Some(&(number, line)) = body.get(*i) {
            if line == "*** End of File" {
                hunk.at_end = true;
                *i += 1;
                break;
            }
            if line.starts_with("@@") || is_section(line) {
                break;
            }
            let mut chars = line.chars();
            match chars.next() {
                Some(kind @ (' ' | '-' | '+')) => {
                    hunk.lines.push((kind, chars.as_str().to_string()))
                }
                // An empty line: an empty context line whose space was lost.
                None => hunk.lines.push((' ', String::new())),
                Some(_) => {
                    return Err(format!(
                        "line {number}: a hunk line starts with ' ' (context), '-' (removed) or '+' (added), found `{}`",
                        quote(line)
                    ));
                }
            }
            *i += 1;
        }
        if hunk.lines.is_empty() {
            return Err(format!("line {}: the hunk has no lines", hunk.line));
        }
        hunks.push(hunk);
    }
    Ok(hunks)
}

/// Whether `+` lines follow the empty lines that start `rest`.
fn more_added_lines(rest: &[(usize, &str)]) -> bool {
    rest.iter()
        .find(|(_, l)| !l.is_empty())
        .is_some_and(|(_, l)| l.starts_with('+'))
}

/// A line that starts a file section (or ends the patch).
fn is_section(line: &str) -> bool {
    line.starts_with("*** ") && line != "*** End of File"
}

/// The lines of a patch, numbered from 1, without a shell heredoc around it
/// (`apply_patch <<'EOF'` … `EOF`), which models sometimes copy from the
/// command-line form of the tool.
fn unwrap_heredoc(patch: &str) -> Vec<(usize, &str)> {
    let mut lines: Vec<(usize, &str)> = patch
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .skip_while(|(_, l)| l.trim().is_empty())
        .collect();
    while lines.last().is_some_and(|(_, l)| l.trim().is_empty()) {
        lines.pop();
    }
    if lines
        .first()
        .is_some_and(|(_, l)| l.contains("<<") && !l.starts_with("***"))
        && lines.last().is_some_and(|(_, l)| !l.starts_with("***"))
    {
        lines.remove(0);
        lines.pop();
    }
    lines
}

fn path_of(text: &str, number: usize) -> Result<String, String> {
    let path = text.trim();
    if path.is_empty() {
        Err(format!("line {number}: the file section names no path"))
    } else {
        Ok(path.to_string())
    }
}

/// `line` cut short for an error message.
fn quote(line: &str) -> String {
    crate::util::text::truncate(line, 120)
}

/// What a patch will do, computed before anything is written.
struct Plan<'a> {
    workspace: &'a Workspace,
    /// Every path the patch changes, with what was on disk before
    /// (`None`: nothing), for the write and for undoing it.
    before: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Each path's content after the operations so far (`None`: absent).
    after: BTreeMap<PathBuf, Option<String>>,
    /// Paths whose content this patch set: later operations need no read.
    fresh: HashSet<PathBuf>,
    /// Paths changed, relative, in patch order.
    touched: Vec<String>,
    /// One line per operation for the confirmation.
    summary: Vec<String>,
}

impl<'a> Plan<'a> {
    fn new(workspace: &'a Workspace) -> Plan<'a> {
        Plan {
            workspace,
            before: BTreeMap::new(),
            after: BTreeMap::new(),
            fresh: HashSet::new(),
            touched: Vec::new(),
            summary: Vec::new(),
        }
    }

    fn add(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Add { path, lines } => {
                let what = format!("Add File {path}");
                let target = self.resolve(&what, path)?;
                if self.exists(&target) {
                    return Err(format!(
                        "{what}: the file already exists; use `*** Update File: {path}` to change it \
                         (after reading it)"
                    ));
                }
                self.check_parents(&what, &target)?;
                let mut text = lines.join("\n");
                if !lines.is_empty() {
                    text.push('\n');
                }
                self.before.entry(target.clone()).or_insert(None);
                self.set(&target, Some(text));
                self.summary
                    .push(format!("A {}", self.workspace.relative(&target)));
            }
            Op::Delete { path } => {
                let what = format!("Delete File {path}");
                let target = self.resolve(&what, path)?;
                if self.current(&what, &target)?.is_none() {
                    return Err(format!("{what}: the file does not exist"));
                }
                self.check_read(&what, &target)?;
                self.set(&target, None);
                self.summary
                    .push(format!("D {}", self.workspace.relative(&target)));
            }
            Op::Update {
                path,
                move_to,
                hunks,
            } => {
                let what = format!("Update File {path}");
                let source = self.resolve(&what, path)?;
                let dest = match move_to {
                    Some(to) => Some((to, self.resolve(&format!("{what}: Move to {to}"), to)?)),
                    None => None,
                };
                let Some(text) = self.current(&what, &source)? else {
                    return Err(format!(
                        "{what}: the file does not exist (use `*** Add File: {path}` to create it)"
                    ));
                };
                self.check_read(&what, &source)?;
                let text = text.map_err(|e| format!("{what}: {e}"))?;
                let updated = apply_hunks(&text, hunks).map_err(|(n, why)| {
                    let hunk = &hunks[n];
                    format!(
                        "{what}: hunk {} of {} (patch line {}) did not apply: {why}\n\
                         Read the file again and make the hunk's context and '-' lines match it.",
                        n + 1,
                        hunks.len(),
                        hunk.line
                    )
                })?;
                match dest {
                    Some((to, dest)) => {
                        if dest != source {
                            if self.current(&what, &dest)?.is_some() {
                                self.check_read(&format!("{what}: Move to {to}"), &dest)?;
                            }
                            self.check_parents(&what, &dest)?;
                            self.set(&source, None);
                        }
                        self.set(&dest, Some(updated));
                        self.summary.push(format!(
                            "R {} -> {}",
                            self.workspace.relative(&source),
                            self.workspace.relative(&dest)
                        ));
                    }
                    None => {
                        self.set(&source, Some(updated));
                        self.summary
                            .push(format!("M {}", self.workspace.relative(&source)));
                    }
                }
            }
        }
        Ok(())
    }

    fn resolve(&self, what: &str, path: &str) -> Result<PathBuf, String> {
        self.workspace
            .resolve(path)
            .map_err(|e| format!("{what}: {}", e.content))
    }

    /// Whether something is at `path` now (after the operations so far).
    fn exists(&self, path: &Path) -> bool {
        match self.after.get(path) {
            Some(after) => after.is_some(),
            None => std::fs::symlink_metadata(path).is_ok(),
        }
    }

    /// What is at `path` now: `None` when nothing, else its text (or why it
    /// cannot be edited as text: binary, not UTF-8). Reading it the first
    /// time keeps its bytes for the write.
    #[allow(clippy::type_complexity)]
    fn current(
        &mut self,
        what: &str,
        path: &Path,
    ) -> Result<Option<Result<String, String>>, String> {
        if let Some(after) = self.after.get(path) {
            return Ok(after.clone().map(Ok));
        }
        let shown = self.workspace.relative(path);
        let bytes = match std::fs::symlink_metadata(path) {
            Err(_) => None,
            Ok(_) => Some(
                crate::limits::read_capped(path, MAX_FILE_BYTES)
                    .map_err(|e| format!("{what}: {}", read_error(&shown, e).content))?,
            ),
        };
        let text = bytes.as_ref().map(|bytes| {
            if bytes.iter().take(8192).any(|b| *b == 0) {
                return Err(format!(
                    "{shown} is a binary file; it cannot be patched as text"
                ));
            }
            String::from_utf8(bytes.clone())
                .map_err(|_| format!("{shown} is not valid UTF-8; it cannot be patched as text"))
        });
        self.before.entry(path.to_path_buf()).or_insert(bytes);
        Ok(text)
    }

    /// Read-before-write for a file that exists on disk.
    fn check_read(&self, what: &str, path: &Path) -> Result<(), String> {
        if self.fresh.contains(path) {
            return Ok(());
        }
        self.workspace
            .check_write(path)
            .map_err(|e| format!("{what}: {}", e.content.replace('\n', " ")))
    }

    /// A new file's nearest existing ancestor must be a directory.
    fn check_parents(&self, what: &str, path: &Path) -> Result<(), String> {
        for ancestor in path.ancestors().skip(1) {
            if let Some(Some(_)) = self.after.get(ancestor) {
                return Err(format!(
                    "{what}: {} is a file, not a directory",
                    self.workspace.relative(ancestor)
                ));
            }
            if let Ok(meta) = std::fs::symlink_metadata(ancestor) {
                if meta.is_dir() {
                    return Ok(());
                }
                if self.after.get(ancestor) != Some(&None) {
                    return Err(format!(
                        "{what}: {} is {}, not a directory",
                        self.workspace.relative(ancestor),
                        crate::limits::file_kind(&meta.file_type())
                    ));
                }
            }
        }
        Ok(())
    }

    fn set(&mut self, path: &Path, content: Option<String>) {
        self.after.insert(path.to_path_buf(), content.clone());
        if content.is_some() {
            self.fresh.insert(path.to_path_buf());
        }
        let shown = self.workspace.relative(path);
        if !self.touched.contains(&shown) {
            self.touched.push(shown);
        }
    }

    /// Deletes, then writes; undoes what was done when a step fails.
    fn write(self) -> Result<ToolOutput, ToolOutput> {
        let changed: Vec<(&PathBuf, &Option<String>)> = self
            .after
            .iter()
            .filter(|(path, after)| {
                let before = self.before.get(*path).and_then(Option::as_ref);
                before.map(Vec::as_slice) != after.as_ref().map(String::as_bytes)
            })
            .collect();
        let (deletes, writes): (Vec<_>, Vec<_>) =
            changed.into_iter().partition(|(_, a)| a.is_none());
        let mut done: Vec<&PathBuf> = Vec::new();
        let mut failure = None;
        for (path, _) in &deletes {
            if let Err(e) = std::fs::remove_file(path) {
                failure = Some(format!(
                    "cannot delete {}: {e}",
                    self.workspace.relative(path)
                ));
                break;
            }
            done.push(path);
        }
        if failure.is_none() {
            for (path, after) in &writes {
                let text = after.as_deref().unwrap_or_default();
                if let Err(e) = write_regular(self.workspace, path, text.as_bytes()) {
                    failure = Some(e.content);
                    break;
                }
                done.push(path);
            }
        }
        if let Some(failure) = failure {
            for path in done.into_iter().rev() {
                // Best effort: put back what was there.
                let _ = match self.before.get(path).and_then(Option::as_ref) {
                    Some(bytes) => write_regular(self.workspace, path, bytes).map_err(|_| ()),
                    None => std::fs::remove_file(path).map_err(|_| ()),
                };
            }
            return Err(ToolOutput::error(format!(
                "{failure}\nThe files already changed were put back as they were."
            )));
        }
        for (path, after) in &self.after {
            if after.is_some() && self.fresh.contains(path) {
                self.workspace.mark_read(path);
            }
        }
        let mut content = String::from("Applied the patch:\n");
        for line in &self.summary {
            let _ = writeln!(content, "{line}");
        }
        Ok(ToolOutput {
            content,
            is_error: false,
            touched: self.touched,
        })
    }
}

/// `text` with `hunks` applied in order, or the index of the hunk that did
/// not apply and why.
fn apply_hunks(text: &str, hunks: &[Hunk]) -> Result<String, (usize, String)> {
    let crlf = text.contains("\r\n");
    let body = text.strip_suffix('\n').unwrap_or(text);
    let lines: Vec<&str> = if text.is_empty() {
        Vec::new()
    } else {
        body.split('\n')
            .map(|l| {
                if crlf {
                    l.strip_suffix('\r').unwrap_or(l)
                } else {
                    l
                }
            })
            .collect()
    };
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        if let Some(anchor) = &hunk.anchor {
            let found = find_anchor(&lines, cursor, anchor).ok_or_else(|| {
                (
                    n,
                    format!(
                        "its @@ line `{}` was not found{}",
                        quote(anchor),
                        after(cursor)
                    ),
                )
            })?;
            cursor = found + 1;
        }
        let mut parts: &[(char, String)] = &hunk.lines;
        let old_of = |parts: &[(char, String)]| -> Vec<String> {
            parts
                .iter()
                .filter(|(k, _)| *k != '+')
                .map(|(_, t)| t.clone())
                .collect()
        };
        let mut old = old_of(parts);
        if old.is_empty() {
            // Only added lines: after the anchor, else at the end.
            let at = if hunk.anchor.is_some() && !hunk.at_end {
                cursor
            } else {
                lines.len()
            };
            edits.push((at, 0, parts.iter().map(|(_, t)| t.clone()).collect()));
            continue;
        }
        let mut found = find_lines(&lines, cursor, &old, hunk.at_end);
        if found.is_none() && parts.last().is_some_and(|(k, t)| *k == ' ' && t.is_empty()) {
            // A blank line the model left before the next section.
            parts = &parts[..parts.len() - 1];
            old = old_of(parts);
            found = find_lines(&lines, cursor, &old, hunk.at_end);
        }
        let Some(at) = found else {
            let mut why = format!(
                "these lines were not found{}{}:",
                if hunk.at_end {
                    " at the end of the file"
                } else {
                    ""
                },
                after(cursor)
            );
            for line in old.iter().take(QUOTED_LINES) {
                let _ = write!(why, "\n    {}", quote(line));
            }
            if old.len() > QUOTED_LINES {
                let _ = write!(why, "\n    … ({} lines in all)", old.len());
            }
            return Err((n, why));
        };
        // Context lines stay as the file has them (trailing spaces and all).
        let mut replacement = Vec::new();
        let mut in_file = at;
        for (kind, text) in parts {
            match kind {
                ' ' => {
                    replacement.push(lines[in_file].to_string());
                    in_file += 1;
                }
                '-' => in_file += 1,
                _ => replacement.push(text.clone()),
            }
        }
        edits.push((at, old.len(), replacement));
        cursor = at + old.len();
    }
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (at, removed, added) in &edits {
        out.extend_from_slice(&lines[next..*at]);
        out.extend(added.iter().map(String::as_str));
        next = at + removed;
    }
    out.extend_from_slice(&lines[next..]);
    let newline = if crlf { "\r\n" } else { "\n" };
    let mut result = out.join(newline);
    if !out.is_empty() && (text.ends_with('\n') || text.is_empty()) {
        result.push_str(newline);
    }
    Ok(result)
}

fn after(cursor: usize) -> String {
    if cursor == 0 {
        String::new()
    } else {
        format!(" after line {cursor}")
    }
}

/// The first line at or after `from` that is `anchor`: exactly, then
/// ignoring whitespace at either end, then containing it (an anchor is
/// often a function's signature without its body).
fn find_anchor(lines: &[&str], from: usize, anchor: &str) -> Option<usize> {
    let rest = lines.get(from..)?;
    let at = rest
        .iter()
        .position(|l| *l == anchor)
        .or_else(|| rest.iter().position(|l| l.trim() == anchor.trim()))
        .or_else(|| rest.iter().position(|l| l.contains(anchor.trim())))?;
    Some(from + at)
}

/// Where `old` occurs in `lines` at or after `from`: exactly first, then
/// with trailing whitespace ignored; at the end of the file first when the
/// hunk is marked so.
fn find_lines(lines: &[&str], from: usize, old: &[String], at_end: bool) -> Option<usize> {
    if old.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - old.len();
    let same = |at: usize, loose: bool| {
        old.iter().zip(&lines[at..]).all(|(want, have)| {
            if loose {
                want.trim_end() == have.trim_end()
            } else {
                want == have
            }
        })
    };
    for loose in [false, true] {
        if at_end && last_start >= from && same(last_start, loose) {
            return Some(last_start);
        }
        if let Some(at) = (from..=last_start).find(|at| same(*at, loose)) {
            return Some(at);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::agent::tools::workspace::scratch as workspace;

    /// Writes `files` and marks them read, as a session that read them.
    fn seed(dir: &tempfile::TempDir, ws: &Workspace, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.path().join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("dirs");
            }
            std::fs::write(&path, text).expect("write");
            ws.mark_read(&ws.resolve(name).expect("resolve"));
        }
    }

    fn patch(ws: &Workspace, text: &str) -> ToolOutput {
        run(ws, &json!({ "patch": text }))
    }

    fn file(dir: &tempfile::TempDir, name: &str) -> String {
        std::fs::read_to_string(dir.path().join(name)).expect("read")
    }

    #[test]
    fn add_update_delete_and_move_in_one_patch() {
        let (dir, ws) = workspace();
        seed(
            &dir,
            &ws,
            &[
                (
                    "src/app.py",
                    "import os\n\ndef greet():\n    print(\"Hi\")\n\nmain()\n",
                ),
                ("old.txt", "bye\n"),
                ("keep.rs", "fn a() {}\nfn b() {}\n"),
            ],
        );
        let out = patch(
            &ws,
            "*** Begin Patch\n\
             *** Add File: docs/hello.txt\n\
             +Hello\n\
             +world\n\
             *** Update File: src/app.py\n\
             *** Move to: src/main.py\n\
             @@ def greet():\n\
             -    print(\"Hi\")\n\
             +    print(\"Hello, world!\")\n\
             *** Delete File: old.txt\n\
             *** Update File: keep.rs\n\
             @@\n\
             \x20fn a() {}\n\
             -fn b() {}\n\
             +fn c() {}\n\
             *** End Patch\n",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "docs/hello.txt"), "Hello\nworld\n");
        assert_eq!(
            file(&dir, "src/main.py"),
            "import os\n\ndef greet():\n    print(\"Hello, world!\")\n\nmain()\n"
        );
        assert!(!dir.path().join("src/app.py").exists(), "moved away");
        assert!(!dir.path().join("old.txt").exists(), "deleted");
        assert_eq!(file(&dir, "keep.rs"), "fn a() {}\nfn c() {}\n");
        assert_eq!(
            out.touched,
            [
                "docs/hello.txt",
                "src/app.py",
                "src/main.py",
                "old.txt",
                "keep.rs"
            ]
        );
        assert!(
            out.content.contains("R src/app.py -> src/main.py"),
            "{}",
            out.content
        );
        assert!(
            ws.was_read(&ws.root().join("src/main.py")),
            "the model knows what it wrote"
        );
    }

    #[test]
    fn several_hunks_apply_in_order_and_end_of_file_anchors_the_last() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("f.txt", "a\nx\nb\nx\nc\nx\n")]);
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: f.txt\n@@ b\n-x\n+second\n@@\n c\n-x\n+third\n*** End of File\n*** End Patch",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "f.txt"), "a\nx\nb\nsecond\nc\nthird\n");
    }

    #[test]
    fn context_matches_despite_trailing_whitespace_and_crlf_is_kept() {
        let (dir, ws) = workspace();
        seed(
            &dir,
            &ws,
            &[("t.txt", "one  \ntwo\t\nthree\n"), ("w.txt", "a\r\nb\r\n")],
        );
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: t.txt\n one\n-two\n+2\n*** Update File: w.txt\n a\n-b\n+c\n*** End Patch",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "t.txt"), "one  \n2\nthree\n");
        assert_eq!(file(&dir, "w.txt"), "a\r\nc\r\n");
    }

    #[test]
    fn a_hunk_that_does_not_apply_names_the_file_and_hunk_and_writes_nothing() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("a.txt", "1\n2\n3\n"), ("b.txt", "x\ny\n")]);
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Add File: new.txt\n+n\n*** Update File: a.txt\n@@\n-1\n+one\n*** Update File: b.txt\n@@\n x\n-y\n+z\n@@\n-nope\n+never\n*** End Patch",
        );
        assert!(out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains("Update File b.txt: hunk 2 of 2 (patch line 13) did not apply"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("    nope") && out.content.contains("Nothing was written"),
            "{}",
            out.content
        );
        assert!(out.touched.is_empty());
        assert_eq!(file(&dir, "a.txt"), "1\n2\n3\n", "earlier files untouched");
        assert_eq!(file(&dir, "b.txt"), "x\ny\n");
        assert!(!dir.path().join("new.txt").exists(), "no file added");
    }

    #[test]
    fn a_patch_touching_a_file_outside_the_work_dir_is_refused_whole() {
        let (dir, ws) = workspace();
        let outside = tempfile::tempdir().expect("temp");
        std::fs::write(outside.path().join("o.txt"), "o\n").expect("write");
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).expect("link");
        seed(&dir, &ws, &[("in.txt", "i\n")]);
        let abs = outside.path().join("o.txt");
        for target in [
            "*** Add File: ../evil.txt\n+x".to_string(),
            format!("*** Update File: {}\n-o\n+p", abs.display()),
            format!("*** Delete File: {}", abs.display()),
            "*** Add File: out/evil.txt\n+x".to_string(),
            "*** Update File: in.txt\n*** Move to: ../moved.txt\n-i\n+j".to_string(),
        ] {
            let text = format!(
                "*** Begin Patch\n*** Update File: in.txt\n-i\n+changed\n{target}\n*** End Patch"
            );
            let out = patch(&ws, &text);
            assert!(
                out.is_error && out.content.contains("outside the work directory"),
                "{target}: {}",
                out.content
            );
            assert_eq!(file(&dir, "in.txt"), "i\n", "{target}");
        }
        assert_eq!(std::fs::read_to_string(&abs).expect("read"), "o\n");
        let names: Vec<_> = std::fs::read_dir(outside.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["o.txt"]);
        assert!(
            !dir.path()
                .parent()
                .expect("parent")
                .join("moved.txt")
                .exists()
        );
    }

    #[test]
    fn updating_or_deleting_an_unread_file_is_refused_and_adding_an_existing_one_too() {
        let (dir, ws) = workspace();
        std::fs::write(dir.path().join("unread.txt"), "u\n").expect("write");
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: unread.txt\n-u\n+v\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("has not been read"),
            "{}",
            out.content
        );
        assert!(out.content.contains("read_file"));
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Delete File: unread.txt\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("has not been read"),
            "{}",
            out.content
        );
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Add File: unread.txt\n+new\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("already exists"),
            "{}",
            out.content
        );
        assert_eq!(file(&dir, "unread.txt"), "u\n");
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: missing.txt\n-a\n+b\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
    }

    #[test]
    fn a_file_added_by_the_patch_may_be_updated_by_it() {
        let (dir, ws) = workspace();
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Add File: n.txt\n+a\n\n+b\n\n*** Update File: n.txt\n a\n \n-b\n+c\n*** End Patch",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            file(&dir, "n.txt"),
            "a\n\nc\n",
            "an empty line inside added content is kept"
        );
        assert_eq!(out.touched, ["n.txt"]);
    }

    #[test]
    fn malformed_patches_are_explained() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("f", "a\n")]);
        for (text, expected) in [
            (
                "*** Update File: f\n-a\n+b\n*** End Patch",
                "must start with `*** Begin Patch`",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n-a\n+b",
                "must end with `*** End Patch`",
            ),
            ("*** Begin Patch\n*** End Patch", "changes no files"),
            (
                "*** Begin Patch\n*** Update File: f\n*** End Patch",
                "has no hunks",
            ),
            (
                "*** Begin Patch\n*** Update File: f\n@@\n-a\n?b\n*** End Patch",
                "line 5: a hunk line starts with",
            ),
            (
                "*** Begin Patch\n*** Frobnicate File: f\n*** End Patch",
                "line 2: expected `*** Add File:`",
            ),
            (
                "*** Begin Patch\n*** Add File: n\n+x\ny\n*** End Patch",
                "line 4: every line of an added file starts with '+'",
            ),
            (
                "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch",
                "names no path",
            ),
            ("", "must start with"),
        ] {
            let out = patch(&ws, text);
            assert!(
                out.is_error && out.content.contains(expected),
                "{text:?}: {}",
                out.content
            );
            assert!(
                out.content.contains("Nothing was written"),
                "{}",
                out.content
            );
        }
        let out = run(&ws, &json!({"patch": 42}));
        assert!(
            out.is_error && out.content.contains("must be a string"),
            "{}",
            out.content
        );
        let huge = format!(
            "*** Begin Patch\n*** Add File: h\n{}*** End Patch",
            "+x\n".repeat(2 * 1024 * 1024)
        );
        let out = patch(&ws, &huge);
        assert!(
            out.is_error && out.content.contains("over the limit"),
            "{}",
            &out.content[..200]
        );
        assert_eq!(file(&dir, "f"), "a\n");
    }

    #[test]
    fn a_heredoc_wrapper_and_a_blank_line_before_the_next_section_are_tolerated() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("f", "a\nb\n")]);
        let out = patch(
            &ws,
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: f\n a\n-b\n+c\n\n*** End Patch\nEOF\n",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "f"), "a\nc\n");
    }

    #[test]
    fn binary_invalid_utf8_huge_and_directory_targets_are_refused() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("b.bin", "a\0b\n")]);
        std::fs::write(dir.path().join("l.txt"), b"caf\xe9\n").expect("write");
        ws.mark_read(&ws.resolve("l.txt").expect("resolve"));
        std::fs::create_dir(dir.path().join("d")).expect("dir");
        let big = dir.path().join("big.txt");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(MAX_FILE_BYTES + 1))
            .expect("sparse");
        ws.mark_read(&ws.resolve("big.txt").expect("resolve"));
        for (target, expected) in [
            ("b.bin", "binary"),
            ("l.txt", "not valid UTF-8"),
            ("d", "is a directory"),
            ("big.txt", "larger than 10 MiB"),
        ] {
            let out = patch(
                &ws,
                &format!("*** Begin Patch\n*** Update File: {target}\n-a\n+b\n*** End Patch"),
            );
            assert!(
                out.is_error && out.content.contains(expected),
                "{target}: {}",
                out.content
            );
        }
        let out = patch(&ws, "*** Begin Patch\n*** Add File: d\n+x\n*** End Patch");
        assert!(
            out.is_error && out.content.contains("already exists"),
            "{}",
            out.content
        );
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Add File: b.bin/x\n+x\n*** End Patch",
        );
        assert!(out.is_error, "{}", out.content);
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Delete File: b.bin\n*** End Patch",
        );
        assert!(
            !out.is_error,
            "a binary file may be deleted: {}",
            out.content
        );
    }

    #[test]
    fn an_anchor_and_a_pure_insertion_land_after_the_anchor() {
        let (dir, ws) = workspace();
        seed(&dir, &ws, &[("f.rs", "fn a() {\n}\nfn b() {\n}\n")]);
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: f.rs\n@@ fn b()\n+    // b\n*** End Patch",
        );
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(file(&dir, "f.rs"), "fn a() {\n}\nfn b() {\n    // b\n}\n");
        let out = patch(
            &ws,
            "*** Begin Patch\n*** Update File: f.rs\n@@ fn zzz()\n+x\n*** End Patch",
        );
        assert!(
            out.is_error && out.content.contains("`fn zzz()` was not found"),
            "{}",
            out.content
        );
    }

    #[test]
    fn summarize_names_each_file() {
        assert_eq!(
            summarize(
                "*** Begin Patch\n*** Add File: a.rs\n+x\n*** Update File: b.rs\n*** Delete File: c.rs\n*** End Patch"
            ),
            "Add a.rs, Update b.rs, Delete c.rs"
        );
    }
}
