//! The agent loop's own cost (issue 16, "Measured"), over 200-round sessions
//! against the fake provider server:
//!
//! - **overhead per round**: the time Weft adds between the end of a model
//!   response and the start of the next request, without the tools' own
//!   work, and whether it stays flat as the conversation grows;
//! - **peak RSS** of a session whose tools print 10 MB in all.
//!
//! `cargo bench -p weft --bench agent_loop`. Each session runs in a child
//! process of its own and the fake server in another (this same binary,
//! told its role by `AGENT_LOOP_ROLE`), so that a session's peak RSS is the
//! session's alone: the server keeps every request it is sent.
//!
//! Per round, the overhead is the time from the `ModelCompleted` event of a
//! turn to the `TurnStarted` event of the next, less the durations of the
//! turn's tool calls: loop detection, recording the transcript and the full
//! outputs, cutting outputs, the compaction check, building the next
//! request's message. (Serialising the request body is the LLM client's work
//! and is inside the model call; a compaction's own model call is left out.)
//! Prints Markdown tables; asserts nothing.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use weft::agent::tools::Workspace;
use weft::agent::{AgentEvent, Limits, Permissions, Session, SessionConfig};
use weft::exec::cancel::Cancel;
use weft::llm::{LlmClient, LlmSettings, Request};
use weft_fakellm::{FakeLlm, Reply, ToolCall};

#[path = "support/mod.rs"]
mod support;
use support::{peak_rss_kib, percentile};

const ROUNDS: usize = 200;
const KEY: &str = "sk-bench-agent-loop";
/// What each `shell` call of the `output` session prints: 200 of them make
/// 10 MiB, and each is just over the 50,000 characters the model is shown.
const OUTPUT_PER_ROUND: usize = 10 * 1024 * 1024 / ROUNDS;

const ROLE: &str = "AGENT_LOOP_ROLE";
const SCENARIO: &str = "AGENT_LOOP_SCENARIO";

#[derive(Clone, Copy)]
enum Scenario {
    /// Each round reads two lines of a file at another offset.
    Reads,
    /// Each round runs a `shell` command printing [`OUTPUT_PER_ROUND`]
    /// bytes; the conversation outgrows Sonnet's 200k-token window, so the
    /// session compacts it on the way.
    Output,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Reads => "reads",
            Scenario::Output => "output",
        }
    }

    fn parse(name: &str) -> Option<Scenario> {
        [Scenario::Reads, Scenario::Output]
            .into_iter()
            .find(|s| s.name() == name)
    }

    /// The model's replies. In `Output`, compaction calls take replies from
    /// the same queue: every reply carries text (a compaction's summary)
    /// and a call (a turn's), more of them than rounds, and the session
    /// ends at `max_tool_rounds`.
    fn replies(self) -> Vec<Reply> {
        match self {
            Scenario::Reads => {
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
                replies
            }
            Scenario::Output => (0..ROUNDS * 2)
                .map(|i| Reply::Turn {
                    text: Some(format!("Progress so far: {i} commands run.")),
                    tool_calls: vec![ToolCall::new(
                        "",
                        "shell",
                        json!({"command": format!("head -c {OUTPUT_PER_ROUND} big.txt; echo {i}")}),
                    )],
                    usage: None,
                    finish: None,
                })
                .collect(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    match std::env::var(ROLE).as_deref() {
        Ok("server") => serve(),
        Ok("session") => {
            let name = std::env::var(SCENARIO).unwrap_or_default();
            let scenario =
                Scenario::parse(&name).ok_or_else(|| anyhow::anyhow!("no scenario {name:?}"))?;
            session(scenario)
        }
        _ => {
            for scenario in [Scenario::Reads, Scenario::Output] {
                let status = Command::new(std::env::current_exe()?)
                    .env(ROLE, "session")
                    .env(SCENARIO, scenario.name())
                    .status()?;
                anyhow::ensure!(status.success(), "the {} session failed", scenario.name());
            }
            Ok(())
        }
    }
}

/// The fake server, scripted for the scenario, until stdin closes.
fn serve() -> anyhow::Result<()> {
    let name = std::env::var(SCENARIO).unwrap_or_default();
    let scenario = Scenario::parse(&name).ok_or_else(|| anyhow::anyhow!("no scenario {name:?}"))?;
    let fake = FakeLlm::start();
    fake.script(KEY, scenario.replies());
    println!("listening on {}", fake.url());
    std::io::stdout().flush()?;
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink)? > 0 {}
    Ok(())
}

/// A server process; dropping it closes its stdin, which ends it.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(scenario: Scenario) -> anyhow::Result<Server> {
        let mut child = Command::new(std::env::current_exe()?)
            .env(ROLE, "server")
            .env(SCENARIO, scenario.name())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| anyhow::anyhow!("the server said {line:?}"))?
            .to_string();
        Ok(Server { child, url })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn session(scenario: Scenario) -> anyhow::Result<()> {
    let server = Server::start(scenario)?;
    let work = tempfile::tempdir()?;
    let stage = tempfile::tempdir()?;
    // 400 short lines to read; and a file to print from.
    let lines: String = (0..400)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    std::fs::write(work.path().join("f.txt"), &lines)?;
    std::fs::write(
        work.path().join("big.txt"),
        lines.repeat(OUTPUT_PER_ROUND / lines.len() + 1),
    )?;

    let env = [
        ("ANTHROPIC_API_KEY".to_string(), KEY.to_string()),
        ("ANTHROPIC_BASE_URL".to_string(), server.url.clone()),
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
        limits: Limits {
            max_tool_rounds: u32::try_from(ROUNDS)?,
            max_turns: u32::try_from(ROUNDS * 2)?,
            ..Limits::default()
        },
        permissions: Permissions::Full,
        instructions_from: work.path().to_path_buf(),
        web_search_key: None,
        record_dir: Some(stage.path().to_path_buf()),
    };
    let mut workspace = Workspace::new(work.path(), &[], Cancel::new())?;
    workspace.env = vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())];
    let stamps: Arc<Mutex<Vec<(Instant, AgentEvent)>>> = Arc::default();
    let seen = Arc::clone(&stamps);
    let mut on_event = move |e: AgentEvent| {
        // Text deltas are many and not needed here.
        if matches!(e, AgentEvent::Text { .. }) {
            return;
        }
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
        session.send("work", &mut on_event).await
    });
    let total = started.elapsed();
    match (scenario, reply) {
        (Scenario::Reads, Ok(reply)) => {
            anyhow::ensure!(reply.text == "done", "unexpected reply {:?}", reply.text);
        }
        (Scenario::Output, Err(e)) if e.message.contains("max_tool_rounds") => {}
        (_, Ok(reply)) => anyhow::bail!("unexpected reply {:?}", reply.text),
        (_, Err(e)) => anyhow::bail!("the session failed: {e}"),
    }
    let peak = peak_rss_kib();
    drop(server);

    let stamps = stamps.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
    let rounds = Rounds::measure(&stamps);
    anyhow::ensure!(
        rounds.overheads.len() == ROUNDS,
        "{} rounds measured",
        rounds.overheads.len()
    );
    // No tools/ folder: every output was short enough for its transcript line.
    let output_bytes: u64 = std::fs::read_dir(stage.path().join("tools"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    print_table(scenario, &rounds, total, peak, output_bytes);
    Ok(())
}

/// What the events of a session say about its rounds.
struct Rounds {
    /// Per tool round, in order.
    overheads: Vec<Duration>,
    compactions: usize,
}

impl Rounds {
    fn measure(stamps: &[(Instant, AgentEvent)]) -> Rounds {
        let mut overheads = Vec::new();
        let mut compactions = 0;
        // From the response's end, with the tool and compaction time to
        // take off.
        let mut since: Option<(Instant, Duration)> = None;
        let mut compaction_from: Option<Instant> = None;
        for (at, event) in stamps {
            match event {
                AgentEvent::ModelCompleted { duration, .. } => {
                    match (since.as_mut(), compaction_from.take()) {
                        // A compaction's call: from when the check began
                        // (the last tool's end) to its response.
                        (Some((_, off)), Some(_)) => *off += *duration,
                        _ => since = Some((*at, Duration::ZERO)),
                    }
                }
                AgentEvent::ToolCompleted { duration, .. } => {
                    if let Some((_, off)) = since.as_mut() {
                        *off += *duration;
                    }
                }
                AgentEvent::TurnCompleted { tool_calls, .. } if *tool_calls > 0 => {
                    // The next ModelCompleted before a TurnStarted is a
                    // compaction's.
                    compaction_from = Some(*at);
                }
                AgentEvent::Compacted { .. } => compactions += 1,
                AgentEvent::TurnStarted { .. } => {
                    compaction_from = None;
                    if let Some((from, off)) = since.take() {
                        overheads.push(at.duration_since(from).saturating_sub(off));
                    }
                }
                _ => {}
            }
        }
        Rounds {
            overheads,
            compactions,
        }
    }
}

fn print_table(
    scenario: Scenario,
    rounds: &Rounds,
    total: Duration,
    peak_kib: u64,
    output_bytes: u64,
) {
    let sorted = |part: &[Duration]| {
        let mut v = part.to_vec();
        v.sort();
        v
    };
    let all = sorted(&rounds.overheads);
    let first = sorted(&rounds.overheads[..50]);
    let last = sorted(&rounds.overheads[ROUNDS - 50..]);
    let title = match scenario {
        Scenario::Reads => "200 rounds of `read_file`",
        Scenario::Output => "200 rounds of `shell`, 10 MiB of output",
    };
    println!("\n| agent loop: {title} (Anthropic, streaming) | |");
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
    println!("| compactions | {} |", rounds.compactions);
    println!(
        "| tool output kept in the stage directory | {:.1} MiB |",
        output_bytes as f64 / (1024.0 * 1024.0)
    );
    println!("| whole session | {:.0} ms |", ms(total));
    println!(
        "| peak RSS of the session's process | {:.1} MiB |",
        peak_kib as f64 / 1024.0
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
