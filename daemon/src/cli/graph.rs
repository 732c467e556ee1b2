//! `weft graph FILE [--json]` (`-` reads standard input)

use super::report::{self, Style};
use super::{EXIT_INVALID, EXIT_OK, EXIT_USAGE, GraphArgs};
use crate::lang::{Severity, printer};

/// Prints the resolved graph. Errors go to stderr and make the exit code 1,
/// but a graph that parsed is still printed so it can be inspected.
pub fn run(args: &GraphArgs) -> u8 {
    let (file, loaded) =
        super::validate::load_arg(&args.file, &args.load.options(), &mut Default::default());
    let wf = match loaded {
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
            let mut json = printer::to_json(graph);
            add_retry_policies(&mut json, graph);
            println!("{json}");
        } else {
            print!("{}", printer::to_dot(graph));
        }
    }
    if wf.is_valid() { EXIT_OK } else { EXIT_INVALID }
}

/// Adds each node's effective retry policy (`"retry"`), as the engine will
/// apply it, to the JSON of `graph`: the attributes alone do not say what a
/// node without any gets.
fn add_retry_policies(json: &mut serde_json::Value, graph: &crate::lang::Graph) {
    let Some(nodes) = json.get_mut("nodes").and_then(|n| n.as_array_mut()) else {
        return;
    };
    for (shown, node) in nodes.iter_mut().zip(&graph.nodes) {
        if matches!(
            node.handler,
            crate::lang::Handler::Start | crate::lang::Handler::Exit
        ) {
            continue;
        }
        if let Some(map) = shown.as_object_mut() {
            map.insert(
                "retry".into(),
                crate::engine::retry::RetryPolicy::describe(node, graph),
            );
        }
    }
}
