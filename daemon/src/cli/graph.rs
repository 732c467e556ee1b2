//! `weft graph FILE [--json]`

use super::report::{self, Style};
use super::{EXIT_INVALID, EXIT_OK, EXIT_USAGE, GraphArgs};
use crate::lang::{Severity, Workflow, printer};

/// Prints the resolved graph. Errors go to stderr and make the exit code 1,
/// but a graph that parsed is still printed so it can be inspected.
pub fn run(args: &GraphArgs) -> u8 {
    let file = args.file.display().to_string();
    let wf = match Workflow::load(&args.file, &args.load.options()) {
        Ok(wf) => wf,
        Err(e) => {
            eprintln!("error: cannot read `{file}`: {e}");
            return EXIT_USAGE;
        }
    };
    let style = Style::for_stderr();
    for d in wf
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        eprintln!("{}", report::human(d, &file, &wf.source, style));
    }
    if let Some(graph) = &wf.graph {
        if args.json {
            println!("{}", printer::to_json(graph));
        } else {
            print!("{}", printer::to_dot(graph));
        }
    }
    if wf.is_valid() { EXIT_OK } else { EXIT_INVALID }
}
