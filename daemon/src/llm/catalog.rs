//! The model catalog (core-concepts/models.mdx): providers, model ids and
//! aliases, context windows and prices. The built-in table is
//! `catalog.toml`, compiled in; `settings.toml` adds to it and overrides it
//! with the same keys ([`Catalog::overlaid`], [`super::LlmSettings::catalog`]).
//!
//! The catalog informs, it never forbids: a model id it does not know is
//! sent to the provider as written (see `client.rs`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use super::providers::Wire;
use super::types::{Speed, Usage};

const BUILTIN: &str = include_str!("catalog.toml");

/// A provider as the catalog or settings.toml describe it. Every field is
/// optional so that settings can override one field of a built-in provider.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderEntry {
    /// The API it speaks; new providers default to `openai_compat`.
    pub kind: Option<Wire>,
    /// See docs/llm.md for what each kind appends to it.
    pub base_url: Option<String>,
    /// An environment variable that overrides `base_url`.
    pub base_url_env: Option<String>,
    /// The environment variable holding the API key. Without it (and
    /// without `api_key`) no key is sent, as local servers need none.
    pub api_key_env: Option<String>,
    /// A key written in settings.toml itself (the environment wins).
    pub api_key: Option<String>,
    /// Models served by this provider: `model: NAME` without a provider
    /// resolves here when the catalog does not know NAME.
    pub models: Vec<String>,
    /// The model used when a provider is named without one (defaults to the
    /// first of `models`).
    pub default_model: Option<String>,
}

impl ProviderEntry {
    /// `over`'s fields where set, else `self`'s.
    #[must_use]
    pub(crate) fn merged(&self, over: &ProviderEntry) -> ProviderEntry {
        ProviderEntry {
            kind: over.kind.or(self.kind),
            base_url: over.base_url.clone().or_else(|| self.base_url.clone()),
            base_url_env: over
                .base_url_env
                .clone()
                .or_else(|| self.base_url_env.clone()),
            api_key_env: over
                .api_key_env
                .clone()
                .or_else(|| self.api_key_env.clone()),
            api_key: over.api_key.clone().or_else(|| self.api_key.clone()),
            models: if over.models.is_empty() {
                self.models.clone()
            } else {
                over.models.clone()
            },
            default_model: over
                .default_model
                .clone()
                .or_else(|| self.default_model.clone()),
        }
    }
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    /// Prompt-cache hits; the input price when unknown.
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Prompt-cache writes; the input price when unknown.
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Prices {
    /// What `usage` costs at these prices, in US dollars.
    #[must_use]
    pub fn cost(&self, usage: &Usage) -> f64 {
        #[allow(clippy::cast_precision_loss)] // token counts are far below 2^52
        let tokens = |n: u64| n as f64;
        (tokens(usage.uncached_input()) * self.input
            + tokens(usage.cache_read) * self.cache_read.unwrap_or(self.input)
            + tokens(usage.cache_write) * self.cache_write.unwrap_or(self.input)
            + tokens(usage.output) * self.output)
            / 1_000_000.0
    }
}

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfo {
    /// The id sent to the provider.
    pub id: String,
    pub provider: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Tokens of context.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The most tokens one reply may have.
    #[serde(default)]
    pub max_output: Option<u32>,
    /// Typical output speed.
    #[serde(default)]
    pub tokens_per_second: Option<u32>,
    #[serde(default)]
    pub price: Option<Prices>,
    /// Prices with `speed: fast`.
    #[serde(default)]
    pub fast: Option<Prices>,
}

impl ModelInfo {
    /// What `usage` cost on this model at `speed`, or `None` when the price
    /// is not known.
    #[must_use]
    pub fn cost(&self, usage: &Usage, speed: Option<Speed>) -> Option<f64> {
        let prices = match speed {
            Some(Speed::Fast) => self.fast.or(self.price),
            _ => self.price,
        }?;
        Some(prices.cost(usage))
    }
}

/// Providers and models.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Catalog {
    pub providers: BTreeMap<String, ProviderEntry>,
    pub models: Vec<ModelInfo>,
}

impl Catalog {
    /// The built-in catalog (`catalog.toml`).
    #[must_use]
    pub(crate) fn builtin() -> &'static Catalog {
        static BUILT_IN: OnceLock<Catalog> = OnceLock::new();
        // A unit test holds the file to parsing; an empty catalog would only
        // make every model "unknown", which still works.
        BUILT_IN.get_or_init(|| toml::from_str(BUILTIN).unwrap_or_default())
    }

    /// The built-in catalog with settings.toml's providers and models laid
    /// over it: a provider table overrides the fields it sets; a model entry
    /// replaces the entry with the same id (keeping its aliases when the new
    /// entry lists none) or is added.
    #[must_use]
    pub(crate) fn overlaid(
        providers: &BTreeMap<String, ProviderEntry>,
        models: &[ModelInfo],
    ) -> Catalog {
        let mut catalog = Catalog::builtin().clone();
        for (name, entry) in providers {
            let merged = match catalog.providers.get(name) {
                Some(builtin) => builtin.merged(entry),
                None => entry.clone(),
            };
            catalog.providers.insert(name.clone(), merged);
        }
        for model in models {
            match catalog.models.iter_mut().find(|m| m.id == model.id) {
                Some(existing) => {
                    let aliases = std::mem::take(&mut existing.aliases);
                    *existing = model.clone();
                    if existing.aliases.is_empty() {
                        existing.aliases = aliases;
                    }
                }
                None => catalog.models.push(model.clone()),
            }
        }
        catalog
    }

    /// The model with this id or alias (exact first, then ignoring case).
    #[must_use]
    pub fn lookup(&self, name: &str) -> Option<&ModelInfo> {
        let name = name.trim();
        self.models
            .iter()
            .find(|m| m.id == name)
            .or_else(|| {
                self.models
                    .iter()
                    .find(|m| m.aliases.iter().any(|a| a == name))
            })
            .or_else(|| {
                self.models.iter().find(|m| {
                    m.id.eq_ignore_ascii_case(name)
                        || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
                })
            })
    }

    /// The model `name` (id or alias) when it belongs to `provider`.
    #[must_use]
    pub(crate) fn lookup_for(&self, provider: &str, name: &str) -> Option<&ModelInfo> {
        self.lookup(name).filter(|m| m.provider == provider)
    }

    /// The provider's default model: its `default_model`, else the first of
    /// its `models`, resolved through the aliases.
    #[must_use]
    pub(crate) fn default_model(&self, provider: &str) -> Option<String> {
        let entry = self.providers.get(provider)?;
        let name = entry
            .default_model
            .clone()
            .or_else(|| entry.models.first().cloned())?;
        Some(
            self.lookup_for(provider, &name)
                .map_or(name, |m| m.id.clone()),
        )
    }

    /// The first provider whose `models` list (in settings.toml) names `model`.
    #[must_use]
    pub(crate) fn provider_listing(&self, model: &str) -> Option<&str> {
        self.providers
            .iter()
            .find(|(_, p)| p.models.iter().any(|m| m == model))
            .map(|(name, _)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::LlmSettings;

    #[test]
    fn the_builtin_catalog_parses_and_covers_the_reference_table() {
        let c = Catalog::builtin();
        assert_eq!(c.models.len(), 23, "models.mdx lists 23 models");
        for m in &c.models {
            assert!(
                c.providers.contains_key(&m.provider),
                "{} names a known provider",
                m.id
            );
        }
        for (provider, model) in [
            ("anthropic", "claude-opus-4-7"),
            ("openai", "gpt-5.5"),
            ("gemini", "gemini-3.1-pro-preview"),
            ("kimi", "kimi-k2.5"),
            ("zai", "glm-4.7"),
            ("minimax", "minimax-m2.5"),
            ("inception", "mercury-2"),
        ] {
            assert_eq!(c.default_model(provider).as_deref(), Some(model));
        }
    }

    #[test]
    fn aliases_resolve_to_ids() {
        let c = Catalog::builtin();
        assert_eq!(
            c.lookup("opus").map(|m| m.id.as_str()),
            Some("claude-opus-4-7")
        );
        assert_eq!(
            c.lookup("sonnet").map(|m| m.id.as_str()),
            Some("claude-sonnet-4-6")
        );
        assert_eq!(
            c.lookup("gemini-pro").map(|m| m.provider.as_str()),
            Some("gemini")
        );
        assert_eq!(
            c.lookup("Claude-Haiku-4-5").map(|m| m.id.as_str()),
            Some("claude-haiku-4-5")
        );
        assert_eq!(
            c.lookup("mercury").map(|m| m.id.as_str()),
            Some("mercury-2")
        );
        assert!(c.lookup("llama3.1").is_none());
        assert!(c.lookup_for("openai", "opus").is_none());
    }

    #[test]
    fn cost_uses_cache_and_fast_prices() {
        let c = Catalog::builtin();
        let opus = c.lookup("opus").expect("opus");
        let usage = Usage {
            input: 1_000_000,
            output: 1_000_000,
            reasoning: 0,
            cache_read: 500_000,
            cache_write: 0,
        };
        // 0.5M uncached at $5 + 0.5M cached at $0.5 + 1M out at $25.
        let cost = opus.cost(&usage, None).expect("priced");
        assert!((cost - 27.75).abs() < 1e-9, "{cost}");
        let fast = opus.cost(&usage, Some(Speed::Fast)).expect("priced");
        assert!((fast - (15.0 + 1.5 + 150.0)).abs() < 1e-9, "{fast}");
        let spark = c.lookup("codex-spark").expect("spark");
        assert_eq!(spark.cost(&usage, None), None, "n/a price stays unknown");
    }

    #[test]
    fn settings_add_providers_and_override_models() {
        let settings: LlmSettings = toml::from_str(
            r#"
            [providers.ollama]
            base_url = "http://localhost:11434/v1"
            models = ["llama3.1", "qwen3"]

            [providers.anthropic]
            default_model = "sonnet"

            [[models]]
            id = "claude-opus-4-7"
            provider = "anthropic"
            price = { input = 1.0, output = 2.0 }

            [[models]]
            id = "llama3.1"
            provider = "ollama"
            context_window = 128000
            "#,
        )
        .expect("settings parse");
        let c = settings.catalog();
        assert_eq!(c.provider_listing("qwen3"), Some("ollama"));
        assert_eq!(c.default_model("ollama").as_deref(), Some("llama3.1"));
        assert_eq!(
            c.default_model("anthropic").as_deref(),
            Some("claude-sonnet-4-6")
        );
        let anthropic = &c.providers["anthropic"];
        assert_eq!(
            anthropic.api_key_env.as_deref(),
            Some("ANTHROPIC_API_KEY"),
            "unset fields keep the built-in value"
        );
        let opus = c.lookup("claude-opus-4-7").expect("opus");
        assert_eq!(opus.price.map(|p| p.input), Some(1.0));
        assert_eq!(opus.context_window, None, "an override replaces the entry");
        assert_eq!(
            c.lookup("opus").map(|m| m.id.as_str()),
            Some("claude-opus-4-7"),
            "but keeps its aliases"
        );
        assert_eq!(
            c.lookup("llama3.1").and_then(|m| m.context_window),
            Some(128_000)
        );
    }
}
