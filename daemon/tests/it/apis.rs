//! The four provider APIs, each pointed at the shared fake server: what the
//! LLM client tests (`llm_providers.rs`) and the agent tests (`agent.rs`)
//! run against.

use std::collections::BTreeMap;

use super::harness::fake_llm;

/// The four APIs, each as a provider pointed at the fake server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Api {
    Anthropic,
    OpenAi,
    Gemini,
    /// Chat Completions, as a provider named in [`SETTINGS`].
    Compat,
}

impl Api {
    pub fn provider(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::OpenAi => "openai",
            Api::Gemini => "gemini",
            Api::Compat => "local",
        }
    }

    pub fn model(self) -> &'static str {
        match self {
            Api::Anthropic => "claude-sonnet-4-5",
            Api::OpenAi => "gpt-5.5",
            Api::Gemini => "gemini-3-flash-preview",
            Api::Compat => "llama3.1",
        }
    }

    /// This API's key and base URL, in each provider's convention, as the
    /// environment of a client.
    pub fn env(self, key: &str) -> BTreeMap<String, String> {
        let url = fake_llm().url();
        let (key_var, url_var, base) = match self {
            Api::Anthropic => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", url),
            Api::OpenAi => ("OPENAI_API_KEY", "OPENAI_BASE_URL", format!("{url}/v1")),
            Api::Gemini => ("GEMINI_API_KEY", "GEMINI_BASE_URL", url),
            Api::Compat => ("LOCAL_LLM_KEY", "LOCAL_LLM_URL", format!("{url}/v1")),
        };
        BTreeMap::from([(key_var.into(), key.into()), (url_var.into(), base)])
    }
}

/// settings.toml: the OpenAI-compatible provider `local`, and a model of
/// 20,000 tokens of context (for the agent's compaction tests).
pub const SETTINGS: &str = r#"
[providers.local]
kind = "openai_compat"
base_url = "http://127.0.0.1:9/v1"
base_url_env = "LOCAL_LLM_URL"
api_key_env = "LOCAL_LLM_KEY"
models = ["llama3.1", "tiny-context"]

[[models]]
id = "tiny-context"
provider = "local"
context_window = 20000
"#;
