//! The entry point: [`LlmClient`] resolves which provider and model a call
//! goes to, sends it with retries, fails over to the fallbacks, and prices
//! the reply.
//!
//! Resolution (core-concepts/models.mdx):
//! 1. An explicit provider wins; its model is the requested one (an alias is
//!    resolved when the catalog knows it for that provider) or its default.
//! 2. Else a model the catalog knows (by id or alias) goes to its provider.
//! 3. Else a provider from settings.toml whose `models` lists it.
//! 4. Else a well-known prefix (`claude` → anthropic, `gpt-`/`o3`/... →
//!    openai, `gemini` → gemini), or else auto-detection: the first of
//!    Anthropic, OpenAI, Gemini whose key is set (Anthropic when none is).
//!    The model is sent as written, with a warning: unknown ids are never
//!    an error, since users run custom and proxied models.
//!
//! Keys come from the environment map given to [`LlmClient::new`] (the
//! run's, which for a CLI run is the caller's), or from settings.toml; they
//! are only ever put in request headers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::catalog::Catalog;
use super::error::LlmError;
use super::providers::{Endpoint, Wire};
use super::retry::{RetryPolicy, Sleeper};
use super::settings::LlmSettings;
use super::transport::{Timeouts, Transport};
use super::types::{Request, Response, StreamEvent};

/// Auto-detection order when neither model nor provider is given.
const DETECTION_ORDER: [&str; 3] = ["anthropic", "openai", "gemini"];

/// A resolved destination for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The provider's name (`anthropic`, `ollama`, ...).
    pub provider: String,
    /// The model id sent to it.
    pub model: String,
    pub wire: Wire,
    /// Set when the model is not in the catalog and is sent as written.
    pub warning: Option<String>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Something that happened during a call, for the engine to show and record.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEvent {
    /// Streaming output of the current attempt.
    Delta(StreamEvent),
    /// An attempt failed and the same target is tried again after `wait`.
    /// Deltas streamed so far belong to the failed attempt.
    Retry {
        target: Target,
        /// 1 for the first retry.
        retry: u32,
        wait: Duration,
        error: LlmError,
    },
    /// `from` failed for good with a transient error; `to` is tried next
    /// (`[run.model] fallbacks`).
    Failover {
        from: Target,
        to: Target,
        error: LlmError,
    },
    /// Not an error: an unknown model passed through, a fallback skipped.
    Warning(String),
}

/// One HTTP attempt of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub provider: String,
    pub model: String,
    /// `None` when the attempt succeeded.
    pub error: Option<LlmError>,
    pub elapsed: Duration,
}

/// A successful call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub response: Response,
    /// Who answered (a fallback after a failover).
    pub target: Target,
    /// Every attempt, failed ones first, across retries and failovers.
    pub attempts: Vec<Attempt>,
    /// US dollars, when the catalog prices the model.
    pub cost: Option<f64>,
}

/// An API key; never printed.
#[derive(Clone)]
struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(…)")
    }
}

/// A provider ready to be called.
#[derive(Debug, Clone)]
struct Provider {
    wire: Wire,
    base_url: Option<String>,
    api_key: Option<ApiKey>,
    /// The variable the key should come from, for the missing-key error.
    key_env: Option<String>,
}

/// True when `url`'s host is `localhost`, a 127.x address or `[::1]`.
fn loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Calls language models. Build one per run: it holds the run's keys.
#[derive(Debug, Clone)]
pub struct LlmClient {
    catalog: Catalog,
    providers: BTreeMap<String, Provider>,
    transport: Transport,
    retry: RetryPolicy,
    sleeper: Sleeper,
    fallbacks: Vec<String>,
}

impl LlmClient {
    /// A client for the built-in providers and those of `settings`, taking
    /// keys and `*_BASE_URL` overrides from `env` (never from this process's
    /// environment unless that is what `env` holds).
    pub fn new(
        env: &BTreeMap<String, String>,
        settings: &LlmSettings,
    ) -> Result<LlmClient, LlmError> {
        let catalog = settings.catalog();
        let lookup = |var: &Option<String>| {
            var.as_ref()
                .and_then(|v| env.get(v))
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let providers = catalog
            .providers
            .iter()
            .map(|(name, entry)| {
                let base_url = lookup(&entry.base_url_env)
                    .or_else(|| entry.base_url.clone())
                    .map(|u| u.trim().trim_end_matches('/').to_string());
                let api_key = lookup(&entry.api_key_env)
                    .or_else(|| entry.api_key.clone().filter(|k| !k.trim().is_empty()))
                    .map(ApiKey);
                let provider = Provider {
                    wire: entry.kind.unwrap_or(Wire::OpenAiCompat),
                    base_url,
                    api_key,
                    key_env: entry.api_key_env.clone(),
                };
                (name.clone(), provider)
            })
            .collect();
        let mut retry = RetryPolicy::default();
        if let Some(n) = settings.llm.max_retries {
            retry.max_retries = n;
        }
        if let Some(d) = settings.llm.max_retry_after {
            retry.max_retry_after = d;
        }
        let mut timeouts = Timeouts::default();
        if let Some(d) = settings.llm.request_timeout {
            timeouts.request = d;
        }
        if let Some(d) = settings.llm.stream_idle_timeout {
            timeouts.stream_idle = d;
        }
        Ok(LlmClient {
            catalog,
            providers,
            transport: Transport::new(timeouts)?,
            retry,
            sleeper: Sleeper::default(),
            fallbacks: Vec::new(),
        })
    }

    /// Replaces the retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> LlmClient {
        self.retry = retry;
        self
    }

    /// Replaces the timeouts.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> LlmClient {
        self.transport.timeouts = timeouts;
        self
    }

    /// Sleeps between retries on `sleeper` (tests record instead of waiting).
    #[must_use]
    pub fn with_sleeper(mut self, sleeper: Sleeper) -> LlmClient {
        self.sleeper = sleeper;
        self
    }

    /// `[run.model] fallbacks`: tried in order when a call fails for good
    /// with a transient or quota error. Each entry is a provider
    /// (`"gemini"`: its default model), a model or alias (`"gpt-5.4"`), or
    /// `"provider/model"`.
    #[must_use]
    pub fn with_fallbacks(mut self, fallbacks: Vec<String>) -> LlmClient {
        self.fallbacks = fallbacks;
        self
    }

    /// The catalog in force (built-in plus settings).
    #[must_use]
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Whether `provider` is known and has a key (or needs none).
    #[must_use]
    pub(crate) fn is_configured(&self, provider: &str) -> bool {
        self.providers
            .get(provider)
            .is_some_and(|p| p.api_key.is_some() || p.key_env.is_none())
    }

    /// Where a call for `model` on `provider` goes (see the module docs).
    /// Fails only for an unknown provider, or a provider without a default
    /// model when no model is given.
    pub fn resolve(&self, model: Option<&str>, provider: Option<&str>) -> Result<Target, LlmError> {
        let model = model.map(str::trim).filter(|m| !m.is_empty());
        let provider = provider.map(str::trim).filter(|p| !p.is_empty());
        match (provider, model) {
            (Some(p), None) => self.default_target(p),
            (Some(p), Some(m)) => {
                let wire = self.wire(p)?;
                if let Some(info) = self.catalog.lookup_for(p, m) {
                    return Ok(self.target(p, &info.id, wire, None));
                }
                let listed = self
                    .catalog
                    .providers
                    .get(p)
                    .is_some_and(|e| e.models.iter().any(|x| x == m));
                let warning = (!listed).then(|| {
                    format!("model `{m}` is not in the catalog for provider `{p}`; sending it as written")
                });
                Ok(self.target(p, m, wire, warning))
            }
            (None, Some(m)) => {
                if let Some(info) = self.catalog.lookup(m) {
                    let wire = self.wire(&info.provider)?;
                    return Ok(self.target(&info.provider, &info.id, wire, None));
                }
                if let Some(p) = self.catalog.provider_listing(m) {
                    return Ok(self.target(p, m, self.wire(p)?, None));
                }
                let p = infer_provider(m).unwrap_or_else(|| self.detect());
                Ok(self.target(
                    p,
                    m,
                    self.wire(p)?,
                    Some(format!(
                        "unknown model `{m}`: not in the catalog; sending it to provider `{p}` as written"
                    )),
                ))
            }
            (None, None) => self.default_target(self.detect()),
        }
    }

    /// A `[run.model] fallbacks` entry as a target.
    pub(crate) fn resolve_fallback(&self, entry: &str) -> Result<Target, LlmError> {
        let entry = entry.trim();
        if self.providers.contains_key(entry) {
            return self.resolve(None, Some(entry));
        }
        if let Some((p, m)) = entry.split_once('/')
            && self.providers.contains_key(p)
        {
            return self.resolve(Some(m), Some(p));
        }
        self.resolve(Some(entry), None)
    }

    /// Sends `request` (to the target its `model`/`provider` resolve to),
    /// retrying transient errors and then failing over to the fallbacks.
    /// Deltas, retries, failovers and warnings are reported to `on_event` as
    /// they happen.
    ///
    /// The returned future is `Send` when `on_event` is, so it can run on a
    /// `LocalSet` with an `Rc` in the callback or be spawned on a
    /// multi-threaded runtime.
    pub async fn complete<F: FnMut(CallEvent)>(
        &self,
        request: &Request,
        mut on_event: F,
    ) -> Result<Completion, LlmError> {
        let mut target = self.resolve(request.model.as_deref(), request.provider.as_deref())?;
        if let Some(w) = &target.warning {
            on_event(CallEvent::Warning(w.clone()));
        }
        let mut attempts = Vec::new();
        let mut result = self
            .complete_on(&target, request, &mut attempts, &mut on_event)
            .await;
        let mut tried = vec![(target.provider.clone(), target.model.clone())];
        for entry in &self.fallbacks {
            let error = match &result {
                Err(e) if e.is_failover_eligible() => e.clone(),
                _ => break,
            };
            let next = match self.resolve_fallback(entry) {
                Ok(next) => next,
                Err(e) => {
                    on_event(CallEvent::Warning(format!(
                        "fallback `{entry}` skipped: {e}"
                    )));
                    continue;
                }
            };
            if tried.contains(&(next.provider.clone(), next.model.clone())) {
                continue;
            }
            if !self.is_configured(&next.provider) {
                on_event(CallEvent::Warning(format!(
                    "fallback `{entry}` skipped: provider `{}` has no API key",
                    next.provider
                )));
                continue;
            }
            tried.push((next.provider.clone(), next.model.clone()));
            on_event(CallEvent::Failover {
                from: target.clone(),
                to: next.clone(),
                error,
            });
            if let Some(w) = &next.warning {
                on_event(CallEvent::Warning(w.clone()));
            }
            target = next;
            result = self
                .complete_on(&target, request, &mut attempts, &mut on_event)
                .await;
        }
        let response = result?;
        let cost = self
            .catalog
            .lookup_for(&target.provider, &target.model)
            .and_then(|m| m.cost(&response.usage, request.speed))
            // A model on this machine costs nothing, priced or not.
            .or_else(|| self.is_local(&target.provider).then_some(0.0));
        Ok(Completion {
            response,
            target,
            attempts,
            cost,
        })
    }

    /// True for a provider on this machine: no key configured and a
    /// loopback base URL (`[providers.ollama] base_url =
    /// "http://localhost:11434/v1"`).
    fn is_local(&self, provider: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| {
            p.api_key.is_none()
                && p.key_env.is_none()
                && p.base_url.as_deref().is_some_and(loopback_url)
        })
    }

    /// One target, with retries.
    async fn complete_on<F: FnMut(CallEvent)>(
        &self,
        target: &Target,
        request: &Request,
        attempts: &mut Vec<Attempt>,
        on_event: &mut F,
    ) -> Result<Response, LlmError> {
        let provider =
            self.providers
                .get(&target.provider)
                .ok_or_else(|| LlmError::UnknownProvider {
                    provider: target.provider.clone(),
                })?;
        let api_key = match (&provider.api_key, &provider.key_env) {
            (Some(key), _) => Some(key.0.as_str()),
            (None, None) => None,
            (None, Some(env_var)) => {
                return Err(LlmError::MissingKey {
                    provider: target.provider.clone(),
                    env_var: env_var.clone(),
                });
            }
        };
        let base_url = provider.base_url.as_deref().ok_or_else(|| {
            LlmError::Config(format!(
                "provider `{}` has no base_url: set it under [providers.{}] in settings.toml",
                target.provider, target.provider
            ))
        })?;
        let endpoint = Endpoint {
            base_url,
            api_key,
            model: &target.model,
            max_output: self
                .catalog
                .lookup_for(&target.provider, &target.model)
                .and_then(|m| m.max_output),
        };
        let call = target.wire.build(&endpoint, request)?;
        let mut retry = 0;
        loop {
            let started = Instant::now();
            let result = self
                .transport
                .send(
                    &target.provider,
                    target.wire,
                    &call,
                    request.stream,
                    api_key,
                    |delta| on_event(CallEvent::Delta(delta)),
                )
                .await;
            attempts.push(Attempt {
                provider: target.provider.clone(),
                model: target.model.clone(),
                error: result.as_ref().err().cloned(),
                elapsed: started.elapsed(),
            });
            let error = match result {
                Ok(mut response) => {
                    response.provider.clone_from(&target.provider);
                    if response.model.is_empty() {
                        response.model.clone_from(&target.model);
                    }
                    return Ok(response);
                }
                Err(error) => error,
            };
            retry += 1;
            let Some(wait) = self.retry.wait_before(retry, &error) else {
                return Err(error);
            };
            on_event(CallEvent::Retry {
                target: target.clone(),
                retry,
                wait,
                error,
            });
            self.sleeper.sleep(wait).await;
        }
    }

    fn wire(&self, provider: &str) -> Result<Wire, LlmError> {
        self.providers
            .get(provider)
            .map(|p| p.wire)
            .ok_or_else(|| LlmError::UnknownProvider {
                provider: provider.to_string(),
            })
    }

    fn target(&self, provider: &str, model: &str, wire: Wire, warning: Option<String>) -> Target {
        Target {
            provider: provider.to_string(),
            model: model.to_string(),
            wire,
            warning,
        }
    }

    fn default_target(&self, provider: &str) -> Result<Target, LlmError> {
        let wire = self.wire(provider)?;
        let model = self.catalog.default_model(provider).ok_or_else(|| {
            LlmError::Config(format!(
                "provider `{provider}` has no default model: name a model, or set `default_model` (or `models`) under [providers.{provider}] in settings.toml"
            ))
        })?;
        Ok(self.target(provider, &model, wire, None))
    }

    /// The first of Anthropic, OpenAI, Gemini with a key; Anthropic if none.
    fn detect(&self) -> &'static str {
        DETECTION_ORDER
            .into_iter()
            .find(|p| self.providers.get(*p).is_some_and(|p| p.api_key.is_some()))
            .unwrap_or(DETECTION_ORDER[0])
    }
}

/// The provider a model family's name gives away.
fn infer_provider(model: &str) -> Option<&'static str> {
    let m = model.to_ascii_lowercase();
    if m.starts_with("claude") {
        Some("anthropic")
    } else if m.starts_with("gpt-")
        || m.starts_with("chatgpt")
        || m.starts_with("codex")
        || ["o1", "o3", "o4"]
            .iter()
            .any(|p| m == *p || m.starts_with(&format!("{p}-")))
    {
        Some("openai")
    } else if m.starts_with("gemini") {
        Some("gemini")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_base_urls_are_local_and_others_are_not() {
        assert!(loopback_url("http://localhost:11434/v1"));
        assert!(loopback_url("http://127.0.0.1:8080"));
        assert!(loopback_url("http://[::1]:11434/v1"));
        assert!(!loopback_url("https://api.openai.com/v1"));
        assert!(!loopback_url("http://localhost.example.com/v1"));
    }

    fn client(env: &[(&str, &str)], settings: &str) -> LlmClient {
        let env = env
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        let settings = LlmSettings::parse(settings).expect("settings");
        LlmClient::new(&env, &settings).expect("client")
    }

    fn resolved(
        c: &LlmClient,
        model: Option<&str>,
        provider: Option<&str>,
    ) -> (String, String, bool) {
        let t = c.resolve(model, provider).expect("resolves");
        (t.provider, t.model, t.warning.is_some())
    }

    fn r(p: &str, m: &str, warned: bool) -> (String, String, bool) {
        (p.to_string(), m.to_string(), warned)
    }

    #[test]
    fn aliases_and_ids_resolve_through_the_catalog() {
        let c = client(&[], "");
        assert_eq!(
            resolved(&c, Some("opus"), None),
            r("anthropic", "claude-opus-4-7", false)
        );
        assert_eq!(
            resolved(&c, Some("gemini-pro"), None),
            r("gemini", "gemini-3.1-pro-preview", false)
        );
        assert_eq!(resolved(&c, Some("glm"), None), r("zai", "glm-4.7", false));
        assert_eq!(
            resolved(&c, None, Some("openai")),
            r("openai", "gpt-5.5", false)
        );
        assert_eq!(
            resolved(&c, None, Some("inception")),
            r("inception", "mercury-2", false)
        );
    }

    #[test]
    fn unknown_models_pass_through_with_a_warning() {
        let c = client(&[("OPENAI_API_KEY", "k")], "");
        assert_eq!(
            resolved(&c, Some("claude-future-9"), None),
            r("anthropic", "claude-future-9", true)
        );
        assert_eq!(
            resolved(&c, Some("my-finetune"), None),
            r("openai", "my-finetune", true),
            "auto-detected by key"
        );
        assert_eq!(
            resolved(&c, Some("gpt-9"), Some("openai")),
            r("openai", "gpt-9", true)
        );
        let e = c
            .resolve(Some("x"), Some("nowhere"))
            .expect_err("unknown provider");
        assert_eq!(e.code(), "llm.unknown_provider");
    }

    #[test]
    fn auto_detection_prefers_anthropic_then_openai_then_gemini() {
        let keys = [
            ("ANTHROPIC_API_KEY", "a"),
            ("OPENAI_API_KEY", "o"),
            ("GEMINI_API_KEY", "g"),
        ];
        assert_eq!(resolved(&client(&keys, ""), None, None).0, "anthropic");
        assert_eq!(resolved(&client(&keys[1..], ""), None, None).0, "openai");
        assert_eq!(
            resolved(&client(&keys[2..], ""), None, None),
            r("gemini", "gemini-3.1-pro-preview", false)
        );
        assert_eq!(
            resolved(&client(&[], ""), None, None),
            r("anthropic", "claude-opus-4-7", false),
            "no key: Anthropic"
        );
        assert_eq!(
            resolved(&client(&[("ANTHROPIC_API_KEY", " ")], ""), None, None).0,
            "anthropic",
            "a blank key is no key, and Anthropic is the fallback anyway"
        );
        assert_eq!(
            resolved(
                &client(&[("ANTHROPIC_API_KEY", " "), ("GEMINI_API_KEY", "g")], ""),
                None,
                None
            )
            .0,
            "gemini"
        );
    }

    #[test]
    fn named_providers_from_settings_serve_their_models() {
        let c = client(
            &[],
            r#"
            [providers.ollama]
            base_url = "http://localhost:11434/v1"
            models = ["llama3.1"]
            "#,
        );
        assert_eq!(
            resolved(&c, Some("llama3.1"), None),
            r("ollama", "llama3.1", false)
        );
        assert_eq!(
            resolved(&c, Some("llama3.1"), Some("ollama")),
            r("ollama", "llama3.1", false)
        );
        assert_eq!(
            resolved(&c, None, Some("ollama")),
            r("ollama", "llama3.1", false)
        );
        let t = c.resolve(Some("llama3.1"), None).expect("resolves");
        assert_eq!(t.wire, Wire::OpenAiCompat);
        assert!(
            c.is_configured("ollama"),
            "a provider without api_key_env needs no key"
        );
        assert!(!c.is_configured("openai"));
    }

    #[test]
    fn fallback_entries_are_providers_aliases_or_qualified() {
        let c = client(
            &[],
            "[providers.ollama]\nbase_url = \"http://x/v1\"\nmodels = [\"qwen3\"]\n",
        );
        let f = |e: &str| {
            c.resolve_fallback(e)
                .map(|t| t.to_string())
                .expect("resolves")
        };
        assert_eq!(f("gemini"), "gemini/gemini-3.1-pro-preview");
        assert_eq!(f("gpt54"), "openai/gpt-5.4");
        assert_eq!(f("openai/gpt-5.4-mini"), "openai/gpt-5.4-mini");
        assert_eq!(f("ollama/llama3.2"), "ollama/llama3.2");
        assert_eq!(f("qwen3"), "ollama/qwen3");
    }

    #[test]
    fn keys_never_show_in_debug_output() {
        let c = client(&[("ANTHROPIC_API_KEY", "sk-ant-very-secret")], "");
        assert!(!format!("{c:?}").contains("sk-ant-very-secret"));
    }

    #[test]
    fn calls_are_send_when_the_callback_is() {
        fn assert_send<T: Send>(_: &T) {}
        let c = client(&[], "");
        let request = Request::prompt("hi");
        let mut seen = Vec::new();
        assert_send(&c.complete(&request, |e| seen.push(e)));
    }

    #[tokio::test]
    async fn a_missing_key_fails_at_once_naming_the_variable() {
        let c = client(&[], "");
        let mut events = Vec::new();
        let e = c
            .complete(&Request::prompt("hi"), |e| events.push(e))
            .await
            .expect_err("no key");
        assert_eq!(
            e,
            LlmError::MissingKey {
                provider: "anthropic".into(),
                env_var: "ANTHROPIC_API_KEY".into()
            }
        );
        assert!(events.is_empty(), "not retried: {events:?}");
    }
}
