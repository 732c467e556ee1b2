//! `weft validate FILE...` (`-` reads standard input)

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::ValidateArgs;
use super::exit::{self, CliResult, EXIT_INVALID, EXIT_OK, EXIT_USAGE};
use super::report::{self, Style};
use crate::lang::{LoadOptions, Workflow};
use crate::limits::{self, MAX_WORKFLOW_BYTES, ReadError};

/// How a workflow read from standard input is named in messages.
pub(crate) const STDIN_NAME: &str = "<stdin>";

/// Validates each file, printing diagnostics then a summary per file. A
/// file that cannot be read is reported with the others (`error: cannot
/// read ...` in its place, or its JSON line) and the rest are still
/// checked; the exit code is the worst of them (2 beats 1).
pub fn run(args: &ValidateArgs) -> CliResult {
    let options = args.load.options();
    let style = Style::for_stderr();
    let mut code = EXIT_OK;
    let mut stdin = Stdin::default();
    for path in &args.files {
        let (file, loaded) = load_arg(path, &options, &mut stdin);
        let wf = match loaded {
            Ok(wf) => wf,
            Err(e) => {
                if args.json {
                    println!("{}", report::json_io_error(&file, &e));
                } else {
                    eprintln!("error: cannot read `{file}`: {e}");
                }
                code = EXIT_USAGE;
                continue;
            }
        };
        if !wf.is_valid() && code == EXIT_OK {
            code = EXIT_INVALID;
        }
        if args.json {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            let written = serde_json::to_writer(&mut out, &report::json_workflow(&wf))
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
                .and_then(|()| out.flush());
            if written.is_err() {
                // Stdout is gone (a closed pipe): nobody reads the rest.
                return exit::code(code);
            }
            continue;
        }
        for d in &wf.diagnostics {
            eprintln!("{}", report::human(d, &file, &wf.source, style));
        }
        match report::counts(&wf.diagnostics) {
            Some(counts) if !wf.is_valid() => {
                println!("{}: invalid ({counts})", report::summary(&wf))
            }
            Some(counts) => println!("{} — valid ({counts})", report::summary(&wf)),
            None => println!("{}", report::summary(&wf)),
        }
    }
    exit::code(code)
}

/// Standard input, read at most once (a second `-` sees the same text).
#[derive(Default)]
pub(super) struct Stdin(Option<Vec<u8>>);

/// Loads the workflow an argument names: a file, or standard input for
/// `-`, read up to [`MAX_WORKFLOW_BYTES`] (references then resolve against
/// the current directory). Returns the name to show in messages too.
pub(super) fn load_arg(
    path: &Path,
    options: &LoadOptions,
    stdin: &mut Stdin,
) -> (String, Result<Workflow, ReadError>) {
    if path != Path::new("-") {
        return (path.display().to_string(), Workflow::load(path, options));
    }
    let bytes = match &stdin.0 {
        Some(bytes) => bytes,
        None => match limits::read_bounded(std::io::stdin().lock(), MAX_WORKFLOW_BYTES) {
            Ok(bytes) => stdin.0.insert(bytes),
            Err(e) => return (STDIN_NAME.to_string(), Err(e)),
        },
    };
    let wf = Workflow::from_bytes(STDIN_NAME, bytes, &PathBuf::from("."), options);
    (STDIN_NAME.to_string(), Ok(wf))
}
