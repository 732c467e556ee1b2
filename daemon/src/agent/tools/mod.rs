//! The agent's tools (agents/tools.mdx), one file per tool, with the names
//! and parameters of the reference.
//!
//! Every tool works in a [`Workspace`]: paths are resolved against the
//! work dir and confined to it (symlinks resolved first), files written
//! must have been read first when they exist (read-before-write), and the
//! shell gets the run's environment with secrets withheld. A tool never
//! fails the stage: whatever goes wrong is a [`ToolOutput`] with
//! `is_error`, which the model reads and acts on.

mod apply_patch;
mod edit_file;
mod glob;
mod grep;
mod list_dir;
mod read_file;
mod read_many_files;
mod shell;
mod web_fetch;
mod web_search;
mod workspace;
mod write_file;

pub use web_search::WebSearch;
pub use workspace::Workspace;

use serde_json::Value;

use super::config::Permissions;
use crate::llm::ToolSpec;

/// A built-in tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tool {
    Shell,
    ReadFile,
    WriteFile,
    EditFile,
    ApplyPatch,
    Grep,
    Glob,
    ReadManyFiles,
    ListDir,
    WebFetch,
    WebSearch,
}

/// Which permission level a tool needs (agents/permissions.mdx).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Read,
    Write,
    Shell,
}

/// How output longer than a tool's limit is cut for the model (the full
/// output is kept in the stage directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Keep the start and the end, cut the middle.
    HeadTail,
    /// Keep the end.
    Tail,
}

/// What a call gave back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// The full text (the session cuts it for the model).
    pub content: String,
    pub is_error: bool,
    /// Files this call wrote, relative to the work dir (`files_touched`).
    pub touched: Vec<String>,
}

impl ToolOutput {
    #[must_use]
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            ..ToolOutput::default()
        }
    }

    #[must_use]
    pub fn error(message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: message.into(),
            is_error: true,
            touched: Vec::new(),
        }
    }
}

pub const ALL: [Tool; 11] = [
    Tool::Shell,
    Tool::ReadFile,
    Tool::WriteFile,
    Tool::EditFile,
    Tool::ApplyPatch,
    Tool::Grep,
    Tool::Glob,
    Tool::ReadManyFiles,
    Tool::ListDir,
    Tool::WebFetch,
    Tool::WebSearch,
];

impl Tool {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Tool::Shell => "shell",
            Tool::ReadFile => "read_file",
            Tool::WriteFile => "write_file",
            Tool::EditFile => "edit_file",
            Tool::ApplyPatch => "apply_patch",
            Tool::Grep => "grep",
            Tool::Glob => "glob",
            Tool::ReadManyFiles => "read_many_files",
            Tool::ListDir => "list_dir",
            Tool::WebFetch => "web_fetch",
            Tool::WebSearch => "web_search",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Tool> {
        ALL.into_iter().find(|t| t.name() == name)
    }

    #[must_use]
    pub fn category(self) -> Category {
        match self {
            Tool::ReadFile | Tool::ReadManyFiles | Tool::Grep | Tool::Glob | Tool::ListDir => {
                Category::Read
            }
            Tool::WriteFile | Tool::EditFile | Tool::ApplyPatch => Category::Write,
            Tool::Shell | Tool::WebFetch | Tool::WebSearch => Category::Shell,
        }
    }

    /// Whether `permissions` allow it.
    #[must_use]
    pub fn allowed(self, permissions: Permissions) -> bool {
        match self.category() {
            Category::Read => true,
            Category::Write => permissions >= Permissions::ReadWrite,
            Category::Shell => permissions >= Permissions::Full,
        }
    }

    /// Calls of read tools in one turn may run at once; the rest run in
    /// the order the model gave them.
    #[must_use]
    pub fn is_read_only(self) -> bool {
        self.category() == Category::Read
    }

    /// The most characters of output the model sees, and how the rest is
    /// cut (agents/tools.mdx, "Output truncation"). Tools the reference
    /// leaves unlimited get 50,000 characters here: one `cat` of a log
    /// must not fill the context window.
    #[must_use]
    pub fn output_limit(self) -> (usize, Cut) {
        match self {
            Tool::Grep => (30_000, Cut::Tail),
            Tool::Glob => (20_000, Cut::Tail),
            Tool::EditFile | Tool::ApplyPatch => (10_000, Cut::Tail),
            Tool::WriteFile => (1_000, Cut::Tail),
            _ => (50_000, Cut::HeadTail),
        }
    }

    /// The declaration sent to the model.
    #[must_use]
    pub fn spec(self) -> ToolSpec {
        let (description, parameters) = match self {
            Tool::Shell => shell::spec(),
            Tool::ReadFile => read_file::spec(),
            Tool::WriteFile => write_file::spec(),
            Tool::EditFile => edit_file::spec(),
            Tool::ApplyPatch => apply_patch::spec(),
            Tool::Grep => grep::spec(),
            Tool::Glob => glob::spec(),
            Tool::ReadManyFiles => read_many_files::spec(),
            Tool::ListDir => list_dir::spec(),
            Tool::WebFetch => web_fetch::spec(),
            Tool::WebSearch => web_search::spec(),
        };
        ToolSpec {
            name: self.name().to_string(),
            description: description.to_string(),
            parameters,
        }
    }

    /// One short line about a call, for progress lines and event lists:
    /// the command, the path, the pattern.
    #[must_use]
    pub fn summarize(self, arguments: &Value) -> String {
        let text = |key: &str| arguments.get(key).and_then(Value::as_str).unwrap_or("");
        let line = match self {
            Tool::Shell => text("command").to_string(),
            Tool::ReadFile | Tool::WriteFile | Tool::EditFile => text("file_path").to_string(),
            Tool::ApplyPatch => apply_patch::summarize(text("patch")),
            Tool::Grep => format!("{} in {}", text("pattern"), non_empty(text("path"), ".")),
            Tool::Glob => format!("{} in {}", text("pattern"), non_empty(text("path"), ".")),
            Tool::ReadManyFiles => arguments
                .get("paths")
                .and_then(Value::as_array)
                .map(|paths| {
                    paths
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
            Tool::ListDir => text("path").to_string(),
            Tool::WebFetch => text("url").to_string(),
            Tool::WebSearch => text("query").to_string(),
        };
        crate::util::text::one_line(&line, 120)
    }

    /// Runs one call. Arguments are checked against the tool's schema
    /// first; a bad argument is an error the model can read.
    pub async fn run(self, workspace: &Workspace, arguments: &Value) -> ToolOutput {
        match self {
            Tool::Shell => shell::run(workspace, arguments).await,
            Tool::ReadFile => read_file::run(workspace, arguments),
            Tool::WriteFile => write_file::run(workspace, arguments),
            Tool::EditFile => edit_file::run(workspace, arguments),
            Tool::ApplyPatch => apply_patch::run(workspace, arguments),
            Tool::Grep => grep::run(workspace, arguments),
            Tool::Glob => glob::run(workspace, arguments),
            Tool::ReadManyFiles => read_many_files::run(workspace, arguments),
            Tool::ListDir => list_dir::run(workspace, arguments),
            Tool::WebFetch => web_fetch::run(workspace, arguments).await,
            Tool::WebSearch => web_search::run(workspace, arguments).await,
        }
    }
}

fn non_empty<'a>(text: &'a str, or: &'a str) -> &'a str {
    if text.is_empty() { or } else { text }
}

/// `text` cut to `limit` characters for the model, with a marker saying
/// how much was cut and where the whole is (`kept_in`, relative to the
/// stage directory).
#[must_use]
pub fn cut_for_model(text: &str, limit: usize, cut: Cut, kept_in: Option<&str>) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_string();
    }
    let removed = total - limit;
    let whole = kept_in.map_or(String::new(), |path| {
        format!("; the whole output is in {path}")
    });
    let marker = format!("\n[... {removed} characters cut{whole} ...]\n");
    match cut {
        Cut::Tail => {
            let tail: String = text.chars().skip(removed).collect();
            format!("{}{tail}", marker.trim_start())
        }
        Cut::HeadTail => {
            let head_len = limit / 2;
            let head: String = text.chars().take(head_len).collect();
            let tail: String = text.chars().skip(total - (limit - head_len)).collect();
            format!("{head}{marker}{tail}")
        }
    }
}

/// Reads a required string argument.
pub(super) fn required_str<'a>(arguments: &'a Value, key: &str) -> Result<&'a str, ToolOutput> {
    match arguments.get(key) {
        Some(Value::String(text)) => Ok(text),
        None | Some(Value::Null) => Err(ToolOutput::error(format!(
            "missing required string argument `{key}`"
        ))),
        Some(other) => Err(ToolOutput::error(format!(
            "`{key}` must be a string, not {}",
            json_kind(other)
        ))),
    }
}

/// Reads an optional boolean argument (`"true"`/`"false"` strings too:
/// some models quote them).
pub(super) fn optional_bool(arguments: &Value, key: &str) -> Result<Option<bool>, ToolOutput> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if s == "true" => Ok(Some(true)),
        Some(Value::String(s)) if s == "false" => Ok(Some(false)),
        Some(other) => Err(ToolOutput::error(format!(
            "`{key}` must be true or false, not {}",
            json_kind(other)
        ))),
    }
}

/// `a number`, `an array`: what a JSON value is, for argument errors.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Reads an optional non-negative integer argument.
pub(super) fn optional_u64(arguments: &Value, key: &str) -> Result<Option<u64>, ToolOutput> {
    match arguments.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| ToolOutput::error(format!("`{key}` must be a non-negative integer"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_and_a_unique_name() {
        let mut names = std::collections::BTreeSet::new();
        for tool in ALL {
            let spec = tool.spec();
            assert!(names.insert(spec.name.clone()), "{}", spec.name);
            assert_eq!(spec.parameters["type"], "object", "{}", spec.name);
            assert_eq!(Tool::from_name(&spec.name), Some(tool));
        }
    }

    #[test]
    fn output_is_cut_with_a_marker_naming_what_was_cut() {
        let text: String = "a".repeat(60) + &"b".repeat(40);
        let cut = cut_for_model(&text, 20, Cut::HeadTail, Some("tools/0001-shell.txt"));
        assert!(
            cut.starts_with(&"a".repeat(10)) && cut.ends_with(&"b".repeat(10)),
            "{cut}"
        );
        assert!(
            cut.contains("80 characters cut") && cut.contains("tools/0001-shell.txt"),
            "{cut}"
        );
        let tail = cut_for_model(&text, 20, Cut::Tail, None);
        assert!(
            tail.ends_with(&"b".repeat(20)) && tail.contains("80 characters cut"),
            "{tail}"
        );
        assert_eq!(cut_for_model("short", 20, Cut::Tail, None), "short");
    }
}
