//! `weft-fakecli`: a test double for the headless `claude`, `codex` and
//! `gemini` CLIs. Symlink it under one of those names; it checks its
//! arguments like a headless run of that program needs, then prints that
//! program's JSON-lines stream for the scripted session in the file named
//! by `WEFT_FAKECLI_SCRIPT` (without one it says "hello"). If
//! `WEFT_FAKECLI_LOG` is set, its argv, cwd and a few environment
//! variables are appended to that file as one JSON line first.
//!
//! ```json
//! {"session_id": "s-1", "usage": {"input": 1200, "output": 80}, "cost_usd": 0.01,
//!  "steps": [{"say": "Listing."},
//!            {"tool": {"name": "Bash", "input": {"command": "ls"}, "output": "a\nb"}},
//!            {"write": {"path": "notes.md", "content": "hi"}},
//!            {"say": "Done."}]}
//! ```
//!
//! The README describes every step and what each flavor prints for it.

mod args;
mod emit;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use args::Flavor;
use emit::{Failure, Stream, Tokens};

/// Variables recorded in the log: their values, or only whether they are
/// set for those holding secrets.
const LOGGED_ENV: &[&str] = &[
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "CLAUDECODE",
    "CLAUDE_CONFIG_DIR",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "IS_SANDBOX",
    "CODEX_HOME",
    "CODEX_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_TRUST_WORKSPACE",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
];

fn main() {
    std::process::exit(run());
}

fn usage_error(message: &str) -> i32 {
    eprintln!("weft-fakecli: {message}");
    2
}

fn run() -> i32 {
    let argv: Vec<String> = std::env::args().collect();
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let fallback = std::env::var("WEFT_FAKECLI_AS").ok();
    let Some(flavor) = Flavor::detect(
        argv.first().map(String::as_str).unwrap_or_default(),
        fallback.as_deref(),
    ) else {
        return usage_error(
            "run me as `claude`, `codex` or `gemini` (a symlink), or set WEFT_FAKECLI_AS",
        );
    };
    if let Ok(log) = std::env::var("WEFT_FAKECLI_LOG") {
        log_invocation(&log, flavor, &argv, &cwd);
    }
    let invocation = match args::check(flavor, argv.get(1..).unwrap_or_default(), &cwd) {
        Ok(invocation) => invocation,
        Err(message) => return usage_error(&message),
    };
    let script = match load_script() {
        Ok(script) => script,
        Err(message) => return usage_error(&message),
    };
    play(flavor, &script, &invocation, &cwd)
}

fn log_invocation(log: &str, flavor: Flavor, argv: &[String], cwd: &Path) {
    let env: serde_json::Map<String, Value> = LOGGED_ENV
        .iter()
        .filter_map(|name| {
            let value = std::env::var(name).ok()?;
            let secret = name.contains("KEY") || name.contains("TOKEN");
            Some((
                (*name).to_owned(),
                json!(if secret { "<set>".to_owned() } else { value }),
            ))
        })
        .collect();
    let line = json!({
        "flavor": flavor.name(), "argv": argv, "cwd": cwd.to_string_lossy(), "env": env
    });
    if let Ok(mut file) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(file, "{line}");
    }
}

fn load_script() -> Result<Value, String> {
    let Ok(path) = std::env::var("WEFT_FAKECLI_SCRIPT") else {
        return Ok(json!({"steps": [{"say": "hello"}]}));
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read WEFT_FAKECLI_SCRIPT {path}: {e}"))?;
    let script: Value = serde_json::from_str(&text)
        .map_err(|e| format!("WEFT_FAKECLI_SCRIPT {path} is not JSON: {e}"))?;
    // A bare list of steps is a script too.
    let script = match script {
        Value::Array(_) => json!({ "steps": script }),
        Value::Object(_) => script,
        _ => return Err(format!("WEFT_FAKECLI_SCRIPT {path}: expected an object")),
    };
    if !script.get("steps").is_none_or(Value::is_array) {
        return Err(format!(
            "WEFT_FAKECLI_SCRIPT {path}: `steps` must be a list"
        ));
    }
    Ok(script)
}

fn tokens_of(script: &Value) -> Tokens {
    let usage = script.get("usage").cloned().unwrap_or(Value::Null);
    let field =
        |name: &str, default: u64| usage.get(name).and_then(Value::as_u64).unwrap_or(default);
    Tokens {
        input: field("input", 1000),
        output: field("output", 100),
        cache_read: field("cache_read", 0),
        cache_write: field("cache_write", 0),
        reasoning: field("reasoning", 0),
    }
}

/// Plays the steps; returns the exit code.
fn play(flavor: Flavor, script: &Value, invocation: &args::Invocation, cwd: &Path) -> i32 {
    let session_id = invocation.resume.clone().unwrap_or_else(|| {
        script
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or("0199a213-81c0-7800-8aa1-bbab2a035a53")
            .to_owned()
    });
    let model = invocation
        .model
        .clone()
        .or_else(|| {
            script
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| default_model(flavor).to_owned());
    let tokens = tokens_of(script);
    let cost_usd = script
        .get("cost_usd")
        .and_then(Value::as_f64)
        .unwrap_or(0.0042);
    let stdout = std::io::stdout();
    let mut stream = Stream::new(flavor, stdout.lock(), session_id, model);
    stream.start(&invocation.prompt, &cwd.to_string_lossy());
    let empty = Vec::new();
    let resumed = invocation
        .resume
        .as_ref()
        .and_then(|_| script.get("resume_steps"))
        .and_then(Value::as_array);
    let steps = resumed
        .or_else(|| script.get("steps").and_then(Value::as_array))
        .unwrap_or(&empty);
    for step in steps {
        if let Some(text) = step.get("say").and_then(Value::as_str) {
            stream.say(text);
        } else if step.get("say_prompt").is_some() {
            stream.say(&invocation.prompt);
        } else if let Some(text) = step.get("think").and_then(Value::as_str) {
            stream.think(text);
        } else if let Some(tool) = step.get("tool") {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("Bash");
            let input = tool.get("input").cloned().unwrap_or_else(|| json!({}));
            let output = tool.get("output").and_then(Value::as_str).unwrap_or("");
            let is_error = tool
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            stream.tool(name, &input, output, is_error);
        } else if let Some(write) = step.get("write") {
            let rel = write.get("path").and_then(Value::as_str).unwrap_or("");
            let content = write.get("content").and_then(Value::as_str).unwrap_or("");
            let Some(path) = inside(cwd, rel) else {
                eprintln!("weft-fakecli: write: {rel:?} is not a relative path inside the cwd");
                return 2;
            };
            let existed = path.exists();
            if let Some(parent) = path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            if let Err(e) = std::fs::write(&path, content) {
                eprintln!("weft-fakecli: write {}: {e}", path.display());
                return 2;
            }
            stream.wrote(&path.to_string_lossy(), content, existed);
        } else if let Some(message) = step.get("error").and_then(Value::as_str) {
            stream.error(message);
        } else if let Some(fail) = step.get("fail") {
            let failure = match fail {
                Value::String(message) => Failure {
                    message: message.clone(),
                    api_status: None,
                },
                other => Failure {
                    message: other
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("failed")
                        .to_owned(),
                    api_status: other.get("api_status").and_then(Value::as_u64),
                },
            };
            eprintln!("weft-fakecli: failing: {}", failure.message);
            return stream.fail(&failure, tokens, cost_usd);
        } else if let Some(code) = step.get("crash").and_then(Value::as_i64) {
            eprintln!("weft-fakecli: crashing with exit code {code}");
            return i32::try_from(code).unwrap_or(1);
        } else if step.get("hang").is_some() {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        } else if let Some(ms) = step.get("sleep_ms").and_then(Value::as_u64) {
            std::thread::sleep(Duration::from_millis(ms));
        } else if let Some(text) = step.get("garbage").and_then(Value::as_str) {
            stream.raw(text);
        } else if let Some(record) = step.get("raw") {
            stream.line(record);
        } else if let Some(text) = step.get("stderr").and_then(Value::as_str) {
            eprintln!("{text}");
        } else {
            eprintln!("weft-fakecli: unknown step {step}");
            return 2;
        }
    }
    stream.success(tokens, cost_usd);
    0
}

fn default_model(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::Claude => "claude-sonnet-4-5-20250929",
        Flavor::Codex => "gpt-5-codex",
        Flavor::Gemini => "gemini-2.5-pro",
    }
}

/// `rel` under `cwd`, when it is relative and does not climb out.
fn inside(cwd: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (plain && !rel.as_os_str().is_empty()).then(|| cwd.join(rel))
}
