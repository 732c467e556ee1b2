//! The `weft` command line: argument parsing and one file per command. A
//! thin shell over [`crate::lang`], [`crate::engine`] and [`crate::store`].
//!
//! Every command returns a `CliResult` (see `exit.rs`): the exit code it
//! chose, or a `CliError`. [`main`] is the one place that prints an error
//! and picks its exit code; commands print only their output (and
//! warnings and progress).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

// Every message of the CLI goes through these three macros, which shadow
// std's for this module and its children (they are defined before the
// `mod` lines below). std's versions panic when the write fails, and a
// closed pipe (`weft run ... 2>&1 | head -2`) makes every write fail: a
// panic there would abandon a run mid-stage. A message that cannot be
// written is dropped instead; commands whose output is their product (`ps`,
// `events`, `logs`, ...) write through `Write` and check with
// [`output_done`].

/// `eprintln!` that drops the message when stderr cannot be written.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that drops the line when stdout cannot be written.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that drops the text when stdout cannot be written.
macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod apply;
mod control;
mod daemon;
mod exit;
mod fork;
mod graph;
mod handlers;
mod manual;
mod model;
mod notifications;
mod open;
mod progress;
mod reader;
mod remote;
mod report;
mod retro;
mod run;
mod sandbox;
mod steer;
mod transcript;
mod validate;
// Run inspection commands (read-only over the run store).
mod artifacts;
mod cost;
mod dump;
mod events;
mod logs;
mod ps;

use exit::{CliError, CliResult};
pub(crate) use exit::{EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// What `weft --help` says after the commands: where Weft keeps its data,
/// its settings and its documentation.
const AFTER_HELP: &str = "\
Runs: RUN is a run id, a unique prefix of one (as `weft ps` shows it), `last`
(the newest run) or `last~N` (the Nth run before it).

Environment:
  WEFT_HOME  where runs, the database and the daemon's socket live
             (default: ~/.local/share/weft)
  NO_COLOR   no colour, even on a terminal

Settings: $WEFT_HOME/settings.toml (the daemon, language-model providers).
Docs: docs/cli.md in the Weft repository, or `weft man`; shell completions
with `weft completions SHELL`.";

/// Weft runs AI coding-agent workflows written in Fabro's workflow language
/// (Graphviz DOT files, `.fabro` or `.dot`) on your own machine.
#[derive(Debug, Parser)]
#[command(
    name = "weft",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = AFTER_HELP
)]
pub(crate) struct Cli {
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
    /// The run executes in the daemon (weftd, started when it is not
    /// running) in this directory with this environment; this command
    /// follows it and asks its human gates here. Exits 0 when the run
    /// succeeds, 1 when it fails, 130 when it is cancelled (Ctrl-C; resume
    /// it with `weft resume`), 2 when it cannot start (invalid workflow,
    /// unreadable file).
    Run(RunArgs),
    /// Cancel a queued or running run (in the daemon).
    Cancel(CancelArgs),
    /// Replace a run that ended with a new one from an earlier checkpoint.
    ///
    /// The new run has the old one's history up to TARGET and, when the run
    /// was checkpointed in git, a branch at that checkpoint's commit; the
    /// old run is archived. Continue the new one with `weft resume`. With
    /// `--list`, print the checkpoint timeline instead. Exits 2 when the run
    /// has not ended (resume it, or fork it) or TARGET is not on its
    /// timeline.
    Rewind(ForkArgs),
    /// Start a new run from one of a run's checkpoints, keeping the run.
    ///
    /// Like `weft rewind`, but the source run stays as it is (it may be
    /// interrupted, cancelled or ended, not running), and TARGET defaults to
    /// its latest checkpoint. Continue the new run with `weft resume`.
    Fork(ForkArgs),
    /// Answer a run's open human-gate question (in the daemon).
    Answer(AnswerArgs),
    /// List the human-gate questions waiting for an answer.
    Questions(QuestionsArgs),
    /// Send a message to a running agent stage (in the daemon).
    ///
    /// The agent gets TEXT as a user message before its next model turn,
    /// and the run records `agent.steered` when it does. NODE may be left
    /// out when one agent of the run is running. Only runs weftd executes
    /// can be steered (not `weft run --no-daemon`). Exits 2 when no agent
    /// of the run is running (or several are and NODE is not given).
    Steer(SteerArgs),
    /// Start, stop or ask about the background daemon (weftd) for WEFT_HOME.
    ///
    /// `status` exits 0 when the daemon is running and 3 when it is not.
    Daemon(DaemonArgs),
    /// Continue an interrupted or cancelled run from its last checkpoint.
    ///
    /// Stages whose completion was recorded never run again; the stage that
    /// was in flight runs again. Exit codes as for `weft run`.
    Resume(ResumeArgs),
    // ----- run inspection (ps, events, logs, dump): read-only -----
    /// List runs, newest first.
    ///
    /// Shows queued, running and blocked runs plus the 20 most recent
    /// (`--all` for every run). Reads the run store read-only; exits 0 (also
    /// when there are no runs yet), 2 on usage errors.
    Ps(PsArgs),
    /// Language-model spending per day, model, run or stage, with totals.
    ///
    /// Sums the tokens and dollars of every stage that called a model and
    /// finished in the window (the last 30 days unless `--since` or
    /// `--all`), by the local date it finished and the model that answered
    /// its last call. Calls to a model without a price (missing from the
    /// catalog) count their tokens and are shown as unpriced, never as $0;
    /// a local model costs $0. Reads the run store read-only (no daemon),
    /// through the same read model as the app's Spending view, so both show
    /// the same figures. Exits 2 on a bad `--since` or unknown `--run`.
    Cost(CostArgs),
    /// Print a run's events in order, one per line.
    ///
    /// Each line is `#seq  HH:MM:SS.mmm (UTC)  event  node@visit  summary`;
    /// `--json` prints each event's envelope instead. RUN is a run id or any
    /// unique prefix of one. Exits 2 when RUN matches no run or several.
    Events(EventsArgs),
    /// Print what a run's stages wrote.
    ///
    /// Shows stdout and stderr of commands and the response of agent and
    /// prompt nodes. Stages are shown in execution order under `== node@visit (status,
    /// duration) ==`; `--follow` streams running stages' output until the run
    /// ends. Exits 2 when RUN is unknown or ambiguous, or NODE never ran.
    Logs(LogsArgs),
    /// Export a run to a directory, laid out as `fabro dump` does.
    ///
    /// Writes `stages/{rank:03}-{node}@{visit}/` with each stage's files,
    /// plus `events.jsonl`, `checkpoint.json`, `manifest.json`,
    /// `graph.fabro` and `conclusion.json`. Refuses a non-empty DIR unless `--force`. Exits 2 when RUN is unknown
    /// or ambiguous or DIR cannot be written.
    Dump(DumpArgs),
    /// List the files a run captured from its working directory.
    ///
    /// Files matching `[run.artifacts] include` are captured after each
    /// stage. Shows path, stage (`node@visit`), size, short hash and time;
    /// `--json` prints an array. `--cp PATH DEST` copies the latest version
    /// of PATH to DEST (a file, or an existing directory to copy into).
    /// Exits 2 when RUN is unknown or ambiguous, or the run has no PATH.
    Artifacts(ArtifactsArgs),
    /// Show a run's retrospective: rating, intent and outcome, learnings,
    /// friction, open items and a table of its stages.
    ///
    /// Retros are written when a run succeeds or fails with retros enabled
    /// (`weft run --retro`, `[run] retros = true`, settings.toml's
    /// `retros = true`). `--generate` makes one now for an ended run, with
    /// the run's model unless `--model`/`--provider` say otherwise.
    /// Exits 2 when RUN is unknown or has no retro.
    Retro(RetroArgs),
    /// Bring a checkpointed run's result into your checkout.
    ///
    /// Merges the run's branch (`weft/run/ID`) into the branch checked out:
    /// a fast-forward when that branch has not moved since the run started,
    /// else a merge commit. `--to BRANCH` merges into another branch without
    /// touching the working tree; `--patch` applies the run's final.patch to
    /// the working tree instead, committing nothing. Refuses, changing
    /// nothing, a checkout with uncommitted changes, a merge with conflicts,
    /// a patch that does not apply, a detached HEAD without `--to`, and a
    /// failed run without `--force` (exit 1). Exits 2 when RUN is unknown or
    /// ambiguous.
    Apply(ApplyArgs),
    /// List the model catalog or test that providers answer.
    ///
    /// `list` shows models, aliases, context windows, prices and whether
    /// each provider's API key is set; `test` sends one tiny request per
    /// model and exits 0 when all answer, 1 when any fails, 2 on usage
    /// errors.
    Model(ModelArgs),
    /// Open a run, a stage, a tab or a question in the desktop app.
    ///
    /// Builds the run's deep link (`weft://run/RUN/…`, docs/app.md "Deep
    /// links") and starts the desktop app with it; an app already open for
    /// this home shows the place instead of opening a second window. The
    /// app is settings.toml's `app`, else `weft-desktop` beside `weft`.
    /// RUN may also be a whole `weft://` link. The link is printed (with
    /// `--print`, only printed; `--json` prints `{"link": …}`). Exits 2 when
    /// RUN is unknown or ambiguous, the link is not valid or the app cannot
    /// be started.
    #[command(after_help = OPEN_EXAMPLES)]
    Open(OpenArgs),
    /// Pause, resume or show weftd's desktop notifications.
    ///
    /// `pause` stops weftd's desktop notifications (gates, failures,
    /// completions) until `resume` or until weftd restarts; nothing paused
    /// is shown later. `status` says whether they are paused. `--json`
    /// prints `{"paused": BOOL}`. Exits 0, 3 when weftd is not running (it
    /// alone sends notifications).
    Notifications(NotificationsArgs),
    /// List the handlers a node can have: shape, `type=` names, attributes.
    ///
    /// A node's handler comes from `type=` when it names one, else from
    /// its shape. The `type=` names include Fabro's legacy aliases and the
    /// Attractor spec's (`codergen`, `wait.human`, `tool`, ...). `--json`
    /// prints the same as one object. Exits 0.
    Handlers(HandlersArgs),
    /// Check that a Docker engine (Docker, or Podman's Docker API service)
    /// answers where DOCKER_HOST points, for sandboxed runs.
    ///
    /// `weft sandbox check` says which engine answered and its API version,
    /// or why none did; `--image IMAGE` also checks that the engine has that
    /// image (nothing is pulled). DOCKER_HOST is `unix:///path`,
    /// `tcp://host:port` or `ssh://[user@]host[:port][/remote/socket]`
    /// (through `ssh`, or the command in WEFT_SSH_COMMAND). Exits 0 when
    /// all is well, 1 when the engine does not answer or lacks the image,
    /// 2 on usage errors.
    Sandbox(SandboxArgs),
    /// Print a shell completion script: `weft completions bash > ...`.
    ///
    /// bash: `weft completions bash > ~/.local/share/bash-completion/completions/weft`;
    /// zsh: into a directory of `$fpath` as `_weft`; fish:
    /// `~/.config/fish/completions/weft.fish`.
    Completions(CompletionsArgs),
    /// Print the manual page (roff), of weft or of one command.
    ///
    /// `weft man | man -l -` reads it; `weft man run` is weft-run(1).
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct HandlersArgs {
    /// Print one JSON object: `{"handlers": [...], "stage_attributes": [...]}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    pub command: SandboxCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum SandboxCommand {
    /// Whether the engine at DOCKER_HOST answers (and has IMAGE).
    Check {
        /// An image the engine must have, e.g. the one runs will use.
        #[arg(long, value_name = "IMAGE")]
        image: Option<String>,
        /// Print one JSON object: host, reachable, engine, image, error.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The command whose page to print (`run`, `ps`, ...); weft(1) without.
    #[arg(value_name = "COMMAND")]
    pub command: Option<String>,
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
    /// Answer every human gate with its approving option: the first whose
    /// text starts with approve, yes, ok, ship, accept, continue, proceed,
    /// ... (docs/cli.md lists them); else its first option.
    #[arg(long)]
    pub auto_approve: bool,
    /// Simulate agent and prompt nodes instead of calling a model; human
    /// gates take their first option. Commands still run.
    #[arg(long)]
    pub dry_run: bool,
    /// Seed for `selection="random"` edges and retry jitter, for repeatable runs.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The model for prompt and agent nodes that name none (an id or alias
    /// from `weft`'s catalog, or any id the provider accepts).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider for those nodes (`anthropic`, `openai`, `gemini`, or one
    /// named in settings.toml); inferred from the model when omitted.
    #[arg(long, value_name = "PROVIDER")]
    pub provider: Option<String>,
    /// Pause the run when its models have cost this many US dollars (a
    /// question: raise the budget or stop; docs/llm.md, "Budgets").
    #[arg(long, value_name = "DOLLARS")]
    pub max_cost: Option<f64>,
    /// Pause the run when its models have used this many tokens (input +
    /// output).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// Print the conclusion as JSON on stdout when the run ends.
    #[arg(long)]
    pub json: bool,
    /// Attach a label to the run (repeatable), for filtering later.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Run commands in this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// In a git repository, run in the work dir itself: no worktree of the
    /// run's own, no commit per stage, no rewind (docs/git.md).
    #[arg(long, conflicts_with = "include_dirty")]
    pub no_checkpoint: bool,
    /// Start the run's worktree with the checkout's uncommitted changes
    /// (committed as the run's first commit); without it they are left
    /// out, and the run says so.
    #[arg(long)]
    pub include_dirty: bool,
    /// Write a retrospective (retro.json) when the run succeeds or fails,
    /// whatever the run configuration and settings.toml say.
    #[arg(long, conflicts_with = "no_retro")]
    pub retro: bool,
    /// Write no retrospective for this run.
    #[arg(long)]
    pub no_retro: bool,
    /// Start the run in the daemon and print its id at once, without
    /// following it.
    #[arg(long, conflicts_with = "no_daemon")]
    pub detach: bool,
    /// Run in this process instead of the daemon (for CI scripts that want
    /// no background process). Ctrl-C then cancels the run.
    #[arg(long)]
    pub no_daemon: bool,
    /// Where commands and the agent's shell run: `local` (on this machine,
    /// the default) or `docker` (in a container per run, through the
    /// Docker Engine API at DOCKER_HOST; docs/sandbox.md).
    #[arg(long, value_name = "PROVIDER", value_enum)]
    pub sandbox: Option<crate::model::sandbox::Provider>,
    /// The image of the run's container (with --sandbox docker).
    #[arg(long, value_name = "IMAGE")]
    pub sandbox_image: Option<String>,
    /// Keep the run's container after the run ends, to look inside it.
    #[arg(long)]
    pub preserve_sandbox: bool,
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The checkpoint: `NODE` (its latest visit), `NODE@VISIT`, or `@N`
    /// (the Nth on the timeline, as `--list` numbers them). A fork without
    /// it starts from the latest checkpoint; a rewind needs it.
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    /// Print the run's checkpoint timeline instead.
    #[arg(long, conflicts_with = "target")]
    pub list: bool,
    /// Print JSON (the new run, or the timeline).
    #[arg(long)]
    pub json: bool,
}

/// `weft open --help`'s examples.
const OPEN_EXAMPLES: &str = "\
Examples:
  weft open last                                the newest run
  weft open 01JX --stage build@2 --tab output   a stage visit's output
  weft open last --stage build --tab transcript the latest visit's transcript
  weft open last --bar cost                     the run's cost tab
  weft open last --print                        print the link, open nothing
  weft open weft://gates                        any weft:// link";

#[derive(Debug, Args)]
pub struct OpenArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// or `last~N`; or a whole `weft://` link.
    #[arg(value_name = "RUN|LINK")]
    pub target: String,
    /// A stage of the run: NODE (its latest visit) or NODE@VISIT.
    #[arg(long, value_name = "NODE[@VISIT]", conflicts_with_all = ["bar", "question"])]
    pub stage: Option<String>,
    /// The stage's tab: transcript, output, files, artifacts, routing or
    /// context (without @VISIT: the latest recorded visit).
    #[arg(long, value_name = "TAB", requires = "stage")]
    pub tab: Option<String>,
    /// The run screen's bar tab: timeline, events, retro or cost.
    #[arg(long, value_name = "TAB", conflicts_with = "question")]
    pub bar: Option<String>,
    /// A question of the run (its id, as `weft questions` shows it).
    #[arg(long, value_name = "QID")]
    pub question: Option<String>,
    /// Only print the link; start nothing.
    #[arg(long)]
    pub print: bool,
    /// Print `{"link": "weft://…"}` instead of the bare link.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
}

#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The question, when the run has several open (see `weft questions`).
    #[arg(long)]
    pub question: Option<String>,
    /// Pick the option with this accelerator key (`A` of `[A] Approve`).
    #[arg(long)]
    pub key: Option<String>,
    /// Pick the option with this label (with or without its accelerator).
    #[arg(long)]
    pub label: Option<String>,
    /// Answer with text: an option's number, key or label, or free text.
    #[arg(long)]
    pub text: Option<String>,
    /// Print the answered question as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SteerArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// `[NODE] TEXT`: the agent node (when the run has several running) and
    /// the message.
    #[arg(value_name = "[NODE] TEXT", num_args = 1..=2, required = true)]
    pub rest: Vec<String>,
    /// Print where the message was queued as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct QuestionsArgs {
    /// Only this run's questions (id, unique prefix, `last` or `last~N`).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Include answered and closed questions.
    #[arg(long)]
    pub all: bool,
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    #[command(subcommand)]
    pub action: DaemonAction,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum DaemonAction {
    /// Start weftd in the background (no-op when it is running).
    Start,
    /// Stop weftd; its running runs are checkpointed as interrupted and
    /// resumed when it starts again.
    Stop,
    /// Show whether weftd is running, its pid, socket and load.
    Status,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Answer every human gate with its approving option, as `weft run
    /// --auto-approve` does.
    #[arg(long)]
    pub auto_approve: bool,
    /// A new spending limit in US dollars for the rest of the run (e.g. to
    /// continue a run stopped at its budget).
    #[arg(long, value_name = "DOLLARS")]
    pub max_cost: Option<f64>,
    /// A new token limit for the rest of the run.
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// Print the conclusion as JSON on stdout when the run ends.
    #[arg(long)]
    pub json: bool,
    /// Resume in this process instead of the daemon.
    #[arg(long)]
    pub no_daemon: bool,
}

// ----- run inspection (ps, events, logs, dump) ------------------------------

#[derive(Debug, Args)]
pub struct PsArgs {
    /// Print a JSON array of runs instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Every run, not only the active ones and the 20 most recent.
    #[arg(long)]
    pub all: bool,
    /// Only runs with this status (queued, running, blocked, succeeded,
    /// failed, cancelled, interrupted).
    #[arg(long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<crate::model::RunStatus>,
    /// Only runs of the workflow with exactly this name.
    #[arg(long, value_name = "NAME")]
    pub workflow: Option<String>,
    /// Only runs carrying this label, exactly as given to `weft run
    /// --label` (e.g. `env=prod`).
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// Show at most N runs, newest first: the N most recent (with the
    /// active ones) instead of 20. N is at least 1; `--all` lists every run.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub limit: Option<u32>,
    /// Read the run store directly instead of asking weftd (works without a
    /// daemon, and does not start one).
    #[arg(long)]
    pub no_daemon: bool,
}

#[derive(Debug, Args)]
pub struct CostArgs {
    /// Only stages finished since then: a span back from now (`7d`, `24h`,
    /// `2w`), a local date (`2026-12-01`, from its midnight) or an RFC 3339
    /// time.
    #[arg(
        long,
        value_name = "WHEN",
        default_value = "30d",
        conflicts_with = "all"
    )]
    pub since: String,
    /// Every recorded stage, whenever it finished.
    #[arg(long)]
    pub all: bool,
    /// Only this run: its id, a unique prefix of it, `last` or `last~N`.
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,
    /// The table's rows: one per day, model, run or stage.
    #[arg(long, value_enum, default_value = "day")]
    pub by: cost::CostBy,
    /// List at most N runs and N stages (the latest; totals count all;
    /// at most 1000).
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
    /// Print the whole read model as JSON (totals, days, models, runs,
    /// stages), as the app's Spending view receives it.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print one event envelope (JSON) per line.
    #[arg(long)]
    pub json: bool,
    /// Keep printing new events until the run has ended (succeeded, failed
    /// or cancelled).
    #[arg(long, short = 'f')]
    pub follow: bool,
    /// Only events after this sequence number.
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    pub after: u64,
    /// Read the run store directly instead of asking weftd (works without a
    /// daemon, and does not start one).
    #[arg(long)]
    pub no_daemon: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Only this node's stages.
    #[arg(value_name = "NODE")]
    pub node: Option<String>,
    /// Only this visit of NODE (1 is the first).
    #[arg(long, value_name = "N", requires = "node")]
    pub visit: Option<u32>,
    /// Keep printing the output of running and new stages as it arrives,
    /// until the run ends (with `--visit`, until that visit ends).
    #[arg(long, short = 'f', conflicts_with = "diff")]
    pub follow: bool,
    /// Print changes instead of output: NODE's stages' diffs (`diff.patch`),
    /// or without NODE the whole run's (`final.patch`, written when it
    /// ends). Only runs checkpointed in git have them (docs/git.md).
    #[arg(long)]
    pub diff: bool,
    /// Read the run store directly instead of asking weftd (works without a
    /// daemon, and does not start one).
    #[arg(long)]
    pub no_daemon: bool,
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// The directory to write; created if missing.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write into DIR even if it is not empty (same-named files are replaced).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct RetroArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print the retro as JSON (retro.json's content).
    #[arg(long)]
    pub json: bool,
    /// Make the retro now (replacing any earlier one), for a run that has
    /// ended.
    #[arg(long)]
    pub generate: bool,
    /// With `--generate`: the model to write it with.
    #[arg(long, value_name = "MODEL", requires = "generate")]
    pub model: Option<String>,
    /// With `--generate`: the model's provider.
    #[arg(long, value_name = "PROVIDER", requires = "generate")]
    pub provider: Option<String>,
}

#[derive(Debug, Args)]
pub struct ArtifactsArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Print a JSON array of artifacts instead of a table.
    #[arg(long, conflicts_with = "cp")]
    pub json: bool,
    /// Copy the latest captured version of PATH to DEST (a file path, or an
    /// existing directory to copy into under PATH's file name).
    #[arg(long, num_args = 2, value_names = ["PATH", "DEST"])]
    pub cp: Option<Vec<String>>,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The run: its id, a unique prefix of it (as `weft ps` shows), `last`
    /// (the newest run) or `last~N` (the Nth before it).
    #[arg(value_name = "RUN")]
    pub run: String,
    /// Merge into this branch instead of the one checked out; when it is
    /// not checked out, only the branch moves (no file changes).
    #[arg(long, value_name = "BRANCH")]
    pub to: Option<String>,
    /// Apply the run's final.patch to the working tree, uncommitted,
    /// instead of merging its branch.
    #[arg(long, conflicts_with = "to")]
    pub patch: bool,
    /// Apply a run that failed, was cancelled or was interrupted: the work
    /// of the stages it completed.
    #[arg(long)]
    pub force: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NotificationsArgs {
    #[command(subcommand)]
    pub action: NotificationsAction,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum NotificationsAction {
    /// Stop weftd's desktop notifications until `resume` or its restart.
    Pause,
    /// Send desktop notifications again.
    Resume,
    /// Say whether notifications are paused.
    Status,
}

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub action: ModelAction,
}

#[derive(Debug, Subcommand)]
pub enum ModelAction {
    /// List the models of the catalog (built-in plus settings.toml).
    List(ModelListArgs),
    /// Send one tiny request to a model (or to the default model of every
    /// provider with a key) and report whether it answered.
    Test(ModelTestArgs),
}

#[derive(Debug, Args)]
pub struct ModelListArgs {
    /// Only models of this provider.
    #[arg(long, value_name = "PROVIDER")]
    pub provider: Option<String>,
    /// Only models whose id or an alias contains this text (any case).
    #[arg(long, short = 'q', value_name = "TEXT")]
    pub query: Option<String>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ModelTestArgs {
    /// The model (an id or alias); without it, the default model of every
    /// provider whose key is set (or of `--provider`).
    #[arg(value_name = "MODEL")]
    pub model: Option<String>,
    /// Same as MODEL.
    #[arg(long = "model", value_name = "MODEL", conflicts_with = "model")]
    pub model_flag: Option<String>,
    /// The provider to test (its default model unless MODEL is given).
    #[arg(long, value_name = "PROVIDER")]
    pub provider: Option<String>,
    /// Print a JSON array of results instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_status(s: &str) -> Result<crate::model::RunStatus, String> {
    crate::model::RunStatus::parse(s).ok_or_else(|| {
        let names: Vec<&str> = crate::model::RunStatus::ALL
            .iter()
            .map(|status| status.as_str())
            .collect();
        format!("unknown status `{s}`; expected one of {}", names.join(", "))
    })
}

/// Opens the run store read-only and finds `run` (an id or a unique prefix,
/// any case).
fn open_run(run: &str) -> Result<(crate::store::Store, crate::store::RunRecord), CliError> {
    use crate::store::{Store, StoreError};
    let home = home()?;
    if !home.db_path().is_file() {
        return Err(CliError::Usage(format!(
            "no run matches `{run}`: no runs have been recorded yet under {}",
            home.root().display()
        )));
    }
    let store = Store::open_read_only(&home)
        .map_err(|e| CliError::Usage(format!("cannot open the run store: {e}")))?;
    match store.find_run(run) {
        Ok(record) => Ok((store, record)),
        Err(StoreError::RunNotFound(_)) => Err(CliError::Usage(format!(
            "no run matches `{}`; `weft ps --all` lists the runs",
            run.trim()
        ))),
        Err(e) => Err(CliError::Usage(e.to_string())),
    }
}

/// The result after writing a command's output: a closed pipe (`| head`)
/// is not an error; any other write failure is.
fn output_done(written: std::io::Result<()>) -> CliResult {
    match written {
        Ok(()) => exit::code(EXIT_OK),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit::code(EXIT_OK),
        Err(e) => Err(CliError::Output(e)),
    }
}

fn parse_input(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!("expected NAME=VALUE, got `{s}`")),
    }
}

/// Runs a command's async part to its end on a current-thread runtime:
/// the one runtime of the `weft` process. Whatever is still pending then
/// (a console question blocked reading stdin) is left behind after 100 ms
/// rather than waited for.
pub(crate) fn block_on<F: std::future::Future<Output = CliResult>>(body: F) -> CliResult {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Usage(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(body);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    result
}

/// `WEFT_HOME` (or the default).
pub(crate) fn home() -> Result<crate::store::Home, CliError> {
    crate::store::Home::from_env().map_err(|e| CliError::Usage(e.to_string()))
}

/// Runs the CLI with the process's arguments.
#[must_use]
pub fn main() -> ExitCode {
    main_from(std::env::args_os())
}

/// Runs the CLI with `args` (the first is the program name, as in
/// `std::env::args_os`) as [`main`] does with the process's: the in-process
/// tests call it beside a daemon served by the same process. Everything
/// else (WEFT_HOME, the caller's environment, stdin and stdout) is the
/// process's.
#[must_use]
pub fn main_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { EXIT_OK });
        }
    };
    let result = match cli.command {
        Command::Validate(args) => validate::run(&args),
        Command::Graph(args) => graph::run(&args),
        Command::Handlers(args) => handlers::run(&args),
        Command::Sandbox(args) => sandbox::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Resume(args) => run::resume(&args),
        Command::Daemon(args) => daemon::run(&args),
        Command::Cancel(args) => control::cancel(&args),
        Command::Rewind(args) => fork::run(&args, true),
        Command::Fork(args) => fork::run(&args, false),
        Command::Answer(args) => control::answer(&args),
        Command::Questions(args) => control::questions(&args),
        Command::Steer(args) => steer::run(&args),
        Command::Ps(args) => ps::run(&args),
        Command::Cost(args) => cost::run(&args),
        Command::Events(args) => events::run(&args),
        Command::Logs(args) => logs::run(&args),
        Command::Dump(args) => dump::run(&args),
        Command::Artifacts(args) => artifacts::run(&args),
        Command::Retro(args) => retro::run(&args),
        Command::Apply(args) => apply::run(&args),
        Command::Model(args) => model::run(&args),
        Command::Open(args) => open::run(&args),
        Command::Notifications(args) => notifications::run(&args),
        Command::Completions(args) => manual::completions(args.shell),
        Command::Man(args) => manual::man(args.command.as_deref()),
    };
    exit_status(result)
}

/// The one place where a command's error is printed and the exit code is
/// chosen: `error: MESSAGE` on stderr (an invalid workflow's diagnostics
/// before it), and the code [`exit_code`] gives.
fn exit_status(result: CliResult) -> ExitCode {
    let error = match result {
        Ok(code) => return code,
        Err(error) => error,
    };
    if let CliError::InvalidWorkflow {
        file,
        text,
        diagnostics,
    } = &error
    {
        let style = report::Style::for_stderr();
        for d in diagnostics {
            eprintln!("{}", report::human(d, file, text, style));
        }
    }
    eprintln!("error: {error}");
    ExitCode::from(exit_code(&error))
}

/// The exit code of each kind of error (docs/cli.md).
fn exit_code(error: &CliError) -> u8 {
    match error {
        CliError::Usage(_) | CliError::InvalidWorkflow { .. } | CliError::Output(_) => EXIT_USAGE,
        CliError::AnswerClosed(_) => exit::EXIT_ANSWER_CLOSED,
        CliError::StillRunning(_) => exit::EXIT_STILL_RUNNING,
        CliError::NoProvider(_) => EXIT_INVALID,
        CliError::Refused(_) => exit::EXIT_REFUSED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_exit_with_the_codes_the_docs_give() {
        assert_eq!(exit_code(&CliError::usage("x")), 2, "usage errors exit 2");
        let invalid = CliError::InvalidWorkflow {
            file: "f.fabro".into(),
            text: String::new(),
            diagnostics: Vec::new(),
        };
        assert_eq!(
            exit_code(&invalid),
            2,
            "`weft run` of an invalid workflow exits 2"
        );
        assert_eq!(
            exit_code(&CliError::AnswerClosed("closed".into())),
            1,
            "another answer to a closed question exits 1"
        );
        assert_eq!(
            exit_code(&CliError::StillRunning("x".into())),
            1,
            "a daemon that did not stop in time exits 1"
        );
        assert_eq!(
            exit_code(&CliError::NoProvider("x".into())),
            1,
            "`model test` with no provider to call fails as a failed test"
        );
    }

    #[test]
    fn a_closed_pipe_is_not_an_error_but_other_write_failures_are() {
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(output_done(Err(closed)).ok(), Some(ExitCode::SUCCESS));
        let full = std::io::Error::other("disk full");
        let error = output_done(Err(full)).err();
        assert_eq!(
            error.as_ref().map(ToString::to_string).as_deref(),
            Some("cannot write the output: disk full")
        );
        assert_eq!(error.as_ref().map(exit_code), Some(2));
    }
}
