//! `web_search` (agents/tools.mdx): the Brave Search API's web results,
//! numbered, with title, URL and description.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;

use super::web_fetch::{describe, http_client, markdown, read_capped};
use super::{ToolOutput, Workspace, optional_u64, required_str};

/// Brave's web search endpoint.
pub const BRAVE_ENDPOINT: &str = "https://api.search.brave.com/res/v1/web/search";
/// Replaces [`BRAVE_ENDPOINT`] (tests point it at a local fake).
pub const ENDPOINT_ENV: &str = "WEFT_BRAVE_SEARCH_URL";
/// Results when `max_results` is not given.
const DEFAULT_RESULTS: u64 = 5;
/// Brave returns at most 20 web results per request.
const MAX_RESULTS: u64 = 20;
/// Brave refuses longer queries.
const MAX_QUERY_CHARS: usize = 400;
/// A search taking longer is abandoned.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes of a reply read at most (20 results are some 20 KB).
const MAX_REPLY_BYTES: usize = 1024 * 1024;

/// Where `web_search` asks, and with which key.
#[derive(Clone, PartialEq, Eq)]
pub struct WebSearch {
    /// The `X-Subscription-Token` (`BRAVE_SEARCH_API_KEY`).
    pub key: String,
    /// The search URL, [`BRAVE_ENDPOINT`] unless overridden.
    pub endpoint: String,
}

impl WebSearch {
    /// Brave Search with `key`, at the endpoint `WEFT_BRAVE_SEARCH_URL`
    /// names, else [`BRAVE_ENDPOINT`].
    #[must_use]
    pub fn brave(key: String) -> WebSearch {
        WebSearch::at(key, std::env::var(ENDPOINT_ENV).ok())
    }

    /// Brave Search with `key` at `endpoint` (blank or `None`: Brave's).
    #[must_use]
    pub fn at(key: String, endpoint: Option<String>) -> WebSearch {
        WebSearch {
            key,
            endpoint: endpoint
                .filter(|e| !e.trim().is_empty())
                .unwrap_or_else(|| BRAVE_ENDPOINT.to_string()),
        }
    }
}

/// The key is a secret: never in a debug print.
impl std::fmt::Debug for WebSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSearch")
            .field("key", &"<redacted>")
            .field("endpoint", &self.endpoint)
            .finish()
    }
}

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Search the web (Brave Search). Returns numbered results with title, URL and description; \
         fetch a result with web_fetch to read it.",
        serde_json::json!({"type":"object","properties":{"query":{"type":"string","description":"Search query"},"max_results":{"type":"integer","description":"Most results (default 5, at most 20)"}},"required":["query"]}),
    )
}

pub(super) async fn run(workspace: &Workspace, arguments: &Value) -> ToolOutput {
    match search(workspace, arguments).await {
        Ok(output) | Err(output) => output,
    }
}

async fn search(workspace: &Workspace, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
    let query = required_str(arguments, "query")?.trim();
    if query.is_empty() {
        return Err(ToolOutput::error("the query is empty"));
    }
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolOutput::error(format!(
            "the query is longer than {MAX_QUERY_CHARS} characters; shorten it"
        )));
    }
    let count = optional_u64(arguments, "max_results")?
        .unwrap_or(DEFAULT_RESULTS)
        .clamp(1, MAX_RESULTS);
    let Some(config) = &workspace.web_search else {
        return Err(ToolOutput::error(
            "web_search is not configured: it needs a Brave Search API key (BRAVE_SEARCH_API_KEY)",
        ));
    };
    let url = reqwest::Url::parse_with_params(
        &config.endpoint,
        [("q", query), ("count", &count.to_string())],
    )
    .map_err(|e| ToolOutput::error(format!("the search endpoint is not a valid URL: {e}")))?;
    let client = http_client()?;
    let request = async {
        let mut response = client
            .get(url)
            .header("accept", "application/json")
            .header("x-subscription-token", &config.key)
            .send()
            .await
            .map_err(|e| ToolOutput::error(format!("the search failed: {}", describe(&e))))?;
        let (body, _) = read_capped(&mut response, MAX_REPLY_BYTES)
            .await
            .map_err(|e| ToolOutput::error(format!("the search failed: {}", describe(&e))))?;
        Ok::<_, ToolOutput>((response.status(), body))
    };
    let (status, body) = tokio::select! {
        result = tokio::time::timeout(TIMEOUT, request) => result.map_err(|_| {
            ToolOutput::error(format!("the search timed out after {} s", TIMEOUT.as_secs()))
        })??,
        reason = workspace.cancel.cancelled() => {
            return Err(ToolOutput::error(format!("the search was cancelled ({reason})")));
        }
    };
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let excerpt = crate::util::text::one_line(&text, 300);
        let hint = match status.as_u16() {
            401 | 403 => " (the API key was refused)",
            429 => " (rate limited; try again later or search less)",
            _ => "",
        };
        return Err(ToolOutput::error(format!(
            "the search failed: HTTP {status}{hint}: {excerpt}"
        )));
    }
    let reply: Value = serde_json::from_slice(&body).map_err(|e| {
        ToolOutput::error(format!(
            "the search service sent a reply that is not JSON: {e}"
        ))
    })?;
    Ok(ToolOutput::ok(format_results(query, &reply, count)))
}

/// `reply`'s web results as numbered entries, at most `count`.
fn format_results(query: &str, reply: &Value, count: u64) -> String {
    let results = reply
        .pointer("/web/results")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = String::new();
    let text = |result: &Value, key: &str| {
        let raw = result.get(key).and_then(Value::as_str).unwrap_or("");
        // Titles and descriptions carry <strong> around the query words.
        let plain = markdown::to_markdown(raw).markdown;
        crate::util::text::one_line(plain.trim(), 500)
    };
    let take = usize::try_from(count).unwrap_or(usize::MAX);
    for (i, result) in results.iter().take(take).enumerate() {
        let url = result.get("url").and_then(Value::as_str).unwrap_or("");
        let _ = writeln!(out, "{}. {}", i + 1, text(result, "title"));
        let _ = writeln!(out, "   {}", crate::util::text::one_line(url, 500));
        let description = text(result, "description");
        if !description.is_empty() {
            let _ = writeln!(out, "   {description}");
        }
        out.push('\n');
    }
    if out.is_empty() {
        let _ = writeln!(out, "No results for `{query}`.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::web_fetch::tests::{Reply, reply, serve};
    use super::*;
    use crate::exec::cancel::Cancel;
    use serde_json::json;

    fn workspace(endpoint: Option<String>) -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().expect("temp");
        let mut ws = Workspace::new(dir.path(), &[], Cancel::new()).expect("workspace");
        ws.web_search = endpoint.map(|e| WebSearch::at("sekrit-key".into(), Some(e)));
        (dir, ws)
    }

    fn brave_reply(n: usize) -> String {
        let results: Vec<Value> = (1..=n)
            .map(|i| {
                json!({
                    "title": format!("Result <strong>{i}</strong>"),
                    "url": format!("https://example.org/{i}"),
                    "description": format!("About &amp; <strong>thing</strong> {i}"),
                    "extra_snippets": ["ignored"]
                })
            })
            .collect();
        json!({"type": "search", "web": {"type": "search", "results": results}}).to_string()
    }

    #[tokio::test]
    async fn results_are_numbered_with_title_url_and_description() {
        let (base, seen) = serve(vec![reply(
            "/res/v1/web/search",
            "application/json",
            brave_reply(3),
        )]);
        let (_dir, ws) = workspace(Some(format!("{base}/res/v1/web/search")));
        let out = run(&ws, &json!({"query": "rust & grep", "max_results": 2})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "1. Result **1**\n   https://example.org/1\n   About & **thing** 1\n\n\
             2. Result **2**\n   https://example.org/2\n   About & **thing** 2\n\n"
        );
        let request = seen.lock().expect("seen")[0].clone();
        assert!(
            request.starts_with("GET /res/v1/web/search?q=rust+%26+grep&count=2 "),
            "{request}"
        );
        assert!(
            request
                .to_ascii_lowercase()
                .contains("x-subscription-token: sekrit-key"),
            "{request}"
        );
    }

    #[tokio::test]
    async fn max_results_defaults_to_5_and_is_capped_at_20() {
        let (base, seen) = serve(vec![reply("/s", "application/json", brave_reply(30))]);
        let (_dir, ws) = workspace(Some(format!("{base}/s")));
        let out = run(&ws, &json!({"query": "q"})).await;
        assert_eq!(
            out.content.matches("https://example.org/").count(),
            5,
            "{}",
            out.content
        );
        let out = run(&ws, &json!({"query": "q", "max_results": 500})).await;
        assert_eq!(
            out.content.matches("https://example.org/").count(),
            20,
            "{}",
            out.content
        );
        let seen = seen.lock().expect("seen");
        assert!(
            seen[0].contains("count=5") && seen[1].contains("count=20"),
            "{seen:?}"
        );
    }

    #[tokio::test]
    async fn service_errors_are_errors_without_the_key() {
        let (base, _) = serve(vec![
            Reply {
                path: "/denied",
                status: "401 Unauthorized",
                headers: vec![("Content-Type", "application/json".into())],
                body: br#"{"error":"bad token"}"#.to_vec(),
            },
            reply("/garbage", "text/html", "<html>oops</html>"),
            reply("/empty", "application/json", r#"{"web":{"results":[]}}"#),
        ]);
        let (_dir, ws) = workspace(Some(format!("{base}/denied")));
        let out = run(&ws, &json!({"query": "q"})).await;
        assert!(
            out.is_error && out.content.contains("401") && out.content.contains("key was refused"),
            "{}",
            out.content
        );
        assert!(!out.content.contains("sekrit"), "{}", out.content);
        let (_dir, ws) = workspace(Some(format!("{base}/garbage")));
        let out = run(&ws, &json!({"query": "q"})).await;
        assert!(
            out.is_error && out.content.contains("not JSON"),
            "{}",
            out.content
        );
        let (_dir, ws) = workspace(Some(format!("{base}/empty")));
        let out = run(&ws, &json!({"query": "nothing"})).await;
        assert_eq!(out.content, "No results for `nothing`.\n");
    }

    #[tokio::test]
    async fn without_a_key_the_tool_says_it_is_not_configured() {
        let (_dir, ws) = workspace(None);
        let out = run(&ws, &json!({"query": "q"})).await;
        assert!(
            out.is_error && out.content.contains("BRAVE_SEARCH_API_KEY"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_errors_the_model_can_read() {
        let (_dir, ws) = workspace(Some("http://127.0.0.1:1/".into()));
        for (arguments, expected) in [
            (json!({}), "query"),
            (json!({"query": ["a"]}), "query"),
            (json!({"query": "   "}), "empty"),
            (json!({"query": "x".repeat(401)}), "longer than 400"),
            (
                json!({"query": "q", "max_results": "many"}),
                "non-negative integer",
            ),
        ] {
            let out = run(&ws, &arguments).await;
            assert!(
                out.is_error && out.content.contains(expected),
                "{arguments}: {}",
                out.content
            );
        }
    }

    #[test]
    fn the_endpoint_is_brave_unless_overridden_and_the_key_is_never_printed() {
        assert_eq!(WebSearch::at("k".into(), None).endpoint, BRAVE_ENDPOINT);
        assert_eq!(
            WebSearch::at("k".into(), Some(" ".into())).endpoint,
            BRAVE_ENDPOINT
        );
        assert_eq!(
            WebSearch::at("k".into(), Some("http://x/s".into())).endpoint,
            "http://x/s"
        );
        let debug = format!("{:?}", WebSearch::at("sekrit".into(), None));
        assert!(!debug.contains("sekrit"), "{debug}");
    }
}
