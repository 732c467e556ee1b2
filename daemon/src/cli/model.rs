//! `weft model list` and `weft model test` (core-concepts/models.mdx, "CLI
//! commands"): the model catalog with the user's settings laid over it, and
//! a one-request check that providers answer with the keys of this
//! process's environment.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::exit::{self, CliError, CliResult, EXIT_INVALID, EXIT_OK};
use super::{ModelAction, ModelArgs, ModelListArgs, ModelTestArgs};
use crate::llm::{
    CallEvent, Catalog, LlmClient, LlmSettings, ModelInfo, ProviderEntry, Request, RetryPolicy,
    Target,
};
use crate::util::text::{ELLIPSIS, truncate};

/// The prompt `weft model test` sends.
const TEST_PROMPT: &str = "Reply with the word ok.";
/// The reply limit of a test request.
const TEST_MAX_TOKENS: u32 = 16;

/// `weft model ...`.
pub fn run(args: &ModelArgs) -> CliResult {
    match &args.action {
        ModelAction::List(list) => self::list(list),
        ModelAction::Test(test) => self::test(test),
    }
}

/// This process's environment as the client wants it.
fn process_env() -> BTreeMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// The LLM sections of `$WEFT_HOME/settings.toml`.
fn settings() -> Result<LlmSettings, CliError> {
    let home = super::home()?;
    super::report::warn_about_settings(&home);
    LlmSettings::load(&home.settings_path()).map_err(|e| CliError::Usage(e.to_string()))
}

/// Whether a provider can be called with what `env` and settings hold.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyState {
    /// The key variable is set (or settings.toml holds a key).
    Set,
    /// The provider names a key variable that is not set.
    Missing(String),
    /// No key is needed (a local server from settings.toml).
    NotNeeded,
}

impl KeyState {
    fn of(entry: Option<&ProviderEntry>, env: &BTreeMap<String, String>) -> KeyState {
        let Some(entry) = entry else {
            return KeyState::Missing("(unknown provider)".into());
        };
        let from_env = entry
            .api_key_env
            .as_ref()
            .and_then(|v| env.get(v))
            .is_some_and(|v| !v.trim().is_empty());
        let from_settings = entry.api_key.as_ref().is_some_and(|k| !k.trim().is_empty());
        match &entry.api_key_env {
            _ if from_env || from_settings => KeyState::Set,
            Some(var) => KeyState::Missing(var.clone()),
            None => KeyState::NotNeeded,
        }
    }

    fn is_usable(&self) -> bool {
        !matches!(self, KeyState::Missing(_))
    }

    fn label(&self) -> String {
        match self {
            KeyState::Set => "set".into(),
            KeyState::Missing(var) => format!("missing: {var}"),
            KeyState::NotNeeded => "not needed".into(),
        }
    }
}

/// Fails with a usage error when `provider` is not in the catalog.
fn check_provider(catalog: &Catalog, provider: Option<&str>) -> Result<(), CliError> {
    match provider {
        Some(p) if !catalog.providers.contains_key(p) => {
            let known: Vec<&str> = catalog.providers.keys().map(String::as_str).collect();
            Err(CliError::Usage(format!(
                "unknown provider `{p}`; known providers: {}",
                known.join(", ")
            )))
        }
        _ => Ok(()),
    }
}

// ----- list -----------------------------------------------------------------

/// `weft model list`.
fn list(args: &ModelListArgs) -> CliResult {
    let settings = settings()?;
    let catalog = settings.catalog();
    let provider = args
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    check_provider(&catalog, provider)?;
    let query = args
        .query
        .as_deref()
        .map(|q| q.trim().to_lowercase())
        .filter(|q| !q.is_empty());
    let env = process_env();
    let models: Vec<(&ModelInfo, KeyState)> = catalog
        .models
        .iter()
        .filter(|m| provider.is_none_or(|p| m.provider == p))
        .filter(|m| query.as_deref().is_none_or(|q| matches_query(m, q)))
        .map(|m| (m, KeyState::of(catalog.providers.get(&m.provider), &env)))
        .collect();
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        let rows: Vec<Value> = models.iter().map(|(m, key)| list_json(m, key)).collect();
        serde_json::to_writer_pretty(&mut out, &rows)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_table(&mut out, &models)
    };
    super::output_done(written)
}

fn matches_query(model: &ModelInfo, query: &str) -> bool {
    model.id.to_lowercase().contains(query)
        || model
            .aliases
            .iter()
            .any(|a| a.to_lowercase().contains(query))
}

fn list_json(m: &ModelInfo, key: &KeyState) -> Value {
    let prices = |p: Option<crate::llm::Prices>| {
        p.map(|p| {
            json!({
                "input": p.input,
                "output": p.output,
                "cache_read": p.cache_read,
                "cache_write": p.cache_write,
            })
        })
    };
    json!({
        "id": m.id,
        "provider": m.provider,
        "aliases": m.aliases,
        "context_window": m.context_window,
        "max_output": m.max_output,
        "prices": prices(m.price),
        "fast_prices": prices(m.fast),
        "key_set": key.is_usable(),
        "key": key.label(),
    })
}

fn write_table(out: &mut impl Write, models: &[(&ModelInfo, KeyState)]) -> std::io::Result<()> {
    if models.is_empty() {
        return writeln!(out, "no models match");
    }
    let header = ["MODEL", "PROVIDER", "ALIASES", "CONTEXT", "PRICE", "KEY"];
    let rows: Vec<[String; 6]> = models
        .iter()
        .map(|(m, key)| {
            [
                m.id.clone(),
                m.provider.clone(),
                if m.aliases.is_empty() {
                    "-".into()
                } else {
                    m.aliases.join(", ")
                },
                m.context_window.map_or_else(|| "-".into(), context),
                m.price.map_or_else(
                    || "n/a".into(),
                    |p| format!("${:.2} / ${:.2}", p.input, p.output),
                ),
                key.label(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut line = |cells: &[&str]| -> std::io::Result<()> {
        let mut text = String::new();
        for (i, (cell, width)) in cells.iter().zip(&widths).enumerate() {
            text.push_str(cell);
            if i + 1 < cells.len() {
                let pad = width.saturating_sub(cell.chars().count());
                text.push_str(&" ".repeat(pad + 2));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(&header)?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells)?;
    }
    Ok(())
}

/// A context window for people: `200K`, `1M`, `1.05M`.
fn context(tokens: u64) -> String {
    if tokens >= 1_000_000 {
        #[allow(clippy::cast_precision_loss)] // context windows are far below 2^52
        let millions = tokens as f64 / 1_000_000.0;
        let text = format!("{millions:.2}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text}M")
    } else if tokens >= 1_000 {
        format!("{}K", (tokens + 500) / 1_000)
    } else {
        tokens.to_string()
    }
}

// ----- test -----------------------------------------------------------------

/// What one test found.
struct Outcome {
    provider: String,
    model: String,
    result: Result<(Duration, String), (String, &'static str)>,
}

/// `weft model test`.
fn test(args: &ModelTestArgs) -> CliResult {
    let settings = settings()?;
    let env = process_env();
    // One attempt: this checks connectivity, it does not insist.
    let client = LlmClient::new(&env, &settings)
        .map_err(|e| CliError::Usage(e.to_string()))?
        .with_retry(RetryPolicy::none());
    let catalog = client.catalog();
    let provider = args
        .provider
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty());
    check_provider(catalog, provider)?;
    let model = args
        .model
        .as_deref()
        .or(args.model_flag.as_deref())
        .map(str::trim)
        .filter(|m| !m.is_empty());

    // (provider, model) pairs to try; a provider whose default model cannot
    // be resolved is reported as a failure.
    let mut targets: Vec<Result<Target, Outcome>> = Vec::new();
    let mut resolve = |model: Option<&str>, provider: Option<&str>| {
        targets.push(client.resolve(model, provider).map_err(|e| Outcome {
            provider: provider.unwrap_or("?").to_string(),
            model: model.unwrap_or("(default)").to_string(),
            result: Err((e.to_string(), e.code())),
        }));
    };
    if model.is_some() || provider.is_some() {
        resolve(model, provider);
    } else {
        let usable: Vec<&String> = catalog
            .providers
            .iter()
            .filter(|(_, entry)| KeyState::of(Some(entry), &env) == KeyState::Set)
            .map(|(name, _)| name)
            .chain(
                // Providers from settings.toml that need no key (local servers).
                settings.providers.keys().filter(|name| {
                    KeyState::of(catalog.providers.get(*name), &env) == KeyState::NotNeeded
                }),
            )
            .collect();
        if usable.is_empty() {
            let vars: Vec<&str> = catalog
                .providers
                .values()
                .filter_map(|p| p.api_key_env.as_deref())
                .collect();
            return Err(CliError::NoProvider(format!(
                "no provider has an API key: set one of {} in the environment (or `api_key` under [providers.NAME] in settings.toml), or name a model to test",
                vars.join(", ")
            )));
        }
        for name in usable {
            resolve(None, Some(name));
        }
    }

    super::block_on(async {
        let calls = targets.into_iter().map(|target| {
            let client = &client;
            async move {
                match target {
                    Ok(target) => test_one(client, target).await,
                    Err(outcome) => outcome,
                }
            }
        });
        let outcomes = futures_util::future::join_all(calls).await;
        report(&outcomes, args.json)
    })
}

/// Sends the test request to `target`.
async fn test_one(client: &LlmClient, target: Target) -> Outcome {
    if let Some(warning) = &target.warning {
        eprintln!("warning: {warning}");
    }
    let mut request = Request::prompt(TEST_PROMPT);
    request.model = Some(target.model.clone());
    request.provider = Some(target.provider.clone());
    request.max_tokens = Some(TEST_MAX_TOKENS);
    let started = Instant::now();
    // The resolution warning was printed above, and no fallbacks are set:
    // the events (deltas) are not needed.
    let result = client.complete(&request, |_: CallEvent| {}).await;
    let elapsed = started.elapsed();
    Outcome {
        provider: target.provider,
        model: target.model,
        result: match result {
            Ok(done) => Ok((elapsed, done.response.text())),
            Err(e) => Err((e.to_string(), e.code())),
        },
    }
}

/// Prints the outcomes; the exit code.
fn report(outcomes: &[Outcome], json: bool) -> CliResult {
    let failed = outcomes.iter().any(|o| o.result.is_err());
    let mut out = std::io::stdout().lock();
    let written = if json {
        let rows: Vec<Value> = outcomes
            .iter()
            .map(|o| match &o.result {
                Ok((elapsed, reply)) => json!({
                    "provider": o.provider,
                    "model": o.model,
                    "ok": true,
                    "elapsed_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
                    "reply": reply,
                }),
                Err((message, code)) => json!({
                    "provider": o.provider,
                    "model": o.model,
                    "ok": false,
                    "error": message,
                    "code": code,
                }),
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        outcomes.iter().try_for_each(|o| match &o.result {
            Ok((elapsed, reply)) => writeln!(
                out,
                "ok  {}/{}  {}  {:?}",
                o.provider,
                o.model,
                crate::util::duration::elapsed(*elapsed),
                short(reply)
            ),
            Err((message, _)) => writeln!(out, "FAIL {}/{}: {message}", o.provider, o.model),
        })
    };
    super::output_done(written)?;
    exit::code(if failed { EXIT_INVALID } else { EXIT_OK })
}

/// How many characters of a reply `weft model test` shows, `…` included.
const REPLY_WIDTH: usize = 61;

/// A reply cut to one short line: its first line, cut to [`REPLY_WIDTH`],
/// with `…` also when more lines follow.
fn short(reply: &str) -> String {
    let mut lines = reply.trim().lines();
    let mut text = truncate(lines.next().unwrap_or_default(), REPLY_WIDTH);
    if lines.next().is_some() && !text.ends_with(ELLIPSIS) {
        text.push(ELLIPSIS);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_windows_read_in_k_and_m() {
        assert_eq!(context(200_000), "200K");
        assert_eq!(context(1_000_000), "1M");
        assert_eq!(context(1_048_576), "1.05M");
        assert_eq!(context(128_000), "128K");
        assert_eq!(context(512), "512");
    }

    #[test]
    fn key_state_names_the_missing_variable() {
        let entry = ProviderEntry {
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
            ..ProviderEntry::default()
        };
        let mut env = BTreeMap::new();
        assert_eq!(
            KeyState::of(Some(&entry), &env).label(),
            "missing: ANTHROPIC_API_KEY"
        );
        env.insert("ANTHROPIC_API_KEY".to_string(), "sk".to_string());
        assert_eq!(KeyState::of(Some(&entry), &env), KeyState::Set);
        assert_eq!(
            KeyState::of(Some(&ProviderEntry::default()), &env),
            KeyState::NotNeeded
        );
    }
}
