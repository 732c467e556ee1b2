//! The LLM part of `$WEFT_HOME/settings.toml`: `[llm]` (retries and
//! timeouts), `[providers.NAME]` (named providers, or overrides of built-in
//! ones) and `[[models]]` (catalog entries). The daemon's own settings parser
//! reads the same file and ignores these sections; this one ignores the
//! daemon's.
//!
//! ```toml
//! [llm]
//! max_retries = 3
//! request_timeout = "10m"
//! stream_idle_timeout = "2m"
//!
//! [providers.ollama]
//! kind = "openai_compat"              # the default for new names
//! base_url = "http://localhost:11434/v1"
//! api_key_env = "OLLAMA_API_KEY"      # optional: local servers need no key
//! models = ["llama3.1"]
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::catalog::{Catalog, ModelInfo, ProviderEntry};
use super::error::LlmError;

/// The LLM sections of settings.toml.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    pub llm: LlmTuning,
    pub providers: BTreeMap<String, ProviderEntry>,
    pub models: Vec<ModelInfo>,
}

/// `[llm]`: retry and timeout settings; unset fields keep the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmTuning {
    /// Retries after the first attempt, per provider.
    pub max_retries: Option<u32>,
    /// The longest one request may take (a number of seconds or `"10m"`).
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Option<Duration>,
    /// The longest a stream may stay silent.
    #[serde(deserialize_with = "duration")]
    pub stream_idle_timeout: Option<Duration>,
    /// The longest `Retry-After` that is waited for.
    #[serde(deserialize_with = "duration")]
    pub max_retry_after: Option<Duration>,
}

impl LlmSettings {
    /// The built-in catalog with these settings' providers and models laid
    /// over it ([`Catalog::overlaid`]).
    #[must_use]
    pub fn catalog(&self) -> Catalog {
        Catalog::overlaid(&self.providers, &self.models)
    }

    /// Reads the LLM sections of the settings file at `path` (a regular
    /// file of at most [`crate::limits::MAX_CONFIG_BYTES`]); a missing file
    /// means no settings.
    pub fn load(path: &Path) -> Result<LlmSettings, LlmError> {
        match crate::config::read(path).map_err(LlmError::Config)? {
            Some(text) => LlmSettings::parse(&text)
                .map_err(|e| LlmError::Config(format!("{}: {e}", path.display()))),
            None => Ok(LlmSettings::default()),
        }
    }

    /// Parses settings.toml text.
    pub fn parse(text: &str) -> Result<LlmSettings, toml::de::Error> {
        toml::from_str(text)
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Seconds(u64),
        Fraction(f64),
        Text(String),
    }
    match Option::<Raw>::deserialize(d)? {
        None => Ok(None),
        Some(Raw::Seconds(s)) => Ok(Some(Duration::from_secs(s))),
        Some(Raw::Fraction(s)) => Duration::try_from_secs_f64(s)
            .map(Some)
            .map_err(serde::de::Error::custom),
        Some(Raw::Text(t)) => humantime::parse_duration(&t)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_llm_sections_and_ignores_the_daemons() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        assert_eq!(LlmSettings::load(&path), Ok(LlmSettings::default()));
        std::fs::write(
            &path,
            r#"
            max_concurrent_runs = 2
            [llm]
            max_retries = 5
            request_timeout = "2m"
            stream_idle_timeout = 30
            [providers.ollama]
            base_url = "http://localhost:11434/v1"
            models = ["llama3.1"]
            "#,
        )
        .expect("write");
        let s = LlmSettings::load(&path).expect("load");
        assert_eq!(s.llm.max_retries, Some(5));
        assert_eq!(s.llm.request_timeout, Some(Duration::from_secs(120)));
        assert_eq!(s.llm.stream_idle_timeout, Some(Duration::from_secs(30)));
        assert_eq!(s.providers["ollama"].models, vec!["llama3.1".to_string()]);
        assert_eq!(
            s.providers["ollama"].kind, None,
            "openai_compat is applied later"
        );
    }

    #[test]
    fn typos_in_llm_sections_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("settings.toml");
        std::fs::write(&path, "[providers.ollama]\nbase_ur = \"x\"\n").expect("write");
        let e = LlmSettings::load(&path).expect_err("unknown field");
        assert_eq!(e.code(), "llm.config");
        assert!(e.to_string().contains("settings.toml") && e.to_string().contains("base_ur"));
        std::fs::write(&path, "[providers.x]\nkind = \"smoke-signals\"\n").expect("write");
        assert!(LlmSettings::load(&path).is_err());
    }
}
