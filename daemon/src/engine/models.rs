//! A run's language models: the run-level model choice (`--model`,
//! `--provider`, `[run.model]`) and the [`LlmClient`] its prompt nodes call,
//! built on first use from the environment the run was started with and
//! `$WEFT_HOME/settings.toml`.
//!
//! The environment here is the caller's whole environment, API keys
//! included. It lives in memory only: what is stored with the run
//! ([`super::RunOptions::env`]) has secrets filtered out, so a run resumed
//! later takes its keys from whoever resumes it (or, for a run the daemon
//! resumes on its own, from the daemon's environment and settings.toml).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::agent::external::ExternalAgents;
use crate::llm::{LlmClient, LlmSettings, Message, Part};
use crate::model::ModelChoice;
use crate::util::lock::lock;

/// The models of one run. Cheap to clone (shared).
#[derive(Clone)]
pub(crate) struct Models {
    inner: Arc<Inner>,
}

struct Inner {
    choice: ModelChoice,
    env: Vec<(String, String)>,
    settings: PathBuf,
    client: OnceLock<Result<LlmClient, String>>,
    /// External agents by name, read on first use.
    agents: OnceLock<Result<ExternalAgents, String>>,
    /// Conversations of `thread_id`s at full fidelity, in memory only (a
    /// resumed run starts them over, at `summary:high`).
    threads: Mutex<HashMap<String, Vec<Message>>>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the environment: it holds keys.
        f.debug_struct("Models")
            .field("choice", &self.inner.choice)
            .finish_non_exhaustive()
    }
}

impl Models {
    /// The models for a run with `choice`, taking keys and base URLs from
    /// `env` (`None`: this process's environment, with the keys
    /// [`crate::secrets::protect_process`] holds in memory) and providers from the
    /// settings file at `settings`.
    #[must_use]
    pub fn new(
        choice: ModelChoice,
        env: Option<Vec<(String, String)>>,
        settings: PathBuf,
    ) -> Models {
        let env = env.unwrap_or_else(crate::secrets::process_env);
        Models {
            inner: Arc::new(Inner {
                choice,
                env,
                settings,
                client: OnceLock::new(),
                agents: OnceLock::new(),
                threads: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The run-level choice.
    #[must_use]
    pub fn choice(&self) -> &ModelChoice {
        &self.inner.choice
    }

    /// The environment keys come from (for a child run's models).
    #[must_use]
    pub fn env(&self) -> Vec<(String, String)> {
        self.inner.env.clone()
    }

    /// The conversation so far of thread `id` (empty when new).
    #[must_use]
    pub fn thread(&self, id: &str) -> Vec<Message> {
        self.threads().get(id).cloned().unwrap_or_default()
    }

    /// Thread `id` as text: the tool calls and results of agent turns
    /// left out, and what remains of consecutive turns of one side joined
    /// (providers want user and assistant turns to alternate).
    #[must_use]
    pub fn thread_text(&self, id: &str) -> Vec<Message> {
        let mut text: Vec<Message> = Vec::new();
        for message in self.thread(id) {
            let parts: Vec<Part> = message
                .parts
                .into_iter()
                .filter(|p| matches!(p, Part::Text(_)))
                .collect();
            if parts.is_empty() {
                continue;
            }
            match text.last_mut() {
                Some(last) if last.role == message.role => last.parts.extend(parts),
                _ => text.push(Message {
                    role: message.role,
                    parts,
                }),
            }
        }
        text
    }

    /// Replaces thread `id` with `conversation` (an agent stage's, which
    /// went on from the thread).
    pub(crate) fn set_thread(&self, id: &str, conversation: Vec<Message>) {
        self.threads().insert(id.to_string(), conversation);
    }

    /// Adds a finished exchange to thread `id`.
    pub(crate) fn extend_thread(&self, id: &str, messages: impl IntoIterator<Item = Message>) {
        self.threads()
            .entry(id.to_string())
            .or_default()
            .extend(messages);
    }

    fn threads(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Message>>> {
        lock(&self.inner.threads)
    }

    /// The client, built on first use. The error (an invalid settings
    /// file, say) is worded for a stage's failure reason.
    pub fn client(&self) -> Result<&LlmClient, String> {
        self.inner
            .client
            .get_or_init(|| {
                let settings = if self.inner.settings.is_file() {
                    LlmSettings::load(&self.inner.settings).map_err(|e| e.to_string())?
                } else {
                    LlmSettings::default()
                };
                let env: BTreeMap<String, String> = self.inner.env.iter().cloned().collect();
                LlmClient::new(&env, &settings)
                    .map(|client| client.with_fallbacks(self.inner.choice.fallbacks.clone()))
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The external agents (built in, and settings.toml's `[agents.*]`),
    /// read on first use. The error is worded for a stage's failure reason.
    pub fn external_agents(&self) -> Result<&ExternalAgents, String> {
        self.inner
            .agents
            .get_or_init(|| ExternalAgents::load(&self.inner.settings))
            .as_ref()
            .map_err(Clone::clone)
    }
}
