//! Diagnostics: what the parser and the validation rules report.

use serde::Serialize;

use super::span::Span;

/// How serious a diagnostic is. Only errors make a workflow invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, ts_rs::TS)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    /// The lowercase name used in output (`error`, `warning`, `info`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding about a workflow: a syntax error or a validation rule's report.
///
/// `rule` is a stable machine-readable id (`syntax`, `start_node`,
/// `undeclared_node`, ...): scripts and the UI match on it, never on `message`.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct Diagnostic {
    pub rule: &'static str,
    pub severity: Severity,
    pub message: String,
    /// Where in the workflow file; `None` only for whole-file problems such as
    /// unreadable input.
    pub span: Option<Span>,
    pub node_id: Option<String>,
    pub edge: Option<(String, String)>,
    /// What to do about it, when there is something specific to say.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with the given rule, severity and message and nothing else.
    #[must_use]
    pub fn new(rule: &'static str, severity: Severity, message: impl Into<String>) -> Self {
        Diagnostic {
            rule,
            severity,
            message: message.into(),
            span: None,
            node_id: None,
            edge: None,
            hint: None,
        }
    }

    /// An error diagnostic.
    #[must_use]
    pub fn error(rule: &'static str, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Error, message)
    }

    /// A warning diagnostic.
    #[must_use]
    pub fn warning(rule: &'static str, message: impl Into<String>) -> Self {
        Self::new(rule, Severity::Warning, message)
    }

    /// Sets the source position.
    #[must_use]
    pub fn at(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    /// Names the node the diagnostic is about.
    #[must_use]
    pub(crate) fn on_node(mut self, id: &str) -> Self {
        self.node_id = Some(id.to_string());
        self
    }

    /// Names the edge the diagnostic is about.
    #[must_use]
    pub(crate) fn on_edge(mut self, from: &str, to: &str) -> Self {
        self.edge = Some((from.to_string(), to.to_string()));
        self
    }

    /// Adds a hint saying what to do.
    #[must_use]
    pub(crate) fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// True for [`Severity::Error`].
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}
