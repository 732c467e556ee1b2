//! The `weft` command line: argument parsing and one file per command. A
//! thin shell over [`crate::lang`], [`crate::engine`] and [`crate::store`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

mod graph;
mod progress;
mod report;
mod run;
mod validate;

/// Exit code: everything fine (warnings allowed).
pub const EXIT_OK: u8 = 0;
/// Exit code: a workflow has an error.
pub const EXIT_INVALID: u8 = 1;
/// Exit code: bad usage or a file that cannot be read.
pub const EXIT_USAGE: u8 = 2;

/// Weft runs AI coding-agent workflows written in Fabro's workflow language
/// (Graphviz DOT files, `.fabro` or `.dot`) on your own machine.
#[derive(Debug, Parser)]
#[command(name = "weft", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check workflow files and report problems with file:line:column.
    ///
    /// Exits 0 when no file has an error (warnings are allowed), 1 when any
    /// file has an error, 2 on usage or I/O errors.
    Validate(ValidateArgs),
    /// Print a workflow's resolved graph: as normalised DOT, or with
    /// `--json` as nodes (handler, classes, effective attributes) and edges.
    Graph(GraphArgs),
    /// Run a workflow (or a run configuration `.toml`) with live progress.
    ///
    /// Exits 0 when the run succeeds, 1 when it fails, 130 when it is
    /// cancelled (Ctrl-C; resume it with `weft resume`), 2 when it cannot
    /// start (invalid workflow, unreadable file).
    Run(RunArgs),
    /// Continue an interrupted or cancelled run from its last checkpoint.
    ///
    /// Stages whose completion was recorded never run again; the stage that
    /// was in flight runs again. Exit codes as for `weft run`.
    Resume(ResumeArgs),
}

/// Options shared by commands that load a workflow.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Set a template input: `{{ inputs.NAME }}` renders as VALUE. Repeatable.
    #[arg(long = "input", short = 'i', value_name = "NAME=VALUE", value_parser = parse_input)]
    pub inputs: Vec<(String, String)>,
    /// Use this goal instead of the graph's `goal` attribute.
    #[arg(long)]
    pub goal: Option<String>,
}

impl LoadArgs {
    fn options(&self) -> crate::lang::LoadOptions {
        crate::lang::LoadOptions {
            inputs: self.inputs.iter().cloned().collect::<BTreeMap<_, _>>(),
            goal: self.goal.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Workflow files (`.fabro` or `.dot`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print one JSON object per file, one per line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The workflow file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print JSON instead of DOT.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub load: LoadArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workflow file (`.fabro`, `.dot`) or a run configuration (`.toml`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    #[command(flatten)]
    pub load: LoadArgs,
    /// Answer every human gate with its first option (or "yes"/"approve").
    #[arg(long)]
    pub auto_approve: bool,
    /// Simulate agent and prompt nodes instead of calling a model; human
    /// gates take their first option. Commands still run.
    #[arg(long)]
    pub dry_run: bool,
    /// Seed for `selection="random"` edges and retry jitter, for repeatable runs.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print the conclusion as JSON on stdout when the run ends.
    #[arg(long)]
    pub json: bool,
    /// Attach a label to the run (repeatable), for filtering later.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Run commands in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run id, or any unique prefix of it.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Answer every human gate with its first option.
    #[arg(long)]
    pub auto_approve: bool,
    /// Print the conclusion as JSON on stdout when the run ends.
    #[arg(long)]
    pub json: bool,
}

fn parse_input(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

/// Runs the CLI with the process's arguments.
#[must_use]
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
        }
    };
    let code = match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Graph(args) => graph::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Resume(args) => run::resume(&args),
    };
    ExitCode::from(code)
}
