//! How a `weft` command ends: its exit codes, and [`CliError`], the one
//! shape of a command that stopped short. Commands return [`CliResult`]:
//! `Ok` with the exit code they chose from their outcome (a run's status,
//! a workflow's validity), or a `CliError`, which [`super::main`] alone
//! prints and turns into an exit code (`exit_status` in `cli/mod.rs`). So
//! every error reads `error: ...` on stderr, printed once, after whatever
//! the command printed before it.

use std::process::ExitCode;

use crate::lang::Diagnostic;
use crate::model::RunStatus;

/// Exit code: everything fine (warnings allowed).
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code: a workflow has an error (`validate`, `graph`), or a model did
/// not answer (`model test`).
pub(crate) const EXIT_INVALID: u8 = 1;
/// Exit code: bad usage, a file that cannot be read, a run that matches
/// nothing, a daemon out of reach; an invalid workflow given to `run`.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code: the run failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code: the run was cancelled or interrupted (as a shell reports
/// SIGINT); it can be resumed.
pub(crate) const EXIT_CANCELLED: u8 = 130;
/// Exit code of `weft daemon status`: no daemon is running.
pub(crate) const EXIT_NOT_RUNNING: u8 = 3;
/// Exit code of `weft daemon stop`: the daemon was asked to stop but had
/// not exited in time.
pub(crate) const EXIT_STILL_RUNNING: u8 = 1;
/// Exit code of `weft apply`: the run's result was not applied (a dirty
/// checkout, conflicts, a patch that does not apply, a failed run without
/// `--force`); nothing was changed.
pub(crate) const EXIT_REFUSED: u8 = 1;
/// Exit code of `weft answer`: the question was closed already, with
/// another answer (or by its timeout, or its run stopping); the message
/// says what was recorded.
pub(crate) const EXIT_ANSWER_CLOSED: u8 = 1;

/// What a command returns: the exit code it chose, or why it stopped.
pub(crate) type CliResult = Result<ExitCode, CliError>;

/// Why a command stopped short. Its `Display` is the message after
/// `error: ` (it may run on over further lines, indented); which exit code
/// each kind gets is decided where it is printed, in `cli/mod.rs`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// Bad usage, input that cannot be read, a run that matches nothing or
    /// several, a daemon out of reach, a request it refused.
    #[error("{0}")]
    Usage(String),
    /// A workflow that does not validate, refused by the engine or the
    /// daemon: its diagnostics are printed as `weft validate` prints them,
    /// each with its file, line and column, before the error line.
    #[error("the workflow is invalid; `weft validate FILE` shows where")]
    InvalidWorkflow {
        /// The file as shown in the diagnostics.
        file: String,
        /// Its text, for the excerpts under each diagnostic.
        text: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// Output could not be written (other than into a closed pipe, which
    /// is not an error: see [`super::output_done`]).
    #[error("cannot write the output: {0}")]
    Output(std::io::Error),
    /// `weft answer`: the question had been closed already.
    #[error("{0}")]
    AnswerClosed(String),
    /// `weft daemon stop`: the daemon has not exited in time.
    #[error("{0}")]
    StillRunning(String),
    /// `weft model test`: no provider can be called at all.
    #[error("{0}")]
    NoProvider(String),
    /// `weft apply`: the run's result was not applied, for the reason
    /// given; nothing was changed.
    #[error("{0}")]
    Refused(String),
}

impl CliError {
    /// A [`CliError::Usage`] with this message.
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }
}

/// A plain exit code as a command's result.
pub(crate) fn code(code: u8) -> CliResult {
    Ok(ExitCode::from(code))
}

/// The exit code of `weft run` and `weft resume` for a run that ended with
/// `status`, in this process or in the daemon: 0 succeeded, 130 cancelled
/// or interrupted (resumable), 1 anything else.
pub(crate) fn run_exit(status: RunStatus) -> ExitCode {
    ExitCode::from(match status {
        RunStatus::Succeeded => EXIT_OK,
        RunStatus::Cancelled | RunStatus::Interrupted => EXIT_CANCELLED,
        _ => EXIT_FAILED,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_exits_with_its_status() {
        assert_eq!(run_exit(RunStatus::Succeeded), ExitCode::from(0));
        assert_eq!(run_exit(RunStatus::Failed), ExitCode::from(1));
        assert_eq!(run_exit(RunStatus::Cancelled), ExitCode::from(130));
        assert_eq!(
            run_exit(RunStatus::Interrupted),
            ExitCode::from(130),
            "an interrupted run resumes, like a cancelled one"
        );
    }
}
