//! Diagnostics for people (rustc style, with the source line and a caret)
//! and for scripts (JSON).

use std::fmt::Write as _;
use std::io::IsTerminal;

use serde::Serialize;
use serde_json::json;

use crate::lang::{Diagnostic, Severity, Workflow};

/// ANSI styling, on only for a terminal without `NO_COLOR`.
#[derive(Clone, Copy)]
pub(crate) struct Style {
    on: bool,
}

impl Style {
    /// Colours when stderr is a terminal and `NO_COLOR` is unset.
    #[must_use]
    pub(crate) fn for_stderr() -> Style {
        Style::when(std::io::stderr().is_terminal())
    }

    /// Colours when stdout is a terminal and `NO_COLOR` is unset.
    #[must_use]
    pub(crate) fn for_stdout() -> Style {
        Style::when(std::io::stdout().is_terminal())
    }

    /// Colours when `terminal` holds and `NO_COLOR` is unset or empty
    /// (no-color.org: set to any non-empty value, colour is off).
    #[must_use]
    pub fn when(terminal: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            on: terminal && !no_color,
        }
    }

    /// `text` in the SGR colour `code` (`"1;31"`), when colour is on.
    pub(crate) fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// The colour of a run or stage status, wherever one is printed: green
/// for success, red for failure, yellow for what needs a look (partial
/// success, blocked, cancelled, interrupted), cyan for running.
#[must_use]
pub(crate) fn status_colour(status: &str) -> &'static str {
    match status {
        "succeeded" => "32",
        // `succeeded (1 failed)`: it routed past a failure.
        s if s.starts_with("succeeded (") => "33",
        "failed" => "31",
        "partially_succeeded" | "blocked" | "cancelled" | "interrupted" => "33",
        "running" => "36",
        _ => "2",
    }
}

/// `1 edge`, `2 edges`: a count with its noun, singular only for one.
#[must_use]
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

fn severity_code(s: Severity) -> &'static str {
    match s {
        Severity::Error => "1;31",
        Severity::Warning => "1;33",
        Severity::Info => "1;36",
    }
}

/// Renders one diagnostic the way rustc does:
///
/// ```text
/// error[start_node]: the workflow has no start node
///  --> flow.fabro:1:9
///   |
/// 1 | digraph Flow {
///   |         ^^^^
///   = hint: add `start [shape=Mdiamond]`
/// ```
#[must_use]
pub fn human(d: &Diagnostic, file: &str, source: &str, style: Style) -> String {
    let mut out = String::new();
    let head = format!("{}[{}]", d.severity.as_str(), d.rule);
    let _ = writeln!(
        out,
        "{}{}",
        style.paint(severity_code(d.severity), &head),
        style.paint("1", &format!(": {}", d.message))
    );
    let Some(span) = d.span else {
        let _ = writeln!(out, " --> {file}");
        if let Some(hint) = &d.hint {
            let _ = writeln!(out, "  = hint: {hint}");
        }
        return out;
    };
    let line_no = span.line.to_string();
    let pad = " ".repeat(line_no.len());
    let bar = style.paint("1;34", "|");
    let _ = writeln!(
        out,
        "{pad}{} {file}:{}:{}",
        style.paint("1;34", "-->"),
        span.line,
        span.column
    );
    if let Some(excerpt) = Excerpt::around(source, span.start as usize, span.end as usize) {
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(
            out,
            "{} {bar} {}",
            style.paint("1;34", &line_no),
            excerpt.text
        );
        let marks = style.paint(severity_code(d.severity), &"^".repeat(excerpt.width));
        let _ = writeln!(out, "{pad} {bar} {}{marks}", " ".repeat(excerpt.caret));
    }
    if let Some(hint) = &d.hint {
        let _ = writeln!(out, "{pad} {} hint: {hint}", style.paint("1;34", "="));
    }
    out
}

/// Prints the warnings about `$WEFT_HOME/settings.toml` (keys nothing
/// reads) on stderr, rustc-style.
pub(crate) fn warn_about_settings(home: &crate::store::Home) {
    let path = home.settings_path();
    let warnings = crate::server::settings_warnings(&path);
    if warnings.is_empty() {
        return;
    }
    let text = crate::config::read(&path)
        .ok()
        .flatten()
        .unwrap_or_default();
    let file = path.display().to_string();
    for d in &warnings {
        eprintln!("{}", human(d, &file, &text, Style::for_stderr()));
    }
}

/// How many characters of the source line an excerpt shows at most on each
/// side of the problem. A minified or generated file can have a line of
/// megabytes; the excerpt stays one terminal line or so.
const EXCERPT_SIDE: usize = 60;

/// The part of a source line a diagnostic shows: a window around the
/// problem, `…` where the line was cut.
#[derive(Debug, PartialEq)]
struct Excerpt {
    /// The window, tabs as spaces, with `…` at a cut end.
    text: String,
    /// Characters before the first `^`.
    caret: usize,
    /// Number of `^` (at least 1).
    width: usize,
}

impl Excerpt {
    /// The excerpt for the span `start..end` of `source`: found from the
    /// byte offset, and costing the window, not the line or the file.
    fn around(source: &str, start: usize, end: usize) -> Option<Excerpt> {
        if start > source.len() || !source.is_char_boundary(start) {
            return None;
        }
        let bytes = source.as_bytes();
        // Walk back at most EXCERPT_SIDE characters, stopping at the line's
        // start.
        let mut from = start;
        let mut before = 0;
        while from > 0 && before < EXCERPT_SIDE {
            let prev = floor_char(source, from - 1);
            if bytes[prev] == b'\n' {
                break;
            }
            from = prev;
            before += 1;
        }
        let cut_left = from > 0 && bytes[from - 1] != b'\n';
        // Forward from the problem, at most EXCERPT_SIDE characters; the
        // carets cover the span as far as the window goes.
        let mut to = start;
        let mut after = 0;
        while to < source.len() && bytes[to] != b'\n' && after < EXCERPT_SIDE {
            to = ceil_char(source, to + 1);
            after += 1;
        }
        let line_end = to >= source.len() || bytes[to] == b'\n';
        let window = source.get(from..to)?;
        let problem = source.get(start..end.clamp(start, to)).unwrap_or("");
        let mut text = String::with_capacity(window.len() + 8);
        if cut_left {
            text.push('…');
        }
        text.push_str(&window.replace(['\t', '\r'], " "));
        if !line_end {
            text.push('…');
        }
        Some(Excerpt {
            text,
            caret: before + usize::from(cut_left),
            width: problem.chars().count().max(1),
        })
    }
}

/// The start of the character containing byte `i`.
fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The start of the character at or after byte `i`.
fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The one-line summary printed after a file's diagnostics.
#[must_use]
pub fn summary(wf: &Workflow) -> String {
    match &wf.graph {
        Some(g) => format!(
            "Workflow: {} ({}, {})",
            g.name,
            count(g.nodes.len() as u64, "node", "nodes"),
            count(g.edges.len() as u64, "edge", "edges")
        ),
        None => format!("Workflow: {} (not parsed)", wf.name()),
    }
}

/// Counts of errors, warnings and notes (info), as `2 errors, 1 warning`;
/// a kind with none is left out, `None` when there are none at all.
#[must_use]
pub fn counts(diagnostics: &[Diagnostic]) -> Option<String> {
    let of = |severity: Severity| {
        diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    };
    let parts: Vec<String> = [
        (of(Severity::Error), "error", "errors"),
        (of(Severity::Warning), "warning", "warnings"),
        (of(Severity::Info), "note", "notes"),
    ]
    .into_iter()
    .filter(|(n, ..)| *n > 0)
    .map(|(n, one, many)| count(n as u64, one, many))
    .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// One diagnostic as the JSON object of `weft validate --json`: `rule`,
/// `severity`, `message`, `line`, `column`, and `node_id`, `edge`, `hint`
/// when they apply.
#[derive(Serialize)]
pub(crate) struct JsonDiagnostic<'a> {
    rule: &'a str,
    severity: Severity,
    message: &'a str,
    line: u32,
    column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    node_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    edge: Option<[&'a str; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hint: Option<&'a str>,
}

impl<'a> From<&'a Diagnostic> for JsonDiagnostic<'a> {
    fn from(d: &'a Diagnostic) -> Self {
        JsonDiagnostic {
            rule: d.rule,
            severity: d.severity,
            message: &d.message,
            line: d.span.map_or(0, |s| s.line),
            column: d.span.map_or(0, |s| s.column),
            node_id: d.node_id.as_deref(),
            edge: d
                .edge
                .as_ref()
                .map(|(from, to)| [from.as_str(), to.as_str()]),
            hint: d.hint.as_deref(),
        }
    }
}

/// A whole file's result as the JSON line of `weft validate --json`.
/// Serialized straight from the diagnostics (an 8 MiB file can have
/// hundreds of thousands), without building a JSON tree first.
#[derive(Serialize)]
pub(crate) struct JsonWorkflow<'a> {
    file: &'a str,
    name: String,
    valid: bool,
    nodes: usize,
    edges: usize,
    #[serde(serialize_with = "diagnostics_as_json")]
    diagnostics: &'a [Diagnostic],
}

fn diagnostics_as_json<S: serde::Serializer>(ds: &&[Diagnostic], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ds.iter().map(JsonDiagnostic::from))
}

/// A whole file's result (see [`JsonWorkflow`]).
#[must_use]
pub(crate) fn json_workflow(wf: &Workflow) -> JsonWorkflow<'_> {
    JsonWorkflow {
        file: &wf.file,
        name: wf.name(),
        valid: wf.is_valid(),
        nodes: wf.graph.as_ref().map_or(0, |g| g.nodes.len()),
        edges: wf.graph.as_ref().map_or(0, |g| g.edges.len()),
        diagnostics: &wf.diagnostics,
    }
}

/// The JSON line for a file that could not be read.
#[must_use]
pub(crate) fn json_io_error(file: &str, error: &dyn std::fmt::Display) -> serde_json::Value {
    json!({
        "file": file,
        "name": std::path::Path::new(file).file_stem().map(|s| s.to_string_lossy()),
        "valid": false,
        "nodes": 0,
        "edges": 0,
        "diagnostics": [{
            "rule": "io",
            "severity": "error",
            "message": format!("cannot read `{file}`: {error}"),
            "line": 0,
            "column": 0,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::Span;

    fn plain() -> Style {
        Style { on: false }
    }

    #[test]
    fn a_short_line_is_shown_whole_with_carets_under_the_span() {
        let src = "digraph G {\n  start -> tset\n}";
        let start = src.find("tset").expect("in source");
        let d = Diagnostic::error("undeclared_node", "`tset` is never declared").at(Span {
            start: start as u32,
            end: (start + 4) as u32,
            line: 2,
            column: 12,
        });
        assert_eq!(
            human(&d, "f.fabro", src, plain()),
            "error[undeclared_node]: `tset` is never declared\n --> f.fabro:2:12\n  |\n2 |   start -> tset\n  |            ^^^^\n"
        );
    }

    #[test]
    fn a_problem_deep_in_a_huge_line_shows_a_window_with_ellipses() {
        let src = format!("digraph G {{ {} $ }}\n", "a".repeat(2_000_000));
        let start = src.find('$').expect("in source");
        let d = Diagnostic::error("syntax", "unexpected character `$`").at(Span {
            start: start as u32,
            end: (start + 1) as u32,
            line: 1,
            column: 2_000_014,
        });
        let out = human(&d, "f.fabro", &src, plain());
        assert!(out.len() < 400, "{} bytes:\n{out}", out.len());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], " --> f.fabro:1:2000014");
        assert_eq!(
            lines[3],
            format!("1 | …{} $ }}", "a".repeat(EXCERPT_SIDE - 1)),
            "cut on the left only: the line ends within the window"
        );
        let caret = lines[4].find('^').expect("caret") - "  | ".len();
        assert_eq!(
            lines[3].chars().nth("1 | ".len() + caret),
            Some('$'),
            "the caret stands under the problem"
        );
    }

    #[test]
    fn a_window_is_cut_on_both_sides_and_counts_characters_not_bytes() {
        let line = format!("{}X{}", "é".repeat(500), "ü".repeat(500));
        let start = line.find('X').expect("in line");
        let e = Excerpt::around(&line, start, start + 1).expect("excerpt");
        assert!(
            e.text.starts_with('…') && e.text.ends_with('…'),
            "{}",
            e.text
        );
        assert_eq!(e.text.chars().count(), 2 * EXCERPT_SIDE + 2);
        assert_eq!(e.text.chars().nth(e.caret), Some('X'));
        assert_eq!(e.width, 1);
    }

    #[test]
    fn a_problem_at_the_end_of_the_file_gets_one_caret() {
        let src = "digraph G {";
        let e = Excerpt::around(src, src.len(), src.len()).expect("excerpt");
        assert_eq!((e.text.as_str(), e.caret, e.width), ("digraph G {", 11, 1));
    }
}
