//! `weft steer RUN [NODE] TEXT`: sends a message to a running agent stage
//! (human-tools/steering.mdx). It goes through weftd, which executes the
//! run; a run started with `--no-daemon` runs in its own process and cannot
//! be steered from another.

use super::SteerArgs;
use super::daemon::message;
use super::exit::{self, CliError, CliResult, EXIT_OK};
use crate::ipc::client::Client;
use crate::ipc::protocol::RunSteer;

/// `weft steer`.
pub fn run(args: &SteerArgs) -> CliResult {
    let (node, text) = match args.rest.as_slice() {
        [text] => (None, text.clone()),
        [node, text] => (Some(node.clone()), text.clone()),
        _ => return Err(CliError::usage("usage: weft steer RUN [NODE] TEXT")),
    };
    let home = super::home()?;
    super::block_on(async {
        // Never starts a daemon: one started now would not be running the
        // agent.
        let client = Client::connect(&home).await.map_err(|e| {
            CliError::Usage(format!(
                "cannot reach weftd for {} ({e}): only runs the daemon executes can be \
                 steered, and a run started with --no-daemon cannot be steered from another \
                 process",
                home.root().display()
            ))
        })?;
        let queued = client
            .call(RunSteer {
                run: args.run.clone(),
                node,
                text,
            })
            .await
            .map_err(|e| CliError::Usage(message(&e)))?;
        if args.json {
            println!("{}", serde_json::to_string(&queued).unwrap_or_default());
        } else {
            println!(
                "queued for {}@{} of run {}: the agent gets it before its next turn",
                queued.node_id, queued.visit, queued.run_id
            );
        }
        exit::code(EXIT_OK)
    })
}
