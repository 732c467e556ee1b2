//! The durable run store: SQLite (WAL, one writer) under `$WEFT_HOME`, the
//! content-addressed blob store and the run directory on disk.
//!
//! [`Store`] is the connection (`connection.rs`); each table adds its methods
//! in a file of its own: `runs` (with the one run-list query,
//! [`RunFilter`]), `stages`, `events`, `questions`, `artifacts` and `blob`.
//!
//! Invariant: a stage's completion, its events and the checkpoint naming the
//! next node are committed in one transaction ([`Store::commit_stage`]).

mod artifacts;
mod blob;
mod connection;
mod events;
mod home;
mod migrations;
mod questions;
mod retros;
mod run_dir;
mod runs;
mod spending;
mod sql;
mod stage_files;
mod stages;
mod timeline;
pub mod wal;

use crate::model::Code;

pub use artifacts::ArtifactRecord;
pub(crate) use artifacts::NewArtifact;
pub(crate) use blob::BLOB_PREFIX;
pub use blob::{BlobRef, Blobs};
pub use connection::{Checkpoint, Store};
pub use home::Home;
pub(crate) use home::{PRIVATE_FILE_MODE, create_private_dir_all};
pub use questions::{QuestionRecord, QuestionStatus};
pub use retros::MAX_RETROS_LISTED;
pub use run_dir::{RunDir, write_atomic};
pub use runs::{NewRun, RunFilter, RunRecord};
pub(crate) use spending::no_spending;
pub use spending::{
    DaySpend, ModelSpend, RunSpendLine, SPENDING_DAYS_MAX, SPENDING_ROWS_MAX, SpendFigures,
    Spending, SpendingQuery, StageSpend,
};
pub(crate) use stage_files::FileWriter;
pub use stage_files::StageFiles;
pub use stages::{StageCommit, StageRecord};
pub use timeline::TimelineEntry;

/// The most events one page of a run's events holds, for every reader
/// (`run.events` over the socket, the app's views): a page stays a few
/// megabytes however long the run.
pub const EVENTS_PAGE_MAX: u32 = 10_000;

/// What can go wrong in the store. Each variant has a stable code for
/// machine-readable errors.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid JSON in {what}: {source}")]
    Json {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("no run matches `{0}`")]
    RunNotFound(String),
    /// `matches` lists at most 10 of the matching ids, newest first.
    #[error("`{prefix}` matches more than one run ({}); type more of the run id", .matches.join(", "))]
    AmbiguousRun {
        prefix: String,
        matches: Vec<String>,
    },
    /// Names `node@visit in run ID`.
    #[error("no stage {0} has been started")]
    StageNotFound(String),
    #[error("no question `{0}`")]
    QuestionNotFound(String),
    /// Names the run and the path; the run captured no such artifact.
    #[error("run {run} captured no artifact `{path}`")]
    ArtifactNotFound { run: String, path: String },
    #[error("blob {0} is missing from the blob store")]
    BlobMissing(String),
    #[error(
        "the database at {path} was written by a newer Weft (schema version {found}, this build knows {known})"
    )]
    SchemaTooNew {
        path: String,
        found: i64,
        known: i64,
    },
    #[error(
        "the database at {path} was written by an older Weft (schema version {found}, this build knows {known}); start the daemon once (`weft daemon start`) to upgrade it"
    )]
    SchemaTooOld {
        path: String,
        found: i64,
        known: i64,
    },
    /// The main database file is in WAL mode but holds no schema, its
    /// write-ahead log has no frames, and yet run folders exist: the history
    /// was in a log that was deleted (or never copied along).
    #[error(
        "the database at {path} has lost its write-ahead log: {wal} is missing or empty, and the \
         main file holds no schema although {run_dirs} run folder(s) exist, so the run history \
         that was in the log is gone; put {wal} back if you have it (with weftd stopped), or \
         move {path} aside to start an empty history"
    )]
    WalMissing {
        path: String,
        wal: String,
        run_dirs: usize,
    },
    #[error("cannot find a home directory for Weft's data; set WEFT_HOME")]
    NoHome,
    /// An artifact name that is not a plain relative path (absolute, empty,
    /// or with `.`/`..` segments); such a name is never recorded.
    #[error(
        "`{0}` is not an artifact path (a relative, `/`-separated path without `.` or `..` segments)"
    )]
    InvalidArtifactPath(String),
    /// A spending window start that is neither a span, a date nor a time.
    #[error(
        "`{0}` is not a start for spending: give a span back from now (`7d`, `24h`), a date (`2026-12-01`) or an RFC 3339 time"
    )]
    InvalidSince(String),
}

impl StoreError {
    /// A stable, machine-readable code.
    #[must_use]
    pub fn code(&self) -> Code {
        match self {
            StoreError::Sqlite(_) => Code::StoreSqlite,
            StoreError::Io { .. } => Code::StoreIo,
            StoreError::Json { .. } => Code::StoreJson,
            StoreError::RunNotFound(_) => Code::RunNotFound,
            StoreError::AmbiguousRun { .. } => Code::RunAmbiguous,
            StoreError::StageNotFound(_) => Code::StageNotFound,
            StoreError::QuestionNotFound(_) => Code::QuestionNotFound,
            StoreError::ArtifactNotFound { .. } => Code::ArtifactNotFound,
            StoreError::BlobMissing(_) => Code::BlobMissing,
            StoreError::SchemaTooNew { .. } => Code::StoreSchemaTooNew,
            StoreError::SchemaTooOld { .. } => Code::StoreSchemaTooOld,
            StoreError::WalMissing { .. } => Code::StoreWalMissing,
            StoreError::NoHome => Code::StoreNoHome,
            StoreError::InvalidArtifactPath(_) => Code::ArtifactInvalidPath,
            StoreError::InvalidSince(_) => Code::SpendingInvalidSince,
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> StoreError {
        StoreError::Io {
            context: context.into(),
            source,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Now, as RFC 3339 UTC with milliseconds (`2026-12-02T12:00:00.123Z`): the
/// one timestamp format of the database, events and files.
#[must_use]
pub fn timestamp() -> String {
    timestamp_of(std::time::SystemTime::now())
}

/// `time` as RFC 3339 UTC with milliseconds.
#[must_use]
pub fn timestamp_of(time: std::time::SystemTime) -> String {
    humantime::format_rfc3339_millis(time).to_string()
}

#[cfg(test)]
mod fixtures;
