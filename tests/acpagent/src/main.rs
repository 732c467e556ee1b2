//! `weft-acp-agent`: a scripted Agent Client Protocol (v1) agent for testing
//! ACP clients. It speaks newline-delimited JSON-RPC 2.0 on stdin/stdout and
//! logs to stderr only.
//!
//! The script is the JSON file named by `WEFT_ACP_SCRIPT`; without it the agent
//! says "hello" and ends the turn. If `WEFT_ACP_LOG` is set, every line the
//! client sends is appended to that file as it arrives (flushed each time).
//!
//! ```json
//! {
//!   "start": null,
//!   "prompts": [
//!     [{"say": "hello"}, {"write": {"path": "a.txt", "content": "A"}}],
//!     [{"sleep_ms": 5000}]
//!   ]
//! }
//! ```
//!
//! `start` (optional) injects a fault: `"exit:N"` (exit with code N before
//! reading anything), `"garbage"` (a non-JSON line on stdout, then normal),
//! `"silent"` (read everything, answer nothing), `"version:N"` (answer
//! `initialize` with protocol version N).
//!
//! `prompts` holds one list of steps per `session/prompt`, in arrival order
//! across the whole process; past the end a prompt says "nothing more
//! scripted". Each step is an object with one key:
//!
//! | step | effect |
//! |---|---|
//! | `{"say": "t"}` | `agent_message_chunk` |
//! | `{"think": "t"}` | `agent_thought_chunk` |
//! | `{"plan": ["a", "b"]}` | `plan`, every entry pending / medium |
//! | `{"write": {"path", "content"}}` | `tool_call` (edit) + `fs/write_text_file` at the absolute path, then `tool_call_update` completed or failed |
//! | `{"read": {"path"}}` | `tool_call` (read) + `fs/read_text_file`, then says `read P: CONTENT` or `read P failed: ERROR` |
//! | `{"disk_write": {"path", "content"}}` | writes the file on disk itself, no message |
//! | `{"permission": {"title", "kind"?, "path"?, "input"?}}` | `tool_call` + `session/request_permission` (allow / allow_always / reject), then says `permission: OPTION` or `permission: cancelled` |
//! | `{"terminal": {"command", "args"?, "output_byte_limit"?}}` | `terminal/create`, `wait_for_exit`, `output`, `release`; says `terminal exit CODE: OUTPUT` |
//! | `{"terminal_kill": {"command", "args"?, "after_ms"?}}` | `terminal/create`, waits, `kill`, `wait_for_exit`, `release`; says `killed: EXIT_STATUS_JSON` |
//! | `{"sleep_ms": N}` | waits N ms; a `session/cancel` ends the turn as `cancelled` |
//! | `{"ignore_cancel": true}` | from now on `session/cancel` is ignored |
//! | `{"crash": N}` | exits with code N at once |
//! | `{"garbage": "t"}` | writes the non-JSON line `t` on stdout |
//! | `{"flood": N}` | N `agent_message_chunk`s of "x" |
//! | `{"hang": true}` | does nothing ever again (until killed) |
//! | `{"usage": {"used", "size", "cost"?}}` | `usage_update` (cost in USD) |
//! | `{"stop": "reason"}` | ends the turn with that stop reason |
//! | `{"unknown_update": true}` | a `session/update` of kind `some_future_kind` |
//! | `{"ext_request": true}` | request `_weft/test`; says `ext: CODE` or `ext: RESULT` |
//!
//! The crate README has the full description.

mod agent;
mod script;

use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::sync::mpsc;

use script::{Script, StartFault};

fn main() {
    let script = match std::env::var("WEFT_ACP_SCRIPT") {
        Ok(path) => Script::load(&path),
        Err(_) => Ok(Script::greeting()),
    };
    let script = script.unwrap_or_else(|error| {
        agent::log(&error);
        std::process::exit(2);
    });
    let fault = script.start_fault().unwrap_or_else(|error| {
        agent::log(&error);
        std::process::exit(2);
    });
    let mut protocol_version = 1;
    match fault {
        Some(StartFault::Exit(code)) => {
            agent::log(&format!("exiting at start with code {code} as scripted"));
            std::process::exit(code);
        }
        Some(StartFault::Garbage) => agent::write_line("this is not JSON-RPC, as scripted"),
        Some(StartFault::Version(version)) => protocol_version = version,
        Some(StartFault::Silent) | None => {}
    }
    let inbox = read_stdin_in_background();
    if fault == Some(StartFault::Silent) {
        while inbox.recv().is_ok() {}
        std::process::exit(0);
    }
    agent::Agent::new(script.prompts, protocol_version, inbox)
        .offering_models(script.models)
        .serve()
}

/// Reads stdin lines on a thread so the script can wait on a channel with a
/// timeout; the channel closes at end of input.
fn read_stdin_in_background() -> mpsc::Receiver<String> {
    let (sender, inbox) = mpsc::channel();
    let mut transcript = std::env::var_os("WEFT_ACP_LOG").and_then(|path| {
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|error| agent::log(&format!("cannot open WEFT_ACP_LOG: {error}")))
            .ok()
    });
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match stdin.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&bytes);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            if let Some(file) = transcript.as_mut() {
                let logged = writeln!(file, "{line}").and_then(|()| file.flush());
                if let Err(error) = logged {
                    agent::log(&format!("cannot write WEFT_ACP_LOG: {error}"));
                }
            }
            if sender.send(line.to_owned()).is_err() {
                break;
            }
        }
    });
    inbox
}
