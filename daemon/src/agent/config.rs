//! How a session is set up: limits and permissions, from node attributes
//! and `[run.agent]` (the engine reads those; this is the result).

use std::path::PathBuf;
use std::time::Duration;

use crate::llm::Request;

/// Which tools an agent may use (agents/permissions.mdx). A workflow runs
/// unattended, so a tool above the level is not offered to the model at
/// all, and a call to it anyway is answered with an error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permissions {
    /// Read tools only: `read_file`, `read_many_files`, `grep`, `glob`,
    /// `list_dir`.
    ReadOnly,
    /// Read tools and file edits: `write_file`, `edit_file`, `apply_patch`.
    ReadWrite,
    /// Everything, `shell` and the web tools included. The default for
    /// workflow agents: the workflow (and its sandbox) is the trust
    /// boundary, and an agent that cannot run the tests cannot check its
    /// work.
    #[default]
    Full,
}

impl Permissions {
    /// Parses `read-only`, `read-write` or `full` (underscores too, any case).
    #[must_use]
    pub fn parse(text: &str) -> Option<Permissions> {
        match text.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "read-only" | "readonly" => Some(Permissions::ReadOnly),
            "read-write" | "readwrite" => Some(Permissions::ReadWrite),
            "full" => Some(Permissions::Full),
            _ => None,
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Permissions::ReadOnly => "read-only",
            Permissions::ReadWrite => "read-write",
            Permissions::Full => "full",
        }
    }
}

/// What stops a session that does not stop itself. Reaching one fails the
/// stage with a reason naming the limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Model calls in the session (`max_turns`), repair turns included.
    pub max_turns: u32,
    /// Model turns that asked for tools (`max_tool_rounds`).
    pub max_tool_rounds: u32,
    /// Tokens (input + output, summed over calls) the session may spend
    /// (`max_stage_tokens`); `None`: no limit.
    pub max_tokens: Option<u64>,
    /// Wall-clock time for the whole session (the node's `timeout`).
    pub timeout: Option<Duration>,
    /// `shell` calls without `timeout_ms` get this.
    pub shell_default_timeout: Duration,
    /// No `shell` call runs longer, whatever it asks for.
    pub shell_max_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: 300,
            max_tool_rounds: 200,
            max_tokens: None,
            timeout: None,
            shell_default_timeout: Duration::from_secs(120),
            shell_max_timeout: Duration::from_secs(600),
        }
    }
}

/// Everything a session needs besides the model client and the workspace.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The model call every turn starts from: model, provider, reasoning
    /// effort, speed, `max_tokens`, streaming. Its `system`, `messages` and
    /// `tools` are the session's to fill.
    pub request: Request,
    pub limits: Limits,
    pub permissions: Permissions,
    /// Where project instruction files are looked for: this directory up
    /// to the repository root (the first parent with `.git`), else the
    /// work dir alone.
    pub instructions_from: PathBuf,
    /// `web_search` is offered only with a key (`BRAVE_SEARCH_API_KEY`).
    pub web_search_key: Option<String>,
    /// Where the transcript and full tool outputs go (the stage
    /// directory); `None`: not kept (tests).
    pub record_dir: Option<PathBuf>,
}
