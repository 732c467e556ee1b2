//! `weft completions SHELL` and `weft man [COMMAND]`: generated from the
//! clap definitions of [`super::Cli`], so they never drift from the
//! options `weft` actually takes.

use std::io::Write;

use clap::CommandFactory;

use super::Cli;
use super::exit::{CliError, CliResult};

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> CliResult {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "weft", &mut script);
    super::output_done(std::io::stdout().lock().write_all(&script))
}

/// Prints the man page of weft, or of one of its commands (`weft-run(1)`),
/// as roff on stdout.
pub fn man(command: Option<&str>) -> CliResult {
    let mut root = Cli::command();
    root.build();
    let page = match command {
        None => root,
        Some(name) => {
            let Some(sub) = root.find_subcommand(name).cloned() else {
                let names: Vec<String> = root
                    .get_subcommands()
                    .map(|c| c.get_name().to_string())
                    .collect();
                return Err(CliError::Usage(format!(
                    "weft has no command `{name}`; its commands are {}",
                    names.join(", ")
                )));
            };
            // Built, a subcommand's display name is `weft-run`: the page's
            // title, as man expects.
            sub
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut roff)
        .map_err(|e| CliError::Usage(format!("cannot render the man page: {e}")))?;
    super::output_done(std::io::stdout().lock().write_all(&roff))
}
