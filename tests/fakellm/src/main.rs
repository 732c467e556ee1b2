//! `weft-fakellm`: the fake LLM server as a process, for tests that cannot
//! link the crate. Prints `listening on http://127.0.0.1:PORT` and serves
//! until stdin closes or the process is killed; `--until-killed` ignores stdin
//! (for a parent that gives it `/dev/null`). Script it over HTTP: see the
//! crate docs.

use std::io::{Read, Write};
use std::process::ExitCode;

use weft_fakellm::FakeLlm;

fn main() -> ExitCode {
    let mut until_killed = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--until-killed" => until_killed = true,
            "-h" | "--help" => {
                println!(
                    "usage: weft-fakellm [--until-killed]\n\n\
                     Serves fake Anthropic, OpenAI and Gemini endpoints on 127.0.0.1\n\
                     until stdin closes (or, with --until-killed, until killed)."
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("weft-fakellm: unknown argument {other:?}; try --help");
                return ExitCode::from(2);
            }
        }
    }
    let server = match FakeLlm::try_start() {
        Ok(server) => server,
        Err(e) => {
            eprintln!("weft-fakellm: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "listening on {}", server.url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    if until_killed {
        loop {
            std::thread::park();
        }
    }
    // Read and discard until EOF: the parent going away ends the server.
    let mut sink = [0; 256];
    let mut stdin = std::io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    drop(server);
    ExitCode::SUCCESS
}
