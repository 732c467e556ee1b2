//! The script file: what the agent does at start and on each prompt.

use serde::Deserialize;

/// A whole script, as read from `WEFT_ACP_SCRIPT`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// A fault injected before the agent serves anything.
    #[serde(default)]
    pub start: Option<String>,
    /// One list of steps per `session/prompt`, in arrival order across the process.
    #[serde(default)]
    pub prompts: Vec<Vec<Step>>,
    /// Models offered in `session/new`'s answer as a config option of
    /// category `model` (the first is current); none when empty.
    #[serde(default)]
    pub models: Vec<String>,
}

/// The parsed form of [`Script::start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartFault {
    Exit(i32),
    Garbage,
    Silent,
    Version(i64),
}

impl Script {
    /// The script used when `WEFT_ACP_SCRIPT` is unset: one turn that says hello.
    pub fn greeting() -> Self {
        Self {
            start: None,
            prompts: vec![vec![Step::Say("hello".to_owned())]],
            models: Vec::new(),
        }
    }

    pub fn load(path: &str) -> Result<Self, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read script {path}: {e}"))?;
        let script: Self =
            serde_json::from_str(&text).map_err(|e| format!("bad script {path}: {e}"))?;
        // Parse the fault now so a typo fails loudly instead of being ignored.
        script.start_fault()?;
        Ok(script)
    }

    pub fn start_fault(&self) -> Result<Option<StartFault>, String> {
        let Some(start) = self.start.as_deref() else {
            return Ok(None);
        };
        let number = |text: &str| {
            text.parse::<i64>()
                .map_err(|_| format!("bad number in start fault {start:?}"))
        };
        let fault = match start.split_once(':') {
            Some(("exit", code)) => StartFault::Exit(
                i32::try_from(number(code)?).map_err(|_| format!("bad exit code in {start:?}"))?,
            ),
            Some(("version", version)) => StartFault::Version(number(version)?),
            None if start == "garbage" => StartFault::Garbage,
            None if start == "silent" => StartFault::Silent,
            _ => return Err(format!("unknown start fault {start:?}")),
        };
        Ok(Some(fault))
    }
}

/// One scripted action inside a prompt turn. Each is a JSON object with a single key.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    Say(String),
    Think(String),
    Plan(Vec<String>),
    Write(FileContent),
    Read(FilePath),
    DiskWrite(FileContent),
    Permission(Permission),
    Terminal(Terminal),
    TerminalKill(TerminalKill),
    SleepMs(u64),
    IgnoreCancel(bool),
    Crash(i32),
    Garbage(String),
    Flood(u64),
    Hang(bool),
    Usage(Usage),
    Stop(String),
    UnknownUpdate(bool),
    ExtRequest(bool),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileContent {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePath {
    pub path: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permission {
    pub title: String,
    #[serde(default = "execute")]
    pub kind: String,
    /// A path the request names (its `locations`), relative to the cwd
    /// unless absolute.
    #[serde(default)]
    pub path: Option<String>,
    /// The tool call's `rawInput` (e.g. `{"command": "cargo publish"}`).
    #[serde(default)]
    pub input: Option<serde_json::Value>,
}

fn execute() -> String {
    "execute".to_owned()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Terminal {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub output_byte_limit: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TerminalKill {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub after_ms: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    pub used: u64,
    pub size: u64,
    #[serde(default)]
    pub cost: Option<f64>,
}
