//! The agent loop's own cost (issue 16, "Measured"): the time Weft adds
//! between the end of a model response and the start of the next request,
//! without the tools' own work, over a 200-round session against the fake
//! provider server, and whether it stays flat as the conversation grows.
//!
//! `cargo bench -p weft --bench agent_loop`. Per round, the overhead is the
//! time from the `ModelCompleted` event of a turn to the `TurnStarted` event
//! of the next, less the durations of the turn's tool calls: loop detection,
//! recording the transcript and the full outputs, cutting outputs, building
//! the next request's message. (Serialising the request body is the LLM
//! client's work and is inside the model call.) The fake server runs in this
//! process, so the peak RSS printed includes its recording of every request.
//! Prints a Markdown table; asserts nothing.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use weft::agent::tools::Workspace;
use weft::agent::{AgentEvent, Limits, Permissions, Session, SessionConfig};
use weft::exec::cancel::Cancel;
use weft::llm::{LlmClient, LlmSettings, Request};
use weft_fakellm::{FakeLlm, Reply, ToolCall};

const ROUNDS: usize = 200;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|kb| kb.parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let fake = FakeLlm::start();
    let key = "sk-bench-agent-loop";
    let work = tempfile::tempdir()?;
    let stage = tempfile::tempdir()?;
    // 400 lines; each round reads 2 of them at another offset (no loop).
    let text: String = (0..400)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(work.path().join("f.txt"), text)?;
    let mut replies: Vec<Reply> = (0..ROUNDS)
        .map(|i| {
            Reply::ToolCalls(vec![ToolCall::new(
                "",
                "read_file",
                json!({"file_path": "f.txt", "offset": i + 1, "limit": 2}),
            )])
        })
        .collect();
    replies.push(Reply::Text("done".into()));
    fake.script(key, replies);

    let env = [
        ("ANTHROPIC_API_KEY".to_string(), key.to_string()),
        ("ANTHROPIC_BASE_URL".to_string(), fake.url()),
    ]
    .into_iter()
    .collect();
    let client = LlmClient::new(&env, &LlmSettings::parse("")?)?;
    let config = SessionConfig {
        request: Request {
            model: Some("claude-sonnet-4-6".into()),
            provider: Some("anthropic".into()),
            stream: true,
            ..Request::default()
        },
        limits: Limits::default(),
        permissions: Permissions::Full,
        instructions_from: work.path().to_path_buf(),
        web_search_key: None,
        record_dir: Some(stage.path().to_path_buf()),
    };
    let workspace = Workspace::new(work.path(), &[], Cancel::new())?;
    let stamps: Arc<Mutex<Vec<(Instant, AgentEvent)>>> = Arc::default();
    let seen = Arc::clone(&stamps);
    let mut on_event = move |e: AgentEvent| {
        if let Ok(mut s) = seen.lock() {
            s.push((Instant::now(), e));
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let started = Instant::now();
    let reply = rt.block_on(async {
        let mut session = Session::new(config, &client, workspace);
        session.send("read the file", &mut on_event).await
    });
    let total = started.elapsed();
    let reply = reply.map_err(|e| anyhow::anyhow!("{e}"))?;
    anyhow::ensure!(reply.text == "done", "unexpected reply {:?}", reply.text);

    let stamps = stamps.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let mut overheads = Vec::new();
    let mut since: Option<(Instant, Duration)> = None;
    for (at, event) in stamps.iter() {
        match event {
            AgentEvent::ModelCompleted { .. } => since = Some((*at, Duration::ZERO)),
            AgentEvent::ToolCompleted { duration, .. } => {
                if let Some((_, tools)) = since.as_mut() {
                    *tools += *duration;
                }
            }
            AgentEvent::TurnStarted { .. } => {
                if let Some((from, tools)) = since.take() {
                    overheads.push(at.duration_since(from).saturating_sub(tools));
                }
            }
            _ => {}
        }
    }
    anyhow::ensure!(
        overheads.len() == ROUNDS,
        "{} rounds measured",
        overheads.len()
    );
    let first: Vec<Duration> = {
        let mut v = overheads[..50].to_vec();
        v.sort();
        v
    };
    let last: Vec<Duration> = {
        let mut v = overheads[ROUNDS - 50..].to_vec();
        v.sort();
        v
    };
    let mut all = overheads.clone();
    all.sort();
    println!("| agent loop, {ROUNDS} tool rounds (Anthropic, streaming) | |");
    println!("|---|---|");
    println!(
        "| overhead per round p50 | {:.3} ms |",
        ms(percentile(&all, 0.5))
    );
    println!(
        "| overhead per round p99 | {:.3} ms |",
        ms(percentile(&all, 0.99))
    );
    println!(
        "| p50, rounds 1-50 | {:.3} ms |",
        ms(percentile(&first, 0.5))
    );
    println!(
        "| p50, rounds 151-200 | {:.3} ms |",
        ms(percentile(&last, 0.5))
    );
    println!("| whole session | {:.0} ms |", ms(total));
    println!(
        "| peak RSS (with the fake server) | {:.1} MiB |",
        peak_rss_kib() as f64 / 1024.0
    );
    let p50 = percentile(&all, 0.5);
    println!(
        "\ntarget: p50 < 1 ms, flat: {}",
        if p50 < Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}
