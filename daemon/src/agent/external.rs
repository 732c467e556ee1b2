//! External agents by name: the programs behind `acp.agent="claude"` (and
//! the CLI backend's `claude`, `codex`, `gemini`), the provider keys each
//! may see, and what `$WEFT_HOME/settings.toml` adds or changes under
//! `[agents.NAME]`:
//!
//! ```toml
//! [agents.claude]
//! command = ["/opt/claude/bin/claude-agent-acp"]  # the ACP program and its arguments
//! cli_command = ["/opt/claude/bin/claude"]        # the headless CLI (its flags are Weft's)
//! env = { IS_SANDBOX = "1" }                      # set for this agent's process only
//! keys = ["ANTHROPIC_CUSTOM_HEADERS"]             # more of the caller's variables it may see
//! model = "opus"                                  # its model, unless the node names one
//! mode = "default"                                # its session mode, unless the node names one
//! permissions = "ask"                             # acp.permissions, unless the node says
//! ```
//!
//! A table named like a built-in agent changes only the fields it gives;
//! any other name is a new agent and needs `command` (or `cli_command`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// One external agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalAgent {
    pub name: String,
    /// The ACP program and its arguments (`backend="acp"`); empty when the
    /// agent has none.
    pub command: Vec<String>,
    /// The headless program and any arguments before Weft's own
    /// (`backend="cli"`); empty when the agent has none.
    pub cli_command: Vec<String>,
    /// Variables of the caller's environment passed to this agent's
    /// process, and to nothing else (a run's commands never see keys).
    pub keys: Vec<String>,
    /// Variables set for this agent's process.
    pub env: Vec<(String, String)>,
    /// The model it is asked to use, unless the node names one.
    pub model: Option<String>,
    /// The session mode it is asked to work in, unless the node names one.
    pub mode: Option<String>,
    /// Its permission policy (`allow`, `deny` or `ask`), unless the node
    /// sets `acp.permissions`.
    pub permissions: Option<String>,
}

/// The agents known by name: the built-in ones with settings.toml's
/// changes and additions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalAgents {
    agents: BTreeMap<String, ExternalAgent>,
}

/// A built-in agent.
struct BuiltIn {
    name: &'static str,
    command: &'static [&'static str],
    cli_command: &'static [&'static str],
    keys: &'static [&'static str],
    mode: Option<&'static str>,
}

const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "claude",
        command: &["claude-agent-acp"],
        cli_command: &["claude"],
        keys: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
        ],
        // Claude Code's "Manual" mode: it asks before it changes anything,
        // so `acp.permissions` decides. Left to itself it starts in
        // `auto`, deciding alone, and Weft's policy would never be asked.
        mode: Some("default"),
    },
    BuiltIn {
        name: "codex",
        command: &["codex-acp"],
        cli_command: &["codex"],
        keys: &["OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"],
        mode: None,
    },
    BuiltIn {
        name: "gemini",
        command: &["gemini", "--acp"],
        cli_command: &["gemini"],
        keys: &["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
        mode: None,
    },
];

/// settings.toml's part: `[agents.NAME]` tables.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct AgentSettings {
    agents: BTreeMap<String, AgentEntry>,
}

/// One `[agents.NAME]` table; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct AgentEntry {
    command: Option<Vec<String>>,
    cli_command: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    keys: Option<Vec<String>>,
    model: Option<String>,
    mode: Option<String>,
    permissions: Option<String>,
}

impl Default for ExternalAgents {
    fn default() -> ExternalAgents {
        let strings = |items: &[&str]| items.iter().map(|s| (*s).to_string()).collect();
        let agents = BUILT_IN
            .iter()
            .map(|built_in| {
                let agent = ExternalAgent {
                    name: built_in.name.to_string(),
                    command: strings(built_in.command),
                    cli_command: strings(built_in.cli_command),
                    keys: strings(built_in.keys),
                    env: Vec::new(),
                    model: None,
                    mode: built_in.mode.map(str::to_string),
                    permissions: None,
                };
                (built_in.name.to_string(), agent)
            })
            .collect();
        ExternalAgents { agents }
    }
}

impl ExternalAgents {
    /// The built-in agents changed by the `[agents.*]` tables of the
    /// settings file at `path` (a missing file changes nothing). The error
    /// names the file and the agent.
    pub fn load(path: &Path) -> Result<ExternalAgents, String> {
        let Some(text) = crate::config::read(path)? else {
            return Ok(ExternalAgents::default());
        };
        let (settings, _): (AgentSettings, _) =
            crate::config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        ExternalAgents::default()
            .with(settings)
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// These agents with `settings` applied.
    pub fn with(mut self, settings: AgentSettings) -> Result<ExternalAgents, String> {
        for (name, entry) in settings.agents {
            let known = self.agents.contains_key(&name);
            let agent = self
                .agents
                .entry(name.clone())
                .or_insert_with(|| ExternalAgent {
                    name: name.clone(),
                    command: Vec::new(),
                    cli_command: Vec::new(),
                    keys: Vec::new(),
                    env: Vec::new(),
                    model: None,
                    mode: None,
                    permissions: None,
                });
            for (field, words) in [
                ("command", &entry.command),
                ("cli_command", &entry.cli_command),
            ] {
                if words
                    .as_ref()
                    .is_some_and(|w| w.first().is_none_or(|p| p.trim().is_empty()))
                {
                    return Err(format!(
                        "[agents.{name}] {field} is empty: give the program and its arguments, as in [\"claude-agent-acp\"]"
                    ));
                }
            }
            if let Some(command) = entry.command {
                agent.command = command;
            }
            if let Some(cli_command) = entry.cli_command {
                agent.cli_command = cli_command;
            }
            if let Some(env) = entry.env {
                agent.env = env.into_iter().collect();
            }
            if let Some(keys) = entry.keys {
                for key in keys {
                    if !agent.keys.contains(&key) {
                        agent.keys.push(key);
                    }
                }
            }
            if let Some(permissions) = entry.permissions {
                if !["allow", "deny", "ask"].contains(&permissions.as_str()) {
                    return Err(format!(
                        "[agents.{name}] permissions = \"{permissions}\": use \"allow\", \"deny\" or \"ask\""
                    ));
                }
                agent.permissions = Some(permissions);
            }
            if entry.model.is_some() {
                agent.model = entry.model;
            }
            if entry.mode.is_some() {
                agent.mode = entry.mode;
            }
            if !known && agent.command.is_empty() && agent.cli_command.is_empty() {
                return Err(format!(
                    "[agents.{name}] is a new agent and needs `command` (its ACP program and arguments)"
                ));
            }
        }
        Ok(self)
    }

    /// The agent called `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&ExternalAgent> {
        self.agents.get(name)
    }

    /// The names known, for messages.
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> AgentSettings {
        crate::config::parse::<AgentSettings>(text).expect("toml").0
    }

    #[test]
    fn built_in_agents_have_programs_and_keys() {
        let agents = ExternalAgents::default();
        assert_eq!(agents.names(), ["claude", "codex", "gemini"]);
        let gemini = agents.get("gemini").expect("gemini");
        assert_eq!(gemini.command, ["gemini", "--acp"]);
        assert_eq!(gemini.cli_command, ["gemini"]);
        assert!(gemini.keys.contains(&"GEMINI_API_KEY".to_string()));
        assert_eq!(gemini.mode, None);
        assert_eq!(
            agents.get("claude").expect("claude").mode.as_deref(),
            Some("default")
        );
    }

    #[test]
    fn a_table_named_like_a_built_in_changes_only_what_it_gives() {
        let agents = ExternalAgents::default()
            .with(settings(
                "[agents.claude]\ncommand = [\"/opt/acp\", \"--flag\"]\nenv = { IS_SANDBOX = \"1\" }\n\
                 keys = [\"EXTRA\", \"ANTHROPIC_API_KEY\"]\nmodel = \"opus\"\npermissions = \"ask\"\n\
                 mode = \"acceptEdits\"\n",
            ))
            .expect("valid");
        let claude = agents.get("claude").expect("claude");
        assert_eq!(claude.command, ["/opt/acp", "--flag"]);
        assert_eq!(claude.cli_command, ["claude"]);
        assert_eq!(claude.env, [("IS_SANDBOX".to_string(), "1".to_string())]);
        assert_eq!(
            claude.keys,
            [
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_BASE_URL",
                "EXTRA"
            ]
        );
        assert_eq!(claude.model.as_deref(), Some("opus"));
        assert_eq!(claude.permissions.as_deref(), Some("ask"));
        assert_eq!(claude.mode.as_deref(), Some("acceptEdits"));
    }

    #[test]
    fn a_new_agent_needs_a_program_and_valid_fields() {
        let agents = ExternalAgents::default()
            .with(settings(
                "[agents.opencode]\ncommand = [\"opencode\", \"acp\"]\n",
            ))
            .expect("valid");
        assert_eq!(
            agents.get("opencode").expect("added").command,
            ["opencode", "acp"]
        );
        let missing = ExternalAgents::default()
            .with(settings("[agents.mine]\nmodel = \"m\"\n"))
            .expect_err("no program");
        assert!(missing.contains("[agents.mine]") && missing.contains("command"));
        let empty = ExternalAgents::default()
            .with(settings("[agents.claude]\ncommand = []\n"))
            .expect_err("empty");
        assert!(empty.contains("command is empty"));
        let policy = ExternalAgents::default()
            .with(settings("[agents.claude]\npermissions = \"maybe\"\n"))
            .expect_err("bad policy");
        assert!(policy.contains("\"allow\", \"deny\" or \"ask\""));
    }

    #[test]
    fn load_names_the_file_and_reads_nothing_when_it_is_missing() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        assert_eq!(ExternalAgents::load(&path), Ok(ExternalAgents::default()));
        std::fs::write(&path, "[agents.x]\nmodel = \"m\"\n").expect("write");
        let error = ExternalAgents::load(&path).expect_err("no program");
        assert!(error.contains("settings.toml"), "{error}");
    }
}
