//! `weft model list` and `weft model test`: the catalog with settings.toml's
//! `[[models]]`, and one tiny request to the fake provider server.

use std::process::Command;

use serde_json::Value;
use weft_fakellm::{FakeLlm, Reply};
use weft_tests::{Run, Sandbox};

/// Provider variables of the real environment that must not leak in.
const PROVIDER_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "KIMI_API_KEY",
    "ZAI_API_KEY",
    "MINIMAX_API_KEY",
    "INCEPTION_API_KEY",
];

/// `weft` with no provider key or base URL from the real environment.
fn weft(sb: &Sandbox) -> Command {
    let mut cmd = sb.weft();
    for var in PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd
}

fn run(mut cmd: Command, args: &[&str]) -> Run {
    Run::from(
        cmd.args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run weft: {e}")),
    )
}

#[test]
fn model_list_shows_the_catalog_filters_and_prints_json() {
    let sb = Sandbox::new();
    let all = run(weft(&sb), &["model", "list"]);
    assert_eq!(all.code, 0, "{all:?}");
    let header = all.stdout.lines().next().unwrap_or_default();
    for column in ["MODEL", "PROVIDER", "ALIASES", "CONTEXT", "PRICE", "KEY"] {
        assert!(header.contains(column), "{header}");
    }
    assert!(all.stdout.contains("claude-sonnet-4-5"), "{}", all.stdout);
    assert!(all.stdout.contains("gpt-5.2"), "{}", all.stdout);
    assert!(all.stdout.contains("200K"), "{}", all.stdout);
    assert!(all.stdout.contains("$3.00 / $15.00"), "{}", all.stdout);
    assert!(
        all.stdout.contains("missing: ANTHROPIC_API_KEY"),
        "{}",
        all.stdout
    );

    let sonnet = run(weft(&sb), &["model", "list", "--query", "SONNET"]);
    assert_eq!(sonnet.code, 0, "{sonnet:?}");
    let rows: Vec<&str> = sonnet.stdout.lines().skip(1).collect();
    assert!(!rows.is_empty(), "{}", sonnet.stdout);
    assert!(
        rows.iter().all(|r| r.contains("sonnet")),
        "only sonnet models: {}",
        sonnet.stdout
    );
    assert!(!sonnet.stdout.contains("gpt-5.2"), "{}", sonnet.stdout);

    let openai = run(weft(&sb), &["model", "list", "--provider", "openai"]);
    assert_eq!(openai.code, 0, "{openai:?}");
    assert!(openai.stdout.contains("gpt-5.2"), "{}", openai.stdout);
    assert!(!openai.stdout.contains("claude"), "{}", openai.stdout);

    let mut with_key = weft(&sb);
    with_key.env("ANTHROPIC_API_KEY", "sk-test");
    let json = run(with_key, &["model", "list", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    let models: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}"));
    let list = models.as_array().cloned().unwrap_or_default();
    let sonnet = list
        .iter()
        .find(|m| m["id"] == "claude-sonnet-4-5")
        .unwrap_or_else(|| panic!("claude-sonnet-4-5 listed: {}", json.stdout));
    assert_eq!(sonnet["provider"], "anthropic");
    assert_eq!(sonnet["context_window"], 200_000);
    assert_eq!(sonnet["key_set"], true, "ANTHROPIC_API_KEY is set");
    assert!(sonnet["prices"]["input"].as_f64().is_some(), "{sonnet}");
    let gpt = list
        .iter()
        .find(|m| m["provider"] == "openai")
        .unwrap_or_else(|| panic!("an openai model: {}", json.stdout));
    assert_eq!(gpt["key_set"], false, "OPENAI_API_KEY is not set");

    let unknown = run(weft(&sb), &["model", "list", "--provider", "nope"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(
        unknown.stderr.contains("error: unknown provider"),
        "{unknown:?}"
    );
}

#[test]
fn model_list_includes_models_and_providers_from_settings() {
    let sb = Sandbox::new();
    sb.write(
        "home/settings.toml",
        r#"
[providers.ollama]
base_url = "http://localhost:11434/v1"
models = ["llama3.1"]

[[models]]
id = "llama3.1"
provider = "ollama"
aliases = ["llama"]
context_window = 128000
price = { input = 0.0, output = 0.0 }
"#,
    );
    let out = run(weft(&sb), &["model", "list", "--query", "llama"]);
    assert_eq!(out.code, 0, "{out:?}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("llama3.1"))
        .unwrap_or_else(|| panic!("the settings model is listed: {}", out.stdout));
    assert!(row.contains("ollama"), "{row}");
    assert!(row.contains("128K"), "{row}");
    assert!(row.contains("$0.00 / $0.00"), "{row}");
    assert!(
        row.contains("not needed"),
        "a local server needs no key: {row}"
    );

    let json = run(
        weft(&sb),
        &["model", "list", "--json", "--provider", "ollama"],
    );
    assert_eq!(json.code, 0, "{json:?}");
    let models: Value = serde_json::from_str(&json.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(models[0]["id"], "llama3.1");
    assert_eq!(models[0]["aliases"][0], "llama");
    assert_eq!(models[0]["key_set"], true);
}

#[test]
fn model_test_sends_one_tiny_request_to_the_model() {
    let fake = FakeLlm::start();
    let key = format!("sk-model-test-{}", std::process::id());
    fake.script(&key, [Reply::Text("ok".into())]);
    let sb = Sandbox::new();
    let mut cmd = weft(&sb);
    cmd.env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", fake.url());
    let out = run(cmd, &["model", "test", "claude-haiku-4-5"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.starts_with("ok  anthropic/claude-haiku-4-5  "),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\"ok\""), "{}", out.stdout);

    let sent = fake.requests(&key);
    assert_eq!(sent.len(), 1, "one request");
    assert_eq!(sent[0].body["model"], "claude-haiku-4-5");
    assert!(
        sent[0].body["max_tokens"].as_u64().is_some_and(|n| n <= 64),
        "a tiny request: {}",
        sent[0].body
    );
}

#[test]
fn model_test_without_a_model_tests_each_provider_with_a_key() {
    let fake = FakeLlm::start();
    let key = format!("sk-model-default-{}", std::process::id());
    let sb = Sandbox::new();
    let mut cmd = weft(&sb);
    cmd.env("ANTHROPIC_API_KEY", &key)
        .env("ANTHROPIC_BASE_URL", fake.url());
    let out = run(cmd, &["model", "test", "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let results: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        results.as_array().map(Vec::len),
        Some(1),
        "only anthropic has a key: {results}"
    );
    assert_eq!(results[0]["provider"], "anthropic");
    assert_eq!(results[0]["model"], "claude-opus-4-7", "the default model");
    assert_eq!(results[0]["ok"], true);
    assert_eq!(fake.requests(&key).len(), 1);

    let none = run(weft(&sb), &["model", "test"]);
    assert_eq!(none.code, 1, "{none:?}");
    assert!(none.stderr.contains("ANTHROPIC_API_KEY"), "{none:?}");
}

#[test]
fn model_test_without_the_key_fails_naming_the_variable() {
    let sb = Sandbox::new();
    let out = run(weft(&sb), &["model", "test", "claude-haiku-4-5"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout.starts_with("FAIL anthropic/claude-haiku-4-5: "),
        "{out:?}"
    );
    assert!(out.stdout.contains("ANTHROPIC_API_KEY"), "{out:?}");

    let unknown = run(weft(&sb), &["model", "test", "--provider", "nope"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
}
