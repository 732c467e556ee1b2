//! An external agent's permission request as a person is asked it
//! (`acp.permissions="ask"`, docs/agents.md "External agents"): the
//! question's text says it in words; this is the same request in parts, so
//! that the app can show which agent wants to do what, where, and style the
//! agent's options by what they grant.

use serde::{Deserialize, Serialize};

/// How much of a request's input a question keeps: enough to judge a
/// command or an edit by, bounded because an edit's input can hold a file.
pub const INPUT_MAX_CHARS: usize = 1500;

/// The request behind a permission question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PermissionAsk {
    /// The agent's name (`claude`, or the program's).
    pub agent: String,
    /// What kind of tool call: `read`, `edit`, `delete`, `move`, `search`,
    /// `execute`, `think`, `fetch`, or `other` when the agent does not say.
    pub tool_kind: String,
    /// What the agent wants to do, in its words.
    pub title: String,
    /// The paths the call names, as the agent gave them.
    #[serde(default)]
    pub locations: Vec<String>,
    /// The command line, when the call runs one (its input's `command`, a
    /// string or a list of words, with `args` if given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The call's input as the agent sent it (pretty JSON), cut to
    /// [`INPUT_MAX_CHARS`]; absent when it sent none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The agent's options in the question's order, each with its kind.
    #[serde(default)]
    pub options: Vec<PermissionChoice>,
}

/// One option the agent offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct PermissionChoice {
    /// The question's option label (the agent's name for the option).
    pub label: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

impl PermissionAsk {
    /// The command line and the shown input of a tool call's raw input.
    #[must_use]
    pub fn input_of(raw: &serde_json::Value) -> (Option<String>, Option<String>) {
        if raw.is_null() {
            return (None, None);
        }
        let words = |key: &str| -> Vec<&str> {
            match raw.get(key) {
                Some(serde_json::Value::String(word)) => vec![word.as_str()],
                Some(serde_json::Value::Array(words)) => {
                    words.iter().filter_map(serde_json::Value::as_str).collect()
                }
                _ => Vec::new(),
            }
        };
        // Agents say it either way: Claude's shell tool a string, others
        // a program and its arguments as a list.
        let program = words("command");
        let command = (!program.is_empty()).then(|| {
            let line = [program, words("args")].concat().join(" ");
            crate::util::text::truncate(&line, INPUT_MAX_CHARS)
        });
        let input = match raw {
            serde_json::Value::String(text) => text.clone(),
            _ => serde_json::to_string_pretty(raw).unwrap_or_else(|_| raw.to_string()),
        };
        (
            command,
            Some(crate::util::text::truncate(&input, INPUT_MAX_CHARS)),
        )
    }

    /// `execute: /a, /b`: the kind and the paths, for one line of text.
    #[must_use]
    pub fn summary(&self) -> String {
        if self.locations.is_empty() {
            self.tool_kind.clone()
        } else {
            format!("{}: {}", self.tool_kind, self.locations.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_command_is_read_from_the_input_with_its_args() {
        let (command, input) =
            PermissionAsk::input_of(&json!({"command": "cargo", "args": ["publish", "--dry-run"]}));
        assert_eq!(command.as_deref(), Some("cargo publish --dry-run"));
        assert!(input.expect("input").contains("\"args\""));
        let (command, _) = PermissionAsk::input_of(&json!({"command": "rm -rf build"}));
        assert_eq!(command.as_deref(), Some("rm -rf build"));
        let (command, _) =
            PermissionAsk::input_of(&json!({"command": ["bash", "-lc", "make test"], "cwd": "/w"}));
        assert_eq!(command.as_deref(), Some("bash -lc make test"));
        let (command, _) = PermissionAsk::input_of(&json!({"command": 3, "path": "/w/a"}));
        assert_eq!(command, None);
    }

    #[test]
    fn an_input_without_a_command_is_shown_as_json_and_bounded() {
        let big = "x".repeat(INPUT_MAX_CHARS * 2);
        let (command, input) =
            PermissionAsk::input_of(&json!({"file_path": "/w/a.rs", "new_string": big}));
        assert_eq!(command, None);
        let input = input.expect("input");
        assert_eq!(input.chars().count(), INPUT_MAX_CHARS);
        assert!(input.starts_with("{\n"), "{input}");
        assert_eq!(
            PermissionAsk::input_of(&serde_json::Value::Null),
            (None, None)
        );
        assert_eq!(
            PermissionAsk::input_of(&json!("ls -la")).1.as_deref(),
            Some("ls -la")
        );
    }
}
