//! `weft graph FILE [--json]` (`-` reads standard input)

use super::GraphArgs;
use super::exit::{self, CliError, CliResult, EXIT_INVALID, EXIT_OK};
use super::report::{self, Style};
use crate::lang::{Severity, printer};

/// Prints the resolved graph. Errors go to stderr and make the exit code 1,
/// but a graph that parsed is still printed so it can be inspected.
pub fn run(args: &GraphArgs) -> CliResult {
    let (file, loaded) =
        super::validate::load_arg(&args.file, &args.load.options(), &mut Default::default());
    let wf = loaded.map_err(|e| CliError::Usage(format!("cannot read `{file}`: {e}")))?;
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
    exit::code(if wf.is_valid() { EXIT_OK } else { EXIT_INVALID })
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
