//! Diagnostics for people (rustc style, with the source line and a caret)
//! and for scripts (JSON).

use std::fmt::Write as _;
use std::io::IsTerminal;

use serde_json::json;

use crate::lang::{Diagnostic, Severity, Workflow};

/// ANSI styling, on only for a terminal without `NO_COLOR`.
#[derive(Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colours when stderr is a terminal and `NO_COLOR` is unset.
    #[must_use]
    pub fn for_stderr() -> Style {
        Style::when(std::io::stderr().is_terminal())
    }

    /// Colours when stdout is a terminal and `NO_COLOR` is unset.
    #[must_use]
    pub fn for_stdout() -> Style {
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
pub fn status_colour(status: &str) -> &'static str {
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
    if let Some(text) = source.lines().nth(span.line.saturating_sub(1) as usize) {
        let text = text.replace('\t', " ");
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(out, "{} {bar} {text}", style.paint("1;34", &line_no));
        let col = span.column.saturating_sub(1) as usize;
        let available = text.chars().count().saturating_sub(col).max(1);
        let width = source
            .get(span.start as usize..span.end as usize)
            .map_or(1, |s| s.lines().next().map_or(1, |l| l.chars().count()))
            .clamp(1, available);
        let marks = style.paint(severity_code(d.severity), &"^".repeat(width));
        let _ = writeln!(out, "{pad} {bar} {}{marks}", " ".repeat(col));
    }
    if let Some(hint) = &d.hint {
        let _ = writeln!(out, "{pad} {} hint: {hint}", style.paint("1;34", "="));
    }
    out
}

/// Prints the warnings about `$WEFT_HOME/settings.toml` (keys nothing
/// reads) on stderr, rustc-style.
pub fn warn_about_settings(home: &crate::store::Home) {
    let path = home.settings_path();
    let warnings = crate::config::settings_warnings(&path);
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

/// Counts of errors and warnings, as `2 errors, 1 warning`.
#[must_use]
pub fn counts(diagnostics: &[Diagnostic]) -> Option<String> {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Warning)
        .count();
    let errors_text = || count(errors as u64, "error", "errors");
    let warnings_text = || count(warnings as u64, "warning", "warnings");
    match (errors, warnings) {
        (0, 0) => None,
        (0, _) => Some(warnings_text()),
        (_, 0) => Some(errors_text()),
        (_, _) => Some(format!("{}, {}", errors_text(), warnings_text())),
    }
}

/// One diagnostic as the JSON object of `weft validate --json`.
#[must_use]
pub fn json_diagnostic(d: &Diagnostic) -> serde_json::Value {
    let mut obj = json!({
        "rule": d.rule,
        "severity": d.severity,
        "message": d.message,
        "line": d.span.map_or(0, |s| s.line),
        "column": d.span.map_or(0, |s| s.column),
    });
    if let Some(map) = obj.as_object_mut() {
        if let Some(id) = &d.node_id {
            map.insert("node_id".into(), json!(id));
        }
        if let Some((from, to)) = &d.edge {
            map.insert("edge".into(), json!([from, to]));
        }
        if let Some(hint) = &d.hint {
            map.insert("hint".into(), json!(hint));
        }
    }
    obj
}

/// A whole file's result as the JSON line of `weft validate --json`.
#[must_use]
pub fn json_workflow(wf: &Workflow) -> serde_json::Value {
    json!({
        "file": wf.file,
        "name": wf.name(),
        "valid": wf.is_valid(),
        "nodes": wf.graph.as_ref().map_or(0, |g| g.nodes.len()),
        "edges": wf.graph.as_ref().map_or(0, |g| g.edges.len()),
        "diagnostics": wf.diagnostics.iter().map(json_diagnostic).collect::<Vec<_>>(),
    })
}

/// The JSON line for a file that could not be read.
#[must_use]
pub fn json_io_error(file: &str, error: &std::io::Error) -> serde_json::Value {
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
