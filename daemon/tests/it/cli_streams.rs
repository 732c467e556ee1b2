//! `weft::agent::cli`: the headless invocations of claude, codex and gemini,
//! and their JSON-lines streams turned into `CliEvent`s and a `CliOutcome`,
//! from sample streams shaped like the real programs' output.

#![allow(clippy::expect_used)]

use serde_json::json;
use weft::agent::cli::{CliEvent, CliOutcome, Flavor, MAX_LINE_BYTES};
use weft::llm::Usage;

fn parse(flavor: Flavor, stream: &str) -> (Vec<CliEvent>, CliOutcome) {
    let mut parser = flavor.parser();
    let events = stream.lines().flat_map(|line| parser.line(line)).collect();
    (events, parser.finish())
}

fn texts(events: &[CliEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            CliEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn errors(events: &[CliEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            CliEvent::Error(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn garbage(events: &[CliEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, CliEvent::Garbage(_)))
        .count()
}

// ---- invocations ----

#[test]
fn claude_command_streams_json_verbosely_without_asking_permission() {
    let (program, args) = Flavor::Claude.command("fix it", Some("sonnet"));
    assert_eq!(program, "claude");
    assert_eq!(
        args,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
            "--model",
            "sonnet",
            "fix it"
        ]
    );
    let (_, args) = Flavor::Claude.command("-x", None);
    assert_eq!(args[args.len() - 2..], ["--", "-x"]);
}

#[test]
fn codex_command_is_exec_json_with_the_prompt_last() {
    let (program, args) = Flavor::Codex.command("fix it", Some("gpt-5-codex"));
    assert_eq!(program, "codex");
    assert_eq!(
        args,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "-m",
            "gpt-5-codex",
            "--",
            "fix it"
        ]
    );
    let (_, args) = Flavor::Codex.command("fix it", None);
    assert!(!args.contains(&"-m".to_owned()));
}

#[test]
fn gemini_command_is_prompt_stream_json_and_yolo_in_a_trusted_folder() {
    let (program, args) = Flavor::Gemini.command("fix it", Some("gemini-2.5-pro"));
    assert_eq!(program, "gemini");
    assert_eq!(
        args,
        [
            "-p",
            "fix it",
            "-o",
            "stream-json",
            "--yolo",
            "-m",
            "gemini-2.5-pro"
        ]
    );
    let (_, args) = Flavor::Gemini.command("-x", None);
    assert_eq!(args[0], "--prompt=-x");
    assert!(
        Flavor::Gemini
            .env()
            .contains(&("GEMINI_CLI_TRUST_WORKSPACE", "true"))
    );
    assert_eq!(Flavor::from_name("gemini"), Some(Flavor::Gemini));
    assert_eq!(Flavor::from_name("opencode"), None);
}

#[test]
fn a_further_turn_resumes_the_session_by_its_id_with_the_same_flags() {
    let (_, args) = Flavor::Claude.resume_command("s-1", "repair", Some("sonnet"));
    assert_eq!(
        args,
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
            "--resume",
            "s-1",
            "--model",
            "sonnet",
            "repair"
        ]
    );
    // `exec`'s flags, then the subcommand, then the prompt.
    let (_, args) = Flavor::Codex.resume_command("t-1", "repair", None);
    assert_eq!(
        args,
        [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--sandbox",
            "workspace-write",
            "resume",
            "t-1",
            "--",
            "repair"
        ]
    );
    let (_, args) = Flavor::Gemini.resume_command("g-1", "repair", None);
    assert_eq!(
        args,
        [
            "-p",
            "repair",
            "-o",
            "stream-json",
            "--yolo",
            "--resume",
            "g-1"
        ]
    );
    for flavor in [Flavor::Claude, Flavor::Codex, Flavor::Gemini] {
        assert!(flavor.install_hint().contains("cli.command"), "{flavor:?}");
    }
}

#[test]
fn the_file_tools_of_claude_and_gemini_name_the_file_they_write() {
    let args = json!({"file_path": "/w/a.rs", "notebook_path": "/w/n.ipynb"});
    assert_eq!(
        Flavor::Claude.written_path("Edit", &args).as_deref(),
        Some("/w/a.rs")
    );
    assert_eq!(
        Flavor::Claude
            .written_path("NotebookEdit", &args)
            .as_deref(),
        Some("/w/n.ipynb")
    );
    assert_eq!(
        Flavor::Gemini.written_path("replace", &args).as_deref(),
        Some("/w/a.rs")
    );
    // Reading is not writing; codex reports its edits as file changes.
    assert_eq!(Flavor::Claude.written_path("Read", &args), None);
    assert_eq!(Flavor::Gemini.written_path("Write", &args), None);
    assert_eq!(Flavor::Codex.written_path("write_file", &args), None);
}

// ---- claude ----

const CLAUDE_SESSION: &str = r#"{"type":"system","subtype":"init","cwd":"/w/repo","session_id":"5e1c-42","tools":["Task","Bash","Read","Edit","Write"],"mcp_servers":[],"model":"claude-sonnet-4-5-20250929","permissionMode":"bypassPermissions","slash_commands":["compact"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.240","output_style":"default","agents":[],"skills":[],"plugins":[],"uuid":"a1"}
{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"thinking","thinking":"List first.","signature":"sig"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":4100,"cache_read_input_tokens":12000,"output_tokens":2}},"parent_tool_use_id":null,"session_id":"5e1c-42","uuid":"b1"}
{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Let me list the files."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":4100,"cache_read_input_tokens":12000,"output_tokens":8}},"parent_tool_use_id":null,"session_id":"5e1c-42","uuid":"b2"}
{"type":"assistant","message":{"id":"msg_01A","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_01X","name":"Bash","input":{"command":"ls\necho done","description":"List files"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":4100,"cache_read_input_tokens":12000,"output_tokens":61}},"parent_tool_use_id":null,"session_id":"5e1c-42","uuid":"c3"}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1767225600,"rateLimitType":"five_hour"},"session_id":"5e1c-42","uuid":"r1"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01X","type":"tool_result","content":"Cargo.toml\nsrc","is_error":false}]},"parent_tool_use_id":null,"session_id":"5e1c-42","uuid":"d4","tool_use_result":{"stdout":"Cargo.toml\nsrc","stderr":"","interrupted":false,"isImage":false}}
{"type":"system","subtype":"task_progress","session_id":"5e1c-42","uuid":"t1"}
{"type":"assistant","message":{"id":"msg_01B","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"The repo has Cargo.toml and src/."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":90,"cache_read_input_tokens":16100,"output_tokens":14}},"parent_tool_use_id":null,"session_id":"5e1c-42","uuid":"e5"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":6120,"duration_api_ms":5480,"num_turns":2,"result":"The repo has Cargo.toml and src/.","stop_reason":"end_turn","session_id":"5e1c-42","total_cost_usd":0.0213,"usage":{"input_tokens":8,"cache_creation_input_tokens":4190,"cache_read_input_tokens":28100,"output_tokens":75},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":8,"outputTokens":75,"cacheReadInputTokens":28100,"cacheCreationInputTokens":4190,"webSearchRequests":0,"costUSD":0.0213,"contextWindow":200000,"maxOutputTokens":64000}},"permission_denials":[],"terminal_reason":"completed","uuid":"f6"}
"#;

#[test]
fn claude_session_gives_text_tools_reply_usage_and_cost() {
    let (events, outcome) = parse(Flavor::Claude, CLAUDE_SESSION);
    assert_eq!(
        events[0],
        CliEvent::Started {
            session_id: "5e1c-42".into(),
            model: Some("claude-sonnet-4-5-20250929".into())
        }
    );
    assert!(events.contains(&CliEvent::Thinking("List first.".into())));
    assert_eq!(
        texts(&events),
        [
            "Let me list the files.",
            "The repo has Cargo.toml and src/."
        ]
    );
    assert!(events.contains(&CliEvent::ToolStarted {
        call_id: "toolu_01X".into(),
        tool: "Bash".into(),
        summary: "ls".into(),
        arguments: json!({"command": "ls\necho done", "description": "List files"}),
    }));
    assert!(events.contains(&CliEvent::ToolCompleted {
        call_id: "toolu_01X".into(),
        is_error: false,
        output: "Cargo.toml\nsrc".into(),
    }));
    let usage = Usage {
        input: 8 + 4190 + 28100,
        output: 75,
        reasoning: 0,
        cache_read: 28100,
        cache_write: 4190,
    };
    assert_eq!(
        events.last(),
        Some(&CliEvent::Usage {
            usage,
            cost_usd: Some(0.0213)
        })
    );
    assert_eq!(
        outcome,
        CliOutcome {
            text: "The repo has Cargo.toml and src/.".into(),
            is_error: false,
            error: None,
            completed: true,
            usage,
            cost_usd: Some(0.0213),
            session_id: Some("5e1c-42".into()),
            model: Some("claude-sonnet-4-5-20250929".into()),
            turns: Some(2),
            garbage_lines: 0,
        }
    );
}

#[test]
fn claude_usage_mid_stream_is_a_running_total_over_messages() {
    let (events, _) = parse(Flavor::Claude, CLAUDE_SESSION);
    let totals: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            CliEvent::Usage { usage, .. } => Some(usage.output),
            _ => None,
        })
        .collect();
    // msg_01A grows 2 → 8 → 61 (replaced, not added), then msg_01B adds 14,
    // then the result's own total.
    assert_eq!(totals, [2, 8, 61, 75, 75]);
}

/// An API error (here a 429) reported the buggy way: `subtype: success`,
/// `is_error: true`, exit code 0.
const CLAUDE_API_ERROR: &str = r#"{"type":"system","subtype":"init","session_id":"s-err","model":"claude-sonnet-4-5-20250929","tools":[],"uuid":"a"}
{"type":"assistant","message":{"id":"msg_e","type":"message","role":"assistant","model":"<synthetic>","content":[{"type":"text","text":"API Error: 429 rate_limit_error"}],"stop_reason":"stop_sequence","stop_sequence":"","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}},"parent_tool_use_id":null,"session_id":"s-err","uuid":"b","error":"rate_limit"}
{"type":"result","subtype":"success","is_error":true,"api_error_status":429,"duration_ms":310,"duration_api_ms":0,"num_turns":1,"result":"API Error: 429 rate_limit_error","stop_reason":"stop_sequence","session_id":"s-err","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"terminal_reason":"api_error","uuid":"c"}
"#;

#[test]
fn claude_is_error_fails_the_run_even_with_subtype_success() {
    let (events, outcome) = parse(Flavor::Claude, CLAUDE_API_ERROR);
    assert_eq!(
        errors(&events),
        ["rate_limit: API Error: 429 rate_limit_error"]
    );
    assert!(texts(&events).is_empty(), "the error is not reply text");
    assert!(outcome.is_error);
    assert!(outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("API Error: 429 rate_limit_error (api_error, HTTP 429)")
    );
    assert_eq!(outcome.text, "");
}

#[test]
fn claude_error_subtype_reports_its_errors() {
    let stream = r#"{"type":"system","subtype":"init","session_id":"s","model":"m"}
{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":10,"session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":5},"errors":["Reached maximum number of turns (10)"]}
"#;
    let (_, outcome) = parse(Flavor::Claude, stream);
    assert!(outcome.is_error);
    assert_eq!(
        outcome.error.as_deref(),
        Some("Reached maximum number of turns (10) (error_max_turns)")
    );
    assert_eq!(outcome.cost_usd, Some(0.5));
    assert_eq!(outcome.turns, Some(10));
}

#[test]
fn claude_subagent_text_is_not_the_reply_but_its_tools_are_shown() {
    let stream = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"toolu_T","name":"Task","input":{"description":"explore","prompt":"look around"}}]},"parent_tool_use_id":null,"session_id":"s"}
{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"subagent musing"},{"type":"tool_use","id":"toolu_S","name":"Grep","input":{"pattern":"fn main"}}]},"parent_tool_use_id":"toolu_T","session_id":"s"}
"#;
    let (events, outcome) = parse(Flavor::Claude, stream);
    assert!(texts(&events).is_empty());
    let tools: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            CliEvent::ToolStarted { tool, summary, .. } => {
                Some(summary.as_str()).filter(|_| !tool.is_empty())
            }
            _ => None,
        })
        .collect();
    assert_eq!(tools, ["explore", "fn main"]);
    assert!(!outcome.completed);
}

#[test]
fn claude_stream_without_a_result_is_an_error_with_what_it_saw() {
    let truncated: String = CLAUDE_SESSION
        .lines()
        .filter(|l| !l.contains(r#""type":"result""#))
        .map(|l| format!("{l}\n"))
        .collect();
    let (_, outcome) = parse(Flavor::Claude, &truncated);
    assert!(outcome.is_error);
    assert!(!outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("claude ended without a result")
    );
    // The last message's text and the messages' own usage, as a best effort.
    assert_eq!(outcome.text, "The repo has Cargo.toml and src/.");
    assert_eq!(outcome.usage.output, 61 + 14);
    assert_eq!(outcome.cost_usd, None);
    assert_eq!(outcome.session_id.as_deref(), Some("5e1c-42"));
}

// ---- codex ----

const CODEX_SESSION: &str = r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Listing repository files**"}}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"Cargo.toml\nsrc\n","exit_code":0,"status":"completed"}}
{"type":"item.started","item":{"id":"item_2","type":"todo_list","items":[{"text":"update readme","completed":false}]}}
{"type":"item.updated","item":{"id":"item_2","type":"todo_list","items":[{"text":"update readme","completed":true}]}}
{"type":"item.started","item":{"id":"item_3","type":"file_change","changes":[{"path":"/w/repo/README.md","kind":"update"}],"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_3","type":"file_change","changes":[{"path":"/w/repo/README.md","kind":"update","diff":"@@ -1 +1 @@"},{"path":"/w/repo/NEW.md","kind":"add"}],"status":"completed"}}
{"type":"item.completed","item":{"id":"item_4","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"query":"weft"},"result":{"content":[{"type":"text","text":"3 hits"}],"structured_content":null},"error":null,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_5","type":"error","message":"model rerouted to gpt-5"}}
{"type":"item.completed","item":{"id":"item_6","type":"agent_message","text":"Listed files and updated README.md."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
"#;

#[test]
fn codex_session_gives_reasoning_commands_file_changes_and_usage() {
    let (events, outcome) = parse(Flavor::Codex, CODEX_SESSION);
    assert_eq!(
        events[0],
        CliEvent::Started {
            session_id: "0199a213-81c0-7800-8aa1-bbab2a035a53".into(),
            model: None
        }
    );
    assert_eq!(
        events[1],
        CliEvent::Thinking("**Listing repository files**".into())
    );
    assert_eq!(
        events[2],
        CliEvent::ToolStarted {
            call_id: "item_1".into(),
            tool: "command_execution".into(),
            summary: "bash -lc ls".into(),
            arguments: json!({"command": "bash -lc ls"}),
        }
    );
    assert_eq!(
        events[3],
        CliEvent::ToolCompleted {
            call_id: "item_1".into(),
            is_error: false,
            output: "Cargo.toml\nsrc\n".into(),
        }
    );
    assert!(
        matches!(&events[4], CliEvent::ToolStarted { call_id, tool, .. }
        if call_id == "item_3" && tool == "file_change")
    );
    assert_eq!(
        events[5],
        CliEvent::FilesChanged(vec!["/w/repo/README.md".into(), "/w/repo/NEW.md".into()])
    );
    assert!(
        matches!(&events[6], CliEvent::ToolCompleted { call_id, is_error: false, .. }
        if call_id == "item_3")
    );
    // An MCP call seen only completed still gets its start.
    assert!(
        matches!(&events[7], CliEvent::ToolStarted { tool, summary, .. }
        if tool == "docs.search" && summary == "weft")
    );
    assert_eq!(
        events[8],
        CliEvent::ToolCompleted {
            call_id: "item_4".into(),
            is_error: false,
            output: "3 hits".into()
        }
    );
    assert_eq!(errors(&events), ["model rerouted to gpt-5"]);
    assert_eq!(texts(&events), ["Listed files and updated README.md."]);
    let usage = Usage {
        input: 24763,
        output: 122,
        reasoning: 0,
        cache_read: 24448,
        cache_write: 0,
    };
    assert_eq!(
        events.last(),
        Some(&CliEvent::Usage {
            usage,
            cost_usd: None
        })
    );
    assert_eq!(outcome.text, "Listed files and updated README.md.");
    assert!(!outcome.is_error);
    assert!(outcome.completed);
    assert_eq!(outcome.usage, usage);
    assert_eq!(outcome.cost_usd, None);
    assert_eq!(outcome.turns, Some(1));
    assert_eq!(
        outcome.session_id.as_deref(),
        Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
    );
}

#[test]
fn codex_failed_command_is_a_tool_error() {
    let stream = r#"{"type":"item.completed","item":{"id":"item_9","type":"command_execution","command":"bash -lc false","aggregated_output":"","exit_code":1,"status":"failed"}}"#;
    let (events, _) = parse(Flavor::Codex, stream);
    assert!(matches!(
        &events[1],
        CliEvent::ToolCompleted { is_error: true, .. }
    ));
}

#[test]
fn codex_turn_failed_fails_the_run_and_a_retry_error_does_not() {
    let stream = r#"{"type":"thread.started","thread_id":"t-1"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"partial"}}
{"type":"error","message":"stream disconnected before completion"}
{"type":"turn.failed","error":{"message":"stream disconnected before completion: quota exceeded"}}
"#;
    let (events, outcome) = parse(Flavor::Codex, stream);
    assert_eq!(
        errors(&events),
        [
            "Reconnecting... 1/5",
            "stream disconnected before completion"
        ]
    );
    assert!(outcome.is_error);
    assert!(outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("stream disconnected before completion: quota exceeded")
    );
    assert_eq!(outcome.text, "partial");

    let retried = r#"{"type":"thread.started","thread_id":"t-2"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}
"#;
    let (_, outcome) = parse(Flavor::Codex, retried);
    assert!(!outcome.is_error);
    assert_eq!(outcome.text, "ok");
}

#[test]
fn codex_stream_without_a_turn_end_names_the_last_error() {
    let stream = r#"{"type":"thread.started","thread_id":"t-3"}
{"type":"turn.started"}
{"type":"error","message":"unexpected status 401 Unauthorized"}
"#;
    let (_, outcome) = parse(Flavor::Codex, stream);
    assert!(outcome.is_error);
    assert!(!outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("codex ended without a result (last error: unexpected status 401 Unauthorized)")
    );
}

// ---- gemini ----

const GEMINI_SESSION: &str = r#"{"type":"init","timestamp":"2026-08-22T10:00:00.000Z","session_id":"c0ffee12-34","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"2026-08-22T10:00:00.010Z","role":"user","content":"List the files and summarise"}
{"type":"message","timestamp":"2026-08-22T10:00:01.200Z","role":"assistant","content":"I'll list ","delta":true}
{"type":"message","timestamp":"2026-08-22T10:00:01.210Z","role":"assistant","content":"the files.","delta":true}
{"type":"tool_use","timestamp":"2026-08-22T10:00:01.300Z","tool_name":"run_shell_command","tool_id":"run_shell_command-1724320801300-ab12","parameters":{"command":"ls","description":"List files"}}
{"type":"tool_result","timestamp":"2026-08-22T10:00:01.340Z","tool_id":"run_shell_command-1724320801300-ab12","status":"success","output":"Cargo.toml\nsrc"}
{"type":"tool_use","timestamp":"2026-08-22T10:00:01.400Z","tool_name":"replace","tool_id":"replace-1","parameters":{"file_path":"/w/repo/README.md","old_string":"a","new_string":"b"}}
{"type":"tool_result","timestamp":"2026-08-22T10:00:01.450Z","tool_id":"replace-1","status":"error","error":{"type":"edit_no_occurrence_found","message":"0 occurrences found"}}
{"type":"error","timestamp":"2026-08-22T10:00:02.000Z","severity":"warning","message":"Loop detected, stopping execution"}
{"type":"message","timestamp":"2026-08-22T10:00:02.900Z","role":"assistant","content":"The repo has Cargo.toml and src/.","delta":true}
{"type":"result","timestamp":"2026-08-22T10:00:02.950Z","status":"success","stats":{"total_tokens":10650,"input_tokens":10200,"output_tokens":64,"cached":6300,"input":3900,"duration_ms":2950,"tool_calls":2,"models":{"gemini-2.5-pro":{"total_tokens":10650,"input_tokens":10200,"output_tokens":64,"cached":6300,"input":3900}}}}
"#;

#[test]
fn gemini_session_gives_deltas_tools_warnings_and_the_last_turns_reply() {
    let (events, outcome) = parse(Flavor::Gemini, GEMINI_SESSION);
    assert_eq!(
        events[0],
        CliEvent::Started {
            session_id: "c0ffee12-34".into(),
            model: Some("gemini-2.5-pro".into())
        }
    );
    assert_eq!(
        texts(&events),
        [
            "I'll list ",
            "the files.",
            "The repo has Cargo.toml and src/."
        ],
        "the echoed prompt is not assistant text"
    );
    assert!(events.contains(&CliEvent::ToolStarted {
        call_id: "run_shell_command-1724320801300-ab12".into(),
        tool: "run_shell_command".into(),
        summary: "ls".into(),
        arguments: json!({"command": "ls", "description": "List files"}),
    }));
    assert!(events.contains(&CliEvent::ToolCompleted {
        call_id: "run_shell_command-1724320801300-ab12".into(),
        is_error: false,
        output: "Cargo.toml\nsrc".into(),
    }));
    assert!(events.contains(&CliEvent::ToolCompleted {
        call_id: "replace-1".into(),
        is_error: true,
        output: "0 occurrences found".into(),
    }));
    assert_eq!(
        errors(&events),
        ["warning: Loop detected, stopping execution"]
    );
    let usage = Usage {
        input: 10200,
        output: 64,
        reasoning: 0,
        cache_read: 6300,
        cache_write: 0,
    };
    assert_eq!(
        outcome,
        CliOutcome {
            text: "The repo has Cargo.toml and src/.".into(),
            is_error: false,
            error: None,
            completed: true,
            usage,
            cost_usd: None,
            session_id: Some("c0ffee12-34".into()),
            model: Some("gemini-2.5-pro".into()),
            turns: None,
            garbage_lines: 0,
        }
    );
}

#[test]
fn gemini_reply_without_tool_calls_is_all_its_text() {
    let stream = r#"{"type":"init","session_id":"g","model":"m"}
{"type":"message","role":"assistant","content":"Hello, ","delta":true}
{"type":"message","role":"assistant","content":"world.","delta":true}
{"type":"result","status":"success","stats":{"input_tokens":5,"output_tokens":2,"cached":0}}
"#;
    let (_, outcome) = parse(Flavor::Gemini, stream);
    assert_eq!(outcome.text, "Hello, world.");
}

#[test]
fn gemini_error_result_fails_the_run_with_its_message() {
    let stream = r#"{"type":"init","timestamp":"t","session_id":"g-err","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"t","role":"user","content":"go"}
{"type":"error","timestamp":"t","severity":"error","message":"Model stream ended with an invalid chunk"}
{"type":"result","timestamp":"t","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}}
"#;
    let (events, outcome) = parse(Flavor::Gemini, stream);
    assert_eq!(
        errors(&events),
        ["error: Model stream ended with an invalid chunk"]
    );
    assert!(outcome.is_error);
    assert!(outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("Reached max session turns (FatalTurnLimitedError)")
    );
}

#[test]
fn gemini_stream_cut_short_is_an_error() {
    let truncated: String = GEMINI_SESSION
        .lines()
        .take(6)
        .map(|l| format!("{l}\n"))
        .collect();
    let (_, outcome) = parse(Flavor::Gemini, &truncated);
    assert!(outcome.is_error);
    assert!(!outcome.completed);
    assert_eq!(
        outcome.error.as_deref(),
        Some("gemini ended without a result")
    );
}

// ---- what none of them should print ----

#[test]
fn garbage_lines_are_reported_and_unknown_records_skipped() {
    for (flavor, stream) in [
        (Flavor::Claude, CLAUDE_SESSION),
        (Flavor::Codex, CODEX_SESSION),
        (Flavor::Gemini, GEMINI_SESSION),
    ] {
        let mut noisy = String::from("Loaded cached credentials.\n\n   \n");
        noisy.push_str(r#"{"type":"some_future_record","payload":{"x":[1,2,3]}}"#);
        noisy.push('\n');
        noisy.push_str("[1, 2, 3]\n\"a json string\"\n{\"no_type\": true}\n");
        noisy.push_str("{\"type\": \"assistant\", \"message\": 7}\n");
        noisy.push_str("{\"type\": \"item.completed\", \"item\": null}\n");
        noisy.push_str("{\"type\": \"tool_use\", \"parameters\": \"odd\"}\n");
        noisy.push_str("{truncated json\n");
        noisy.push_str(stream);
        let (events, outcome) = parse(flavor, &noisy);
        let (clean_events, clean) = parse(flavor, stream);
        assert_eq!(
            garbage(&events),
            4,
            "{flavor:?}: the text, the array, the string and the broken line"
        );
        assert!(
            events.contains(&CliEvent::Garbage("Loaded cached credentials.".into())),
            "{flavor:?}"
        );
        assert_eq!(outcome.garbage_lines, 4);
        assert_eq!(outcome.text, clean.text, "{flavor:?}");
        assert_eq!(outcome.is_error, clean.is_error, "{flavor:?}");
        assert_eq!(outcome.usage, clean.usage, "{flavor:?}");
        // The odd but well-formed records only add (empty) tool events.
        assert!(events.len() >= clean_events.len() + 4, "{flavor:?}");
    }
}

#[test]
fn hostile_lines_never_panic_and_are_bounded() {
    let deep = "[".repeat(100_000);
    let huge_text = "x".repeat(MAX_LINE_BYTES + 1);
    let big_output = format!(
        r#"{{"type":"tool_result","tool_id":"t","status":"success","output":"{}"}}"#,
        "y".repeat(1024 * 1024)
    );
    let nan_cost = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":-1,"num_turns":99999999999,"usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":18446744073709551615,"output_tokens":-5}}"#;
    for flavor in [Flavor::Claude, Flavor::Codex, Flavor::Gemini] {
        let mut parser = flavor.parser();
        let deep_events = parser.line(&deep);
        assert!(matches!(&deep_events[..], [CliEvent::Garbage(g)] if g.len() < 4096));
        let huge = parser.line(&huge_text);
        assert!(matches!(&huge[..], [CliEvent::Garbage(g)] if g.contains("not parsed")));
        for event in parser.line(&big_output) {
            if let CliEvent::ToolCompleted { output, .. } = event {
                assert!(output.len() < 300 * 1024);
            }
        }
        parser.line("\u{0}\u{1}\u{fffd}é");
        parser.line(nan_cost);
        let outcome = parser.finish();
        if flavor == Flavor::Claude {
            assert_eq!(outcome.cost_usd, None, "a negative cost is not a cost");
            assert_eq!(outcome.turns, Some(u32::MAX));
            assert_eq!(outcome.usage.input, u64::MAX, "saturates");
            assert_eq!(outcome.usage.output, 0);
        }
    }
}
