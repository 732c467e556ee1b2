//! `weft validate FILE...`

use super::report::{self, Style};
use super::{EXIT_INVALID, EXIT_OK, EXIT_USAGE, ValidateArgs};
use crate::lang::Workflow;

/// Validates each file, printing diagnostics then a summary per file.
pub fn run(args: &ValidateArgs) -> u8 {
    let options = args.load.options();
    let style = Style::for_stderr();
    let mut code = EXIT_OK;
    for path in &args.files {
        let file = path.display().to_string();
        let wf = match Workflow::load(path, &options) {
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
            println!("{}", report::json_workflow(&wf));
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
    code
}
