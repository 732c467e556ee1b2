//! The cost of an external agent stage's plumbing (issue 18, "Measured"),
//! against the scripted ACP agent `weft-acp-agent` (tests/acpagent), so the
//! figures are Weft's and the pipe's, not a model's:
//! - start-up: spawning the agent (behind the start gate), `initialize`
//!   and `session/new`, until a prompt could be sent;
//! - per update: a prompt whose turn streams N `agent_message_chunk`
//!   updates, less an empty turn, divided by N (reading, parsing, turning
//!   each into events with text coalescing).
//!
//! `cargo build --release -p weft-acpagent && cargo bench -p weft --bench
//! acp` (`WEFT_ACP_AGENT=path` to use another build of the agent). Prints a
//! Markdown table; asserts nothing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use weft::agent::acp::{AcpAgent, AcpConfig, Host, PermissionAnswer, PermissionRequest};
use weft::agent::tools::Workspace;
use weft::exec::cancel::Cancel;
use weft::exec::interactive::Program;

#[path = "support/mod.rs"]
mod support;
use support::percentile;

const STARTS: usize = 40;
const UPDATES: usize = 20_000;
const FLOOD_RUNS: usize = 5;

struct Refuse;

impl Host for Refuse {
    fn permission(&self, _request: PermissionRequest) -> BoxFuture<'_, PermissionAnswer> {
        Box::pin(async { PermissionAnswer::Cancelled })
    }
}

fn agent_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("WEFT_ACP_AGENT") {
        return Ok(PathBuf::from(path));
    }
    // target/release/deps/acp-… → target/release/weft-acp-agent
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .ok_or_else(|| anyhow::anyhow!("no target dir"))?;
    let path = dir.join("weft-acp-agent");
    anyhow::ensure!(
        path.is_file(),
        "{} is missing: cargo build --release -p weft-acpagent first",
        path.display()
    );
    Ok(path)
}

fn config(agent: &std::path::Path, script: &std::path::Path, work: &std::path::Path) -> AcpConfig {
    let base_env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k == "PATH" || k == "HOME")
        .collect();
    AcpConfig {
        program: Program {
            program: agent.display().to_string(),
            args: Vec::new(),
            work_dir: work.to_path_buf(),
            base_env: base_env.clone(),
            env: vec![("WEFT_ACP_SCRIPT".into(), script.display().to_string())],
            group_record: None,
        },
        name: "weft-acp-agent".into(),
        stall_timeout: Duration::from_secs(60),
        start_timeout: Duration::from_secs(60),
        cancel_grace: Duration::from_secs(5),
        record_dir: None,
        terminal_env: base_env,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn measure(agent: PathBuf) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    let script = dir.path().join("script.json");
    let cancel = Cancel::new();

    // Start-up.
    std::fs::write(&script, r#"{"prompts": [[]]}"#)?;
    let mut starts = Vec::new();
    for _ in 0..STARTS {
        let workspace = Workspace::new(&work, &[], cancel.child())?;
        let started = Instant::now();
        let session = AcpAgent::start(config(&agent, &script, &work), workspace, &cancel)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        starts.push(started.elapsed());
        session.stop(Duration::from_secs(1)).await;
    }
    starts.sort();

    // Per update: a flooding turn against an empty one, same session.
    std::fs::write(
        &script,
        format!(r#"{{"prompts": [[], [{{"flood": {UPDATES}}}]]}}"#),
    )?;
    let mut per_update = Vec::new();
    let mut events = 0usize;
    for _ in 0..FLOOD_RUNS {
        let workspace = Workspace::new(&work, &[], cancel.child())?;
        let mut session = AcpAgent::start(config(&agent, &script, &work), workspace, &cancel)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut count = |_: weft::agent::AgentEvent| events += 1;
        let empty = Instant::now();
        session
            .prompt("nothing", &Refuse, &cancel, &mut count)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let empty = empty.elapsed();
        let flood = Instant::now();
        let reply = session
            .prompt("flood", &Refuse, &cancel, &mut count)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let flood = flood.elapsed();
        anyhow::ensure!(reply.text.len() == UPDATES, "{} chars", reply.text.len());
        per_update.push(flood.saturating_sub(empty) / u32::try_from(UPDATES)?);
        session.stop(Duration::from_secs(1)).await;
    }
    per_update.sort();

    println!("| measure | p50 | p95 / max |");
    println!("|---|---|---|");
    println!(
        "| start-up: spawn + initialize + session/new ({STARTS} starts) | {:.2} ms | {:.2} ms |",
        ms(percentile(&starts, 0.5)),
        ms(percentile(&starts, 0.95))
    );
    println!(
        "| per update: one agent_message_chunk read, parsed, coalesced ({UPDATES} per turn, {FLOOD_RUNS} turns) | {:.2} µs | {:.2} µs |",
        percentile(&per_update, 0.5).as_secs_f64() * 1e6,
        per_update.last().map_or(0.0, |d| d.as_secs_f64() * 1e6)
    );
    println!("\n{events} events reported over the flooding turns (text is coalesced).");
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let agent = agent_binary()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure(agent))
}
